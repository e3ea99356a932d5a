// Formatting helpers: every time, size and count the UI shows goes through
// here, so the user's locale applies everywhere and no raw RFC 3339 value
// (with its nanoseconds) reaches the page.

function validDate(s: string | number | Date | null | undefined): Date | null {
  if (s === null || s === undefined || s === '') return null;
  const d = s instanceof Date ? s : new Date(s);
  if (Number.isNaN(d.getTime()) || d.getFullYear() < 1971) return null;
  return d;
}

/** A date and time in the user's locale, to the minute (seconds: true adds them). */
export function dateTime(s: string | number | Date | null | undefined, opts: { seconds?: boolean } = {}): string {
  const d = validDate(s);
  if (!d) return '—';
  return d.toLocaleString(undefined, {
    year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit', ...(opts.seconds ? { second: '2-digit' } : {}),
  });
}

/** A calendar date in the user's locale (short: without the year). */
export function dateOnly(s: string | number | Date | null | undefined, opts: { short?: boolean } = {}): string {
  const d = validDate(s);
  if (!d) return '—';
  return d.toLocaleDateString(undefined, opts.short ? { month: 'short', day: 'numeric' } : { year: 'numeric', month: 'short', day: 'numeric' });
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})$/;

/** Whether a value is an RFC 3339 timestamp as the API sends them. */
export function isTimestamp(v: unknown): v is string {
  return typeof v === 'string' && ISO_TIME.test(v);
}

/** "1 line", "2 lines", "1,234 lines": the count in the user's locale with the noun that agrees. */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString()} ${n === 1 ? one : many}`;
}

/** A length of time in seconds as days, hours and minutes ("41 d 1 h"). */
export function uptime(sec: number | null | undefined): string {
  if (sec === null || sec === undefined || !Number.isFinite(sec) || sec < 0) return '—';
  const d = Math.floor(sec / 86400);
  const h = Math.floor((sec % 86400) / 3600);
  const m = Math.floor((sec % 3600) / 60);
  if (d > 0) return `${d} d ${h} h`;
  if (h > 0) return `${h} h ${m} min`;
  return `${m} min`;
}

export function ago(s: string | null | undefined): string {
  if (!s) return 'never';
  const t = new Date(s).getTime();
  if (Number.isNaN(t) || t < 1e11) return 'never';
  const sec = Math.round((Date.now() - t) / 1000);
  if (sec < 0) return 'in the future';
  if (sec < 60) return 'just now';
  if (sec < 3600) return `${Math.floor(sec / 60)} min ago`;
  if (sec < 86400) return `${Math.floor(sec / 3600)} h ago`;
  return `${Math.floor(sec / 86400)} d ago`;
}

export function duration(a: string | null, b: string | null): string {
  if (!a) return '—';
  const ms = (b ? new Date(b).getTime() : Date.now()) - new Date(a).getTime();
  if (!(ms >= 0)) return '—';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

export function bytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  let v = Math.abs(n);
  while (v >= 1024 && i < u.length - 1) {
    v /= 1024;
    i++;
  }
  return `${n < 0 ? '-' : ''}${v >= 100 || i === 0 ? v.toFixed(0) : v.toFixed(1)} ${u[i]}`;
}

export const statusLabel: Record<string, string> = {
  excellent: 'Excellent',
  green: 'OK',
  yellow: 'Warning',
  red: 'Critical',
  unreachable: 'Unreachable',
  unknown: 'Unknown',
};

export const jobStatusLabel: Record<string, string> = {
  pending: 'Pending',
  started: 'Started',
  running: 'Running',
  success: 'Succeeded',
  failed: 'Failed',
  aborted: 'Aborted',
  blocked: 'Blocked',
};

/** Job types (the API's job kinds) as the Jobs filter names them; the names match the jobs' job_name. */
export const jobKindLabel: Record<string, string> = {
  join: 'Join server',
  'connectivity-check': 'Check connection',
  'upgrade-security': 'Install security updates',
  'rotate-key': 'Rotate SSH key',
  reconnect: 'Reconnect',
  decommission: 'Decommission server',
  refresh: 'Refresh inventory',
  'package-action': 'Package actions (refresh, upgrade, update, remove, hold …)',
  reboot: 'Reboot',
  'storage-sample': 'Measure disk usage',
};

/** A job's name: the API's job_name is already the human name ("Refresh inventory"); a bare kind is spelled out. */
export function jobName(n: string): string {
  if (/[A-Z ]/.test(n)) return n;
  return jobKindLabel[n] ?? n.replace(/[_-]+/g, ' ').replace(/^./, (c) => c.toUpperCase());
}

export function fullName(u: { first_name?: string; last_name?: string; display_name?: string; username: string }): string {
  return u.display_name || [u.first_name, u.last_name].filter(Boolean).join(' ') || u.username;
}

/** A job's created_by may be a user id: show the user name when it is the caller. */
export function actor(v: string | null | undefined, me?: { id: string; username: string } | null): string {
  if (!v) return '—';
  if (me && v === me.id) return me.username;
  return /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(v) ? `user ${v.slice(0, 8)}` : v;
}
