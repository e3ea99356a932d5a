// Containers in the UI (issue 15): the server's Containers tab (engines,
// containers with update badges and actions, compose projects, images with
// removal disabled while in use, the prune preview's listing, the CVE mark)
// and the fleet Containers page with its filters. The real lcm-api serves
// the app; the container data comes from page.route (mocks.mjs
// containersFixtures).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch } from './helpers.mjs';
import { mockApi, fleetFixtures, makeServers, containersFixtures } from './mocks.mjs';

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
  const { fx, seen } = containersFixtures(opts);
  const page = await b.ctx.newPage();
  await mockApi(page, { ...fleetFixtures(makeServers(8)), ...fx });
  await page.goto(`${api.base}/#${path}`);
  return { page, seen };
}

test('server page: Containers tab shows the inventory and runs the actions', async () => {
  const { page, seen } = await open('/servers/s-3');
  await page.getByRole('tab', { name: 'Containers' }).click();
  const cs = page.getByTestId('docker-containers');
  await cs.waitFor();
  await page.getByTestId('docker-engines').getByText('podman 4.3.1').waitFor();
  assert.equal(await cs.locator('tbody tr').count(), 3);
  await cs.locator('tr', { hasText: 'shop-web-1' }).getByText('update available').waitFor();
  await cs.locator('tr', { hasText: 'shop-web-1' }).getByText('127.0.0.1:8080→80/tcp').waitFor();
  await page.getByTestId('docker-last-action').getByText('backup-once, localhost/old:2').waitFor();

  // An image in use cannot be removed; an unused one can.
  const ims = page.getByTestId('docker-images');
  assert.equal(await ims.getByRole('button', { name: 'Remove localhost/shop:1' }).isDisabled(), true);
  await ims.getByRole('button', { name: 'Remove localhost/old:2' }).click();
  await page.getByText('Image removal started.').waitFor();

  await page.getByRole('button', { name: 'Stop shop-web-1' }).click();
  await page.getByText('Stop of shop-web-1 started.').waitFor();
  await page.getByRole('button', { name: 'Start backup-once' }).click();
  await page.getByTestId('docker-compose').getByRole('button', { name: 'Pull & up -d: shop' }).click();
  await page.getByRole('button', { name: 'Preview prune' }).click();
  await page.getByLabel('CVE-relevant: backup-once').check();
  await page.getByText('backup-once marked CVE-relevant.').waitFor();

  const posts = seen.posts.map((p) => [p.path.replace('/api/v1/servers/s-3/docker/', ''), p.body]);
  assert.deepEqual(posts, [
    ['remove-image', { image: 'localhost/old:2', engine: 'podman' }],
    ['containers/shop-web-1/stop', { engine: 'podman' }],
    ['containers/backup-once/start', { engine: 'podman' }],
    ['compose-update', { project: 'shop', engine: 'podman' }],
    ['prune', { containers: true, images: true, build_cache: true, dry_run: true }],
    ['cve-relevance', { container: 'backup-once', engine: 'podman', relevant: true }],
  ]);
  await page.close();
});

test('server page: what a prune freed, and "check for newer images" now', async () => {
  const { page, seen } = await open('/servers/s-3', { pruned: true });
  await page.getByRole('tab', { name: 'Containers' }).click();
  const freed = page.getByTestId('docker-freed');
  await freed.waitFor();
  assert.match(await freed.textContent(), /freed 1 containers, 2 images \(.+, build cache .+\): backup-once, localhost\/old:2, 0ab0480b5995065e/);
  assert.equal(await page.getByTestId('docker-last-action').getByText('would free').count(), 0);
  const cs = page.getByTestId('docker-containers');
  await cs.locator('tr', { hasText: 'shop-web-1' }).getByText('update available').waitFor();
  await page.getByRole('button', { name: 'Check for newer images' }).click();
  await page.getByText('Images checked against their registries.').waitFor();
  await cs.locator('tr', { hasText: 'shop-web-1' }).getByText('up to date').waitFor();
  assert.deepEqual(seen.posts.map((p) => p.path), ['/api/v1/servers/s-3/docker/check-updates']);
  await page.close();
});

test('fleet Containers page: summary, containers, compose projects, update filter', async () => {
  const { page, seen } = await open('/containers');
  await page.getByRole('heading', { name: 'Containers', level: 1 }).waitFor();
  await page.getByTestId('docker-overview').getByText('3 (2 running)').waitFor();
  const t = page.getByTestId('fleet-containers');
  await t.waitFor();
  assert.equal(await t.locator('tbody tr').count(), 3);
  await page.getByTestId('fleet-compose').getByRole('link', { name: 'web-00004' }).waitFor();
  await page.getByLabel('Update').selectOption('update_available');
  await page.getByRole('button', { name: 'Filter' }).click();
  await t.locator('tbody tr').nth(1).waitFor({ state: 'detached' });
  assert.equal(await t.locator('tbody tr').count(), 1);
  assert.ok(seen.queries.includes('?update=update_available'), seen.queries.join(' '));
  await page.getByRole('navigation').getByRole('link', { name: 'Containers' }).waitFor();
  await page.close();
});
