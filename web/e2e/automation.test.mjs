// Automation (issue 20) against the real lcm-api: a group's priority and
// maintenance window, a schedule defined with a rule through the UI, run
// now and its history, disable; a custom action created by the admin and
// shown; the system schedules with their next runs, the CVE scan at 02:30.
// axe in both themes on each page.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, apiFetch, apiLogin, expectNoAxeViolations } from './helpers.mjs';

async function bothThemes(page, label) {
  for (const theme of ['light', 'dark']) {
    await page.evaluate((t) => document.documentElement.setAttribute('data-theme', t), theme);
    await expectNoAxeViolations(page, `${label} (${theme})`);
  }
}

test('automation: group schedules and rules, run now with history, custom actions, system schedules', async () => {
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const { page } = b;
    const tok = await apiLogin(api, 'admin', api.adminPassword);
    const auth = { Authorization: `Bearer ${tok}` };
    const g = await apiFetch(api.base, '/api/v1/server-groups/create', { method: 'POST', body: { name: 'web' }, headers: auth });
    assert.equal(g.status, 200, g.text);
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();

    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Schedules and rules' }).click();
    await page.getByRole('heading', { name: 'Schedules and rules', level: 1 }).waitFor();
    await page.getByTestId('group-settings').waitFor();
    await page.getByLabel('Priority').fill('10');
    await page.getByTestId('group-settings').getByRole('button', { name: 'Save' }).click();
    await page.getByText('Group settings saved.').waitFor();

    // A bad cron is refused with the server's message.
    await page.getByLabel('Name', { exact: true }).fill('nightly');
    await page.getByLabel('Cron').fill('61 * * * *');
    await page.getByRole('button', { name: 'Define schedule' }).click();
    await page.getByRole('alert').filter({ hasText: 'not a cron spec' }).waitFor();
    await page.getByLabel('Cron').fill('30 2 * * *');
    await page.getByLabel('Time zone', { exact: true }).fill('Europe/Berlin');
    await page.getByRole('button', { name: 'Define schedule' }).click();
    const sch = page.getByTestId('schedule');
    await sch.getByRole('heading', { name: 'nightly' }).waitFor();
    await sch.getByLabel('Rule type').selectOption('refresh');
    await sch.getByRole('button', { name: 'Add rule' }).click();
    await sch.getByTestId('rule').filter({ hasText: 'Refresh inventory' }).waitFor();
    await bothThemes(page, 'schedules and rules');

    await sch.getByRole('button', { name: 'Run now', exact: true }).click();
    await page.getByText('Run started.').waitFor();
    await sch.getByRole('button', { name: 'History' }).click();
    await sch.getByTestId('run').filter({ hasText: 'manual' }).waitFor();
    await sch.getByRole('button', { name: 'Disable', exact: true }).click();
    await sch.getByText('disabled', { exact: true }).waitFor();
    let list = await apiFetch(api.base, `/api/v1/server-groups/${g.json.id}/schedules`, { headers: auth });
    assert.equal(list.json.schedules[0].enabled, false);
    assert.equal(list.json.schedules[0].rules[0].type, 'refresh');

    // Rules: a second one, moved above the first, disabled and enabled
    // again (POST /rules/{id}/disable|enable).
    await sch.getByLabel('Rule type').selectOption('health-check');
    await sch.getByRole('button', { name: 'Add rule' }).click();
    await sch.getByTestId('rule').filter({ hasText: 'Health check' }).waitFor();
    await sch.getByRole('button', { name: 'Move up rule Health check' }).click();
    await page.getByText('Rule moved.').waitFor();
    await sch.getByTestId('rule').first().filter({ hasText: 'Health check' }).waitFor();
    list = await apiFetch(api.base, `/api/v1/server-groups/${g.json.id}/schedules`, { headers: auth });
    assert.deepEqual(list.json.schedules[0].rules.map((r) => r.type), ['health-check', 'refresh']);
    await sch.getByRole('button', { name: 'Disable rule Refresh inventory' }).click();
    await sch.getByTestId('rule').filter({ hasText: 'Refresh inventory' }).getByText('(disabled)').waitFor();
    list = await apiFetch(api.base, `/api/v1/server-groups/${g.json.id}/schedules`, { headers: auth });
    assert.equal(list.json.schedules[0].rules.find((r) => r.type === 'refresh').enabled, false);
    await sch.getByRole('button', { name: 'Enable rule Refresh inventory' }).click();
    await sch.getByRole('button', { name: 'Disable rule Refresh inventory' }).waitFor();

    // Edit the schedule: a new cron and four eyes for every run.
    await sch.getByRole('button', { name: 'Edit' }).click();
    const edit = sch.getByTestId('schedule-edit');
    await edit.getByLabel('Cron').fill('15 4 * * *');
    await edit.getByLabel("Each run needs a second person's approval").check();
    await bothThemes(page, 'schedule edit form');
    await edit.getByRole('button', { name: 'Save schedule' }).click();
    await page.getByText('Schedule saved.').waitFor();
    await sch.getByTestId('needs-approval').waitFor();
    await sch.getByText('15 4 * * *').waitFor();
    list = await apiFetch(api.base, `/api/v1/server-groups/${g.json.id}/schedules`, { headers: auth });
    assert.equal(list.json.schedules[0].cron, '15 4 * * *');
    assert.equal(list.json.schedules[0].requires_approval, true);
    // Running one rule now: it asks for approval instead of running.
    await sch.getByRole('button', { name: 'Run now: rule Health check' }).click();
    await page.getByText(/Not started: approval: .*approval_pending|Not started: approval: approval .* requested/).waitFor();
    const aps = await apiFetch(api.base, '/api/v1/approvals?status=pending', { headers: auth });
    assert.equal(aps.json.approvals.filter((a) => a.kind === 'schedule-run').length, 1, aps.text);

    // Custom actions.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Custom actions' }).click();
    await page.getByRole('heading', { name: 'Custom actions', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New custom action' }).click();
    await page.getByLabel('Name').fill('disk usage');
    await page.getByLabel('Commands, one per line (run as root)').fill('df -h\ndu -sh /var/log');
    await page.getByLabel("Each run needs a second person's approval").check();
    await bothThemes(page, 'custom action dialog');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await page.getByTestId('custom-action').filter({ hasText: 'du -sh /var/log' }).filter({ hasText: 'needs approval' }).waitFor();
    const cas = await apiFetch(api.base, '/api/v1/custom-actions', { headers: auth });
    assert.equal(cas.json.custom_actions[0].requires_approval, true, cas.text);
    await bothThemes(page, 'custom actions');

    // System schedules: one registry with next runs.
    await page.goto(`${api.base}/#/admin/schedules`);
    await page.getByTestId('system-schedule').filter({ hasText: 'Vulnerability (CVE) scan' }).filter({ hasText: '30 2 * * *' }).waitFor();
    await page.getByRole('button', { name: /Run now.*Fire group schedules/ }).click();
    await page.getByText('Fire group schedules started.').waitFor();
    await bothThemes(page, 'system schedules');
  } finally {
    await b.close();
    await api.stop();
  }
});
