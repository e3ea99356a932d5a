// A manager sees only the servers (and groups) it manages.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, apiLogin, apiFetch, testHosts, sleep } from './helpers.mjs';

const MANAGER_PW = 'Kx9#mPq2$vLw7!nR';

async function call(api, token, method, p, body) {
  const r = await apiFetch(api.base, p, { method, body, headers: { Authorization: `Bearer ${token}` } });
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
  return r.json;
}

async function join(api, token, h, name, groupId, key) {
  const probe = await call(api, token, 'POST', '/api/v1/servers/probe', { host: h.host, port: h.port });
  const r = await call(api, token, 'POST', '/api/v1/servers/join', {
    name, host: h.host, port: h.port, username: 'root', auth: 'key', private_key: key, host_key: probe.host_key, group_ids: [groupId],
  });
  for (let i = 0; i < 240; i++) {
    const j = await call(api, token, 'GET', `/api/v1/jobs/${r.job_id}`);
    if (['success', 'failed', 'aborted', 'blocked'].includes(j.status)) {
      assert.equal(j.status, 'success', `join of ${name}: ${j.error}`);
      return r.server;
    }
    await sleep(1000);
  }
  throw new Error(`join of ${name} did not finish`);
}

test('a manager sees only its groups', { timeout: 600000 }, async (t) => {
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const token = await apiLogin(api, 'admin', api.adminPassword);
    await call(api, token, 'POST', '/api/v1/users', { username: 'mia', first_name: 'Mia', last_name: 'Manager', email: 'mia@example.org', password: MANAGER_PW, roles: ['manager'] });
    const mia = (await call(api, token, 'GET', '/api/v1/users')).find((u) => u.username === 'mia');
    const mine = await call(api, token, 'POST', '/api/v1/server-groups/create', { name: 'Team Mia' });
    const other = await call(api, token, 'POST', '/api/v1/server-groups/create', { name: 'Other team' });
    await call(api, token, 'POST', `/api/v1/server-groups/${mine.id}/assign-manager`, { user_id: mia.id });

    const th = testHosts();
    let names = null;
    if (th && th.hosts.length >= 6) {
      // Hosts 5 and 4, never 6: fleet.test.mjs uses that one.
      await join(api, token, th.hosts[4], 'mia-server', mine.id, th.key);
      await join(api, token, th.hosts[3], 'other-server', other.id, th.key);
      names = ['mia-server', 'other-server'];
    } else {
      t.diagnostic('Debian test hosts not up: checking the group list only, not servers');
      if (process.env.CI === 'true') throw new Error('missing prerequisite: Debian test hosts');
    }

    const { page } = b;
    await uiLogin(page, api.base, 'mia', MANAGER_PW);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    // No administration entries for a manager.
    assert.equal(await page.getByRole('link', { name: 'Users & roles' }).count(), 0);
    await page.goto(`${api.base}/#/servers`);
    await page.getByTestId('server-count').filter({ hasText: / of / }).waitFor();
    const options = await page.locator('#srv-group option').allTextContents();
    assert.ok(options.includes('Team Mia'), `group filter offers Team Mia: ${options}`);
    assert.ok(!options.includes('Other team'), `group filter hides Other team: ${options}`);
    if (names) {
      await page.getByRole('link', { name: 'mia-server' }).waitFor();
      assert.equal(await page.getByRole('link', { name: 'other-server' }).count(), 0);
      assert.match(await page.getByTestId('server-count').textContent(), /^1 of 1$/);
    }
    // The admin pages are refused, not just hidden.
    await page.goto(`${api.base}/#/admin/users`);
    await page.getByRole('heading', { name: 'No access' }).waitFor();
  } finally {
    await b.close();
    await api.stop();
  }
});
