// The alert history's filters and paging (issue 17) against the real
// lcm-api --demo: twelve disk rules fire on every demo server, so the
// history holds more than a page; the page pages through it, filters by
// rule, server, state and date range (the filters stay in the address),
// and passes axe in both themes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, apiLogin, apiFetch, expectNoAxeViolations, shot } from './helpers.mjs';

const localDay = (offsetDays) => {
  const d = new Date();
  d.setDate(d.getDate() + offsetDays);
  return `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
};

test('alert history: paging, rule/server/state/date filters, axe in both themes', async () => {
  const api = await startApi({ dev: true, args: ['--demo'] });
  const b = await launch();
  try {
    const token = await apiLogin(api, 'admin', api.adminPassword);
    const auth = { Authorization: `Bearer ${token}` };
    const rules = [];
    for (let i = 1; i <= 12; i++) {
      const r = await apiFetch(api.base, '/api/v1/alert-rules', { method: 'POST', headers: auth,
        body: { name: `Disk ${String(i).padStart(2, '0')}`, type: 'disk_capacity', severity: i % 2 ? 'warning' : 'critical', allServers: true, params: { percent: 1 } } });
      assert.equal(r.status, 201, r.text);
      rules.push(r.json);
    }
    const ev = await apiFetch(api.base, '/api/v1/alerts/evaluate', { method: 'POST', headers: auth, body: {} });
    assert.equal(ev.status, 200, ev.text);
    const all = await apiFetch(api.base, '/api/v1/alert-events?limit=500', { headers: auth });
    const total = all.json.events.length;
    assert.ok(total > 50, `more than a page of events: ${total}`);
    const servers = (await apiFetch(api.base, '/api/v1/servers', { headers: auth })).json;
    const app = servers.find((s) => s.name === 'app-01');
    const perServer = all.json.events.filter((e) => e.serverId === app.id).length;
    const perRule = all.json.events.filter((e) => e.ruleId === rules[2].id).length;
    assert.equal(perServer, 12, 'every rule fired on app-01');

    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${api.base}/#/admin/alert-events`);
    await page.getByRole('heading', { name: 'Alert history', level: 1 }).waitFor();
    const rows = page.getByTestId('alert-events').locator('tbody tr');
    const range = page.getByTestId('alert-events-range');

    // Paging: 50 a page, then the rest.
    await range.filter({ hasText: 'events 1–50' }).waitFor();
    assert.equal(await rows.count(), 50);
    await page.getByRole('button', { name: 'Next' }).click();
    await range.filter({ hasText: `events 51–${total}` }).waitFor();
    assert.equal(await rows.count(), total - 50);
    assert.ok(await page.getByRole('button', { name: 'Next' }).isDisabled());
    await page.getByRole('button', { name: 'Previous' }).click();
    await range.filter({ hasText: 'events 1–50' }).waitFor();

    // By rule: only its events, paging back to the first page.
    await page.getByLabel('Rule').selectOption({ label: 'Disk 03' });
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="alert-events"] tbody tr').length === n, perRule);
    for (const t of await rows.locator('td:nth-child(3)').allTextContents()) assert.match(t, /^Disk 03/);
    assert.match(page.url(), new RegExp(`ruleId=${rules[2].id}`), 'the filter is in the address');
    assert.equal(await range.count(), 0, 'one page: no pager');

    // And by server: one event, of that rule on that server.
    await page.getByLabel('Server').selectOption({ label: 'app-01' });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="alert-events"] tbody tr').length === 1);
    assert.match(await rows.first().locator('td:nth-child(4)').textContent(), /app-01/);

    // By server alone: every rule's event there.
    await page.getByLabel('Rule').selectOption({ label: 'all rules' });
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="alert-events"] tbody tr').length === n, perServer);

    // By state: nothing resolved yet.
    await page.getByLabel('State').selectOption('resolved');
    await page.getByText('No alerts match.').waitFor();
    await page.getByLabel('State').selectOption('firing');
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="alert-events"] tbody tr').length === n, perServer);

    // By date: from tomorrow nothing, from today (to today) everything.
    await page.getByLabel('From', { exact: true }).fill(localDay(1));
    await page.getByText('No alerts match.').waitFor();
    await page.getByLabel('From', { exact: true }).fill(localDay(0));
    await page.getByLabel('To', { exact: true }).fill(localDay(0));
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="alert-events"] tbody tr').length === n, perServer);
    await page.getByLabel('To', { exact: true }).fill(localDay(-1));
    await page.getByText('No alerts match.').waitFor();
    await page.getByLabel('To', { exact: true }).fill(localDay(0));
    await page.waitForFunction((n) => document.querySelectorAll('[data-testid="alert-events"] tbody tr').length === n, perServer);
    await shot(page, 'alerts-history-filtered');

    // A reload keeps the filters (they are in the address); axe in both themes.
    for (const theme of ['light', 'dark']) {
      await page.evaluate((t) => localStorage.setItem('lcm-theme', t), theme);
      await page.reload();
      await page.waitForFunction((n) => document.querySelectorAll('[data-testid="alert-events"] tbody tr').length === n, perServer);
      assert.equal(await page.getByLabel('Server').inputValue(), app.id);
      await expectNoAxeViolations(page, `alert history, filtered (${theme})`);
    }
    await page.getByRole('button', { name: 'Clear filters' }).click();
    await range.filter({ hasText: 'events 1–50' }).waitFor();
    for (const theme of ['light', 'dark']) {
      await page.evaluate((t) => localStorage.setItem('lcm-theme', t), theme);
      await page.reload();
      await range.filter({ hasText: 'events 1–50' }).waitFor();
      await expectNoAxeViolations(page, `alert history, paged (${theme})`);
    }
    // The session probe before sign-in answers 401 by design.
    assert.deepEqual(b.errors.filter((e) => !e.includes('401 (Unauthorized)')), []);
  } finally {
    await b.close();
    await api.stop();
  }
});
