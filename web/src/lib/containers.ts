// Types and helpers of the container views (issue 15).
export type Update = 'not_checked' | 'up_to_date' | 'update_available' | 'check_failed';
export interface DockerPort { host_ip?: string; host_port?: number; container_port: number; protocol: string }
export interface DockerContainer {
  engine: string; id: string; name: string; image: string; image_digest?: string; state: string; status?: string; health?: string;
  restart_count: number; ports: DockerPort[]; compose_project?: string; compose_service?: string; update: Update; cve_relevant: boolean;
  server_id?: string; server_name?: string;
}
export interface DockerImage { engine: string; id: string; repository: string; tag: string; digest?: string; size: number; in_use: boolean; dangling: boolean; containers: number; update: Update }
export interface DockerProject {
  engine: string; name: string; working_dir?: string; config_files: string[]; state: string; update: Update;
  services: { name: string; state: string; containers: string[]; images: string[] }[];
  server_id?: string; server_name?: string;
}
export interface PruneReport { containers: string[]; images: string[]; image_bytes: number; build_cache_bytes: number }
export interface DockerOutcome { op: string; target?: string; ok: boolean; code?: string; message: string; will_free?: PruneReport; freed?: PruneReport }
export interface DockerServer {
  server_id: string; server_name: string; collected: boolean; refreshed_at: string | null; update_check: boolean; updates_checked_at: string | null;
  last_action: DockerOutcome | null;
  engines: { engine: string; version: string; compose_tools: string[]; networks: number; volumes: number; errors?: string[] }[];
  containers: DockerContainer[]; images: DockerImage[]; compose: DockerProject[];
}
export interface DockerOverview {
  servers: number; containers: number; running: number; images: number; compose: number; updates_available: number; not_checked: number; cve_relevant: number; update_check: boolean;
  per_server: { server_id: string; server_name: string; engines: string[]; containers: number; running: number; images: number; compose: number; updates_available: number }[];
}

const labels: Record<Update, string> = { not_checked: 'not checked', up_to_date: 'up to date', update_available: 'update available', check_failed: 'check failed' };
export function updateLabel(u: Update | undefined): string {
  return labels[u ?? 'not_checked'] ?? 'not checked';
}

export function bytes(n: number): string {
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)} GB`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)} MB`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} kB`;
  return `${n} B`;
}
