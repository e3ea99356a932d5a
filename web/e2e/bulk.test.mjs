// Bulk runs against a real simulated fleet: cmd/fleetsim's pristine Debian
// hosts are onboarded through the API (probe, join), then the servers list
// selects some of them and runs one action on the selection, the progress
// view follows the run to the end, and "Update all" installs security
// updates on every server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { spawn, execFileSync } from 'node:child_process';
import { startApi, launch, uiLogin, apiLogin, apiFetch, repoRoot, sleep, shot, expectNoAxeViolations } from './helpers.mjs';

const N = 6;

async function startFleetsim(n) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-fleetsim-'));
  const bin = path.join(dir, 'fleetsim');
  execFileSync('go', ['build', '-o', bin, './cmd/fleetsim'], { cwd: repoRoot, stdio: 'inherit' });
  const proc = spawn(bin, ['-n', String(n), '-latency', '100ms', '-packages', '200', '-upgradable', '10', '-security', '4'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const hosts = [];
  const rl = readline.createInterface({ input: proc.stdout });
  for await (const line of rl) {
    hosts.push(JSON.parse(line));
    if (hosts.length === n) break;
  }
  return { hosts, stop: () => { proc.kill('SIGTERM'); fs.rmSync(dir, { recursive: true, force: true }); } };
}

async function onboard(api, token, hosts) {
  const auth = { Authorization: `Bearer ${token}` };
  const jobs = [];
  for (const h of hosts) {
    const [host, port] = h.addr.split(':');
    const probe = await apiFetch(api.base, '/api/v1/servers/probe', { method: 'POST', headers: auth, body: { host, port: Number(port) } });
    assert.equal(probe.json?.fingerprint_sha256, h.fingerprint, probe.text);
    const join = await apiFetch(api.base, '/api/v1/servers/join', { method: 'POST', headers: auth, body: {
      name: `sim-${String(h.index).padStart(2, '0')}`, host, port: Number(port), username: 'debian', auth: 'password', password: 'bootstrap', host_key: probe.json.host_key,
    } });
    assert.equal(join.status, 202, join.text);
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
}

test('run on a selection and update all, with live progress', { timeout: 600000 }, async () => {
  const sim = await startFleetsim(N);
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    await onboard(api, await apiLogin(api, 'admin', api.adminPassword), sim.hosts);
    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${api.base}/#/servers`);
    await page.getByTestId('server-count').filter({ hasText: `of ${N}` }).waitFor();
    const run = page.getByTestId('run-on-selection');
    assert.equal(await run.isDisabled(), true, 'nothing selected: the action is disabled');
    for (const name of ['sim-00', 'sim-02', 'sim-04']) await page.getByRole('checkbox', { name: `Select ${name}` }).check();
    await page.getByRole('button', { name: 'Run on selection (3)' }).click();
    const dlg = page.getByRole('dialog', { name: 'Run on selection' });
    await dlg.getByLabel('Action').selectOption('refresh');
    await dlg.getByRole('button', { name: 'Start on 3 servers' }).click();
    await page.waitForURL(/#\/jobs\/bulk\/[^/]+$/);
    await page.getByRole('heading', { name: 'Refresh inventory', level: 1 }).waitFor();
    await page.getByTestId('bulk-summary').filter({ hasText: '3 of 3 jobs finished' }).waitFor({ timeout: 120000 });
    assert.equal(await page.locator('tbody tr').count(), 3);
    assert.equal(await page.locator('tbody [data-status=success]').count(), 3);
    await expectNoAxeViolations(page, 'bulk run (finished)');

    // Update all: every server, security updates, then the counters.
    await page.goto(`${api.base}/#/servers`);
    await page.getByTestId('server-count').filter({ hasText: `of ${N}` }).waitFor();
    await page.getByRole('button', { name: 'Update all' }).click();
    await page.getByRole('dialog', { name: 'Update all' }).getByRole('button', { name: 'Install security updates' }).click();
    await page.waitForURL(/#\/jobs\/bulk\/[^/]+$/);
    await page.getByRole('heading', { name: 'Update all: security updates', level: 1 }).waitFor();
    await page.getByTestId('bulk-summary').filter({ hasText: `${N} of ${N} jobs finished` }).waitFor({ timeout: 120000 });
    await shot(page, 'bulk-run');
    assert.equal(await page.locator('tbody [data-status=success]').count(), N);
    // The run's rows link to each job's console.
    await page.getByRole('link', { name: 'Output' }).first().click();
    await page.waitForURL(/#\/jobs\/[^/]+$/);
    await page.getByTestId('console').filter({ hasText: 'lcm: security updates:' }).waitFor({ timeout: 30000 });
  } finally {
    await b.close();
    await api.stop();
    sim.stop();
  }
});
