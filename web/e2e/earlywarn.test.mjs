// The early warning on the Security page (docs/early-warning.md): findings
// of the poll with acknowledge, status, poll now, mirror now, the lookup
// caches and the on/off switch. The real lcm-api serves the app; the data
// comes from page.route (mocks.mjs securityFixtures).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch } from './helpers.mjs';
import { mockApi, fleetFixtures, makeServers, securityFixtures } from './mocks.mjs';

let api;
let b;

before(async () => {
  api = await startApi({ dev: true });
  b = await launch();
});
after(async () => {
  await b?.close();
  await api?.stop();
});

async function open(opts) {
  const { fx, seen } = securityFixtures(opts);
  const page = await b.ctx.newPage();
  await mockApi(page, { ...fleetFixtures(makeServers(8)), ...fx });
  await page.goto(`${api.base}/#/security`);
  return { page, seen };
}

test('early warning: findings, acknowledge, poll now, mirror now, caches', async () => {
  const { page, seen } = await open();
  const card = page.getByTestId('early-warning');
  await card.getByRole('heading', { name: 'Early warning' }).waitFor();
  assert.equal(await card.getByTestId('ew-state').textContent(), 'on');
  const table = card.getByRole('table', { name: 'Early-warning findings' });
  await table.waitFor();
  assert.deepEqual(await table.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.advisory)), ['DSA-5724-1', 'UBUNTU-CVE-2024-6387']);
  await card.getByTestId('ew-count').getByText('2 open early-warning findings').waitFor();
  await card.getByRole('table', { name: 'Advisory poll positions' }).getByRole('cell', { name: 'Debian' }).waitFor();
  await card.getByRole('table', { name: 'Lookup caches' }).getByRole('cell', { name: '80 %' }).waitFor();
  await card.getByText('no configured source carries an exploitation signal').waitFor();

  await card.getByRole('button', { name: 'Acknowledge DSA-5724-1 for openssh-server on web-00004' }).click();
  await card.getByTestId('ew-count').getByText('1 open early-warning finding').waitFor();
  assert.deepEqual(seen.ewAcks, [11]);
  await card.getByLabel('Show').selectOption('acknowledged');
  await table.locator('tr[data-advisory="DSA-5724-1"]').getByText('acknowledged').waitFor();

  await card.getByRole('button', { name: 'Poll now' }).click();
  await page.getByText('Poll finished: 0 new early-warning findings.').waitFor();
  assert.equal(seen.polls, 1);
  await card.getByRole('button', { name: 'Mirror now' }).click();
  await page.getByText('Mirror download started.').waitFor();
  assert.equal(seen.mirrors, 1);
  await page.close();
});

test('early warning: off by default, switched on in its settings', async () => {
  const { page, seen } = await open({ earlyWarning: false });
  const card = page.getByTestId('early-warning');
  await card.getByTestId('ew-empty').waitFor();
  assert.equal(await card.getByTestId('ew-state').textContent(), 'off');
  assert.equal(await card.getByRole('button', { name: 'Poll now' }).isDisabled(), true);
  await card.getByText('new advisories are not polled').waitFor();

  await card.getByRole('button', { name: 'Settings…' }).click();
  const dlg = page.getByRole('dialog', { name: 'Early-warning settings' });
  await dlg.waitFor();
  await dlg.getByLabel('Poll new advisories every 15 minutes').check();
  await dlg.getByRole('button', { name: 'Save' }).click();
  await page.getByText('Early warning switched on.').waitFor();
  await card.getByTestId('ew-state').getByText('on').waitFor();
  assert.deepEqual(seen.ewSettings, [{ enabled: true, base_url: 'https://osv-vulnerabilities.storage.googleapis.com' }]);
  assert.equal(await card.getByRole('button', { name: 'Poll now' }).isDisabled(), false);
  await page.close();
});
