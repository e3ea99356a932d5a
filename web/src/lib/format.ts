export function dateTime(s: string | null | undefined): string {
  if (!s) return '—';
  const d = new Date(s);
  if (Number.isNaN(d.getTime()) || d.getFullYear() < 1971) return '—';
  return d.toLocaleString(undefined, { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' });
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

export function jobName(n: string): string {
  return n.replace(/[_-]+/g, ' ').replace(/^./, (c) => c.toUpperCase());
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
