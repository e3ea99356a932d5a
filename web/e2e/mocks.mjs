// API fixtures for the browser tests that need data the backend cannot
// produce quickly (10,000 servers, 50 MiB of output) and for the
// screenshots. They are served through playwright's page.route, never
// shipped in the bundle.

export const adminUser = {
  id: 'u-admin', username: 'admin', first_name: 'Ada', last_name: 'Admin', display_name: '', email: 'admin@example.org',
  roles: ['admin'], permissions: ['users:read', 'users:write', 'roles:read', 'roles:write', 'servers:read', 'servers:write', 'groups:read',
    'groups:write', 'jobs:read', 'packages:read', 'settings:manage', 'audit:read', 'apikeys:manage'],
  active: true, is_system: false, totp_enabled: true, must_setup_2fa: false, created_at: '2026-01-10T09:00:00Z', last_login_at: new Date().toISOString(),
};

const groups = [
  { id: 'g-prod', name: 'Production', description: 'Customer-facing services', segment: 'dmz', server_ids: [], manager_ids: ['u-mia'], created_at: '2026-01-10T09:00:00Z' },
  { id: 'g-stage', name: 'Staging', description: '', segment: 'lan', server_ids: [], manager_ids: [], created_at: '2026-01-10T09:00:00Z' },
  { id: 'g-infra', name: 'Infrastructure', description: 'DNS, mail, backup', segment: 'lan', server_ids: [], manager_ids: ['u-mia'], created_at: '2026-01-10T09:00:00Z' },
];
export { groups };

const roles = ['web', 'db', 'cache', 'mail', 'dns', 'backup', 'ci', 'k8s-node', 'proxy', 'mon'];
const insightsBy = {
  red: [{ level: 'red', code: 'cve_critical', text: '2 critical CVEs (openssl, libssh)' }, { level: 'yellow', code: 'reboot', text: 'Reboot required (new kernel)' }],
  yellow: [{ level: 'yellow', code: 'updates_overdue', text: '7 security updates pending for more than 7 days' }, { level: 'yellow', code: 'disk', text: 'Root file system 88 % full' }],
  unreachable: [{ level: 'red', code: 'unreachable', text: 'Not reachable over SSH since 2 h' }],
  green: [], unknown: [],
};

/** n servers with a realistic status mix. */
export function makeServers(n) {
  const out = [];
  const now = Date.now();
  for (let i = 0; i < n; i++) {
    const r = (i * 7919) % 100;
    const status = r < 3 ? 'red' : r < 12 ? 'yellow' : r < 14 ? 'unreachable' : r < 15 ? 'unknown' : 'green';
    const role = roles[i % roles.length];
    const g = i % 3 === 0 ? ['g-prod'] : i % 3 === 1 ? ['g-stage'] : ['g-infra'];
    const sec = status === 'red' ? 4 + (i % 5) : status === 'yellow' ? 7 : i % 4 === 0 ? 1 : 0;
    out.push({
      id: `s-${i}`, name: `${role}-${String(i + 1).padStart(5, '0')}`, host: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, port: 22,
      transport: 'ssh', segment: g[0] === 'g-prod' ? 'dmz' : 'lan', group_ids: g, status, insights: insightsBy[status],
      os_name: i % 5 === 0 ? 'Ubuntu' : 'Debian', os_version: i % 5 === 0 ? '24.04' : '12.8', kernel: '6.1.0-28-amd64', virtualization: i % 2 ? 'kvm' : 'lxc',
      hostname: `${role}-${i + 1}.example.org`, reboot_required: status === 'red' || i % 17 === 0, updates_available: sec + (i % 9), security_updates: sec,
      ssh_hardened: status === 'green', host_key_fingerprint: 'SHA256:3q2+7wXyZ0n9pQk4Vb1mYtR8uLs6HcE5dFg2JhK0aB4', joined: true,
      last_seen_at: new Date(now - (status === 'unreachable' ? 7200e3 : (i % 50) * 60e3)).toISOString(), created_at: '2026-02-01T10:00:00Z', active_job_id: null,
    });
  }
  return out;
}

export function makeJobs(n, servers) {
  const names = ['upgrade_security', 'refresh_packages', 'join', 'upgrade_all', 'reboot'];
  const st = ['success', 'success', 'running', 'success', 'failed', 'success'];
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => {
    const s = servers[i % servers.length];
    const started = new Date(now - i * 1800e3 - 60e3).toISOString();
    const status = st[i % st.length];
    return {
      job_id: `j-${i}`, job_name: names[i % names.length], server_id: s.id, server_name: s.name, status, created_by: i % 2 ? 'admin' : 'mia',
      created_at: started, started_at: started, finished_at: status === 'running' ? null : new Date(Date.parse(started) + 42e3 + i * 1000).toISOString(),
      exit_code: status === 'running' ? null : status === 'failed' ? 100 : 0, error: status === 'failed' ? 'apt-get exited with status 100' : '', output_bytes: 18000,
    };
  });
}

export const aptOutput = [
  'Reading package lists...', 'Building dependency tree...', 'Reading state information...', 'Calculating upgrade...',
  'The following packages will be upgraded:', '  libssl3 openssl tzdata perl-base', '4 upgraded, 0 newly installed, 0 to remove and 0 not upgraded.',
  'Need to get 6,912 kB of archives.', 'Get:1 http://deb.debian.org/debian-security bookworm-security/main amd64 libssl3 amd64 3.0.15-1~deb12u1 [2,026 kB]',
  'Get:2 http://deb.debian.org/debian-security bookworm-security/main amd64 openssl amd64 3.0.15-1~deb12u1 [1,428 kB]',
  'Fetched 6,912 kB in 1s (5,622 kB/s)', 'Preparing to unpack .../libssl3_3.0.15-1~deb12u1_amd64.deb ...', 'Unpacking libssl3:amd64 (3.0.15-1~deb12u1) over (3.0.11-1~deb12u2) ...',
  'Setting up libssl3:amd64 (3.0.15-1~deb12u1) ...', 'Setting up openssl (3.0.15-1~deb12u1) ...', 'Processing triggers for libc-bin (2.36-9+deb12u9) ...', '',
  '== security upgrade finished: 4 packages upgraded ==',
].join('\n') + '\n';

/** An SSE body for a job: output events, then the final state. */
export function sseBody(job, chunks) {
  let s = '';
  let off = 0;
  chunks.forEach((c, i) => {
    s += `event: output\ndata: ${JSON.stringify({ seq: i + 1, offset: off, data: c })}\n\n`;
    off += Buffer.byteLength(c);
  });
  s += `event: state\ndata: ${JSON.stringify(job)}\n\n`;
  return s;
}

/**
 * Routes /api/v1/** through handlers: {'GET /api/v1/servers': fn|value}.
 * A key may be a RegExp source prefixed with '~'. Unmatched requests go to
 * the real server.
 */
export async function mockApi(page, handlers) {
  const entries = Object.entries(handlers).map(([k, v]) => {
    const sp = k.indexOf(' ');
    const method = k.slice(0, sp);
    const p = k.slice(sp + 1);
    return { method, re: p.startsWith('~') ? new RegExp(`^${p.slice(1)}$`) : null, path: p, v };
  });
  await page.route('**/api/v1/**', async (route) => {
    const req = route.request();
    const url = new URL(req.url());
    const h = entries.find((e) => e.method === req.method() && (e.re ? e.re.test(url.pathname) : e.path === url.pathname));
    if (!h) return route.continue();
    let r = typeof h.v === 'function' ? await h.v(req, url) : h.v;
    if (!r || typeof r !== 'object' || !('status' in r) || !('body' in r || 'json' in r)) r = { status: 200, json: r };
    if (r.json !== undefined) return route.fulfill({ status: r.status, contentType: 'application/json', body: JSON.stringify(r.json) });
    return route.fulfill({ status: r.status, contentType: r.contentType ?? 'text/plain', body: r.body, headers: r.headers });
  });
}

/** 60 days of a filling volume; base and slope shift the curve per mount. */
export function storageHistory(mount = '/', { total = 64 * 2 ** 30, base = 0.52, slope = 0.0042, daysUntilFull = 41 } = {}) {
  const samples = [];
  const start = Date.now() - 59 * 86400e3;
  for (let d = 0; d < 60; d++) {
    const used = total * (base + d * slope + Math.sin(d / 3) * 0.006);
    samples.push({ day: new Date(start + d * 86400e3).toISOString().slice(0, 10), used_bytes: Math.round(used), total_bytes: total, used_percent: (used / total) * 100 });
  }
  return { mount, samples, forecast: { days_until_full: daysUntilFull, slope_bytes_per_day: total * slope } };
}

const GiB = 2 ** 30;
/** A storage-volumes answer: monitored mounts and the filesystems of the last refresh. */
export function storageVolumes(monitored = ['/'], mounts = [
  { mount: '/', device: '/dev/vda1', type: 'ext4', size_bytes: 64 * GiB, used_bytes: 46 * GiB, avail_bytes: 15 * GiB, network: false },
  { mount: '/boot', device: '/dev/vda2', type: 'ext4', size_bytes: 0.5 * GiB, used_bytes: 0.12 * GiB, avail_bytes: 0.35 * GiB, network: false },
  { mount: '/srv/shared', device: 'nas-01:/export/shared', type: 'nfs4', size_bytes: 2048 * GiB, used_bytes: 1310 * GiB, avail_bytes: 738 * GiB, network: true },
]) {
  return { monitored, mounts: mounts.map((m) => ({ ...m, monitored: !m.network && monitored.includes(m.mount) })) };
}

/** The common fixtures for a signed-in admin. */
export function fleetFixtures(servers) {
  const jobs = makeJobs(30, servers);
  for (const g of groups) g.server_ids = servers.filter((s) => s.group_ids.includes(g.id)).slice(0, 50).map((s) => s.id);
  return {
    'GET /api/v1/auth/me': adminUser,
    'GET /api/v1/servers': servers,
    'GET /api/v1/server-groups': groups,
    'GET /api/v1/jobs/history': (req, url) => {
      const sid = url.searchParams.get('server_id');
      const items = sid ? jobs.filter((j) => j.server_id === sid) : jobs;
      const lim = Number(url.searchParams.get('limit') || 50);
      return { items: items.slice(0, lim), total: items.length };
    },
    'GET /api/v1/jobs/filter-options': { statuses: ['pending', 'running', 'success', 'failed', 'aborted', 'blocked'], job_names: ['join', 'upgrade_security', 'upgrade_all', 'refresh_packages', 'reboot'] },
    'GET ~/api/v1/servers/s-[0-9]+': (req, url) => servers.find((s) => s.id === url.pathname.split('/').pop()) ?? { status: 404, json: { error: 'no such server', code: 'not_found' } },
    'GET ~/api/v1/servers/s-[0-9]+/storage-history': (req, url) => storageHistory(url.searchParams.get('mount') || '/'),
    'GET ~/api/v1/servers/s-[0-9]+/storage-volumes': storageVolumes(),
    'GET ~/api/v1/servers/s-[0-9]+/outdated-packages': [
      { name: 'libssl3', current: '3.0.11-1~deb12u2', candidate: '3.0.15-1~deb12u1', arch: 'amd64', security: true },
      { name: 'openssl', current: '3.0.11-1~deb12u2', candidate: '3.0.15-1~deb12u1', arch: 'amd64', security: true },
      { name: 'perl-base', current: '5.36.0-7+deb12u3', candidate: '5.36.0-7+deb12u4', arch: 'amd64', security: true, held: true },
      { name: 'tzdata', current: '2024a-0+deb12u1', candidate: '2025b-0+deb12u1', arch: 'all', security: false },
    ],
    'GET /api/v1/announcements/visible': [],
    'GET /api/v1/users': [adminUser, { ...adminUser, id: 'u-mia', username: 'mia', first_name: 'Mia', last_name: 'Manager', email: 'mia@example.org', roles: ['manager'], totp_enabled: false, last_login_at: new Date(Date.now() - 3 * 3600e3).toISOString() },
      { ...adminUser, id: 'u-olaf', username: 'olaf', first_name: 'Olaf', last_name: 'Ops', email: 'olaf@example.org', roles: ['manager'], totp_enabled: false, active: false, last_login_at: null }],
    'GET /api/v1/roles': [{ id: 'r1', name: 'admin', permissions: adminUser.permissions }, { id: 'r2', name: 'manager', permissions: ['servers:read', 'servers:write', 'groups:read', 'rules:manage', 'jobs:read', 'packages:read'] }],
    'GET /api/v1/apikeys': [
      { id: 'k1', name: 'monitoring', prefix: 'lcm_3fa9', scope: 'read', created_at: '2026-03-01T08:00:00Z', expires_at: '2027-03-01T08:00:00Z', last_used_at: new Date(Date.now() - 120e3).toISOString(), revoked_at: null },
      { id: 'k2', name: 'ci-deploy', prefix: 'lcm_81c2', scope: 'readwrite', created_at: '2026-02-11T08:00:00Z', expires_at: null, last_used_at: null, revoked_at: '2026-04-01T08:00:00Z' },
    ],
    'POST /api/v1/apikeys': (req) => ({ id: 'k3', name: JSON.parse(req.postData() || '{}').name, prefix: 'lcm_7d1e', scope: 'readwrite', created_at: new Date().toISOString(), expires_at: null, last_used_at: null, revoked_at: null, key: 'lcm_7d1e0b5c9a2f4e6d8c1b3a5f7e9d0c2b4a6f8e1d3c5b7a9' }),
    'GET /api/v1/settings/security': { require_2fa_roles: ['admin'], allowed_ips: ['10.0.0.0/8', '192.168.10.0/24'], trust_proxy_header: false, api_key_rate_limit_per_minute: 120, access_token_ttl_minutes: 60, public_base_url: 'https://lcm.example.org' },
  };
}
