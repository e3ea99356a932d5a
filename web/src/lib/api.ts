// Typed client for the LCM REST API (docs/api-contract.md). The UI signs in
// with the session cookie only: it never sees or stores the token. Unsafe
// methods carry the CSRF token from the readable lcm_csrf cookie.

import { describe } from './errors';
import type {
  AgentToken,
  Announcement, ApiKey, ApiKeyScope, AuditEntry, BulkAction, BulkRun, Group, Job, JobStarted, LoginResult, Page, ProbeResult,
  RecoveryCodes, Role, SecuritySettings, Server, SshOutput, StorageHistory, StorageVolumes, SystemInfo, TwoFactorSetup, User,
  FirewallRule, FirewallState, HardeningOverview, IPAllowlist,
} from './types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly body: Record<string, unknown> | null = null,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

type Handler = (err: ApiError) => void;
let onUnauthorized: Handler = () => {};
let onSetupRequired: Handler = () => {};

/** Hooks the session layer into every response: 401 and forced 2FA setup. */
export function setAuthHandlers(unauthorized: Handler, setupRequired: Handler): void {
  onUnauthorized = unauthorized;
  onSetupRequired = setupRequired;
}

export function csrfToken(): string {
  for (const part of document.cookie.split(';')) {
    const [k, ...v] = part.trim().split('=');
    if (k === 'lcm_csrf') return decodeURIComponent(v.join('='));
  }
  return '';
}

interface Options {
  /** Do not treat 401 as an expired session (sign-in, first probe). */
  quiet401?: boolean;
  signal?: AbortSignal;
}

const UNSAFE = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

export async function request<T>(method: string, path: string, body?: unknown, opts: Options = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (UNSAFE.has(method)) {
    const t = csrfToken();
    if (t) headers['X-CSRF-Token'] = t;
  }
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: opts.signal,
    });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, 'network', 'The server cannot be reached. Check your connection and try again.');
  }
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = null;
    }
  }
  if (!res.ok) {
    const b = (data && typeof data === 'object' ? data : null) as Record<string, unknown> | null;
    let msg = describe(res.status, b as never);
    if (res.status === 429) {
      const ra = Number(res.headers.get('Retry-After'));
      if (ra > 0) msg = `Too many attempts. Try again in ${ra} second${ra === 1 ? '' : 's'}.`;
    }
    const err = new ApiError(res.status, String(b?.code ?? ''), msg, b);
    if (res.status === 401 && !opts.quiet401) onUnauthorized(err);
    if (res.status === 403 && err.code === '2fa_setup_required') onSetupRequired(err);
    throw err;
  }
  return data as T;
}

const get = <T>(p: string, o?: Options) => request<T>('GET', p, undefined, o);
const post = <T>(p: string, b?: unknown, o?: Options) => request<T>('POST', p, b ?? {}, o);
const patch = <T>(p: string, b: unknown) => request<T>('PATCH', p, b);
const put = <T>(p: string, b: unknown) => request<T>('PUT', p, b);
const del = <T>(p: string) => request<T>('DELETE', p);

const enc = encodeURIComponent;
function qs(params: Record<string, string | number | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== '') u.set(k, String(v));
  const s = u.toString();
  return s ? `?${s}` : '';
}

const V = '/api/v1';

export const api = {
  systemInfo: () => get<SystemInfo>(`${V}/system/info`, { quiet401: true }),

  // Authentication
  login: (username: string, password: string) => post<LoginResult>(`${V}/auth/login`, { username, password }, { quiet401: true }),
  login2fa: (challenge: string, code: string) => post<LoginResult>(`${V}/auth/login/2fa`, { challenge, code }, { quiet401: true }),
  login2faRecovery: (challenge: string, recovery_code: string) =>
    post<LoginResult>(`${V}/auth/login/2fa`, { challenge, recovery_code }, { quiet401: true }),
  logout: () => post<void>(`${V}/auth/logout`, undefined, { quiet401: true }),
  me: (quiet = false) => get<User>(`${V}/auth/me`, { quiet401: quiet }),
  setup2fa: () => post<TwoFactorSetup>(`${V}/auth/2fa/setup`),
  enable2fa: (code: string) => post<User & { recovery_codes: string[] }>(`${V}/auth/2fa/enable`, { code }),
  disable2fa: (f: { code?: string; recovery_code?: string }) => post<User>(`${V}/auth/2fa/disable`, f),
  recoveryCodes: () => get<RecoveryCodes>(`${V}/auth/2fa/recovery-codes`),
  regenerateRecoveryCodes: (proof: { password?: string; code?: string }) => post<RecoveryCodes>(`${V}/auth/2fa/recovery-codes`, proof),
  reset2fa: (id: string) => post<User>(`${V}/users/${enc(id)}/2fa/reset`),
  requestReset: (username_or_email: string) => post<void>(`${V}/auth/password-reset`, { username_or_email }, { quiet401: true }),
  confirmReset: (token: string, password: string) => post<void>(`${V}/auth/password-reset/confirm`, { token, password }, { quiet401: true }),
  activate: (token: string, password: string) => post<void>(`${V}/users/activation-links/consume`, { token, password }, { quiet401: true }),

  // Users and roles
  users: () => get<User[]>(`${V}/users`),
  createUser: (b: { username: string; first_name: string; last_name: string; email: string; password?: string; roles: string[] }) =>
    post<User>(`${V}/users`, b),
  updateProfile: (id: string, b: Partial<Pick<User, 'first_name' | 'last_name' | 'email' | 'display_name'>>) =>
    patch<User>(`${V}/users/${enc(id)}/profile`, b),
  setPassword: (id: string, b: { password: string; current_password?: string; code?: string }) =>
    post<void>(`${V}/users/${enc(id)}/reset-password`, b),
  setRoles: (id: string, roles: string[]) => put<User>(`${V}/users/${enc(id)}/roles`, { roles }),
  setActive: (id: string, active: boolean) => patch<User>(`${V}/users/${enc(id)}/active`, { active }),
  deleteUser: (id: string) => del<void>(`${V}/users/${enc(id)}`),
  sendActivation: (user_id: string) => post<{ sent: boolean; expires_at: string }>(`${V}/users/activation-links/generate`, { user_id }),
  roles: () => get<Role[]>(`${V}/roles`),

  // API keys
  apiKeys: () => get<ApiKey[]>(`${V}/apikeys`),
  createApiKey: (b: { name: string; scope?: ApiKeyScope; expires_in_days?: number }) => post<ApiKey & { key: string }>(`${V}/apikeys`, b),
  deleteApiKey: (id: string) => del<void>(`${V}/apikeys/${enc(id)}`),

  // Settings and audit
  security: () => get<SecuritySettings>(`${V}/settings/security`),
  updateSecurity: (b: Partial<SecuritySettings>) => patch<SecuritySettings>(`${V}/settings/security`, b),
  audit: (p: { limit?: number; offset?: number; action?: string }) => get<Page<AuditEntry>>(`${V}/audit${qs(p)}`),

  // Servers
  servers: (p: { q?: string; group_id?: string; status?: string } = {}, signal?: AbortSignal) =>
    get<Server[]>(`${V}/servers${qs(p)}`, { signal }),
  server: (id: string) => get<Server>(`${V}/servers/${enc(id)}`),
  probe: (host: string, port: number) => post<ProbeResult>(`${V}/servers/probe`, { host, port }),
  join: (b: {
    name: string; host: string; port: number; username: string; auth: 'key' | 'password';
    private_key?: string; password?: string; host_key: string; group_ids?: string[]; segment?: string;
  }) => post<JobStarted>(`${V}/servers/join`, b),
  createAgentServer: (b: { name: string; group_ids?: string[]; segment?: string }) => post<Server>(`${V}/servers/agent`, b),
  agentToken: (id: string) => post<AgentToken>(`${V}/servers/${enc(id)}/agent-token`),
  serverSettings: (id: string, b: { name?: string; port?: number; segment?: string }) => patch<Server>(`${V}/servers/${enc(id)}/settings`, b),
  serverAction: (id: string, action: ServerAction) => post<JobStarted>(`${V}/servers/${enc(id)}/${serverActionPath[action]}`),
  // A joined server is decommissioned by a job (its id); one that never joined is deleted at once (nothing).
  decommission: (id: string) => post<JobStarted | undefined>(`${V}/servers/${enc(id)}/decommission`),
  /** SSH hardening (proven with sshd -T and a fresh key login, else rolled back). */
  hardenSSH: (id: string, fixMainConfig = false) => post<JobStarted>(`${V}/servers/${enc(id)}/harden-ssh`, { fix_main_config: fixMainConfig }),
  unhardenSSH: (id: string) => post<JobStarted>(`${V}/servers/${enc(id)}/unharden-ssh`),
  /** The firewall and listening ports as last read back. */
  firewall: (id: string) => get<FirewallState>(`${V}/servers/${enc(id)}/firewall`),
  /** A firewall job: status, enable (LCM's own access first, proven by a fresh login), disable, add, remove. */
  firewallOp: (id: string, op: 'status' | 'enable' | 'disable' | 'add' | 'remove', rules?: (FirewallRule & { allowlist_id?: string })[]) =>
    post<JobStarted>(`${V}/servers/${enc(id)}/firewall`, rules ? { op, rules } : { op }),
  scanListeningPorts: (id: string) => post<JobStarted>(`${V}/servers/${enc(id)}/listening-ports/scan`),
  ipAllowlists: () => get<{ items: IPAllowlist[] }>(`${V}/ip-allowlists`),
  adminIPAllowlists: () => get<{ items: IPAllowlist[] }>(`${V}/settings/ip-allowlists`),
  createIPAllowlist: (b: { name: string; description: string; entries: string[] }) => post<IPAllowlist>(`${V}/settings/ip-allowlists`, b),
  deleteIPAllowlist: (id: string) => del<void>(`${V}/settings/ip-allowlists/${enc(id)}`),
  hardeningOverview: () => get<HardeningOverview>(`${V}/fleet/hardening`),
  sshRootLogin: (id: string, enabled: boolean) => post<JobStarted>(`${V}/servers/${enc(id)}/ssh-root-login`, { enabled }),
  /** Moves sshd to another port (the stored port changes only after a fresh login on it). */
  sshPort: (id: string, port: number) => post<JobStarted>(`${V}/servers/${enc(id)}/ssh-port`, { port }),
  /** Switches the management user's sudo (proven over a fresh connection, else full mode is restored). */
  restrictSudo: (id: string, mode: 'restricted' | 'full') => post<JobStarted>(`${V}/servers/${enc(id)}/restrict-sudo`, { mode }),
  activeJob: (id: string) => get<Job>(`${V}/servers/${enc(id)}/active-job`),
  serverPart: (id: string, part: 'hardware' | 'packages' | 'outdated-packages') => get<unknown>(`${V}/servers/${enc(id)}/${part}`),
  storageHistory: (id: string, mount = '/', signal?: AbortSignal) =>
    get<StorageHistory>(`${V}/servers/${enc(id)}/storage-history${qs({ mount })}`, { signal }),
  storageVolumes: (id: string) => get<StorageVolumes>(`${V}/servers/${enc(id)}/storage-volumes`),
  /** Replaces the opt-in mounts whose history is kept ("/" always is). */
  setStorageVolumes: (id: string, mounts: string[]) => put<StorageVolumes>(`${V}/servers/${enc(id)}/storage-volumes`, { mounts }),

  // Groups
  groups: () => get<Group[]>(`${V}/server-groups`),
  createGroup: (b: { name: string; description?: string; segment?: string }) => post<Group>(`${V}/server-groups/create`, b),
  groupSettings: (id: string, b: { name?: string; description?: string; segment?: string }) =>
    patch<Group>(`${V}/server-groups/${enc(id)}/settings`, b),
  groupMember: (id: string, op: 'assign-server' | 'remove-server', server_id: string) =>
    post<Group>(`${V}/server-groups/${enc(id)}/${op}`, { server_id }),
  groupManager: (id: string, op: 'assign-manager' | 'remove-manager', user_id: string) =>
    post<Group>(`${V}/server-groups/${enc(id)}/${op}`, { user_id }),
  disbandGroup: (id: string) => post<void>(`${V}/server-groups/${enc(id)}/disband`),

  // Jobs
  jobs: (p: { server_id?: string; status?: string; job_name?: string; limit?: number; offset?: number }) =>
    get<Page<Job>>(`${V}/jobs/history${qs(p)}`),
  jobFilterOptions: () => get<{ statuses: string[]; job_names: string[] }>(`${V}/jobs/filter-options`),
  job: (id: string) => get<Job>(`${V}/jobs/${enc(id)}`),
  jobOutput: (id: string, offset: number) => get<SshOutput>(`${V}/jobs/${enc(id)}/ssh-output${qs({ offset })}`),
  jobStreamUrl: (id: string) => `${V}/jobs/${enc(id)}/stream`,
  abortJob: (id: string) => post<Job>(`${V}/jobs/${enc(id)}/abort`),
  /** One job per server of a selection, a group or all servers the caller may manage. */
  bulk: (b: { action: BulkAction; server_ids?: string[]; group_id?: string; all?: boolean }) => post<BulkRun>(`${V}/jobs/bulk`, b),
  bulkRun: (id: string) => get<BulkRun>(`${V}/jobs/bulk/${enc(id)}`),
  /** "Update all": security updates on every server the caller may manage (one run at a time). */
  // Under the approval policy (rollouts.require_approval) it answers with
  // the rollout that waits for approval instead of a bulk run.
  updateAll: () => post<BulkRun | { rollout_id: string; status: string; approval_id: string }>(`${V}/security/update-all`),

  // Portal messages
  visibleAnnouncements: () => get<Announcement[]>(`${V}/announcements/visible`, { quiet401: true }),
  announcements: () => get<Announcement[]>(`${V}/admin/announcements`),
  createAnnouncement: (b: AnnouncementInput) => post<Announcement>(`${V}/admin/announcements/create`, b),
  updateAnnouncement: (id: string, b: AnnouncementInput) => post<Announcement>(`${V}/admin/announcements/${enc(id)}/update`, b),
  deleteAnnouncement: (id: string) => post<void>(`${V}/admin/announcements/${enc(id)}/delete`),
};

export interface AnnouncementInput {
  title: string;
  body: string;
  severity: string;
  active: boolean;
  startsAt: string | null;
  endsAt: string | null;
}

export type ServerAction = 'upgrade-security' | 'upgrade-all' | 'refresh' | 'reboot' | 'reconnect' | 'rotate-key';

const serverActionPath: Record<ServerAction, string> = {
  'upgrade-security': 'packages/upgrade-security',
  'upgrade-all': 'packages/upgrade-all',
  refresh: 'packages/refresh',
  reboot: 'reboot',
  reconnect: 'reconnect',
  'rotate-key': 'rotate-key',
};

export function errorText(e: unknown): string {
  if (e instanceof ApiError) return e.message;
  if (e instanceof Error) return e.message;
  return String(e);
}

/** Lists may come bare or wrapped as {items}; both are accepted. */
export function asList<T>(v: unknown): T[] {
  if (Array.isArray(v)) return v as T[];
  if (v && typeof v === 'object' && Array.isArray((v as { items?: unknown }).items)) return (v as { items: T[] }).items;
  return [];
}
