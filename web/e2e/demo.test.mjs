// The real lcm-api in --demo (issue 24): the dashboard cards, the Updates
// column and the server page show the counters of the inventory (they read
// 0 before), the Refresh button's job is named "Refresh inventory", and a
// simulated security upgrade changes the numbers on every page.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, apiLogin, apiFetch } from './helpers.mjs';

let api;
let b;

before(async () => {
  api = await startApi({ dev: true, args: ['--demo'] });
  b = await launch();
});
after(async () => {
  await b?.close();
  await api?.stop();
});

async function servers(tok) {
  const r = await apiFetch(api.base, '/api/v1/servers', { headers: { Authorization: `Bearer ${tok}` } });
  assert.equal(r.status, 200, r.text);
  return Object.fromEntries(r.json.map((s) => [s.name, s]));
}

test('demo counters on the dashboard, the server list and the server page', async () => {
  const tok = await apiLogin(api, 'admin', api.adminPassword);
  let byName = await servers(tok);
  const all = Object.values(byName);
  const pending = all.reduce((n, s) => n + s.security_updates, 0);
  const reboots = all.filter((s) => s.reboot_required).length;
  assert.ok(pending > 0 && reboots > 0, `the demo fleet has pending security updates and a reboot: ${pending}, ${reboots}`);
  const app = byName['app-01'];
  assert.deepEqual([app.updates_available, app.security_updates, app.reboot_required], [2, 1, true]);

  const { page } = b;
  await uiLogin(page, api.base, 'admin', api.adminPassword);
  const facts = page.locator('.light.facts');
  await facts.getByText('pending security updates').waitFor();
  await page.waitForFunction(([p, r]) => {
    const n = [...document.querySelectorAll('.light.facts .n')].map((e) => e.textContent.trim());
    return n[0] === String(p) && n[1] === String(r);
  }, [pending, reboots]);

  await page.goto(`${api.base}/#/servers`);
  const row = page.locator('[data-row]', { hasText: 'app-01' });
  await row.locator('.c-upd').getByText('1 sec').waitFor();
  assert.equal((await row.locator('.c-upd .muted').textContent()).trim(), '2');
  await row.getByText('reboot').waitFor();

  await page.goto(`${api.base}/#/servers/${app.id}`);
  await page.getByText('Reboot required').first().waitFor();
  // Refresh is named after the click, in the job console and the history.
  await page.getByRole('button', { name: 'Refresh', exact: true }).click();
  await page.getByRole('heading', { name: 'Refresh inventory' }).waitFor();

  // A simulated security upgrade of mail-01: its numbers drop everywhere.
  const mail = byName['mail-01'];
  assert.equal(mail.security_updates, 1);
  await page.goto(`${api.base}/#/servers/${mail.id}`);
  await page.getByRole('button', { name: 'Upgrade security' }).click();
  await page.getByRole('heading', { name: 'Install security updates' }).waitFor();
  await page.getByText('Upgrading postfix').waitFor();
  for (let i = 0; ; i++) {
    byName = await servers(tok);
    if (byName['mail-01'].security_updates === 0 && byName['mail-01'].status === 'green') break;
    assert.ok(i < 100, `mail-01 after the upgrade: ${JSON.stringify(byName['mail-01'])}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  await page.goto(`${api.base}/#/`);
  await page.waitForFunction((p) => document.querySelector('.light.facts .n')?.textContent.trim() === String(p), pending - 1);
  assert.deepEqual(b.errors.filter((e) => !/Failed to load resource/.test(e)), []);
});
