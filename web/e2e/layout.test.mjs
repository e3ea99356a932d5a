// Layout and wording (issue 24, part 5) with the real binary in --demo
// mode: the hardware tab as fields and tables, times in the user's locale
// (never RFC 3339 with nanoseconds), the X-Forwarded-For checkbox beside
// its label, plurals that agree, portal messages that appear without a
// reload, and the phone layout (collapsible navigation, tables that scroll
// sideways), checked on screenshots.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startApi, launch, uiLogin, apiFetch, apiLogin, shotsDir } from './helpers.mjs';

let api;
let b;
let token;
let servers;

before(async () => {
  api = await startApi({ args: ['--demo'] });
  token = await apiLogin(api, 'admin', api.adminPassword);
  servers = (await apiFetch(api.base, '/api/v1/servers', { headers: auth() })).json;
  b = await launch();
  await uiLogin(b.page, api.base, 'admin', api.adminPassword);
  await b.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(async () => {
  await b?.close();
  await api?.stop();
});

function auth() {
  return { Authorization: `Bearer ${token}` };
}

const RAW_TIME = /\d{4}-\d{2}-\d{2}T\d{2}:\d{2}|\.\d{7,9}Z/;

/** Width and height of a PNG from its IHDR chunk. */
function pngSize(buf) {
  return { width: buf.readUInt32BE(16), height: buf.readUInt32BE(20) };
}

async function save(name, buf) {
  fs.mkdirSync(shotsDir, { recursive: true });
  fs.writeFileSync(path.join(shotsDir, `${name}.png`), buf);
}

test('hardware tab: system, CPU, memory, virtualization as fields; disks and network as tables; local times', async () => {
  const { page } = b;
  const s = servers.find((x) => x.name === 'app-01') ?? servers[0];
  const hw = (await apiFetch(api.base, `/api/v1/servers/${s.id}/hardware`, { headers: auth() })).json;
  await page.goto(`${api.base}/#/servers/${s.id}`);
  await page.getByRole('tab', { name: 'Hardware' }).click();
  const panel = page.getByTestId('hardware');
  await panel.waitFor();
  for (const h of ['System', 'CPU', 'Memory', 'Virtualization', 'Disks', 'Network interfaces']) {
    await panel.getByRole('heading', { name: h, exact: true }).waitFor();
  }
  const text = await panel.innerText();
  assert.ok(text.includes(hw.facts.cpu.model), 'CPU model shown');
  assert.ok(!/[{}"]/.test(text), `no JSON in the hardware tab:\n${text}`);
  assert.ok(!RAW_TIME.test(text), `no raw timestamps:\n${text}`);
  const collected = await panel.getByText(/^Collected /).innerText();
  const expected = await page.evaluate((t) => new Date(t).toLocaleString(undefined,
    { year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }), hw.collected_at);
  assert.equal(collected, `Collected ${expected}`);

  const disks = panel.getByRole('table', { name: 'Disks' });
  const fs0 = hw.facts.filesystems[0];
  const diskRow = disks.getByRole('row').filter({ hasText: fs0.device });
  assert.equal(await diskRow.count(), 1);
  assert.ok((await diskRow.innerText()).includes(fs0.mount_point));
  const net = panel.getByRole('table', { name: 'Network interfaces' });
  const a0 = hw.facts.addresses[0];
  await net.getByRole('cell', { name: `${a0.address}/${a0.prefix_len}` }).waitFor();
  await net.getByRole('cell', { name: a0.interface, exact: true }).waitFor();

  // The overview's insight agrees in number, and no page shows raw times.
  await page.getByRole('tab', { name: 'Overview' }).click();
  await page.getByText('1 vulnerability with critical severity affects installed packages').waitFor();
  for (const p of ['/', '/jobs', '/admin/users', '/admin/audit', '/admin/apikeys']) {
    await page.goto(`${api.base}/#${p}`);
    await page.locator('main h1').waitFor();
    await page.waitForLoadState('networkidle');
    const body = await page.locator('main').innerText();
    assert.ok(!RAW_TIME.test(body), `raw timestamp on ${p}:\n${body}`);
  }
});

test('security settings: the X-Forwarded-For checkbox sits beside its label', async () => {
  const { page } = b;
  await page.goto(`${api.base}/#/admin/security`);
  const box = page.getByRole('checkbox', { name: /Trust the X-Forwarded-For header/ });
  await box.waitFor();
  const cb = await box.boundingBox();
  const label = await page.getByTestId('xff').boundingBox();
  assert.ok(cb.x - label.x < 4, 'checkbox starts the label row');
  assert.ok(label.height < cb.height * 2.5, `label is one row (height ${label.height}), not checkbox above text`);
  assert.ok(Math.abs((cb.y + cb.height / 2) - (label.y + label.height / 2)) < 4, 'checkbox is vertically centred on the text');
  await box.check();
  assert.equal(await box.isChecked(), true);
});

test('counts agree in number: 1 job', async () => {
  const { page } = b;
  const before = (await apiFetch(api.base, '/api/v1/jobs/history?limit=1', { headers: auth() })).json.total;
  assert.equal(before, 0, 'a fresh demo has no jobs');
  const s = servers[0];
  const r = await apiFetch(api.base, `/api/v1/servers/${s.id}/packages/refresh`, { method: 'POST', headers: auth() });
  assert.equal(r.status, 202, r.text);
  await page.goto(`${api.base}/#/jobs`);
  await page.getByText('1 job', { exact: true }).waitFor();
});

test('a new portal message appears without a reload', { timeout: 60000 }, async () => {
  const { page } = b;
  await page.goto(`${api.base}/#/`);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  const r = await apiFetch(api.base, '/api/v1/admin/announcements/create', {
    method: 'POST', headers: auth(), body: { title: 'Mail relay maintenance tonight', body: 'Queued mail is delivered afterwards.', severity: 'info', active: true },
  });
  assert.ok(r.status === 200 || r.status === 201, r.text);
  const banner = page.getByRole('region', { name: 'Portal messages' }).getByText('Mail relay maintenance tonight');
  await banner.waitFor({ timeout: 30000 }); // the banners poll every 15 s; no reload happens
});

test('phone width: the navigation collapses behind a menu button and tables scroll sideways', async () => {
  const page = await b.ctx.newPage();
  try {
    await page.setViewportSize({ width: 375, height: 812 });
    await page.goto(`${api.base}/#/servers`);
    await page.getByRole('heading', { name: 'Servers' }).waitFor();
    const toggle = page.getByRole('button', { name: 'Menu' });
    const nav = page.getByRole('navigation', { name: 'Main' });
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
    assert.equal(await nav.getByRole('link', { name: 'Jobs' }).isVisible(), false, 'links hidden while collapsed');
    const collapsed = await nav.screenshot();
    await save('phone-nav-collapsed', collapsed);
    assert.ok(pngSize(collapsed).height <= 70, `collapsed navigation is one bar (${pngSize(collapsed).height} px)`);

    await toggle.click();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
    await nav.getByRole('link', { name: 'Jobs' }).waitFor();
    const expanded = await nav.screenshot();
    await save('phone-nav-expanded', expanded);
    assert.ok(pngSize(expanded).height > 300, `expanded navigation lists the pages (${pngSize(expanded).height} px)`);
    await page.keyboard.press('Escape');
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false', 'Escape closes the menu');
    await toggle.click();
    await nav.getByRole('link', { name: 'Users & roles' }).click();
    await page.getByRole('heading', { name: 'Users & roles' }).waitFor();
    assert.equal(await toggle.getAttribute('aria-expanded'), 'false', 'navigating closes the menu');

    // The server list: names are whole, the list scrolls sideways.
    await page.goto(`${api.base}/#/servers`);
    const grid = page.getByTestId('server-grid');
    await grid.locator('[data-row]').first().waitFor();
    const m = await page.evaluate(() => {
      const card = document.querySelector('[data-testid="server-grid"]').parentElement;
      const cut = [...document.querySelectorAll('.c-name a')].filter((a) => a.parentElement.scrollWidth > a.parentElement.clientWidth + 1).map((a) => a.textContent);
      return { scrollWidth: card.scrollWidth, clientWidth: card.clientWidth, cut };
    });
    assert.ok(m.scrollWidth > m.clientWidth, `the list scrolls sideways (${m.scrollWidth} > ${m.clientWidth})`);
    assert.deepEqual(m.cut, [], 'no server name is cut');
    const card = grid.locator('..');
    const left = await card.screenshot();
    await save('phone-servers-left', left);
    await card.evaluate((el) => (el.scrollLeft = el.scrollWidth));
    const right = await card.screenshot();
    await save('phone-servers-right', right);
    assert.notDeepEqual(left, right, 'scrolling sideways shows other columns');

    // A table page: the table scrolls inside its wrapper, the page does not.
    await page.goto(`${api.base}/#/admin/users`);
    await page.getByRole('table').waitFor();
    const t = await page.evaluate(() => {
      const w = document.querySelector('.table-wrap');
      return { wrap: w.scrollWidth > w.clientWidth, page: document.documentElement.scrollWidth <= window.innerWidth };
    });
    assert.ok(t.wrap, 'the users table scrolls sideways');
    assert.ok(t.page, 'the page itself does not scroll sideways');
  } finally {
    await page.close();
  }
});
