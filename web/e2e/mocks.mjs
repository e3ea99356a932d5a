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
      ssh_hardened: status === 'green', firewall_active: status === 'green', firewall_tool: 'ufw', host_key_fingerprint: 'SHA256:3q2+7wXyZ0n9pQk4Vb1mYtR8uLs6HcE5dFg2JhK0aB4', joined: true,
      last_seen_at: new Date(now - (status === 'unreachable' ? 7200e3 : (i % 50) * 60e3)).toISOString(), created_at: '2026-02-01T10:00:00Z', active_job_id: null,
    });
  }
  return out;
}

export function makeJobs(n, servers) {
  // [kind, job_name] as the API answers them (docs/jobs.md "Job kinds").
  const names = [['upgrade-security', 'Install security updates'], ['package-action', 'Refresh inventory'], ['join', 'Join server'],
    ['package-action', 'Upgrade all packages'], ['reboot', 'Reboot']];
  const st = ['success', 'success', 'running', 'success', 'failed', 'success'];
  const now = Date.now();
  return Array.from({ length: n }, (_, i) => {
    const s = servers[i % servers.length];
    const started = new Date(now - i * 1800e3 - 60e3).toISOString();
    const status = st[i % st.length];
    return {
      job_id: `j-${i}`, kind: names[i % names.length][0], job_name: names[i % names.length][1], server_id: s.id, server_name: s.name, status, created_by: i % 2 ? 'admin' : 'mia',
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
    'GET /api/v1/auth/2fa/recovery-codes': { remaining: 8, total: 10, low: false, generated_at: '2026-01-10T09:05:00Z' },
    'GET /api/v1/system/update-info': { current: '0.1.0', channel: 'community', feed_configured: false, daily_check: false, update_available: false, last: null },
    'GET /api/v1/servers': servers,
    // Not in maintenance (automationFixtures overrides this key).
    'GET ~/api/v1/servers/s-[0-9]+/maintenance': { maintenance: { active: false, reason: '', started_by: '', started_at: null, ends_at: null }, rule_conflicts: [] },
    'GET /api/v1/server-groups': groups,
    'GET /api/v1/jobs/history': (req, url) => {
      const sid = url.searchParams.get('server_id');
      const items = sid ? jobs.filter((j) => j.server_id === sid) : jobs;
      const lim = Number(url.searchParams.get('limit') || 50);
      return { items: items.slice(0, lim), total: items.length };
    },
    'GET /api/v1/jobs/filter-options': { statuses: ['pending', 'running', 'success', 'failed', 'aborted', 'blocked'], job_names: ['join', 'connectivity-check', 'upgrade-security', 'rotate-key', 'reconnect', 'decommission', 'refresh', 'package-action', 'reboot', 'storage-sample'] },
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
    ...firewallFixtures(servers),
    'GET /api/v1/settings/security': { require_2fa_roles: ['admin'], allowed_ips: ['10.0.0.0/8', '192.168.10.0/24'], trust_proxy_header: false, api_key_rate_limit_per_minute: 120, access_token_ttl_minutes: 60, public_base_url: 'https://lcm.example.org' },
  };
}

// ---- Records (DNS): one project with two zones, a template, a source host and two sync groups ----
const P = '11111111-1111-4111-8111-111111111111';
const Z1 = '22222222-2222-4222-8222-222222222221';
const Z2 = '22222222-2222-4222-8222-222222222222';
const T1 = '33333333-3333-4333-8333-333333333331';
const G1 = '44444444-4444-4444-8444-444444444441';
const G2 = '44444444-4444-4444-8444-444444444442';
const H1 = '55555555-5555-4555-8555-555555555551';
const at = '2026-11-20T10:00:00Z';
export const recordsIds = { project: P, zone: Z1, zone2: Z2, template: T1, group: G1 };

export function recordsFixtures() {
  const zone = (id, name) => ({ id, projectId: P, name, defaultTtl: 3600, mname: `ns1.${name}`, rname: `hostmaster.${name}`, refresh: 86400,
    retry: 7200, expire: 3600000, minimum: 3600, serial: 2026112003, createdAt: at, updatedAt: at });
  const set = (id, zoneId, name, type, records, origin = 'manual', originId, ttl) => ({ id, zoneId, name, type, records, origin, originId, ttl, updatedAt: at });
  return {
    'GET /api/v1/projects': [{ id: P, name: 'Web shop', description: 'Public zones of the shop', createdAt: at, updatedAt: at }],
    [`GET /api/v1/projects/${P}`]: { id: P, name: 'Web shop', description: 'Public zones of the shop', createdAt: at, updatedAt: at },
    [`GET /api/v1/projects/${P}/zones`]: [zone(Z1, 'shop.test.'), zone(Z2, 'example.org.')],
    [`GET /api/v1/zones/${Z1}`]: zone(Z1, 'shop.test.'),
    [`GET /api/v1/zones/${Z1}/record-sets`]: [
      set('66666666-6666-4666-8666-666666666661', Z1, '@', 'TXT', ['"v=spf1 -all"'], 'template', T1),
      set('66666666-6666-4666-8666-666666666662', Z1, 'app', 'A', ['198.51.100.8'], 'source', H1),
      set('66666666-6666-4666-8666-666666666663', Z1, 'policy', 'TXT', ['"owner=corporate"'], 'syncgroup', G1),
      set('66666666-6666-4666-8666-666666666664', Z1, 'www', 'A', ['192.0.2.11', '192.0.2.12'], 'manual', undefined, 300),
    ],
    [`GET /api/v1/zones/${Z2}/record-sets`]: [],
    [`GET /api/v1/projects/${P}/templates`]: [{ id: T1, projectId: P, name: 'shop base', sets: [{ name: '@', type: 'TXT', records: ['"v=spf1 -all"'] }, { name: 'www', type: 'A', ttl: 300, records: ['192.0.2.11'] }] }],
    [`GET /api/v1/projects/${P}/source-hosts`]: [{ id: H1, projectId: P, name: 'web-1', ipv4: ['198.51.100.8'], ipv6: ['2001:db8::8'], updatedAt: at }],
    [`GET /api/v1/projects/${P}/members`]: [
      { projectId: P, userId: '77777777-7777-4777-8777-777777777771', username: 'admin', role: 'owner', createdAt: at },
      { projectId: P, userId: '77777777-7777-4777-8777-777777777772', username: 'nora', role: 'editor', createdAt: at },
    ],
    'GET /api/v1/sync-groups': [
      { id: G1, name: 'corporate', priority: 10, ownerId: '77777777-7777-4777-8777-777777777771', sets: [{ name: 'policy', type: 'TXT', records: ['"owner=corporate"'] }], zoneIds: [Z1, Z2], createdAt: at, updatedAt: at },
      { id: G2, name: 'team', priority: 100, ownerId: '77777777-7777-4777-8777-777777777771', sets: [{ name: 'policy', type: 'TXT', records: ['"owner=team"'] }], zoneIds: [Z2], createdAt: at, updatedAt: at },
    ],
    [`POST /api/v1/templates/${T1}/apply`]: { zoneId: Z1, applied: ['@ TXT'], skippedPriority: ['policy TXT'], conflicts: ['www A'] },
    'GET /api/v1/dns/status': { enabled: true, addr: '127.0.0.1:5353', zones: ['example.org.', 'shop.test.'], axfrAllow: ['192.0.2.53/32'] },
  };
}

export function settingsFixtures() {
  return {
    // The system mail channel (/admin/mail and the notification channels' system mail card).
    'GET /api/v1/settings/mail-channel': { configured: true, channel: { id: 'c0', name: 'System mail', type: 'smtp', enabled: true, system: true,
      config: { host: 'smtp.example.com', port: 587, tls: 'starttls', username: 'lcm', from: '"LCM" <lcm@example.com>', to: [] },
      passwordSet: true, urlSet: false, urlMasked: '', tokenSet: false, signingSecretSet: false, createdAt: at, updatedAt: at } },
    'GET /api/v1/settings/speech': { provider: 'local', apiKeySet: false, keyVerified: false, baseUrl: '', model: '', sttLanguage: 'en-US', ttsLanguage: 'en-US',
      phrases: ['refresh all servers'], saved: true, localAvailable: true, updatedAt: at },
    'GET /api/v1/settings/schedules': { tasks: [
      { name: 'storage_aggregate', spec: '15 0 * * *', enabled: true, default_spec: '15 0 * * *', default_enabled: true },
      { name: 'status_recompute', spec: '30 0 * * *', enabled: true, default_spec: '30 0 * * *', default_enabled: true },
      { name: 'refresh_all', spec: '0 3 * * *', enabled: true, default_spec: '0 2 * * *', default_enabled: true },
      { name: 'storage_sample', spec: '0 * * * *', enabled: false, default_spec: '0 * * * *', default_enabled: true },
    ] },
  };
}

/**
 * The security API (issue 16) with state: findings of the real fixture
 * advisories (DSA-5724-1 etc.) on two servers, acknowledge, scans, the
 * scanner status. `enabled: false` gives the disabled scanner.
 */
export function securityFixtures({ enabled = true, earlyWarning = true } = {}) {
  const seen = { acks: [], scans: [], fleetScans: 0, queries: [], updateAll: 0, ewAcks: [], polls: 0, mirrors: 0, ewSettings: [] };
  let bulk = { running: false, items: [] };
  const now = new Date().toISOString();
  const f = (id, server_id, server_name, advisory, cves, pkg, source, installed, fixed, severity, cvss, summary) => ({
    id, server_id, server_name, advisory, cves, package: pkg, source, installed, fixed, severity, cvss, summary, ecosystem: 'Debian:12',
    state: 'new', first_seen_at: now, last_seen_at: now,
  });
  let findings = [
    f(1, 's-3', 'web-00004', 'DSA-5724-1', ['CVE-2024-6387'], 'openssh-server', 'openssh', '1:9.2p1-2+deb12u2', '1:9.2p1-2+deb12u3', 'high', 8.1, 'openssh - security update'),
    f(2, 's-3', 'web-00004', 'DSA-5764-1', ['CVE-2024-5535', 'CVE-2024-6119'], 'libssl3', 'openssl', '3.0.14-1~deb12u1', '3.0.14-1~deb12u2', 'critical', 9.1, 'openssl - security update'),
    f(3, 's-3', 'web-00004', 'DEBIAN-CVE-2023-51767', ['CVE-2023-51767'], 'openssh-server', 'openssh', '1:9.2p1-2+deb12u2', '', 'unknown', 0, 'OpenSSH through 10.0 might allow row hammer attacks'),
    f(4, 's-5', 'db-00006', 'DSA-5724-1', ['CVE-2024-6387'], 'openssh-server', 'openssh', '1:9.2p1-2+deb12u2', '1:9.2p1-2+deb12u3', 'high', 8.1, 'openssh - security update'),
    // The same advisory on an older libssl3 in s-3's CVE-relevant container docker/web.
    { ...f(5, 's-3', 'web-00004', 'DSA-5764-1', ['CVE-2024-5535', 'CVE-2024-6119'], 'libssl3', 'openssl', '3.0.11-1~deb12u2', '3.0.14-1~deb12u2', 'critical', 9.1, 'openssl - security update'), container: 'docker/web' },
  ];
  const rank = { unknown: 0, low: 1, medium: 2, high: 3, critical: 4 };
  const filter = (url, serverId) => {
    seen.queries.push(url.search);
    const sev = rank[url.searchParams.get('severity') ?? ''] ?? 0;
    const cve = (url.searchParams.get('cve') ?? '').toUpperCase();
    const pkg = url.searchParams.get('package') ?? '';
    const state = url.searchParams.get('state') ?? 'open';
    const items = findings.filter((x) => (!serverId || x.server_id === serverId) && rank[x.severity] >= sev
      && (!cve || x.advisory.toUpperCase().includes(cve) || x.cves.some((c) => c.includes(cve)))
      && (!pkg || x.package === pkg) && (url.searchParams.get('fix_available') !== 'true' || x.fixed)
      && (state === 'all' || (state === 'open' ? x.state !== 'fixed' : x.state === state)))
      .sort((a, b) => rank[b.severity] - rank[a.severity]);
    return { items, total: items.length };
  };
  const scanner = enabled
    ? { enabled: true, engine: 'osv', scanner: 'lcm-01/4242 (in-process)', records: 6, database_newest: new Date(Date.now() - 20 * 3600e3).toISOString(),
      database_age_hours: 20, freshness: 'current', ecosystems: [{ name: 'Debian', records: 5, imported_at: now, newest: now }, { name: 'Ubuntu', records: 1, imported_at: now, newest: now }],
      last_scan_at: now, fleet_scan_running: false }
    : { enabled: false, reason: 'no vulnerability database: upload an OSV export (<ecosystem>/all.zip) or copy one into /var/lib/lcm/data/vulndb', records: 0, ecosystems: [], fleet_scan_running: false };
  const fx = {
    'GET /api/v1/security/scanner': () => scanner,
    'GET /api/v1/security/vulnerabilities': (req, url) => filter(url, ''),
    'GET ~/api/v1/servers/s-[0-9]+/vulnerabilities': (req, url) => filter(url, url.pathname.split('/')[4]),
    'POST ~/api/v1/servers/s-[0-9]+/vulnerabilities/scan': (req, url) => {
      seen.scans.push(url.pathname.split('/')[4]);
      return { started_at: now, finished_at: now, servers: 1, scanned: 1, skipped: 0, failed: 0, distinct_package_sets: 1, findings: 3 };
    },
    'POST /api/v1/security/vulnerabilities/scan': () => { seen.fleetScans++; return { status: 202, json: { status: 'started' } }; },
    'POST ~/api/v1/security/vulnerabilities/[0-9]+/acknowledge': (req, url) => {
      const id = Number(url.pathname.split('/')[5]);
      seen.acks.push(id);
      findings = findings.map((x) => (x.id === id ? { ...x, state: 'acknowledged', acknowledged_by: 'admin', acknowledged_at: now } : x));
      return findings.find((x) => x.id === id);
    },
    'GET /api/v1/security/update-affected': () => bulk,
    'POST /api/v1/security/update-affected': () => {
      seen.updateAll++;
      bulk = { started_at: now, started_by: 'admin', running: true, items: [
        { server_id: 's-5', server_name: 'db-00006', status: 'blocked', error: 'server is busy with job j-9; one job per server at a time' },
        { server_id: 's-3', server_name: 'web-00004', job_id: 'j-up-3', status: 'pending' },
      ] };
      return { status: 202, json: bulk };
    },
    'GET /api/v1/packages/vulnerable': () => [
      { package: 'libssl3', installed: '3.0.14-1~deb12u1', fixed: '3.0.14-1~deb12u2', severity: 'critical', advisories: ['DSA-5764-1'], cves: ['CVE-2024-5535', 'CVE-2024-6119'], servers: 1, server_ids: ['s-3'] },
      { package: 'libssl3', container: 'docker/web', installed: '3.0.11-1~deb12u2', fixed: '3.0.14-1~deb12u2', severity: 'critical', advisories: ['DSA-5764-1'], cves: ['CVE-2024-5535', 'CVE-2024-6119'], servers: 1, server_ids: ['s-3'] },
      { package: 'openssh-server', installed: '1:9.2p1-2+deb12u2', fixed: '1:9.2p1-2+deb12u3', severity: 'high', advisories: ['DSA-5724-1'], cves: ['CVE-2024-6387'], servers: 2, server_ids: ['s-3', 's-5'] },
    ],
  };
  // The early warning (docs/early-warning.md): the real DSA-5724-1 and
  // UBUNTU-CVE-2024-6387 as a poll stores them.
  let ewSettings = { enabled: earlyWarning, base_url: 'https://osv-vulnerabilities.storage.googleapis.com' };
  const ew = (id, server_id, server_name, advisory, cves, pkg, source, installed, fixed, severity, cvss, summary, ecosystem) => ({
    id, server_id, server_name, advisory, cves, package: pkg, source, installed, fixed, severity, cvss, summary, ecosystem,
    advisory_modified: now, created_at: now,
  });
  let warnings = earlyWarning ? [
    ew(11, 's-3', 'web-00004', 'DSA-5724-1', ['CVE-2024-6387'], 'openssh-server', 'openssh', '1:9.2p1-2+deb12u2', '1:9.2p1-2+deb12u3', 'high', 8.1, 'openssh - security update', 'Debian:12'),
    ew(12, 's-6', 'app-00007', 'UBUNTU-CVE-2024-6387', ['CVE-2024-6387'], 'openssh-server', 'openssh', '1:8.9p1-3ubuntu0.6', '1:8.9p1-3ubuntu0.10', 'high', 8.1, 'A security regression (CVE-2006-5051) was discovered in OpenSSH', 'Ubuntu:22.04:LTS'),
  ] : [];
  const ewStatus = () => ({
    settings: ewSettings,
    last_poll: ewSettings.enabled ? { started_at: now, finished_at: now } : undefined,
    ecosystems: ewSettings.enabled ? [{ ecosystem: 'Debian', cursor: now, polled_at: now, records_read: 1 }, { ecosystem: 'Ubuntu', cursor: now, polled_at: now, records_read: 1 }] : [],
    mirror: [], open: warnings.filter((w) => !w.acknowledged_at).length, acknowledged: warnings.filter((w) => w.acknowledged_at).length,
    exploitation_signal: 'not available: no configured source carries an exploitation signal (EUVD)', poll_running: false, mirror_running: false,
  });
  Object.assign(fx, {
    'GET /api/v1/security/advisories': (req, url) => {
      const st = url.searchParams.get('state') ?? 'open';
      const items = warnings.filter((w) => st === 'all' || (st === 'open' ? !w.acknowledged_at : !!w.acknowledged_at));
      return { items, total: items.length };
    },
    'GET /api/v1/security/advisories/status': () => ewStatus(),
    'GET /api/v1/security/caches': () => ({ caches: [
      { name: 'advisory_records', description: 'early warning: advisory records found in the local record cache or mirror instead of fetched from the source', known: true, hits: 3, misses: 1, hit_ratio: 0.75 },
      { name: 'early_warning_match', description: 'early warning: package versions matched once per poll and reused for servers sharing them', known: true, hits: 6, misses: 2, hit_ratio: 0.75 },
      { name: 'scanner_match', description: 'scanner: package versions matched once per database load and reused across servers', known: true, hits: 1200, misses: 300, entries: 300, hit_ratio: 0.8 },
    ] }),
    'POST /api/v1/security/advisories/poll': () => {
      seen.polls++;
      if (!ewSettings.enabled) return { status: 409, json: { error: 'the early warning is switched off', code: 'early_warning_disabled' } };
      return { started_at: now, finished_at: now, servers: 8, findings_created: 0, ecosystems: [] };
    },
    'POST /api/v1/security/advisories/mirror': () => { seen.mirrors++; return { status: 202, json: { status: 'started' } }; },
    'POST ~/api/v1/security/advisories/[0-9]+/acknowledge': (req, url) => {
      const id = Number(url.pathname.split('/')[5]);
      seen.ewAcks.push(id);
      warnings = warnings.map((w) => (w.id === id ? { ...w, acknowledged_at: now, acknowledged_by: 'admin' } : w));
      return warnings.find((w) => w.id === id);
    },
    'GET /api/v1/security/advisories/settings': () => ewSettings,
    'PUT /api/v1/security/advisories/settings': (req) => {
      const b = req.postDataJSON();
      seen.ewSettings.push(b);
      ewSettings = { enabled: b.enabled ?? ewSettings.enabled, base_url: b.base_url || 'https://osv-vulnerabilities.storage.googleapis.com' };
      return ewSettings;
    },
  });
  return { fx, seen };
}

// Staged rollouts and approvals (issue 20): a running rollout with a canary
// and three batches, its dry-run plan, and an approvals inbox with one
// request to decide, one of the caller's own and a decided one.
export function rolloutFixtures(servers) {
  const now = Date.now();
  const iso = (ms) => new Date(now + ms).toISOString();
  const item = (i, batch, state, job) => ({
    server_id: `s-${i}`, server_name: servers[i].name, batch, state, job_id: job ? `j-r${i}` : null, job_status: job,
    refresh_job_id: null, reason: state === 'failed' ? 'job failed' : state === 'aborted' ? '' : '',
  });
  const batches = [
    { index: 0, canary: true, state: 'done', counts: { success: 1 }, items: [item(0, 0, 'success', 'success')] },
    { index: 1, canary: false, state: 'running', counts: { success: 1, failed: 1, running: 1 }, items: [item(1, 1, 'success', 'success'), item(2, 1, 'failed', 'failed'), item(3, 1, 'running', 'running')] },
    { index: 2, canary: false, state: 'pending', counts: { pending: 3 }, items: [item(4, 2, 'pending', null), item(5, 2, 'pending', null), item(6, 2, 'pending', null)] },
  ];
  const rollout = {
    id: 'r-demo', action: 'security-updates', target: 'all', group_id: null, status: 'running', reason: '', canary_size: 1, batch_size: 3,
    batch_percent: 0, failure_threshold: 2, failure_threshold_percent: 0, pause_seconds: 60, concurrency: 0, batches: 3, current_batch: 1,
    next_batch_at: null, approval_id: null, created_by: 'u-admin', created_at: iso(-120e3), finished_at: null, servers: 7, failures: 1,
    counts: { success: 2, failed: 1, running: 1, pending: 3 }, batch_list: batches,
  };
  const done = { ...rollout, id: 'r-old', status: 'halted', reason: '2 server(s) failed, reaching the threshold of 2', batch_list: undefined,
    created_at: iso(-86400e3), finished_at: iso(-86000e3) };
  const plan = {
    dry_run: true, action: 'security-updates', batches: 2, servers: 3, items: [
      { server_id: 's-0', server_name: servers[0].name, batch: 0, skip: null, reboot: false, packages: [
        { name: 'openssl', arch: 'amd64', current: '3.0.14-1~deb12u1', candidate: '3.0.15-1~deb12u1', security: true }] },
      { server_id: 's-1', server_name: servers[1].name, batch: 1, skip: null, reboot: false, packages: [] },
      { server_id: 's-2', server_name: servers[2].name, batch: 1, skip: 'the server has not joined yet', reboot: false, packages: [] },
    ],
  };
  const approval = (id, status, mine, extra = {}) => ({
    id, kind: 'rollout', ref_id: 'r-demo', summary: 'Rollout security-updates on 7 servers in 3 batches', payload: { action: 'security-updates' },
    permission: 'servers:write', status, requested_by: mine ? 'u-admin' : 'u-mia', requester_name: mine ? 'admin' : 'mia', decided_by: null,
    decider_name: null, comment: '', created_at: iso(-600e3), expires_at: iso(86000e3), decided_at: null, mine, ...extra,
  });
  return {
    'GET /api/v1/rollouts': { rollouts: [{ ...rollout, batch_list: undefined }, done] },
    'GET /api/v1/rollouts/actions': { actions: [
      { name: 'all-updates', label: 'All updates', reboots: false, requires_approval: false },
      { name: 'reboot-if-required', label: 'Reboot if required', reboots: true, requires_approval: false },
      { name: 'security-updates', label: 'Security updates', reboots: false, requires_approval: false },
      { name: 'custom:ca-1', label: 'Custom action: Disk usage', reboots: false, requires_approval: true },
    ] },
    // The approval policy is on: the page shows it and says so in the form.
    'GET /api/v1/settings/rollouts': { require_approval: true },
    'GET /api/v1/rollouts/r-demo': rollout,
    'POST /api/v1/rollouts': plan,
    'GET /api/v1/approvals': { approvals: [
      approval('a-1', 'pending', false),
      approval('a-2', 'pending', true),
      approval('a-3', 'rejected', false, { decided_by: 'u-admin', decider_name: 'admin', comment: 'not during the freeze', decided_at: iso(-300e3) }),
      approval('a-4', 'pending', false, { kind: 'schedule-run', ref_id: 'sch-1', summary: 'Nightly patching', permission: 'rules:manage',
        payload: { subject: 'Nightly patching', targets: ['s-1', 's-2'], action: 'schedule-rules:9f2c', detail: { schedule: 'Nightly patching', group_id: 'g-prod', rules: ['security-updates', 'reboot-if-required'], servers: 2 } } }),
      approval('a-5', 'pending', false, { kind: 'custom-action-run', ref_id: 'ca-1', summary: 'Disk usage', permission: 'rules:manage',
        payload: { subject: 'Disk usage', targets: ['s-1'], action: 'commands:77ab', detail: { custom_action: 'Disk usage', commands: ['df -h', 'du -sh /var/log'], servers: ['web-01'] } } }),
    ] },
  };
}

// ---- Firewall (issue 13): a ufw firewall with LCM's own rule, a web rule and an allowlist rule; a scan with one port open to the world ----
export const allowlists = [
  { id: 'al-1', name: 'office', description: 'Head office and VPN', entries: ['203.0.113.0/24', '2001:db8:10::/48'], created_at: '2026-05-02T08:00:00Z', updated_at: '2026-05-02T08:00:00Z' },
  { id: 'al-2', name: 'monitoring', description: '', entries: ['198.51.100.7/32'], created_at: '2026-05-03T08:00:00Z', updated_at: '2026-05-03T08:00:00Z' },
];
export function firewallFixtures(servers = []) {
  const at = new Date(Date.now() - 600e3).toISOString();
  const fw = {
    tool: 'ufw', active: true, checked_at: at, scanned_at: at,
    rules: [
      { port: 22, proto: 'tcp', source: '198.18.0.1/32', comment: 'lcm: management access' },
      { port: 443, proto: 'tcp', comment: 'web' },
      { port: 9100, proto: 'tcp', source: '198.51.100.7/32', comment: 'allowlist monitoring' },
    ],
    ports: [
      { proto: 'tcp', address: '0.0.0.0', port: 22, process: 'sshd', pid: 612, public: true, open: 'restricted' },
      { proto: 'tcp', address: '*', port: 443, process: 'nginx', pid: 900, public: true, open: 'world' },
      { proto: 'tcp', address: '0.0.0.0', port: 3306, process: 'mariadbd', pid: 1200, public: true, open: 'blocked' },
      { proto: 'tcp', address: '127.0.0.1', port: 5432, process: 'postgres', pid: 1300, public: false, open: 'local' },
      { proto: 'udp', address: '0.0.0.0', port: 9100, process: 'node_exporter', pid: 1400, public: true, open: 'restricted' },
    ],
  };
  const count = (f) => servers.filter(f).length;
  const total = { total: servers.length, ssh_hardened: count((s) => s.ssh_hardened), sudo_restricted: count((s) => s.sudo_mode === 'restricted'), firewall_active: count((s) => s.firewall_active) };
  return {
    'GET ~/api/v1/servers/s-[0-9]+/firewall': fw,
    'POST ~/api/v1/servers/s-[0-9]+/firewall': (req) => ({ status: 202, json: { status: 'started', job_id: 'j-fw', job_name: 'Firewall', kind: 'firewall', op: JSON.parse(req.postData() || '{}').op } }),
    'POST ~/api/v1/servers/s-[0-9]+/listening-ports/scan': { status: 202, json: { status: 'started', job_id: 'j-scan', job_name: 'Scan listening ports', kind: 'listening-ports-scan' } },
    'GET /api/v1/ip-allowlists': { items: allowlists },
    'GET /api/v1/settings/ip-allowlists': { items: allowlists },
    'GET /api/v1/fleet/hardening': { ...total, groups: groups.map((g) => ({ group_id: g.id, group_name: g.name, total: g.server_ids?.length ?? 0,
      ssh_hardened: Math.floor((g.server_ids?.length ?? 0) / 2), sudo_restricted: 1, firewall_active: Math.floor((g.server_ids?.length ?? 0) / 3) })) },
  };
}

/**
 * Containers (issue 15): a server with podman (a compose project, a stopped
 * container, an image in use, an unused and a dangling one) and the fleet
 * views. seen records the posted actions and fleet queries.
 */
export function containersFixtures({ pruned = false } = {}) {
  const seen = { posts: [], queries: [] };
  const at = (m) => new Date(Date.now() - m * 60e3).toISOString();
  const ctr = (name, image, state, extra = {}) => ({
    engine: 'podman', id: `${name}-0123456789abcdef`, name, image, image_id: 'a81a74aa7aa6', image_digest: 'sha256:2238e3b47d5bc0f552b0f05a5dd718e4e4e1275ac89d19c35946ba73dbbaccbc',
    state, status: state === 'running' ? 'Up 2 hours' : 'Exited (0)', health: '', restart_count: 0, ports: [], update: 'not_checked', cve_relevant: false,
    created_at: at(300), started_at: at(120), ...extra,
  });
  const containers = [
    ctr('shop-web-1', 'localhost/shop:1', 'running', { compose_project: 'shop', compose_service: 'web', health: 'healthy', update: 'update_available',
      ports: [{ host_ip: '127.0.0.1', host_port: 8080, container_port: 80, protocol: 'tcp' }] }),
    ctr('shop-db-1', 'localhost/bookworm:1', 'running', { compose_project: 'shop', compose_service: 'db', update: 'up_to_date', cve_relevant: true }),
    ctr('backup-once', 'localhost/bookworm:1', 'exited'),
  ];
  const img = (repository, tag, extra = {}) => ({ engine: 'podman', id: `${repository}${tag}`.replace(/[^a-z0-9]/g, '').padEnd(12, '0'), repository, tag,
    digest: 'sha256:1bccdb3bad80cefd29c9d2793d621124f7e76101f4f7793df1f7c1ec2de5cb2d', size: 238986750, in_use: false, dangling: false, containers: 0, update: 'not_checked', ...extra });
  const images = [
    img('localhost/shop', '1', { in_use: true, containers: 1, update: 'update_available' }),
    img('localhost/bookworm', '1', { in_use: true, containers: 2, update: 'up_to_date' }),
    img('localhost/old', '2'),
    img('<none>', '<none>', { id: '0ab0480b5995065e', digest: '', dangling: true }),
  ];
  const compose = [{ engine: 'podman', name: 'shop', working_dir: '/srv/shop', config_files: ['/srv/shop/compose.yaml'], state: 'running', update: 'update_available',
    services: [{ name: 'db', state: 'running', containers: ['shop-db-1'], images: ['localhost/bookworm:1'] }, { name: 'web', state: 'running', containers: ['shop-web-1'], images: ['localhost/shop:1'] }] }];
  const preview = { op: 'prune', ok: true, message: 'would free 1 containers, 2 images (478.0 MB), build cache 0 B', at: at(4),
    will_free: { containers: ['backup-once'], images: ['localhost/old:2', '0ab0480b5995065e'], image_bytes: 477973500, build_cache_bytes: 0 } };
  const done = { op: 'prune', ok: true, message: 'pruned: 1 containers and 2 images gone', at: at(3),
    will_free: preview.will_free, freed: { containers: ['backup-once'], images: ['localhost/old:2', '0ab0480b5995065e'], image_bytes: 477973500, build_cache_bytes: 52428800 } };
  const server = (id, name) => ({ server_id: id, server_name: name, collected: true, refreshed_at: at(5), job_id: 'j-ctr', update_check: true, updates_checked_at: at(5),
    last_action: pruned ? done : preview,
    engines: [{ engine: 'podman', version: '4.3.1', compose_tools: ['podman-compose'], networks: 2, volumes: 1 }], containers, images, compose });
  const withServer = (x) => ({ ...x, server_id: 's-3', server_name: 'web-00004' });
  const fx = {
    'GET ~/api/v1/servers/s-[0-9]+/docker': (req, url) => server(url.pathname.split('/')[4], 'web-00004'),
    'POST ~/api/v1/servers/s-[0-9]+/docker/.*': (req, url) => {
      seen.posts.push({ path: url.pathname, body: req.postDataJSON?.() ?? null });
      if (url.pathname.endsWith('/cve-relevance')) return { container: 'x', relevant: true };
      if (url.pathname.endsWith('/check-updates')) {
        // The registry now serves what shop-web-1 runs: up to date.
        for (const c of containers) if (c.update === 'update_available') c.update = 'up_to_date';
        return { ...server(url.pathname.split('/')[4], 'web-00004'), updates_checked_at: new Date().toISOString() };
      }
      return { status: 202, json: { status: 'started', job_id: 'j-ctr-2', job_name: 'Container action', kind: 'container-action' } };
    },
    'GET /api/v1/docker/overview': { servers: 1, containers: 3, running: 2, images: 4, compose: 1, updates_available: 1, not_checked: 1, cve_relevant: 1, update_check: true,
      per_server: [{ server_id: 's-3', server_name: 'web-00004', engines: ['podman'], containers: 3, running: 2, images: 4, compose: 1, updates_available: 1 }] },
    'GET /api/v1/docker/containers': (req, url) => {
      seen.queries.push(url.search);
      const u = url.searchParams.get('update') ?? '';
      const items = containers.filter((c) => !u || c.update === u).map(withServer);
      return { items, total: items.length };
    },
    'GET /api/v1/docker/compose': () => ({ items: compose.map(withServer), total: 1 }),
  };
  return { fx, seen };
}

/**
 * Automation (issue 20): a schedule of Production with two rules and a
 * run, the group's settings, a custom action, a server in maintenance with
 * a rule conflict, the system schedules overview.
 */
export function automationFixtures() {
  const at = (m) => new Date(Date.now() - m * 60e3).toISOString();
  const sch = {
    id: 'sch-1', group_id: 'g-prod', name: 'Nightly patching', cron: '30 2 * * *', time_zone: 'Europe/Berlin', window_start: '02:00', window_end: '05:00',
    outside_window: 'wait', enabled: true, requires_approval: true, last_run_at: at(600), next_run_at: at(-600), created_at: at(9000), updated_at: at(900),
    created_by: 'u-admin', updated_by: 'u-admin',
    rules: [
      { id: 'r-1', schedule_id: 'sch-1', position: 0, type: 'security-updates', params: {}, enabled: true },
      { id: 'r-2', schedule_id: 'sch-1', position: 1, type: 'reboot-if-required', params: {}, enabled: false },
    ],
  };
  return {
    'GET ~/api/v1/server-groups/g-[a-z]+/schedules': { schedules: [sch] },
    'GET ~/api/v1/server-groups/g-[a-z]+/automation': { group_id: 'g-prod', priority: 10, window_start: '02:00', window_end: '05:00', window_tz: 'Europe/Berlin' },
    'GET /api/v1/rule-types': { types: ['security-updates', 'all-updates', 'packages', 'refresh', 'reboot', 'reboot-if-required', 'custom-action', 'script', 'container-prune', 'image-updates', 'vulnerability-scan', 'health-check'] },
    'GET /api/v1/schedules/sch-1/history': { runs: [{ id: 'run-1', schedule_id: 'sch-1', trigger: 'cron', status: 'success', reason: '', due_at: at(600), started_at: at(600), finished_at: at(590), created_at: at(600),
      steps: [{ rule_id: 'r-1', type: 'security-updates', status: 'success', items: [{ server_id: 's-1', server_name: 'web-01', job_id: 'j-demo', status: 'success' },
        { server_id: 's-2', server_name: 'web-02', skipped: 'maintenance', reason: 'the server is in maintenance mode' }] }] }] },
    'GET /api/v1/custom-actions': { custom_actions: [{ id: 'ca-1', name: 'Disk usage', description: 'Where the space went', commands: ['df -h', 'du -sh /var/log'], requires_approval: true }] },
    'GET ~/api/v1/servers/s-[0-9]+/maintenance': { maintenance: { active: true, reason: 'Disk swap', started_by: 'admin', started_at: at(30), ends_at: at(-90) },
      rule_conflicts: [{ rule_type: 'security-updates', winner: 'Production', superseded: ['Staging'], tie: true, warning: 'groups "Production" and "Staging" both schedule security-updates with priority 100: the older group "Production" wins; give them different priorities' }] },
    'GET /api/v1/system/schedules/overview': { schedules: [
      { name: 'vuln_scan', kind: 'cve-scan', spec: '30 2 * * *', enabled: true, default_spec: '30 2 * * *', default_enabled: true, next_run: at(-300) },
      { name: 'alert_check', kind: 'alert-check', spec: '*/30 * * * *', enabled: true, default_spec: '*/30 * * * *', default_enabled: true, next_run: at(-10) },
    ] },
  };
}
