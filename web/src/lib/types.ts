// Shapes from docs/api-contract.md. Keep in step with the contract.

export interface User {
  id: string;
  username: string;
  first_name: string;
  last_name: string;
  display_name: string;
  email: string;
  roles: string[];
  permissions: string[];
  active: boolean;
  is_system: boolean;
  totp_enabled: boolean;
  must_setup_2fa: boolean;
  created_at: string;
  last_login_at: string | null;
}

export interface LoginResult {
  token?: string;
  expires_at?: string;
  user?: User;
  two_factor_required?: boolean;
  challenge?: string;
  /** Present only when a recovery code completed the login. */
  recovery_codes_remaining?: number;
}

/** The caller's 2FA recovery codes; `recovery_codes` only right after a regeneration. */
export interface RecoveryCodes {
  remaining: number;
  total: number;
  low: boolean;
  generated_at: string | null;
  recovery_codes?: string[];
}

export interface TwoFactorSetup {
  secret: string;
  otpauth_uri: string;
  qr_png: string;
}

export interface Role {
  id: string;
  name: string;
  permissions: string[];
}

export type ApiKeyScope = 'read' | 'readwrite' | 'mcp';

export interface ApiKey {
  id: string;
  name: string;
  prefix: string;
  scope: ApiKeyScope;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
  revoked_at: string | null;
  key?: string;
}

export interface SecuritySettings {
  require_2fa_roles: string[];
  allowed_ips: string[];
  trust_proxy_header: boolean;
  api_key_rate_limit_per_minute: number;
  access_token_ttl_minutes: number;
  public_base_url: string;
}

export interface AuditEntry {
  id: string;
  at: string;
  actor: string;
  action: string;
  target: string;
  ip: string;
  details: unknown;
}

export type ServerStatus = 'excellent' | 'green' | 'yellow' | 'red' | 'unreachable' | 'unknown';

export interface Insight {
  level: 'red' | 'yellow' | 'info';
  code: string;
  text: string;
}

export interface Server {
  id: string;
  name: string;
  host: string;
  port: number;
  transport: string;
  segment: string;
  group_ids: string[];
  status: ServerStatus;
  insights: Insight[];
  os_name: string;
  os_version: string;
  kernel: string;
  virtualization: string;
  hostname: string;
  reboot_required: boolean;
  updates_available: number;
  security_updates: number;
  ssh_hardened: boolean;
  /** When ssh_hardened was last proven on the server (sshd -T read back). */
  ssh_hardened_at?: string | null;
  /** sshd's effective PermitRootLogin for root as last proven ("" never). */
  root_login?: string;
  root_login_at?: string | null;
  /** The sshd -T lines of the last SSH proof. */
  ssh_proof?: string[];
  sudo_mode?: 'full' | 'restricted';
  sudo_mode_at?: string | null;
  port_at?: string | null;
  helper_version?: string;
  helper_sha256?: string;
  helper_at?: string | null;
  /** The host firewall as last read back (feeds the excellent state). */
  firewall_active?: boolean;
  firewall_tool?: string;
  firewall_at?: string | null;
  host_key_fingerprint: string;
  joined: boolean;
  last_seen_at: string | null;
  created_at: string;
  /** lcm-agent state of a server with transport "agent". */
  agent?: AgentState;
  active_job_id: string | null;
}

export interface AgentState {
  agent_id: string;
  connected: boolean;
  /** Connected and heard from within the last 90 s. */
  online: boolean;
  last_seen_at: string | null;
  version: string;
  hostname: string;
  /** Name of the gateway it is (or was last) connected to. */
  gateway: string;
  /** Agent protocol capability version (0 before its first status). */
  capability: number;
  token_issued_at: string | null;
}

/** POST /servers/{id}/agent-token: shown once. */
export interface AgentToken {
  server_id: string;
  agent_id: string;
  token: string;
  gateway_url: string;
  /** Install command per architecture (amd64, arm64). */
  install: Record<string, string>;
  checksums: Record<string, string>;
  issued_at: string;
}

export interface ProbeResult {
  host: string;
  port: number;
  key_type: string;
  fingerprint_sha256: string;
  host_key: string;
}

export interface JobStarted {
  status: string;
  job_id: string;
  /** Human name after what was clicked ("Refresh inventory"). */
  job_name: string;
  /** Machine kind ("package-action"); the history's job_name filter takes it. */
  kind?: string;
  server?: Server;
}

export type JobStatus = 'pending' | 'started' | 'running' | 'success' | 'failed' | 'aborted' | 'blocked';

export interface Job {
  job_id: string;
  job_name: string;
  kind?: string;
  server_id: string;
  server_name: string;
  status: JobStatus;
  created_by: string;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
  exit_code: number | null;
  error: string;
  output_bytes: number;
}

export interface Page<T> {
  items: T[];
  total: number;
}

export interface SshOutput {
  job_id: string;
  status: JobStatus;
  output: string;
  offset: number;
  complete: boolean;
}

export interface Group {
  id: string;
  name: string;
  description: string;
  segment: string;
  server_ids: string[];
  manager_ids: string[];
  created_at: string;
}

export interface StorageHistory {
  /** The mount the samples belong to ("/" unless asked otherwise). */
  mount?: string;
  samples: { day: string; used_bytes: number; total_bytes: number; used_percent: number }[];
  forecast: { days_until_full: number | null; slope_bytes_per_day: number } | null;
}

/** One filesystem of the last refresh (GET /servers/:id/storage-volumes). */
export interface StorageVolume {
  mount: string;
  device: string;
  type: string;
  size_bytes: number;
  used_bytes: number;
  avail_bytes: number;
  /** Network filesystems are shown but never sampled. */
  network: boolean;
  /** Its storage history is kept ("/" always is). */
  monitored: boolean;
}

export interface StorageVolumes {
  /** Sampled mounts, "/" first, also opt-in ones not mounted at the last refresh. */
  monitored: string[];
  /** Filesystems of the last refresh ([] before the first). */
  mounts: StorageVolume[];
}

export interface SystemInfo {
  name: string;
  version: string;
  build: string | number;
  commit: string;
  dirty: boolean;
  build_time?: string;
}

export type Severity = 'info' | 'warning' | 'critical';

export interface Announcement {
  id: string;
  title: string;
  body: string;
  severity: Severity | string;
  active?: boolean;
  startsAt: string | null;
  endsAt: string | null;
  updatedAt: string;
}

export const TERMINAL_JOB_STATES: JobStatus[] = ['success', 'failed', 'aborted', 'blocked'];

/** GET /servers/:id/hardware: the facts of the last inventory (internal/facts). */
export interface Hardware {
  facts: {
    os?: { id?: string; name?: string; pretty_name?: string; version_id?: string; codename?: string };
    kernel?: string;
    arch?: string;
    hostname?: string;
    uptime_seconds?: number;
    virtualization?: { role?: string; type?: string; source?: string };
    cpu?: { model?: string; sockets?: number; cores?: number; threads?: number };
    memory?: { total_bytes?: number; available_bytes?: number; swap_total_bytes?: number; swap_free_bytes?: number };
    filesystems?: { device: string; type: string; mount_point: string; size_bytes: number; used_bytes: number; avail_bytes: number; network?: boolean }[] | null;
    addresses?: { interface: string; family: string; address: string; prefix_len: number; scope: string }[] | null;
    reboot?: { required?: boolean; reason?: string; packages?: string[]; newest_kernel?: string };
    package_manager?: string;
    warnings?: string[];
  };
  package_manager: string;
  packages: number;
  updates: number;
  security_updates: number;
  collected_at: string;
}

/** Actions a bulk run can start on many servers (POST /jobs/bulk). */
export type BulkAction = 'refresh' | 'connectivity-check' | 'upgrade-security' | 'upgrade-all' | 'refresh-lists' | 'autoremove' | 'kernel-cleanup';

export interface BulkItem {
  server_id: string;
  server_name: string;
  job_id: string | null;
  status: JobStatus | null;
  refused: { code: string; reason: string } | null;
}

export interface BulkRun {
  bulk_id: string;
  action: string;
  kind: string;
  target: 'servers' | 'group' | 'all';
  group_id: string | null;
  created_at: string;
  progress: { total: number; jobs: number; refused: number; done: boolean; counts: Record<string, number> };
  items: BulkItem[];
}

/** A firewall rule (issue 13): a port or range, a protocol, an optional source. */
export interface FirewallRule {
  port: number;
  port_end?: number;
  proto: 'tcp' | 'udp' | 'any';
  source?: string;
  comment?: string;
}

/** A listening socket of the last scan, with what the firewall makes of it. */
export interface ListeningSocket {
  proto: 'tcp' | 'udp';
  address: string;
  port: number;
  process?: string;
  pid?: number;
  public: boolean;
  open?: 'world' | 'restricted' | 'blocked' | 'local';
}

/** GET /servers/{id}/firewall: the firewall and ports as last read back. */
export interface FirewallState {
  tool: string;
  active: boolean;
  rules: FirewallRule[];
  checked_at: string | null;
  ports: ListeningSocket[];
  scanned_at: string | null;
}

export interface IPAllowlist {
  id: string;
  name: string;
  description: string;
  entries: string[];
  created_at: string;
  updated_at: string;
}

export interface HardeningCounts {
  total: number;
  ssh_hardened: number;
  sudo_restricted: number;
  firewall_active: number;
}

export interface HardeningOverview extends HardeningCounts {
  groups: (HardeningCounts & { group_id: string; group_name: string })[];
}
