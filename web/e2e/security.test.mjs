// Vulnerability scanning in the UI (issue 16): the server's Vulnerabilities
// tab (findings, one in a container, acknowledge, scan now, SBOM link), the fleet Security page
// (scanner status, by severity, by package, by CVE, fleet scan) and the
// disabled scanner's reason. The real lcm-api serves the app; the security
// data comes from page.route (mocks.mjs securityFixtures).
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

async function open(path, opts) {
  const { fx, seen } = securityFixtures(opts);
  const page = await b.ctx.newPage();
  await mockApi(page, { ...fleetFixtures(makeServers(8)), ...fx });
  await page.goto(`${api.base}/#${path}`);
  return { page, seen };
}

test('server page: Vulnerabilities tab lists findings, acknowledges, scans and links the SBOM', async () => {
  const { page, seen } = await open('/servers/s-3');
  await page.getByRole('tab', { name: 'Vulnerabilities' }).click();
  const table = page.getByRole('table', { name: 'Vulnerabilities of this server' });
  await table.waitFor();
  assert.deepEqual(await table.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.advisory)), ['DSA-5764-1', 'DSA-5764-1', 'DSA-5724-1', 'DEBIAN-CVE-2023-51767']);
  // The container's libssl3 says where it is; the host's does not.
  const inCtr = table.locator('tr[data-container="docker/web"]');
  assert.equal(await inCtr.count(), 1);
  await inCtr.getByText('in container docker/web').waitFor();
  await inCtr.getByText('3.0.11-1~deb12u2').waitFor();
  assert.equal(await table.getByText('in container').count(), 1);
  await table.getByText('1:9.2p1-2+deb12u3').first().waitFor();
  await table.getByText('no fix yet').waitFor();
  await page.getByTestId('scanner-status').getByText('Built-in OSV matcher (offline)').waitFor();
  assert.equal(await page.getByTestId('sbom-download').getAttribute('href'), '/api/v1/servers/s-3/sbom');

  await page.getByRole('button', { name: 'Acknowledge DSA-5724-1 for openssh-server' }).click();
  await table.locator('tr[data-advisory="DSA-5724-1"]').getByText('acknowledged').waitFor();
  assert.deepEqual(seen.acks, [1]);
  assert.equal(await page.getByRole('button', { name: 'Acknowledge DSA-5724-1 for openssh-server' }).count(), 0);

  await page.getByRole('button', { name: 'Scan now' }).click();
  await page.getByText('Scan finished: 3 findings.').waitFor();
  assert.deepEqual(seen.scans, ['s-3']);

  await page.getByLabel('Show').selectOption('acknowledged');
  await table.locator('tbody tr').first().waitFor();
  assert.equal(await table.locator('tbody tr').count(), 1);
  await page.close();
});

test('security page: scanner status, by severity, by package, by CVE, fleet scan', async () => {
  const { page, seen } = await open('/security');
  await page.getByRole('heading', { name: 'Security', level: 1 }).waitFor();
  await page.getByTestId('scanner-status').getByText('current (less than 48 hours old)').waitFor();
  await page.getByTestId('finding-count').filter({ hasText: '5 open findings' }).waitFor();

  await page.getByLabel('Minimum severity').selectOption('critical');
  await page.getByTestId('finding-count').filter({ hasText: '2 open findings' }).waitFor();
  assert.ok(seen.queries.some((q) => q.includes('severity=critical')));
  await page.getByLabel('Minimum severity').selectOption('');

  await page.getByRole('tab', { name: 'By package' }).click();
  const pk = page.getByRole('table', { name: 'Vulnerable packages' });
  await pk.waitFor();
  assert.deepEqual(await pk.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.package)), ['libssl3', 'libssl3', 'openssh-server']);
  await pk.locator('tr[data-container="docker/web"]').getByText('in container docker/web').waitFor();
  await pk.getByRole('button', { name: 'openssh-server' }).click();
  await page.getByTestId('finding-count').filter({ hasText: '3 open findings' }).waitFor();
  await page.getByRole('button', { name: 'Show all packages' }).click();

  await page.getByRole('tab', { name: 'By CVE' }).click();
  await page.getByLabel('CVE or advisory id').fill('CVE-2024-6387');
  await page.getByRole('button', { name: 'Search' }).click();
  await page.getByTestId('finding-count').filter({ hasText: '2 open findings' }).waitFor();
  const rows = page.getByRole('table', { name: 'Open vulnerabilities' }).locator('tbody tr');
  assert.deepEqual(await rows.evaluateAll((rs) => rs.map((r) => r.dataset.advisory)), ['DSA-5724-1', 'DSA-5724-1']);

  await page.getByRole('button', { name: 'Scan all servers' }).click();
  await page.getByText('Fleet scan started.').waitFor();
  assert.equal(seen.fleetScans, 1);

  // Update all affected: confirmed in a dialog, the run's jobs are listed.
  await page.getByRole('button', { name: 'Update all affected…' }).click();
  await page.getByRole('dialog').getByRole('button', { name: 'Update all affected' }).click();
  await page.getByText('Security upgrade started on 1 server; 1 busy or refused.').waitFor();
  const run = page.getByRole('table', { name: 'Security upgrade run' });
  await run.getByRole('link', { name: 'web-00004' }).waitFor();
  await run.getByText('blocked').waitFor();
  assert.equal(seen.updateAll, 1);
  assert.equal(await page.getByRole('button', { name: 'Update all affected…' }).isDisabled(), true, 'one run at a time');
  await page.close();
});

test('disabled scanner: the reason is shown and scans cannot be started', async () => {
  const { page } = await open('/security', { enabled: false });
  await page.getByTestId('scanner-disabled').getByText('no vulnerability database').waitFor();
  assert.equal(await page.getByRole('button', { name: 'Scan all servers' }).isDisabled(), true);
  await page.goto(`${api.base}/#/servers/s-3`);
  await page.getByRole('tab', { name: 'Vulnerabilities' }).click();
  await page.getByTestId('scanner-disabled').waitFor();
  assert.equal(await page.getByRole('button', { name: 'Scan now' }).isDisabled(), true);
  await page.close();
});
