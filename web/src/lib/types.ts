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

export type ServerStatus = 'green' | 'yellow' | 'red' | 'unreachable' | 'unknown';

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
  host_key_fingerprint: string;
  joined: boolean;
  last_seen_at: string | null;
  created_at: string;
  active_job_id: string | null;
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
  job_name: string;
  server?: Server;
}

export type JobStatus = 'pending' | 'started' | 'running' | 'success' | 'failed' | 'aborted' | 'blocked';

export interface Job {
  job_id: string;
  job_name: string;
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
