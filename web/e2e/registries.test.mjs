// Container registries (issue 15, docs/registries.md) against the real
// lcm-api and a real registry (Debian's docker-registry on 127.0.0.1):
// store credentials, see the password only as "stored (encrypted)", test
// the connection (connected / unreachable), remove the password, delete.
// The password never reaches the page or an API answer.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import {
  apiFetch, apiLogin, freePort, requireOrSkip, expectNoAxeViolations, sleep, signedInAdmin,
} from './helpers.mjs';

const SECRET = 'Registry-Pass-Juniper-4417';
const BIN = '/usr/bin/docker-registry';

/** Starts an open docker-registry on 127.0.0.1 and waits for /v2/. */
async function startRegistry() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-web-registry-'));
  const port = await freePort();
  const cfg = `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${dir}/storage\nhttp:\n  addr: 127.0.0.1:${port}\n  secret: lcm-e2e\n`;
  fs.writeFileSync(path.join(dir, 'config.yml'), cfg);
  const proc = spawn(BIN, ['serve', path.join(dir, 'config.yml')], { stdio: 'ignore' });
  const host = `127.0.0.1:${port}`;
  const end = Date.now() + 20000;
  for (;;) {
    try {
      const r = await fetch(`http://${host}/v2/`);
      if (r.status === 200) break;
    } catch { /* not yet listening */ }
    if (Date.now() > end) throw new Error('docker-registry did not start');
    await sleep(50);
  }
  return { host, stop: () => { proc.kill(); fs.rmSync(dir, { recursive: true, force: true }); } };
}

test('container registries: store, mask, test, remove the password, delete', async (t) => {
  if (!requireOrSkip(t, fs.existsSync(BIN), 'docker-registry (Debian package docker-registry) is not installed')) return;
  const reg = await startRegistry();
  const { api, b, page } = await signedInAdmin();
  try {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Container registries' }).click();
    await page.getByRole('heading', { name: 'Container registries', level: 1 }).waitFor();
    await page.getByTestId('registries-empty').waitFor();

    // Add the local registry with a user and password, plain HTTP.
    await page.getByRole('button', { name: 'Add registry' }).click();
    const dlg = page.getByRole('dialog');
    await dlg.getByLabel('Host').fill(reg.host);
    await dlg.getByLabel('User name').fill('ci');
    await dlg.getByLabel('Password or access token').fill(SECRET);
    await dlg.getByLabel(/Plain HTTP/).check();
    await expectNoAxeViolations(page, 'registry dialog');
    await dlg.getByRole('button', { name: 'Save' }).click();
    await page.getByText('Registry saved.').first().waitFor();
    const row = page.locator(`tr[data-host="${reg.host}"]`);
    await row.getByTestId('password-state').filter({ hasText: 'stored (encrypted)' }).waitFor();
    await row.getByRole('cell', { name: 'plain HTTP' }).waitFor();

    // The test reaches the registry.
    await row.getByRole('button', { name: `Test ${reg.host}` }).click();
    await row.getByTestId('test-result').filter({ hasText: 'connected' }).waitFor();

    // A registry nobody answers for: the test says so.
    await page.getByRole('button', { name: 'Add registry' }).click();
    await dlg.getByLabel('Host').fill('127.0.0.1:1');
    await dlg.getByLabel(/Plain HTTP/).check();
    await dlg.getByRole('button', { name: 'Save' }).click();
    const dead = page.locator('tr[data-host="127.0.0.1:1"]');
    await dead.getByRole('button', { name: 'Test 127.0.0.1:1' }).click();
    await dead.getByTestId('test-result').filter({ hasText: 'unreachable' }).waitFor();

    // Bad input is refused in the dialog.
    await page.getByRole('button', { name: 'Add registry' }).click();
    await dlg.getByLabel('Host').fill('https://ghcr.io/x');
    await dlg.getByRole('button', { name: 'Save' }).click();
    await dlg.getByRole('alert').filter({ hasText: 'no scheme' }).waitFor();
    await dlg.getByRole('button', { name: 'Cancel' }).click();
    await expectNoAxeViolations(page, 'registries');

    assert.ok(!(await page.content()).includes(SECRET), 'the page never holds the password');
    const tok = await apiLogin(api, 'admin', api.adminPassword);
    const got = await apiFetch(api.base, '/api/v1/settings/registries', { headers: { Authorization: `Bearer ${tok}` } });
    assert.equal(got.status, 200);
    assert.equal(got.json.registries.length, 2);
    assert.ok(!JSON.stringify(got.json).includes(SECRET), 'the API never returns the password');
    assert.equal(got.json.registries.find((r) => r.host === reg.host).has_password, true);

    // Remove the stored password, then delete the dead registry.
    await row.getByRole('button', { name: `Edit ${reg.host}` }).click();
    await dlg.getByLabel('Remove the stored password').check();
    await dlg.getByRole('button', { name: 'Save' }).click();
    await row.getByTestId('password-state').filter({ hasText: 'none' }).waitFor();
    await dead.getByRole('button', { name: 'Delete 127.0.0.1:1' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await dead.waitFor({ state: 'detached' });
    await row.waitFor();

    const audit = await apiFetch(api.base, '/api/v1/audit?limit=50', { headers: { Authorization: `Bearer ${tok}` } });
    const actions = audit.json.items.map((i) => i.action);
    for (const a of ['registry.create', 'registry.test', 'registry.update', 'registry.delete']) assert.ok(actions.includes(a), `audit has ${a}`);
    assert.ok(!JSON.stringify(audit.json).includes(SECRET), 'the audit log never holds the password');
  } finally {
    await b.close();
    await api.stop();
    reg.stop();
  }
});
