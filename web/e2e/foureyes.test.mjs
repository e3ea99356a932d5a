// Issue 20 in the browser against the real lcm-api and a real simulated
// fleet (cmd/fleetsim, onboarded through the API):
// - a rollout of a custom action on selected servers, paused and resumed
//   from its page, then aborted;
// - the approval policy switched on in the UI: "Update all" on the Servers
//   page becomes a rollout waiting for approval, which a second person
//   (another admin, in their own browser) approves from the inbox, and it
//   runs to the end;
// - a custom action run from its page on a selected server, with its live
//   job output;
// - the maintenance toggle on a server page.
// axe checks every changed page in both themes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { spawn, execFileSync } from 'node:child_process';
import { startApi, launch, uiLogin, apiLogin, apiFetch, repoRoot, sleep, expectNoAxeViolations } from './helpers.mjs';

const N = 3;

async function startFleetsim(n) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-fleetsim-'));
  const bin = path.join(dir, 'fleetsim');
  execFileSync('go', ['build', '-o', bin, './cmd/fleetsim'], { cwd: repoRoot, stdio: 'inherit' });
  const proc = spawn(bin, ['-n', String(n), '-latency', '30ms', '-packages', '100', '-upgradable', '6', '-security', '2'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const hosts = [];
  const rl = readline.createInterface({ input: proc.stdout });
  for await (const line of rl) {
    hosts.push(JSON.parse(line));
    if (hosts.length === n) break;
  }
  return { hosts, stop: () => { proc.kill('SIGTERM'); fs.rmSync(dir, { recursive: true, force: true }); } };
}

async function onboard(api, auth, hosts) {
  const ids = [];
  const jobs = [];
  for (const h of hosts) {
    const [host, port] = h.addr.split(':');
    const probe = await apiFetch(api.base, '/api/v1/servers/probe', { method: 'POST', headers: auth, body: { host, port: Number(port) } });
    const join = await apiFetch(api.base, '/api/v1/servers/join', { method: 'POST', headers: auth, body: {
      name: `sim-${String(h.index).padStart(2, '0')}`, host, port: Number(port), username: 'debian', auth: 'password', password: 'bootstrap', host_key: probe.json.host_key,
    } });
    assert.equal(join.status, 202, join.text);
    ids.push(join.json.server.id);
    jobs.push(join.json.job_id);
  }
  for (const id of jobs) {
    const deadline = Date.now() + 120000;
    for (;;) {
      const j = await apiFetch(api.base, `/api/v1/jobs/${id}`, { headers: auth });
      if (j.json?.status === 'success') break;
      assert.ok(!['failed', 'aborted', 'blocked'].includes(j.json?.status), `join ${id}: ${j.text}`);
      assert.ok(Date.now() < deadline, `join ${id} still ${j.json?.status}`);
      await sleep(200);
    }
  }
  return ids;
}

async function bothThemes(page, label) {
  for (const theme of ['light', 'dark']) {
    await page.evaluate((t) => document.documentElement.setAttribute('data-theme', t), theme);
    await expectNoAxeViolations(page, `${label} (${theme})`);
  }
}

test('four eyes, custom action rollouts and runs, pause/resume, maintenance', { timeout: 600000 }, async () => {
  const sim = await startFleetsim(N);
  const api = await startApi({ dev: true });
  const admin = await launch();
  let carolBrowser;
  try {
    const token = await apiLogin(api, 'admin', api.adminPassword);
    const auth = { Authorization: `Bearer ${token}` };
    const ids = await onboard(api, auth, sim.hosts);
    const carolPw = 'Harbor-Lilac-5120!';
    const carol = await apiFetch(api.base, '/api/v1/users', { method: 'POST', headers: auth, body: {
      username: 'carol', first_name: 'Carol', last_name: 'Second', email: 'carol@example.org', password: carolPw, roles: ['admin'] } });
    assert.ok(carol.status < 300, carol.text);
    const ca = await apiFetch(api.base, '/api/v1/custom-actions', { method: 'POST', headers: auth, body: { name: 'say hi', commands: ['echo hi-from-custom'] } });
    assert.equal(ca.status, 201, ca.text);

    const { page } = admin;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();

    // 1. A rollout of the custom action on two selected servers, one per
    //    batch with a long pause: paused, resumed and aborted from its page.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rollouts' }).click();
    await page.getByRole('heading', { name: 'Rollouts', level: 1 }).waitFor();
    await page.getByLabel('Action').selectOption({ label: 'Custom action: say hi' });
    await page.getByLabel('Servers', { exact: true }).selectOption('servers');
    const picker = page.getByTestId('server-picker');
    await picker.getByLabel('sim-00').check();
    await picker.getByLabel('sim-01').check();
    await picker.getByText('(2 selected)').waitFor();
    await page.getByLabel('Batch size (0: one batch)').fill('1');
    await page.getByLabel('Pause between batches (s)').fill('3600');
    await bothThemes(page, 'rollouts, server selection');
    await page.getByRole('button', { name: 'Preview plan' }).click();
    const plan = page.getByTestId('rollout-plan');
    await plan.getByText('Custom action: say hi on 2 servers in 2 batches').waitFor();
    await plan.getByRole('button', { name: 'Start rollout' }).click();
    await page.waitForURL(/#\/rollouts\/[^/]+$/);
    await page.getByRole('heading', { name: 'Rollout: Custom action: say hi' }).waitFor();
    const status = page.getByTestId('rollout-status');
    await status.filter({ hasText: '1 of 2 servers done' }).waitFor({ timeout: 60000 });
    await status.filter({ hasText: 'Running' }).waitFor();
    await page.getByRole('button', { name: 'Pause' }).click();
    await status.filter({ hasText: 'Paused' }).waitFor();
    await bothThemes(page, 'rollout detail (paused)');
    await page.getByRole('button', { name: 'Resume' }).click();
    await status.filter({ hasText: 'Running' }).waitFor();
    const roID = page.url().split('/').pop();
    const ro = await apiFetch(api.base, `/api/v1/rollouts/${roID}`, { headers: auth });
    assert.equal(ro.json.status, 'running', ro.text);
    await page.getByRole('button', { name: 'Abort' }).click();
    await status.filter({ hasText: 'Aborted' }).waitFor();
    await page.getByRole('link', { name: 'Job output' }).first().click();
    await page.getByTestId('console').filter({ hasText: 'hi-from-custom' }).waitFor({ timeout: 30000 });

    // 2. The approval policy, switched on in the UI: "Update all" waits as
    //    a rollout for a second person.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rollouts' }).click();
    const policy = page.getByTestId('approval-policy');
    await policy.getByRole('checkbox').check();
    await page.getByText('Every rollout and Update all now need a second person').waitFor();
    assert.equal((await apiFetch(api.base, '/api/v1/settings/rollouts', { headers: auth })).json.require_approval, true);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Servers' }).click();
    await page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Update all' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Install security updates' }).click();
    await page.waitForURL(/#\/rollouts\/[^/]+$/);
    await status.filter({ hasText: 'Awaiting approval' }).waitFor();
    const updateAllID = page.url().split('/').pop();

    // The second person approves in their own browser.
    carolBrowser = await launch();
    const cp = carolBrowser.page;
    await uiLogin(cp, api.base, 'carol', carolPw);
    await cp.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await cp.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Approvals' }).click();
    await cp.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor();
    const item = cp.locator('article').filter({ hasText: 'Security updates' }).filter({ hasText: 'requested by admin' });
    await item.getByRole('button', { name: 'Approve' }).waitFor();
    await bothThemes(cp, 'approvals inbox of a second person');
    await item.getByLabel('Comment').fill('checked the plan');
    await item.getByRole('button', { name: 'Approve' }).click();
    await cp.getByRole('cell', { name: 'checked the plan' }).waitFor();
    await status.filter({ hasText: 'Completed' }).waitFor({ timeout: 120000 });
    const done = await apiFetch(api.base, `/api/v1/rollouts/${updateAllID}`, { headers: auth });
    assert.equal(done.json.status, 'completed', done.text);
    assert.equal(done.json.servers, N);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rollouts' }).click();
    await page.getByTestId('approval-policy').getByRole('checkbox').uncheck();
    await page.getByText('Rollouts start without approval').waitFor();

    // 3. A custom action run from its page on a selected server.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Custom actions' }).click();
    await page.getByRole('heading', { name: 'Custom actions', level: 1 }).waitFor();
    await page.getByTestId('custom-action').filter({ hasText: 'say hi' }).getByRole('button', { name: 'Run…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByTestId('server-picker').getByLabel('sim-02').check();
    await bothThemes(page, 'custom action run dialog');
    await dialog.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/#\/jobs\/bulk\/[^/]+$/);
    await page.getByTestId('bulk-summary').filter({ hasText: '1 of 1 jobs finished' }).waitFor({ timeout: 60000 });
    await page.locator('tr[data-server="sim-02"]').getByRole('link', { name: 'Output' }).click();
    await page.getByTestId('console').filter({ hasText: 'hi-from-custom' }).waitFor({ timeout: 30000 });

    // 4. Maintenance on and off from the server page.
    await page.goto(`${api.base}/#/servers/${ids[0]}`);
    const card = page.getByTestId('maintenance-card');
    await card.getByLabel('Reason').fill('disk swap');
    await card.getByRole('button', { name: 'Start maintenance' }).click();
    await card.getByTestId('maintenance-state').filter({ hasText: 'in maintenance' }).waitFor();
    const m = await apiFetch(api.base, `/api/v1/servers/${ids[0]}/maintenance`, { headers: auth });
    assert.equal(m.json.maintenance.active, true, m.text);
    assert.equal(m.json.maintenance.reason, 'disk swap');
    await bothThemes(page, 'server page in maintenance');
    await card.getByRole('button', { name: 'End maintenance' }).click();
    await card.getByTestId('maintenance-state').filter({ hasText: 'off' }).waitFor();
    const audit = await apiFetch(api.base, '/api/v1/audit?action=server.maintenance.end', { headers: auth });
    assert.equal(audit.json.items.length, 1, audit.text);
  } finally {
    if (carolBrowser) await carolBrowser.close();
    await admin.close();
    await api.stop();
    sim.stop();
  }
});
