// The server's Storage tab: the volumes table with "Keep history" (PUT
// /servers/:id/storage-volumes), the API's 400 shown as a toast, and the
// mount selector of the chart (storage-history?mount=). The real lcm-api
// serves the app; the inventory data comes from page.route.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, shot } from './helpers.mjs';
import { mockApi, fleetFixtures, makeServers, storageHistory, storageVolumes, adminUser } from './mocks.mjs';

const GiB = 2 ** 30;
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

const mounts = [
  { mount: '/', device: '/dev/vda1', type: 'ext4', size_bytes: 64 * GiB, used_bytes: 32 * GiB, avail_bytes: 29 * GiB, network: false },
  { mount: '/data', device: '/dev/vdb1', type: 'xfs', size_bytes: 500 * GiB, used_bytes: 450 * GiB, avail_bytes: 50 * GiB, network: false },
  // Local at the last refresh the page saw; the API has since learnt better
  // and refuses it with network_volume.
  { mount: '/mnt/backup', device: 'backup@nas-01:/vol', type: 'fuse.sshfs', size_bytes: 1024 * GiB, used_bytes: 100 * GiB, avail_bytes: 924 * GiB, network: false },
  { mount: '/srv/nfs', device: 'nas-01:/export', type: 'nfs4', size_bytes: 2048 * GiB, used_bytes: 1024 * GiB, avail_bytes: 1024 * GiB, network: true },
];

/** The fleet fixtures plus a storage API with state; records PUT bodies and history mounts. */
function storageFixtures() {
  const seen = { puts: [], history: [] };
  let monitored = ['/', '/old'];
  const fx = {
    ...fleetFixtures(makeServers(5)),
    'GET ~/api/v1/servers/s-[0-9]+/storage-volumes': () => storageVolumes(monitored, mounts),
    'PUT ~/api/v1/servers/s-[0-9]+/storage-volumes': (req) => {
      const body = JSON.parse(req.postData() || '{}');
      seen.puts.push(body);
      if (body.mounts.includes('/mnt/backup')) {
        return { status: 400, json: { error: '/mnt/backup is a network filesystem; those are shown but not monitored', code: 'network_volume' } };
      }
      monitored = ['/', ...body.mounts.filter((m) => m !== '/')];
      return storageVolumes(monitored, mounts);
    },
    'GET ~/api/v1/servers/s-[0-9]+/storage-history': (req, url) => {
      const mount = url.searchParams.get('mount') ?? '';
      seen.history.push(mount);
      return mount === '/data' ? storageHistory('/data', { total: 500 * GiB, base: 0.62, slope: 0.004, daysUntilFull: 25 }) : storageHistory(mount || '/');
    },
  };
  return { fx, seen };
}

async function openStorage(fx) {
  const page = await b.ctx.newPage();
  await mockApi(page, fx);
  await page.goto(`${api.base}/#/servers/s-1`);
  await page.getByRole('tab', { name: 'Storage' }).click();
  await page.getByRole('table', { name: 'Volumes' }).waitFor();
  return page;
}

const box = (page, mount) => page.getByRole('checkbox', { name: `Keep the storage history of ${mount}`, exact: true });
const row = (page, mount) => page.locator(`tr[data-mount="${mount}"]`);

test('volumes table: keep history, the API error, and the mount selector', async () => {
  const { fx, seen } = storageFixtures();
  const page = await openStorage(fx);

  // The chart starts on "/" and names it.
  await page.locator('figcaption').filter({ hasText: /^\/: used/ }).waitFor();
  assert.deepEqual(seen.history, ['/']);
  assert.equal(await page.getByLabel('Volume', { exact: true }).inputValue(), '/');

  // One row per filesystem, then the monitored mount that is not mounted.
  assert.deepEqual(await page.locator('[data-testid=volumes] tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.mount)),
    ['/', '/data', '/mnt/backup', '/srv/nfs', '/old']);
  assert.match(await row(page, '/data').textContent(), /xfs.*450 GiB \/ 500 GiB.*\(90 %\)/s);
  assert.match(await row(page, '/srv/nfs').textContent(), /nfs4.*network — not monitored/s);
  assert.match(await row(page, '/old').textContent(), /not mounted at the last refresh/);
  assert.ok(await box(page, '/').isChecked(), '/ is always kept');
  assert.ok(await box(page, '/').isDisabled(), '/ cannot be unticked');
  assert.ok(await box(page, '/srv/nfs').isDisabled(), 'network filesystems cannot be ticked');
  assert.ok(!(await box(page, '/srv/nfs').isChecked()));
  assert.ok(!(await box(page, '/data').isChecked()));
  assert.ok(await box(page, '/data').isEnabled());
  assert.ok(await box(page, '/old').isChecked(), 'an unmounted monitored mount is listed ticked');
  assert.ok(await box(page, '/old').isEnabled());
  // The selector lists the monitored mounts.
  assert.deepEqual(await page.locator('#storage-mount option').allTextContents(), ['/', '/old']);

  // Ticking /data saves the opt-in list ("/" is implicit).
  await box(page, '/data').check();
  await page.getByRole('status').getByText('The storage history of /data is kept').waitFor();
  assert.deepEqual(seen.puts.at(-1), { mounts: ['/old', '/data'] });
  assert.ok(await box(page, '/data').isChecked());
  assert.deepEqual(await page.locator('#storage-mount option').allTextContents(), ['/', '/old', '/data']);

  // A 400 from the API: its text in a toast, the box goes back.
  await box(page, '/mnt/backup').click();
  await page.getByRole('status').getByText('/mnt/backup is a network filesystem; those are shown but not monitored.').waitFor();
  assert.deepEqual(seen.puts.at(-1), { mounts: ['/old', '/data', '/mnt/backup'] });
  await page.waitForFunction(() => !document.querySelector('tr[data-mount="/mnt/backup"] input').disabled);
  assert.ok(!(await box(page, '/mnt/backup').isChecked()), 'the refused box is unticked again');
  assert.equal(seen.puts.length, 2);

  // Another monitored mount in the chart.
  await page.getByLabel('Volume', { exact: true }).selectOption('/data');
  await page.locator('figcaption').filter({ hasText: /^\/data: used/ }).waitFor();
  assert.equal(seen.history.at(-1), '/data');
  assert.match(await page.locator('figcaption').textContent(), /\/data is full in about 25 days/);
  assert.match(await page.locator('figure svg').getAttribute('aria-label'), /^Storage usage chart of \/data\./);
  await shot(page, 'server-volumes');

  // Unticking the unmounted /old drops its row; the chart stays on /data.
  // A plain click: uncheck() would read the state back from a row that is
  // already gone. The toasts of the earlier saves may cover the last row.
  await page.getByRole('button', { name: 'Dismiss notification' }).evaluateAll((bs) => bs.forEach((x) => x.click()));
  await box(page, '/old').click();
  await page.getByRole('status').getByText('/old is no longer sampled').waitFor();
  assert.deepEqual(seen.puts.at(-1), { mounts: ['/data'] });
  await row(page, '/old').waitFor({ state: 'detached' });
  assert.equal(await page.getByLabel('Volume', { exact: true }).inputValue(), '/data');

  // Unticking the mount on show returns the chart to "/".
  await box(page, '/data').uncheck();
  await page.locator('figcaption').filter({ hasText: /^\/: used/ }).waitFor();
  assert.deepEqual(seen.puts.at(-1), { mounts: [] });
  assert.equal(await page.getByLabel('Volume', { exact: true }).inputValue(), '/');
  assert.equal(seen.history.at(-1), '/');
  await page.close();
  assert.deepEqual(b.errors.filter((e) => !/Failed to load resource/.test(e)), []);
});

test('without servers:write the boxes are read-only', async () => {
  const { fx, seen } = storageFixtures();
  fx['GET /api/v1/auth/me'] = { ...adminUser, roles: ['viewer'], permissions: adminUser.permissions.filter((p) => p !== 'servers:write') };
  const page = await openStorage(fx);
  for (const m of ['/', '/data', '/mnt/backup', '/srv/nfs', '/old']) assert.ok(await box(page, m).isDisabled(), `${m} is read-only`);
  assert.ok(await box(page, '/old').isChecked());
  assert.equal(seen.puts.length, 0);
  await page.close();
});
