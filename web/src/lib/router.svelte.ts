// A tiny hash router: #/servers/abc?q=web → {path: '/servers/abc', query}.
// Links in e-mails (/reset-password?token=…, /activate?token=…) arrive as
// real paths; the server answers them with the shell and they are mapped
// here onto the same routes.

export interface Location {
  path: string;
  query: URLSearchParams;
}

function read(): Location {
  const p = window.location.pathname;
  if ((p === '/reset-password' || p === '/activate') && !window.location.hash) {
    return { path: p, query: new URLSearchParams(window.location.search) };
  }
  const raw = window.location.hash.replace(/^#/, '') || '/';
  const i = raw.indexOf('?');
  const path = (i < 0 ? raw : raw.slice(0, i)) || '/';
  return { path: path.startsWith('/') ? path : `/${path}`, query: new URLSearchParams(i < 0 ? '' : raw.slice(i + 1)) };
}

export const loc: Location = $state(read());

window.addEventListener('hashchange', () => {
  const n = read();
  loc.path = n.path;
  loc.query = n.query;
});

export function navigate(path: string, replace = false): void {
  if (window.location.pathname !== '/') {
    // Leave an e-mail link path for the hash world.
    window.history.replaceState(null, '', `/#${path}`);
    const n = read();
    loc.path = n.path;
    loc.query = n.query;
    return;
  }
  if (replace) {
    window.history.replaceState(null, '', `#${path}`);
    const n = read();
    loc.path = n.path;
    loc.query = n.query;
  } else {
    window.location.hash = path;
  }
}

/** Updates the query of the current route without a history entry. */
export function setQuery(params: Record<string, string>): void {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v) u.set(k, v);
  const s = u.toString();
  window.history.replaceState(null, '', `#${loc.path}${s ? `?${s}` : ''}`);
  loc.query = u;
}

/** Matches '/servers/:id' against a path; returns the params or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split('/');
  const b = path.split('/');
  if (a.length !== b.length) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i].startsWith(':')) out[a[i].slice(1)] = decodeURIComponent(b[i]);
    else if (a[i] !== b[i]) return null;
  }
  return out;
}

export const href = (path: string) => `#${path}`;
