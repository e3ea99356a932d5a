// The update check against a release feed this test serves: no notice
// before a check, "Check now" on the Updates page, the admin notice in the
// header with the release notes link, the stored result after a reload,
// and a manager (no settings:manage) who sees no notice; axe in both
// themes (docs/updates.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { startApi, launch, uiLogin, apiLogin, apiFetch, expectNoAxeViolations } from './helpers.mjs';

const SUM = 'sha256:' + 'ab'.repeat(32);
const feed = {
  schema: 1,
  channels: {
    community: [
      { version: '0.0.9', published_at: '2026-01-10T10:00:00Z' },
      { version: '9.9.0', published_at: '2026-11-20T10:00:00Z', notes_url: 'https://example.org/lcm/v9.9.0', checksums: { 'lcm_9.9.0_amd64.deb': SUM } },
    ],
    beta: [{ version: '10.0.0-beta.1', published_at: '2026-11-21T10:00:00Z' }],
  },
};

function serveFeed() {
  let hits = 0;
  const srv = http.createServer((req, res) => {
    hits++;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(feed));
  });
  return new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve({ srv, url: `http://127.0.0.1:${srv.address().port}/feed.json`, hits: () => hits })));
}

test('update check: Check now, the admin notice, the stored result, axe in both themes', async () => {
  const f = await serveFeed();
  const api = await startApi({ dev: true, config: { updates: { feed_url: f.url } } });
  const b = await launch();
  try {
    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    assert.equal(await page.getByTestId('update-notice').count(), 0, 'no notice before any check');
    assert.equal(f.hits(), 0, 'nothing fetched at start');

    await page.getByRole('link', { name: 'Updates' }).click();
    await page.getByRole('heading', { name: 'Updates', level: 1 }).waitFor();
    assert.match(await page.getByTestId('last-check').textContent(), /none yet/);
    await page.getByRole('button', { name: 'Check now' }).click();
    await page.getByTestId('update-notice').waitFor();
    assert.equal(f.hits(), 1);
    assert.match(await page.getByTestId('update-notice').textContent(), /LCM 9\.9\.0 is available/);
    assert.equal(await page.getByTestId('update-notice').getByRole('link', { name: /Release notes/ }).getAttribute('href'), 'https://example.org/lcm/v9.9.0');
    assert.match(await page.getByTestId('latest-version').textContent(), /9\.9\.0/);
    assert.match(await page.getByTestId('update-state').textContent(), /An update is available: 9\.9\.0/);
    await page.getByRole('cell', { name: SUM }).waitFor();
    // LCM installs nothing itself: the page says so and how to install 9.9.0
    // (a binary here: replace it); POST /system/self-update is refused.
    const su = page.getByTestId('self-update');
    await su.getByText(/to install 9\.9\.0/).waitFor();
    assert.match(await su.textContent(), /does not install its own updates/);
    assert.match(await su.textContent(), /replace its binary with the one of 9\.9\.0/);
    assert.equal(await su.getByRole('link', { name: 'Help: updates' }).getAttribute('href'), '#/help/updates');

    // Stored: a reload shows it without asking the feed again.
    await page.reload();
    await page.getByTestId('update-notice').waitFor();
    assert.equal(f.hits(), 1);
    const token = await apiLogin(api, 'admin', api.adminPassword);
    const info = (await apiFetch(api.base, '/api/v1/system/update-info', { headers: { Authorization: `Bearer ${token}` } })).json;
    assert.equal(info.update_available, true);
    assert.equal(info.last.latest.version, '9.9.0');
    assert.equal(info.channel, 'community');
    const refused = await apiFetch(api.base, '/api/v1/system/self-update', { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
    assert.equal(refused.status, 409);
    assert.equal(refused.json.code, 'self_update_unsupported');

    for (const theme of ['light', 'dark']) {
      const p = await b.ctx.newPage();
      await p.emulateMedia({ colorScheme: theme === 'dark' ? 'light' : 'dark' });
      await p.addInitScript((t) => localStorage.setItem('lcm-theme', t), theme);
      await p.goto(`${api.base}/#/admin/updates`);
      await p.getByTestId('update-notice').waitFor();
      await p.getByTestId('latest-version').waitFor();
      await p.getByTestId('self-update').getByText(/to install 9\.9\.0/).waitFor();
      assert.equal(await p.evaluate(() => document.documentElement.dataset.theme), theme);
      await expectNoAxeViolations(p, `updates page with notice (${theme})`);
      await p.close();
    }

    // Dismissed for this session; the page still says so.
    await page.getByRole('button', { name: 'Dismiss the update notice' }).click();
    assert.equal(await page.getByTestId('update-notice').count(), 0);

    // A manager has no settings:manage: the stored state is readable, the
    // check is refused, and the UI shows no notice and no Updates page.
    const mgr = { username: 'mara', first_name: 'Mara', last_name: 'Manager', email: 'mara@example.org', password: 'Kx9#mPq2$vLw7!nR', roles: ['manager'] };
    const r = await apiFetch(api.base, '/api/v1/users', { method: 'POST', body: mgr, headers: { Authorization: `Bearer ${token}` } });
    assert.ok(r.status < 300, `create manager: ${r.status} ${r.text}`);
    const mt = await apiLogin(api, 'mara', mgr.password);
    assert.equal((await apiFetch(api.base, '/api/v1/system/update-info', { headers: { Authorization: `Bearer ${mt}` } })).status, 200);
    const denied = await apiFetch(api.base, '/api/v1/system/update-check', { method: 'POST', headers: { Authorization: `Bearer ${mt}` } });
    assert.equal(denied.status, 403);
    assert.equal((await apiFetch(api.base, '/api/v1/system/self-update', { headers: { Authorization: `Bearer ${mt}` } })).status, 403);
    const b2 = await launch();
    try {
      await uiLogin(b2.page, api.base, 'mara', mgr.password);
      await b2.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      await b2.page.getByRole('link', { name: 'Help' }).waitFor();
      assert.equal(await b2.page.getByTestId('update-notice').count(), 0);
      assert.equal(await b2.page.getByRole('link', { name: 'Updates' }).count(), 0);
    } finally {
      await b2.close();
    }
    assert.deepEqual(b.errors.filter((e) => !e.includes('401 (Unauthorized)')), []);
  } finally {
    await b.close();
    await api.stop();
    f.srv.close();
  }
});
