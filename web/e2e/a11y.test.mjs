// Accessibility of every page in both themes: axe-core (WCAG 2.x A/AA and
// best practices) must find nothing, of any impact. Then what axe does not
// measure: focus rings and form borders against their background (≥ 3:1,
// WCAG 1.4.11), placeholders (≥ 4.5:1, 1.4.3), the tabs pattern of the
// Users page, the dialogs' focus handling and the switch for single-key
// shortcuts (2.1.4).
//
// The real lcm-api --dev serves the app and the sign-in; fleet data (servers,
// jobs, groups, a job's output) comes from the fixtures in mocks.mjs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startApi, launch, uiLogin, expectNoAxeViolations, axeViolations, formatAxe, webDir } from './helpers.mjs';
import { fleetFixtures, makeServers, aptOutput, sseBody, mockApi, recordsFixtures, recordsIds, settingsFixtures, securityFixtures, rolloutFixtures, containersFixtures, automationFixtures } from './mocks.mjs';

let api;
let b;
const servers = makeServers(40);
const job = {
  job_id: 'j-demo', job_name: 'upgrade_security', server_id: 's-3', server_name: servers[3].name, status: 'success', created_by: 'admin',
  created_at: new Date(Date.now() - 50e3).toISOString(), started_at: new Date(Date.now() - 48e3).toISOString(), finished_at: new Date().toISOString(),
  exit_code: 0, error: '', output_bytes: aptOutput.length,
};

// A bulk run in progress: finished, running and pending jobs and refusals.
const bulkStatuses = ['success', 'success', 'failed', 'running', 'pending', 'aborted'];
const bulkRun = {
  bulk_id: 'b-demo', action: 'upgrade-security', kind: 'upgrade-security', target: 'servers', group_id: null, created_at: new Date(Date.now() - 30e3).toISOString(),
  progress: { total: 8, jobs: 6, refused: 2, done: false, counts: { pending: 1, started: 0, running: 1, success: 2, failed: 1, aborted: 1, blocked: 0 } },
  items: [
    ...bulkStatuses.map((st, i) => ({ server_id: `s-${i}`, server_name: servers[i].name, job_id: `j-b${i}`, status: st, refused: null })),
    { server_id: 's-6', server_name: servers[6].name, job_id: null, status: null, refused: { code: 'not_joined', reason: 'the server has not joined yet; run join first' } },
    { server_id: 's-7', server_name: servers[7].name, job_id: null, status: null, refused: { code: 'server_busy', reason: 'server is busy with job j-x; one job per server at a time' } },
  ],
};

function fixtures() {
  const fx = fleetFixtures(servers);
  delete fx['GET /api/v1/auth/me']; // the real session of the signed-in admin
  fx['GET /api/v1/jobs/j-demo'] = job;
  fx['GET /api/v1/jobs/j-demo/stream'] = { status: 200, contentType: 'text/event-stream', body: sseBody(job, aptOutput.match(/[^\n]*\n/g)) };
  fx['GET ~/api/v1/servers/s-[0-9]+/hardware'] = {
    cpu: { model: 'AMD EPYC 7543P 32-Core Processor', cores: 4, threads: 8 }, memory_bytes: 16 * 2 ** 30,
    disks: [{ name: 'vda', size_bytes: 64 * 2 ** 30, model: 'QEMU HARDDISK' }], nics: [{ name: 'eth0', mac: '52:54:00:12:34:56', speed_mbps: 1000 }],
  };
  fx['GET ~/api/v1/servers/s-[0-9]+/packages'] = [
    { name: 'bash', version: '5.2.15-2+b7', arch: 'amd64', source: 'bash' },
    { name: 'libssl3', version: '3.0.11-1~deb12u2', arch: 'amd64', source: 'openssl' },
    { name: 'openssh-server', version: '1:9.2p1-2+deb12u3', arch: 'amd64', source: 'openssh' },
  ];
  fx['GET /api/v1/jobs/bulk/b-demo'] = bulkRun;
  Object.assign(fx, rolloutFixtures(servers));
  Object.assign(fx, alertFixtures());
  // An update is available: the admin notice shows on every signed-in page.
  fx['GET /api/v1/system/update-info'] = {
    current: '0.1.0', channel: 'community', feed_configured: true, daily_check: true, update_available: true,
    last: { checked_at: new Date(Date.now() - 3600e3).toISOString(), channel: 'community', current: '0.1.0', update_available: true,
      latest: { version: '0.2.0', published_at: '2026-11-20T10:00:00Z', notes_url: 'https://example.org/lcm/v0.2.0', checksums: { 'lcm_0.2.0_amd64.deb': 'sha256:' + 'ab'.repeat(32) } } },
  };
  fx['GET ~/api/v1/servers/s-[0-9]+/users'] = {
    scanned_at: new Date(Date.now() - 3600e3).toISOString(),
    human: [{ username: 'dana', uid: 1001, home: '/home/dana', shell: '/bin/bash', human: true, locked: false, expired: false, groups: ['lcm-prof-web'], last_login: 'Tue Nov 24 13:02:11 +0000 2026', managed: true }],
    system: [{ username: 'root', uid: 0, home: '/root', shell: '/bin/bash', human: false, locked: false, expired: false, groups: [], last_login: '', managed: false }],
    provisions: [{ user_id: 'lu-1', username: 'dana', profile_slug: 'web', state: 'provisioned', job_id: 'j-1', error: '', updated_at: new Date().toISOString() }],
  };
  fx['GET ~/api/v1/servers/s-[0-9]+/users/pending'] = [{ user_id: 'lu-2', username: 'erik', action: 'create', profile: 'Standard user' }];
  fx['GET /api/v1/announcements/visible'] = [{ id: 'a1', title: 'Maintenance window Saturday 06:00–08:00 UTC.', body: 'Jobs started during the window are queued.', severity: 'info', startsAt: null, endsAt: null, updatedAt: '2026-05-01T00:00:00Z' }];
  Object.assign(fx, securityFixtures().fx);
  // Container registries (issue 15): one private registry with a stored token, one without TLS.
  fx['GET /api/v1/settings/registries'] = { registries: [
    { id: 'rg1', host: 'ghcr.io', username: 'ci-bot', has_password: true, plain_http: false, created_at: '2026-11-01T00:00:00Z', updated_at: '2026-11-01T00:00:00Z' },
    { id: 'rg2', host: 'registry.lan:5000', username: '', has_password: false, plain_http: true, created_at: '2026-11-01T00:00:00Z', updated_at: '2026-11-01T00:00:00Z' },
  ] };
  fx['POST /api/v1/settings/registries/rg1/test'] = { ok: false, reason: 'unauthorized', error: 'unauthorized: the token endpoint refused the credentials (401)' };
  Object.assign(fx, containersFixtures().fx);
  return { ...fx, ...recordsFixtures(), ...settingsFixtures(), ...automationFixtures() };
}

// Alerts (issue 17): two channels, two rules, a history with every delivery state.
function alertFixtures() {
  const at = (m) => new Date(Date.now() - m * 60e3).toISOString();
  const ch = (id, name, type, config, extra = {}) => ({ id, name, type, enabled: true, system: false, config, passwordSet: false, urlSet: type === 'webhook',
    urlMasked: type === 'webhook' ? 'https://hooks.example.com/…' : '', tokenSet: false, signingSecretSet: type === 'webhook', createdAt: at(900), updatedAt: at(900), ...extra });
  const channels = [
    ch('c1', 'ops-webhook', 'webhook', { format: 'generic' }),
    ch('c2', 'oncall-mail', 'smtp', { host: 'mail.example.com', port: 587, tls: 'starttls', username: 'lcm', from: 'lcm@example.com', to: ['oncall@example.com'] }, { passwordSet: true }),
  ];
  const rule = (id, name, type, params, severity, extra = {}) => ({ id, name, type, enabled: true, severity, allServers: true, groupIds: [], channelIds: ['c1', 'c2'],
    params, cooldownMinutes: 0, createdAt: at(800), updatedAt: at(800), ...extra });
  const d = (channelId, channelName, status, attempts, lastError = '', response = '') => ({ channelId, channelName, status, attempts, lastError, response,
    nextAttemptAt: status === 'retrying' ? at(-2) : null, updatedAt: at(1) });
  return {
    'GET /api/v1/notification-channels': { channels },
    'GET /api/v1/alert-rules': { types: ['disk_capacity', 'security_cve', 'server_unreachable', 'reboot_required'], rules: [
      rule('r1', 'Root almost full', 'disk_capacity', { percent: 90 }, 'warning'),
      rule('r2', 'Critical CVEs', 'security_cve', { minSeverity: 'critical' }, 'critical', { enabled: false }),
    ] },
    'GET /api/v1/alert-events': { events: [
      { id: 'e1', ruleId: 'r1', ruleName: 'Root almost full', ruleType: 'disk_capacity', serverId: 's-3', serverName: servers[3].name, kind: 'firing', severity: 'warning',
        message: 'The root filesystem is 93 % full (rule threshold 90 %).', createdAt: at(5),
        deliveries: [d('c1', 'ops-webhook', 'sent', 1, '', 'HTTP 200 ok'), d('c2', 'oncall-mail', 'retrying', 2, 'mail: send via mail.example.com:587: 421 try again later')] },
      { id: 'e2', ruleId: 'r1', ruleName: 'Root almost full', ruleType: 'disk_capacity', serverId: 's-4', serverName: servers[4].name, kind: 'resolved', severity: 'warning',
        message: 'Resolved: The root filesystem is 91 % full (rule threshold 90 %).', createdAt: at(60),
        deliveries: [d('c1', 'ops-webhook', 'given_up', 5, 'webhook to https://hooks.example.com/… answered HTTP 503'), d('c2', 'oncall-mail', 'pending', 0)] },
    ] },
  };
}

const signedOut = { 'GET /api/v1/auth/me': { status: 401, json: { error: 'not signed in', code: 'unauthorized' } } };
const heading = (name) => async (page) => { await page.getByRole('heading', { name, level: 1 }).waitFor(); };
const idle = async (page) => { await page.locator('.spinner').first().waitFor({ state: 'detached', timeout: 15000 }).catch(() => {}); };

// Every route of App.svelte, and the states of a page that show different
// markup (tabs, dialogs). `mocks` replaces the fleet fixtures for signed-out pages.
const pages = [
  { name: 'sign-in', path: '/#/login', mocks: signedOut, ready: async (p) => { await p.getByRole('button', { name: 'Sign in' }).waitFor(); } },
  { name: 'reset password (request)', path: '/#/reset-password', mocks: signedOut, ready: async (p) => { await p.getByRole('heading', { level: 1 }).waitFor(); } },
  { name: 'reset password (new password)', path: '/reset-password?token=abc123', mocks: signedOut, ready: async (p) => { await p.getByRole('heading', { level: 1 }).waitFor(); } },
  { name: 'activate', path: '/activate?token=abc123', mocks: signedOut, ready: async (p) => { await p.getByRole('button', { name: 'Activate' }).waitFor(); } },
  { name: 'forced 2FA setup', path: '/#/', mocks: { 'GET /api/v1/auth/me': async (req) => ({ ...(await realMe(req)), must_setup_2fa: true }) },
    ready: async (p) => { await p.getByTestId('totp-secret').waitFor(); } },
  { name: 'dashboard', path: '/#/', ready: async (p) => { await p.getByTestId('count-green').filter({ hasText: /\d/ }).waitFor(); } },
  { name: 'servers', path: '/#/servers', ready: async (p) => { await p.getByTestId('server-count').filter({ hasText: /of 40/ }).waitFor(); } },
  { name: 'servers, run on selection dialog', path: '/#/servers', ready: async (p) => {
    await p.getByTestId('server-count').filter({ hasText: /of 40/ }).waitFor();
    await p.locator('[data-row] input[type=checkbox]').first().check();
    await p.getByTestId('run-on-selection').click();
    await p.getByRole('dialog').waitFor();
  } },
  { name: 'servers, update all dialog', path: '/#/servers', ready: async (p) => {
    await p.getByTestId('server-count').filter({ hasText: /of 40/ }).waitFor();
    await p.getByRole('button', { name: 'Update all' }).click();
    await p.getByRole('dialog').waitFor();
  } },
  { name: 'bulk run', path: '/#/jobs/bulk/b-demo', ready: async (p) => { await p.getByTestId('bulk-summary').waitFor(); await p.getByRole('cell').first().waitFor(); } },
  { name: 'add server', path: '/#/servers/add', ready: heading('Add server') },
  { name: 'add server, host key step', path: '/#/servers/add', ready: async (p) => { await addServerTo(p, 2); } },
  { name: 'add server, credentials step', path: '/#/servers/add', ready: async (p) => { await addServerTo(p, 3); } },
  ...['Overview', 'Hardware', 'Packages', 'Outdated packages', 'Vulnerabilities', 'Storage', 'Containers', 'Security', 'Users', 'Jobs'].map((tab) => ({
    name: `server detail, ${tab} tab`, path: '/#/servers/s-3',
    ready: async (p) => {
      await heading(servers[3].name)(p);
      await p.getByRole('tab', { name: tab, exact: true }).click();
      await p.getByRole('tab', { name: tab, exact: true, selected: true }).waitFor();
      if (tab === 'Storage') await p.locator('figure svg').waitFor();
      if (tab === 'Users') await p.getByTestId('accounts').waitFor();
      if (tab === 'Containers') await p.getByTestId('docker-images').waitFor();
      if (tab === 'Vulnerabilities') await p.getByTestId('vuln-table').waitFor();
      await idle(p);
    },
  })),
  { name: 'add server via agent', path: '/#/servers/add-agent', ready: heading('Add server via agent') },
  { name: 'add server via agent, token and install command', path: '/#/servers/add-agent', mocks: agentMocks(false),
    ready: async (p) => { await heading('Add server via agent')(p); await p.getByLabel('Display name').fill('edge-7'); await p.getByRole('button', { name: 'Create server and token' }).click(); await p.getByTestId('agent-install-command').waitFor(); } },
  { name: 'add server via agent, connected', path: '/#/servers/add-agent', mocks: agentMocks(true),
    ready: async (p) => { await heading('Add server via agent')(p); await p.getByLabel('Display name').fill('edge-7'); await p.getByRole('button', { name: 'Create server and token' }).click(); await p.getByText('Agent connected').waitFor(); } },
  { name: 'server detail of an agent server', path: '/#/servers/s-agent', mocks: agentMocks(true), ready: async (p) => { await heading('edge-7')(p); await p.getByTestId('agent-card').waitFor(); } },
  { name: 'server detail of an agent server, new token dialog', path: '/#/servers/s-agent', mocks: agentMocks(true),
    ready: async (p) => { await heading('edge-7')(p); await p.getByRole('button', { name: 'Regenerate token…' }).click(); await p.getByRole('button', { name: 'Issue new token' }).click(); await p.getByTestId('agent-install-command').waitFor(); } },
  { name: 'portal message dialog (banner)', path: '/#/servers/s-3', ready: async (p) => { await heading(servers[3].name)(p); await p.getByRole('button', { name: 'Read more' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'server detail, reboot dialog', path: '/#/servers/s-3', ready: async (p) => { await heading(servers[3].name)(p); await p.getByRole('button', { name: 'Reboot' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'containers', path: '/#/containers', ready: async (p) => { await p.getByTestId('fleet-containers').waitFor(); await p.getByTestId('fleet-compose').waitFor(); } },
  { name: 'security', path: '/#/security', ready: async (p) => { await p.getByTestId('finding-count').waitFor(); await p.getByTestId('scanner-status').waitFor(); } },
  { name: 'security, update all dialog', path: '/#/security', ready: async (p) => { await p.getByTestId('finding-count').waitFor(); await p.getByRole('button', { name: 'Update all affected…' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'security, by package', path: '/#/security', ready: async (p) => { await p.getByRole('tab', { name: 'By package' }).click(); await p.getByRole('table', { name: 'Vulnerable packages' }).waitFor(); } },
  { name: 'security, early warning', path: '/#/security', ready: async (p) => { await p.getByRole('table', { name: 'Early-warning findings' }).waitFor(); await p.getByRole('table', { name: 'Lookup caches' }).waitFor(); await idle(p); } },
  { name: 'security, early-warning settings dialog', path: '/#/security', ready: async (p) => { await p.getByTestId('ew-state').waitFor(); await p.getByRole('button', { name: 'Settings…' }).click(); await p.getByRole('dialog', { name: 'Early-warning settings' }).waitFor(); } },
  { name: 'security, scanner disabled', path: '/#/security', mocks: (() => { const fx = fixtures(); Object.assign(fx, securityFixtures({ enabled: false }).fx); return fx; })(),
    ready: async (p) => { await p.getByTestId('scanner-disabled').waitFor(); await idle(p); } },
  { name: 'rollouts', path: '/#/rollouts', ready: async (p) => { await heading('Rollouts')(p); await p.getByRole('cell').first().waitFor(); await idle(p); } },
  { name: 'rollouts, dry-run plan', path: '/#/rollouts', ready: async (p) => {
    await heading('Rollouts')(p); await p.getByRole('button', { name: 'Preview plan' }).click(); await p.getByTestId('rollout-plan').waitFor(); } },
  { name: 'rollouts, selected servers and the approval policy', path: '/#/rollouts', ready: async (p) => {
    await heading('Rollouts')(p); await p.getByTestId('approval-policy').waitFor(); await p.getByLabel('Action').selectOption('custom:ca-1');
    await p.getByLabel('Servers', { exact: true }).selectOption('servers'); await p.getByTestId('server-picker').getByRole('checkbox').first().waitFor();
    await p.getByTestId('approval-note').waitFor(); } },
  { name: 'rollout detail', path: '/#/rollouts/r-demo', ready: async (p) => { await p.getByTestId('rollout-status').waitFor(); await p.getByRole('cell').first().waitFor(); } },
  { name: 'approvals', path: '/#/approvals', ready: async (p) => { await heading('Approvals')(p); await p.getByRole('button', { name: 'Approve' }).first().waitFor(); await p.getByTestId('approval-detail').nth(1).waitFor(); } },
  { name: 'jobs', path: '/#/jobs', ready: async (p) => { await heading('Jobs')(p); await p.getByRole('cell').first().waitFor(); } },
  { name: 'job console', path: '/#/jobs/j-demo', ready: async (p) => { await p.getByText('security upgrade finished').waitFor(); } },
  { name: 'profile', path: '/#/profile', ready: heading('Your profile') },
  { name: 'profile, 2FA setup', path: '/#/profile', ready: async (p) => { await p.getByRole('button', { name: 'Set up two-factor authentication' }).click(); await p.getByTestId('totp-secret').waitFor(); } },
  { name: 'users', path: '/#/admin/users', ready: async (p) => { await p.getByRole('cell', { name: 'mia' }).first().waitFor(); } },
  { name: 'users, roles tab', path: '/#/admin/users', ready: async (p) => { await p.getByRole('tab', { name: 'Roles' }).click(); await p.getByRole('heading', { name: 'manager' }).waitFor(); } },
  { name: 'users, set password dialog', path: '/#/admin/users', ready: async (p) => { await p.getByRole('cell', { name: 'mia' }).first().waitFor(); await p.getByRole('button', { name: 'Password' }).nth(1).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'users, invite dialog', path: '/#/admin/users', ready: async (p) => { await p.getByRole('cell', { name: 'mia' }).first().waitFor(); await p.getByRole('button', { name: 'Invite user' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'schedules and rules', path: '/#/automation?group=g-prod', ready: async (p) => { await p.getByTestId('rule').first().waitFor(); await idle(p); } },
  { name: 'schedules and rules, history', path: '/#/automation?group=g-prod', ready: async (p) => { await p.getByTestId('rule').first().waitFor(); await p.getByRole('button', { name: 'History' }).click(); await p.getByTestId('run').waitFor(); } },
  { name: 'schedules and rules, edit form', path: '/#/automation?group=g-prod', ready: async (p) => { await p.getByTestId('rule').first().waitFor(); await p.getByRole('button', { name: 'Edit' }).click(); await p.getByTestId('schedule-edit').waitFor(); } },
  { name: 'custom actions', path: '/#/custom-actions', ready: async (p) => { await p.getByTestId('custom-action').waitFor(); } },
  { name: 'custom actions, run dialog', path: '/#/custom-actions', ready: async (p) => { await p.getByTestId('custom-action').waitFor(); await p.getByRole('button', { name: 'Run…' }).click(); await p.getByRole('dialog').waitFor(); await p.getByTestId('server-picker').getByRole('checkbox').first().waitFor(); } },
  { name: 'server detail, maintenance', path: '/#/servers/s-3', ready: async (p) => { await p.getByTestId('maintenance-state').filter({ hasText: 'in maintenance' }).waitFor(); } },
  { name: 'server groups', path: '/#/admin/groups', ready: async (p) => { await heading('Server groups')(p); await idle(p); } },
  { name: 'server groups, new group dialog', path: '/#/admin/groups', ready: async (p) => { await heading('Server groups')(p); await idle(p); await p.getByRole('button', { name: 'New group' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'API keys', path: '/#/admin/apikeys', ready: async (p) => { await p.getByRole('cell', { name: 'monitoring' }).waitFor(); } },
  { name: 'API keys, create dialog', path: '/#/admin/apikeys', ready: async (p) => { await p.getByRole('button', { name: 'Create API key' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'API keys, new key shown once', path: '/#/admin/apikeys', ready: async (p) => {
    await p.getByRole('button', { name: 'Create API key' }).click();
    await p.getByLabel('Name').fill('backup-script');
    await p.getByRole('button', { name: 'Create key' }).click();
    await p.getByTestId('api-key-plaintext').waitFor();
  } },
  { name: 'security settings', path: '/#/admin/security', ready: async (p) => { await p.getByLabel('Public base URL').waitFor(); } },
  { name: 'backups', path: '/#/admin/backups', ready: async (p) => { await heading('Backups')(p); await p.getByRole('button', { name: 'Save settings' }).waitFor(); } },
  { name: 'backups, upload dialog', path: '/#/admin/backups', ready: async (p) => { await heading('Backups')(p); await p.getByRole('button', { name: 'Upload and restore' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'MCP settings', path: '/#/admin/mcp', ready: async (p) => { await p.getByTestId('mcp-snippet').waitFor(); } },
  { name: 'portal messages', path: '/#/admin/announcements', ready: async (p) => { await p.getByRole('heading', { level: 1 }).waitFor(); await idle(p); } },
  { name: 'portal messages, new message dialog', path: '/#/admin/announcements', ready: async (p) => { await p.getByRole('heading', { level: 1 }).waitFor(); await idle(p); await p.getByRole('button', { name: 'New message' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'notification channels', path: '/#/admin/notification-channels', ready: async (p) => { await p.getByRole('cell', { name: 'ops-webhook' }).waitFor(); await p.getByTestId('mail-summary').waitFor(); } },
  { name: 'notification channels, new channel dialog', path: '/#/admin/notification-channels', ready: async (p) => { await p.getByRole('cell', { name: 'ops-webhook' }).waitFor(); await p.getByRole('button', { name: 'New channel' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'notification channels, SMTP dialog', path: '/#/admin/notification-channels', ready: async (p) => { await p.getByRole('cell', { name: 'ops-webhook' }).waitFor(); await p.getByRole('row', { name: /oncall-mail/ }).getByRole('button', { name: 'Edit' }).click(); await p.getByLabel('SMTP server').waitFor(); } },
  { name: 'alert rules', path: '/#/admin/alert-rules', ready: async (p) => { await p.getByRole('cell', { name: 'Root almost full' }).waitFor(); } },
  { name: 'alert rules, new rule dialog', path: '/#/admin/alert-rules', ready: async (p) => { await p.getByRole('cell', { name: 'Root almost full' }).waitFor(); await p.getByRole('button', { name: 'New rule' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'alert history', path: '/#/admin/alert-events', ready: async (p) => { await p.getByTestId('delivery').first().waitFor(); } },
  { name: 'Linux users', path: '/#/admin/linux-users', ready: async (p) => { await heading('Linux users')(p); await idle(p); } },
  { name: 'Linux users, new user dialog', path: '/#/admin/linux-users', ready: async (p) => { await heading('Linux users')(p); await idle(p); await p.getByRole('button', { name: 'New Linux user' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'privilege profiles', path: '/#/admin/profiles', ready: async (p) => { await heading('Privilege profiles')(p); await p.locator('[data-profile="Standard user"]').waitFor(); } },
  { name: 'privilege profiles, editor with preview and a danger confirmation', path: '/#/admin/profiles', ready: async (p) => {
    await heading('Privilege profiles')(p);
    await p.getByRole('button', { name: 'New profile' }).click();
    await p.getByLabel(/Rules, one per line/).fill('/usr/bin/systemctl status nginx\n/usr/bin/tee /var/log/x');
    await p.locator('[data-code="dangerous_unconfirmed"]').waitFor();
    await p.getByLabel('Block', { exact: true }).selectOption({ label: 'Operate nginx' });
    await p.getByTestId('block-preview').filter({ hasText: 'nginx' }).waitFor();
  } },
  { name: 'Linux user activation (public)', path: '/#/linux-user-activation?token=abc123', mocks: signedOut, ready: async (p) => { await p.getByRole('button', { name: 'Set password' }).waitFor(); } },
  { name: 'updates, with the update notice', path: '/#/admin/updates', ready: async (p) => { await p.getByTestId('latest-version').waitFor(); await p.getByTestId('update-notice').waitFor(); } },
  { name: 'help', path: '/#/help', ready: async (p) => { await p.getByTestId('doc-list').getByRole('link').first().waitFor(); } },
  { name: 'help, a document', path: '/#/help/packages-deb', ready: heading('Debian packages') },
  { name: 'audit log', path: '/#/admin/audit', ready: async (p) => { await heading('Audit log')(p); await p.getByRole('cell').first().waitFor(); } },
  { name: 'mail settings', path: '/#/admin/mail', ready: async (p) => { await p.getByTestId('smtp-password-mask').waitFor(); } },
  { name: 'speech settings', path: '/#/admin/speech', ready: async (p) => { await p.getByLabel('Provider').waitFor(); await idle(p); } },
  { name: 'DNS listener settings', path: '/#/admin/dns', ready: async (p) => { await p.getByTestId('dig-command').waitFor(); } },
  { name: 'container registries', path: '/#/admin/registries', ready: async (p) => {
    await p.locator('tr[data-host="ghcr.io"]').waitFor();
    await p.getByRole('button', { name: 'Test ghcr.io' }).click();
    await p.locator('tr[data-host="ghcr.io"]').getByTestId('test-result').filter({ hasText: 'login refused' }).waitFor();
  } },
  { name: 'container registries, edit dialog', path: '/#/admin/registries', ready: async (p) => {
    await p.getByRole('button', { name: 'Edit ghcr.io' }).click();
    await p.getByRole('dialog').getByLabel('Remove the stored password').waitFor();
  } },
  { name: 'IP allowlists', path: '/#/admin/ip-allowlists', ready: async (p) => { await p.getByRole('cell', { name: 'office', exact: true }).waitFor(); } },
  { name: 'IP allowlists, new allowlist dialog', path: '/#/admin/ip-allowlists', ready: async (p) => { await p.getByRole('cell', { name: 'office', exact: true }).waitFor(); await p.getByRole('button', { name: 'New allowlist' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'server detail, Security tab, firewall and ports', path: '/#/servers/s-3', ready: async (p) => {
    await heading(servers[3].name)(p);
    await p.getByRole('tab', { name: 'Security', exact: true }).click();
    await p.getByTestId('fw-ports').getByRole('cell', { name: 'nginx' }).waitFor();
    await p.getByLabel('From', { exact: true }).selectOption('list');
    await p.getByLabel('Allowlist').waitFor();
  } },
  { name: 'server detail, enable firewall dialog', path: '/#/servers/s-3', mocks: (() => { const fx = fixtures(); fx['GET ~/api/v1/servers/s-[0-9]+/firewall'] = { tool: 'ufw', active: false, checked_at: new Date().toISOString(), scanned_at: null, rules: [], ports: [] }; return fx; })(),
    ready: async (p) => { await heading(servers[3].name)(p); await p.getByRole('tab', { name: 'Security', exact: true }).click(); await p.getByRole('button', { name: 'Enable firewall…' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'schedules', path: '/#/admin/schedules', ready: async (p) => { await p.locator('tr[data-task="refresh_all"]').waitFor(); await p.getByTestId('system-schedule').first().waitFor(); } },
  { name: 'DNS records', path: '/#/records', ready: async (p) => { await p.getByRole('link', { name: 'Web shop' }).waitFor(); await p.getByTestId('dig-command').waitFor(); } },
  { name: 'DNS records, new project dialog', path: '/#/records', ready: async (p) => { await p.getByRole('link', { name: 'Web shop' }).waitFor(); await p.getByRole('button', { name: 'New project' }).click(); await p.getByRole('dialog').waitFor(); } },
  ...['Zones', 'Templates', 'Source hosts', 'Members'].map((tab) => ({
    name: `records project, ${tab} tab`, path: `/#/records/projects/${recordsIds.project}`,
    ready: async (p) => { await heading('Web shop')(p); await p.getByRole('tab', { name: new RegExp(`^${tab}`) }).click(); await p.getByRole('tab', { name: new RegExp(`^${tab}`), selected: true }).waitFor(); },
  })),
  { name: 'records zone', path: `/#/records/zones/${recordsIds.zone}`, ready: async (p) => { await p.locator('tr[data-set="www A"]').waitFor(); } },
  { name: 'records zone, template applied (report)', path: `/#/records/zones/${recordsIds.zone}`, ready: async (p) => {
    await p.locator('tr[data-set="www A"]').waitFor();
    await p.getByLabel('Template', { exact: true }).selectOption({ label: 'shop base (2)' });
    await p.getByRole('button', { name: 'Apply template', exact: true }).click();
    await p.getByTestId('report-conflicts').waitFor();
  } },
  { name: 'records zone, edit record set dialog', path: `/#/records/zones/${recordsIds.zone}`, ready: async (p) => { await p.getByRole('button', { name: 'Edit www A' }).click(); await p.getByRole('dialog').waitFor(); } },
  { name: 'sync groups', path: '/#/records/sync-groups', ready: async (p) => { await p.locator('tr[data-set="policy TXT"]').waitFor(); } },
  { name: 'not found', path: '/#/no-such-page', ready: heading('Page not found') },
];

// Fixtures of an agent server (s-agent) whose agent is connected or not yet.
function agentMocks(online) {
  const fx = fixtures();
  const now = new Date().toISOString();
  const agent = { agent_id: '6f1c1c5e-8f0a-4d59-9a53-3b0f3f6f2b11', connected: online, online, last_seen_at: online ? now : null,
    version: online ? '1.4.0' : '', hostname: online ? 'edge-7' : '', gateway: online ? 'edge-gw-1' : '', capability: online ? 1 : 0, token_issued_at: now };
  const srv = { ...servers[3], id: 's-agent', name: 'edge-7', host: '', port: 0, transport: 'agent', host_key_fingerprint: '', agent };
  const token = 'lcmenroll_eyJhZ2VudF9pZCI6IjZmMWMxYzVlLThmMGEtNGQ1OS05YTUzLTNiMGYzZjZmMmIxMSJ9';
  const sha = '9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08';
  const install = (arch) => `( set -e; if command -v curl >/dev/null; then curl -fsSLk -o /tmp/lcm-agent 'https://lcm.example:9310/api/v1/agent/download/${arch}'; else wget -q --no-check-certificate -O /tmp/lcm-agent 'https://lcm.example:9310/api/v1/agent/download/${arch}'; fi; echo '${sha}  /tmp/lcm-agent' | sha256sum -c -; install -m 0755 /tmp/lcm-agent /usr/local/bin/lcm-agent; rm -f /tmp/lcm-agent; /usr/local/bin/lcm-agent enroll -force '${token}'; /usr/local/bin/lcm-agent install-service )`;
  fx['POST /api/v1/servers/agent'] = { status: 201, json: srv };
  fx['POST /api/v1/servers/s-agent/agent-token'] = { status: 201, json: { server_id: 's-agent', agent_id: agent.agent_id, token, gateway_url: 'wss://lcm.example:9320/mqtt',
    install: { amd64: install('amd64'), arm64: install('arm64') }, checksums: { amd64: sha, arm64: sha }, issued_at: now } };
  fx['GET /api/v1/servers/s-agent'] = srv;
  return fx;
}

// The add-server wizard up to step 2 (host key) or 3 (credentials), with the probe answered by a fixture.
async function addServerTo(page, step) {
  await page.route('**/api/v1/servers/probe', (r) => r.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify({
    host: '10.0.0.9', port: 22, key_type: 'ssh-ed25519', fingerprint_sha256: 'SHA256:3q2+7wXyZ0n9pQk4Vb1mYtR8uLs6HcE5dFg2JhK0aB4', host_key: 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl',
  }) }));
  await heading('Add server')(page);
  await page.getByLabel('Host name or IP address').fill('10.0.0.9');
  await page.getByRole('button', { name: 'Read host key' }).click();
  await page.getByTestId('fingerprint').waitFor();
  if (step < 3) return;
  await page.getByLabel("The fingerprint matches the server's host key").check();
  await page.getByRole('button', { name: 'Confirm and continue' }).click();
  await page.getByLabel('Display name').waitFor();
}

// The real /auth/me of the browser's session (for a variant of it).
async function realMe(req) {
  const r = await fetch(req.url(), { headers: await req.allHeaders() });
  return r.json();
}

const themes = ['light', 'dark'];

// A route added to App.svelte without an entry above fails here, so every
// new page is checked by axe in both themes.
test('every route of App.svelte is in the page list', () => {
  const app = fs.readFileSync(path.join(webDir, 'src', 'App.svelte'), 'utf8');
  const patterns = [...app.matchAll(/pattern: '([^']+)'/g)].map((m) => m[1]);
  assert.ok(patterns.length >= 15, `routes found: ${patterns}`);
  const routeOf = (p) => (p.includes('#') ? p.slice(p.indexOf('#') + 1) : p).split('?')[0];
  const missing = patterns.filter((pat) => {
    const re = new RegExp(`^${pat.replace(/:[a-z]+/g, '[^/]+')}$`);
    return !pages.some((pg) => re.test(routeOf(pg.path)));
  });
  assert.deepEqual(missing, [], 'add these routes to `pages` in e2e/a11y.test.mjs');
});

before(async () => {
  api = await startApi({ dev: true });
  b = await launch();
  await uiLogin(b.page, api.base, 'admin', api.adminPassword);
  await b.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(async () => {
  await b?.close();
  await api?.stop();
});

/** A new tab with the theme chosen in the app (the system preference set to the other one, so the choice must win). */
async function open(theme, mocks) {
  const page = await b.ctx.newPage();
  await page.emulateMedia({ colorScheme: theme === 'dark' ? 'light' : 'dark' });
  await page.addInitScript((t) => localStorage.setItem('lcm-theme', t), theme);
  await mockApi(page, mocks ?? fixtures());
  return page;
}

for (const theme of themes) {
  test(`axe: every page, ${theme} theme`, async () => {
    const failures = [];
    for (const pg of pages) {
      const page = await open(theme, pg.mocks);
      try {
        await page.goto(api.base + pg.path);
        await pg.ready(page);
        assert.equal(await page.evaluate(() => document.documentElement.dataset.theme), theme);
        const v = await axeViolations(page);
        if (v.length) failures.push(`${pg.name} (${theme}):\n${formatAxe(v)}`);
      } finally {
        await page.close();
      }
    }
    assert.equal(failures.length, 0, `accessibility violations:\n${failures.join('\n')}`);
  });
}

// Phones: the navigation and the tables take another shape below 820 px.
test('axe: main pages on a narrow screen (390 × 844), both themes', async () => {
  const failures = [];
  const narrow = ['sign-in', 'dashboard', 'servers', 'server detail, Overview tab', 'jobs', 'users', 'profile'];
  for (const theme of themes) {
    for (const pg of pages.filter((x) => narrow.includes(x.name))) {
      const page = await open(theme, pg.mocks);
      try {
        await page.setViewportSize({ width: 390, height: 844 });
        await page.goto(api.base + pg.path);
        await pg.ready(page);
        const v = await axeViolations(page);
        if (v.length) failures.push(`${pg.name} (${theme}, narrow):\n${formatAxe(v)}`);
      } finally {
        await page.close();
      }
    }
  }
  assert.equal(failures.length, 0, `accessibility violations:\n${failures.join('\n')}`);
});

// ---- What axe does not check: contrast of non-text UI and placeholders ----

/** WCAG relative-luminance contrast of two [r,g,b] (0–255). */
function contrast(a, c) {
  const lum = ([r, g, bl]) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(bl);
  };
  const [x, y] = [lum(a), lum(c)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

// Runs in the page: colours as [r,g,b,a] through a canvas (which resolves
// rgb(), color(srgb …) and color-mix results alike), the effective
// background by compositing ancestors.
const measureInPage = () => {
  const cx = document.createElement('canvas').getContext('2d', { willReadFrequently: true });
  const rgba = (css) => {
    cx.clearRect(0, 0, 1, 1);
    cx.fillStyle = '#000';
    cx.fillStyle = css;
    cx.fillRect(0, 0, 1, 1);
    const d = cx.getImageData(0, 0, 1, 1).data;
    return [d[0], d[1], d[2], d[3] / 255];
  };
  const over = (top, under) => [0, 1, 2].map((i) => top[i] * top[3] + under[i] * (1 - top[3])).concat(1);
  const bgOf = (el) => {
    const layers = [];
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (getComputedStyle(e).backgroundColor === 'rgba(0, 0, 0, 0)') continue;
      layers.push(c);
      if (c[3] === 1) break;
    }
    let acc = rgba(getComputedStyle(document.documentElement).backgroundColor);
    if (acc[3] < 1) acc = [255, 255, 255, 1];
    for (const l of layers.reverse()) acc = over(l, acc);
    return acc;
  };
  const visible = (el) => { const r = el.getBoundingClientRect(); return r.width > 0 && r.height > 0 && getComputedStyle(el).visibility !== 'hidden'; };
  const name = (el) => `${el.tagName.toLowerCase()}${el.id ? `#${el.id}` : ''}${el.className && typeof el.className === 'string' ? `.${el.className.trim().split(/\s+/).join('.')}` : ''}`;
  return { rgba, over, bgOf, visible, name };
};

/** The focus indicator of each element: its colour against what it is drawn on. */
async function focusRings(page, selector) {
  return page.evaluate(({ selector, lib }) => {
    const { rgba, over, bgOf, visible, name } = eval(`(${lib})`)();
    const out = [];
    for (const el of [...document.querySelectorAll(selector)].filter((e) => visible(e) && !e.matches(":disabled")).slice(0, 4)) {
      el.focus();
      const s = getComputedStyle(el);
      let ring = null;
      if (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) > 0) ring = s.outlineColor;
      else if (s.boxShadow !== 'none') {
        // The outermost shadow (largest spread) is what meets the background.
        const shadows = s.boxShadow.split(/,(?![^(]*\))/).map((x) => x.trim());
        const spread = (x) => Number((x.replace(/^(rgba?|color)\([^)]*\)\s*/, '').split(/\s+/)[3] ?? '0px').replace('px', ''));
        const outer = shadows.sort((a, c) => spread(c) - spread(a))[0];
        ring = /^(rgba?|color)\([^)]*\)/.exec(outer)?.[0] ?? null;
      }
      const against = bgOf(el.parentElement);
      out.push({ el: name(el), focusVisible: el.matches(':focus-visible'), ring: ring && over(rgba(ring), against), against });
      el.blur();
    }
    return out;
  }, { selector, lib: measureInPage.toString() });
}

/** Borders of text fields and selects against their fill and their surroundings; placeholders against the fill. */
async function fieldColours(page) {
  return page.evaluate((lib) => {
    const { rgba, over, bgOf, visible, name } = eval(`(${lib})`)();
    return [...document.querySelectorAll('input:not([type=checkbox]):not([type=radio]):not([type=hidden]), select, textarea')].filter(visible).map((el) => {
      const s = getComputedStyle(el);
      const fill = bgOf(el);
      const around = bgOf(el.parentElement);
      const ph = el.getAttribute('placeholder') ? over(rgba(getComputedStyle(el, '::placeholder').color), fill) : null;
      return { el: name(el), border: over(rgba(s.borderTopColor), around), fill, around, placeholder: ph };
    });
  }, measureInPage.toString());
}

const fmt = (c) => `rgb(${c.slice(0, 3).map(Math.round).join(',')})`;

for (const theme of themes) {
  test(`contrast of focus rings, form borders and placeholders, ${theme} theme`, async () => {
    const problems = [];
    const seen = { ring: 0, border: 0, placeholder: 0 };
    const cases = [
      { path: '/#/servers', ready: pages.find((p) => p.name === 'servers').ready, focus: '.btn, .chip, input, select, nav a, .sort' },
      { path: '/#/admin/users', ready: pages.find((p) => p.name === 'users').ready, focus: '[role=tab], .btn.sm, .btn.primary' },
      { path: '/#/servers/s-3', ready: heading(servers[3].name), focus: '[role=tab], .btn.primary, .btn.danger' },
      { path: '/#/profile', ready: heading('Your profile'), focus: 'input, .btn' },
      { path: '/#/servers/s-3', ready: pages.find((p) => p.name === 'server detail, Packages tab').ready, focus: 'input[type=search]' },
      { path: '/#/servers/add', ready: heading('Add server'), focus: 'input, select, textarea' },
      { path: '/#/admin/security', ready: pages.find((p) => p.name === 'security settings').ready, focus: 'input, textarea, .btn' },
      { path: '/#/admin/audit', ready: heading('Audit log'), focus: 'input, select' },
      { path: '/#/admin/announcements', ready: async (p) => { await p.getByRole('heading', { level: 1 }).waitFor(); await idle(p); }, focus: 'input, textarea, select, .btn' },
      { path: '/#/admin/alert-events', ready: pages.find((p) => p.name === 'alert history').ready, focus: 'select, .btn' },
      { path: '/#/login', mocks: signedOut, ready: async (p) => { await p.getByRole('button', { name: 'Sign in' }).waitFor(); }, focus: 'input, .btn, a' },
    ];
    for (const c of cases) {
      const page = await open(theme, c.mocks);
      try {
        await page.goto(api.base + c.path);
        await c.ready(page);
        for (const r of await focusRings(page, c.focus)) {
          seen.ring++;
          if (!r.focusVisible) problems.push(`${c.path} ${r.el}: focus is not :focus-visible after keyboard-style focus`);
          else if (!r.ring) problems.push(`${c.path} ${r.el}: no focus indicator (outline or box-shadow)`);
          else {
            const k = contrast(r.ring, r.against);
            if (k < 3) problems.push(`${c.path} ${r.el}: focus ring ${fmt(r.ring)} on ${fmt(r.against)} is ${k.toFixed(2)}:1 < 3:1`);
          }
        }
        for (const f of await fieldColours(page)) {
          seen.border++;
          const k = Math.min(contrast(f.border, f.fill), contrast(f.border, f.around));
          if (k < 3) problems.push(`${c.path} ${f.el}: border ${fmt(f.border)} on ${fmt(f.fill)}/${fmt(f.around)} is ${k.toFixed(2)}:1 < 3:1`);
          if (f.placeholder) {
            seen.placeholder++;
            const kp = contrast(f.placeholder, f.fill);
            if (kp < 4.5) problems.push(`${c.path} ${f.el}: placeholder ${fmt(f.placeholder)} on ${fmt(f.fill)} is ${kp.toFixed(2)}:1 < 4.5:1`);
          }
        }
      } finally {
        await page.close();
      }
    }
    assert.deepEqual(problems, []);
    assert.ok(seen.ring >= 20 && seen.border >= 10 && seen.placeholder >= 4, `measured too little: ${JSON.stringify(seen)}`);
  });
}

// ---- Keyboard behaviour ----

const focused = (page) => page.evaluate(() => {
  const a = document.activeElement;
  return { id: a?.id ?? '', text: a?.textContent?.trim() ?? '', inDialog: !!a?.closest('dialog[open]'), role: a?.getAttribute('role') ?? '' };
});

test('Users and Roles tabs follow the WAI-ARIA tabs pattern', async () => {
  const page = await open('light');
  try {
    await page.goto(`${api.base}/#/admin/users`);
    await page.getByRole('cell', { name: 'mia' }).first().waitFor();
    const users = page.getByRole('tab', { name: 'Users' });
    const roles = page.getByRole('tab', { name: 'Roles' });
    assert.equal(await page.getByRole('tablist', { name: 'Users and roles' }).count(), 1);
    assert.equal(await users.getAttribute('tabindex'), '0');
    assert.equal(await roles.getAttribute('tabindex'), '-1', 'only the selected tab is in the Tab order');
    const panel = page.getByRole('tabpanel');
    assert.equal(await panel.getAttribute('aria-labelledby'), await users.getAttribute('id'));
    assert.equal(await users.getAttribute('aria-controls'), await panel.getAttribute('id'));

    await users.focus();
    await page.keyboard.press('ArrowRight');
    assert.equal(await roles.getAttribute('aria-selected'), 'true');
    assert.equal((await focused(page)).id, await roles.getAttribute('id'));
    assert.equal(await panel.getAttribute('aria-labelledby'), await roles.getAttribute('id'));
    await page.getByRole('heading', { name: 'manager' }).waitFor();
    await page.keyboard.press('ArrowRight'); // wraps
    assert.equal(await users.getAttribute('aria-selected'), 'true');
    await page.keyboard.press('End');
    assert.equal(await roles.getAttribute('aria-selected'), 'true');
    await page.keyboard.press('Home');
    assert.equal(await users.getAttribute('aria-selected'), 'true');
    await page.keyboard.press('ArrowLeft');
    assert.equal(await roles.getAttribute('aria-selected'), 'true');
    assert.equal(await users.getAttribute('tabindex'), '-1');
    // Tab leaves the tab list for the panel.
    await page.keyboard.press('Tab');
    assert.equal((await focused(page)).role, 'tabpanel');
    await expectNoAxeViolations(page, 'users, roles tab after keyboard use');
  } finally {
    await page.close();
  }
});

test('dialogs focus the first field, trap Tab, close on Escape and give focus back', async () => {
  const page = await open('dark');
  try {
    await page.goto(`${api.base}/#/admin/users`);
    await page.getByRole('cell', { name: 'mia' }).first().waitFor();
    const invite = page.getByRole('button', { name: 'Invite user' });
    await invite.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Invite user' }).waitFor();
    await page.waitForFunction(() => document.activeElement?.id === 'nu-username');
    // Tab cycles inside the dialog, both ways.
    const seen = new Set();
    for (let i = 0; i < 14; i++) {
      await page.keyboard.press('Tab');
      const f = await focused(page);
      assert.ok(f.inDialog, `Tab ${i + 1} left the dialog (focus on ${JSON.stringify(f)})`);
      seen.add(f.id || f.text);
    }
    assert.ok(seen.has('nu-username') && seen.has('Send invitation') && seen.has('×'), `Tab went round the dialog: ${[...seen]}`);
    await page.getByLabel('User name').focus();
    await page.keyboard.press('Shift+Tab');
    assert.ok((await focused(page)).inDialog, 'Shift+Tab stays in the dialog');
    await expectNoAxeViolations(page, 'invite dialog (dark)');
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    assert.equal((await focused(page)).text, 'Invite user', 'focus is back on the button that opened the dialog');

    // A confirmation without fields focuses its first button: Cancel, not the destructive one.
    const del = page.getByRole('button', { name: 'Delete mia' });
    await del.focus();
    await page.keyboard.press('Enter');
    await page.getByRole('dialog', { name: 'Delete user' }).waitFor();
    await page.waitForFunction(() => document.activeElement?.textContent?.trim() === 'Cancel');
    await page.keyboard.press('Enter');
    await page.getByRole('dialog').waitFor({ state: 'hidden' });
    assert.equal((await focused(page)).text, 'Delete');
  } finally {
    await page.close();
  }
});

test('single-key shortcuts work and can be turned off in the profile, per browser', async () => {
  const page = await open('light');
  try {
    await page.goto(`${api.base}/#/`);
    await page.getByTestId('count-green').filter({ hasText: /\d/ }).waitFor();
    await page.keyboard.press('g');
    await page.keyboard.press('s');
    await page.waitForURL(/#\/servers$/);
    await page.getByTestId('server-count').filter({ hasText: /of 40/ }).waitFor();
    assert.match(await page.locator('#srv-q').getAttribute('placeholder'), /\( \/ \)/, 'the search field names its shortcut');

    await page.goto(`${api.base}/#/profile`);
    const toggle = page.getByRole('checkbox', { name: 'Single-key shortcuts' });
    assert.equal(await toggle.isChecked(), true, 'on by default');
    await toggle.uncheck();
    assert.equal(await page.evaluate(() => localStorage.getItem('lcm-shortcuts')), 'off');
    await expectNoAxeViolations(page, 'profile with the shortcut setting');

    // Off survives a reload; the keys then do nothing (the handler runs
    // synchronously in keydown, which press() waits for).
    await page.goto(`${api.base}/#/servers`);
    await page.reload();
    await page.getByTestId('server-count').filter({ hasText: /of 40/ }).waitFor();
    await page.locator('main h1').focus();
    await page.keyboard.press('/');
    assert.notEqual((await focused(page)).id, 'srv-q', '"/" no longer jumps to the search field');
    await page.keyboard.press('g');
    await page.keyboard.press('d');
    assert.match(page.url(), /#\/servers$/, '"g d" no longer navigates');
    assert.doesNotMatch(await page.locator('#srv-q').getAttribute('placeholder'), /\( \/ \)/);

    await page.goto(`${api.base}/#/profile`);
    await toggle.check();
    assert.equal(await page.evaluate(() => localStorage.getItem('lcm-shortcuts')), null);
    await page.locator('main h1').focus();
    await page.keyboard.press('g');
    await page.keyboard.press('d');
    await page.waitForURL(/#\/$/);
  } finally {
    await page.close();
  }
});

// The tests above choose the theme in the app; "Auto" follows the system
// through a media query that repeats the dark tokens. Both must match.
test('the system theme gives the same colours as the chosen one', async () => {
  const tokens = async (theme, system) => {
    const page = await b.ctx.newPage();
    try {
      await page.emulateMedia({ colorScheme: system });
      await page.addInitScript((t) => (t ? localStorage.setItem('lcm-theme', t) : localStorage.removeItem('lcm-theme')), theme);
      await mockApi(page, signedOut);
      await page.goto(`${api.base}/#/login`);
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      return await page.evaluate(() => {
        const names = new Set();
        for (const sheet of document.styleSheets) {
          for (const rule of sheet.cssRules) {
            const rules = rule.cssRules ? [...rule.cssRules] : [rule];
            for (const r of rules) if (r.selectorText?.startsWith(':root')) for (const p of r.style) if (p.startsWith('--')) names.add(p);
          }
        }
        const s = getComputedStyle(document.documentElement);
        return Object.fromEntries([...names].sort().map((n) => [n, s.getPropertyValue(n).trim()]).concat([['color-scheme', s.colorScheme]]));
      });
    } finally {
      await page.close();
    }
  };
  const autoDark = await tokens(null, 'dark');
  assert.ok(Object.keys(autoDark).length > 20 && '--control-border' in autoDark, `tokens found: ${Object.keys(autoDark)}`);
  assert.deepEqual(autoDark, await tokens('dark', 'light'));
  assert.deepEqual(await tokens(null, 'light'), await tokens('light', 'dark'));
});
