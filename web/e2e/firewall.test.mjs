// Firewall and listening ports on the server page's Security tab, the IP
// allowlists admin page and the dashboard's hardening overview (issue 13).
// The real lcm-api --dev serves the app, the sign-in and the allowlists
// (real store); the fleet (servers, a firewall read-back, the overview)
// comes from the fixtures in mocks.mjs, so the requests the page sends
// can be checked. Every state is checked by axe in both themes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, expectNoAxeViolations } from './helpers.mjs';
import { fleetFixtures, makeServers, mockApi } from './mocks.mjs';

const servers = makeServers(40);
let api;
let b;
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

function fixtures() {
  const fx = fleetFixtures(servers);
  delete fx['GET /api/v1/auth/me']; // the real session
  delete fx['GET /api/v1/ip-allowlists']; // the real allowlists
  delete fx['GET /api/v1/settings/ip-allowlists'];
  return fx;
}

async function open(theme, mocks = fixtures()) {
  const page = await b.ctx.newPage();
  await page.emulateMedia({ colorScheme: theme === 'dark' ? 'light' : 'dark' });
  await page.addInitScript((t) => localStorage.setItem('lcm-theme', t), theme);
  await mockApi(page, mocks);
  return page;
}

test('IP allowlists: create, list, reuse in a firewall rule, delete; axe in both themes', async () => {
  const page = await open('light');
  const sent = [];
  page.on('request', (r) => { if (r.method() === 'POST' && r.url().includes('/firewall')) sent.push(JSON.parse(r.postData() || '{}')); });
  try {
    await page.goto(`${api.base}/#/admin/ip-allowlists`);
    await page.getByRole('heading', { name: 'IP allowlists', level: 1 }).waitFor();
    await page.getByText('No IP allowlists yet.').waitFor();
    await page.getByRole('button', { name: 'New allowlist' }).click();
    await page.getByLabel('Name').fill('office');
    await page.getByLabel(/Addresses or networks/).fill('203.0.113.9/24\n2001:db8::1');
    await page.getByRole('button', { name: 'Save' }).click();
    // Stored normalised: the network of the address, the IPv6 host as /128.
    await page.getByRole('cell', { name: '203.0.113.0/24, 2001:db8::1/128' }).waitFor();
    for (const theme of ['light', 'dark']) {
      await page.evaluate((t) => { localStorage.setItem('lcm-theme', t); }, theme);
      await page.reload();
      await page.getByRole('cell', { name: 'office', exact: true }).waitFor();
      await expectNoAxeViolations(page, `IP allowlists (${theme})`);
    }
    // A bad entry is refused with the server's reason.
    await page.getByRole('button', { name: 'New allowlist' }).click();
    await page.getByLabel('Name').fill('bad');
    await page.getByLabel(/Addresses or networks/).fill('example.org');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('dialog').getByRole('alert').filter({ hasText: /not an address or CIDR/ }).waitFor();
    await page.getByRole('button', { name: 'Cancel' }).click();

    // The allowlist as the source of a rule on the Security tab.
    await page.goto(`${api.base}/#/servers/s-3`);
    await page.getByRole('heading', { name: servers[3].name }).waitFor();
    await page.getByRole('tab', { name: 'Security', exact: true }).click();
    await page.getByTestId('fw-state').filter({ hasText: 'active' }).waitFor();
    await page.getByLabel('Port', { exact: true }).fill('8443');
    await page.getByLabel('Protocol').selectOption('tcp');
    await page.getByLabel('From', { exact: true }).selectOption('list');
    await page.getByLabel('Allowlist').selectOption({ label: 'office (2)' });
    await page.getByLabel('Comment').fill('admin ui');
    await page.getByRole('button', { name: 'Add rule' }).click();
    await page.waitForURL(/#\/jobs\/j-fw$/);
    const lists = await (await page.request.get(`${api.base}/api/v1/ip-allowlists`)).json();
    assert.deepEqual(sent.at(-1), { op: 'add', rules: [{ port: 8443, proto: 'tcp', allowlist_id: lists.items[0].id, comment: 'admin ui' }] });

    await page.goto(`${api.base}/#/admin/ip-allowlists`);
    await page.getByRole('button', { name: 'Delete office' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByText('No IP allowlists yet.').waitFor();
  } finally {
    await page.close();
  }
});

for (const theme of ['light', 'dark']) {
  test(`Security tab: firewall rules beside the listening ports, enable and remove send proven jobs (${theme} theme)`, async () => {
    const page = await open(theme);
    const sent = [];
    page.on('request', (r) => { if (r.method() === 'POST' && /\/firewall$|listening-ports/.test(r.url())) sent.push([new URL(r.url()).pathname, r.postData()]); });
    try {
      await page.goto(`${api.base}/#/servers/s-3`);
      await page.getByRole('heading', { name: servers[3].name }).waitFor();
      await page.getByRole('tab', { name: 'Security', exact: true }).click();
      const rules = page.getByTestId('fw-rules');
      await rules.getByRole('cell', { name: '198.18.0.1/32' }).waitFor();
      const ports = page.getByTestId('fw-ports');
      // What is open to the world, next to the rules.
      assert.match(await ports.getByRole('row', { name: /nginx/ }).textContent(), /open to the world/);
      assert.match(await ports.getByRole('row', { name: /mariadbd/ }).textContent(), /blocked/);
      assert.match(await ports.getByRole('row', { name: /postgres/ }).textContent(), /this host only/);
      assert.match(await page.getByTestId('fw-world').textContent(), /5 sockets, 1 open to the world/);
      await expectNoAxeViolations(page, `Security tab, firewall (${theme})`);

      await rules.getByRole('button', { name: 'Remove rule 443/tcp' }).click();
      await page.getByRole('dialog').waitFor();
      await expectNoAxeViolations(page, `remove rule dialog (${theme})`);
      await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
      await page.waitForURL(/#\/jobs\/j-fw$/);
      assert.deepEqual(JSON.parse(sent.at(-1)[1]), { op: 'remove', rules: [{ port: 443, proto: 'tcp', comment: 'web' }] });

      await page.goBack();
      await page.getByRole('tab', { name: 'Security', exact: true }).click();
      await page.getByRole('button', { name: 'Scan listening ports' }).click();
      await page.waitForURL(/#\/jobs\/j-scan$/);
      assert.equal(sent.at(-1)[0], '/api/v1/servers/s-3/listening-ports/scan');
    } finally {
      await page.close();
    }

    // An inactive firewall offers "Enable", behind a dialog that explains the proof.
    const fx = fixtures();
    fx['GET ~/api/v1/servers/s-[0-9]+/firewall'] = { tool: 'nftables', active: false, checked_at: new Date().toISOString(), scanned_at: null, rules: [], ports: [] };
    const p2 = await open(theme, fx);
    const sent2 = [];
    p2.on('request', (r) => { if (r.method() === 'POST' && r.url().endsWith('/firewall')) sent2.push(JSON.parse(r.postData() || '{}')); });
    try {
      await p2.goto(`${api.base}/#/servers/s-3`);
      await p2.getByRole('tab', { name: 'Security', exact: true }).click();
      await p2.getByTestId('fw-state').filter({ hasText: 'inactive' }).waitFor();
      await p2.getByRole('button', { name: 'Enable firewall…' }).click();
      await p2.getByRole('dialog').getByText(/proven with a fresh login/).waitFor();
      await expectNoAxeViolations(p2, `enable firewall dialog (${theme})`);
      await p2.getByRole('dialog').getByRole('button', { name: 'Continue' }).click();
      await p2.waitForURL(/#\/jobs\/j-fw$/);
      assert.deepEqual(sent2, [{ op: 'enable' }]);
    } finally {
      await p2.close();
    }
  });
}

test('dashboard: fleet hardening overview by group, axe in both themes', async () => {
  for (const theme of ['light', 'dark']) {
    const page = await open(theme);
    try {
      await page.goto(`${api.base}/#/`);
      const ov = page.getByTestId('hardening-overview');
      await ov.getByRole('rowheader', { name: 'All servers' }).waitFor();
      assert.match(await ov.getByRole('row', { name: /All servers/ }).textContent(), /40/);
      assert.ok(await ov.getByRole('row').count() > 2, 'a row per group');
      await page.getByTestId('count-firewalled').filter({ hasText: /\d/ }).waitFor();
      await expectNoAxeViolations(page, `dashboard (${theme})`);
    } finally {
      await page.close();
    }
  }
});
