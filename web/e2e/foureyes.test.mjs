// Issue 20 in the browser against the real lcm-api and a real simulated
// fleet (cmd/fleetsim, onboarded through the API):
// - a rollout of a custom action on selected servers, paused and resumed
//   from its page, then aborted;
// - the approval policy switched on in the UI: "Update all" on the Servers
//   page becomes a rollout waiting for approval, which a second person
//   (another admin, in their own browser) approves from the inbox, and it
//   runs to the end;
// - a custom action run from its page on a selected server, with its live
//   job output;
// - the maintenance toggle on a server page.
// axe checks every changed page in both themes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { launch, uiLogin, apiFetch, simulatedFleet, expectNoAxeViolationsBothThemes as bothThemes } from './helpers.mjs';

const N = 3;

test('four eyes, custom action rollouts and runs, pause/resume, maintenance', { timeout: 600000 }, async () => {
  const fleet = await simulatedFleet(N, ['-latency', '30ms', '-packages', '100', '-upgradable', '6', '-security', '2']);
  const { api, auth, ids, page } = fleet;
  let carolBrowser;
  try {
    const carolPw = 'Harbor-Lilac-5120!';
    const carol = await apiFetch(api.base, '/api/v1/users', { method: 'POST', headers: auth, body: {
      username: 'carol', first_name: 'Carol', last_name: 'Second', email: 'carol@example.org', password: carolPw, roles: ['admin'] } });
    assert.ok(carol.status < 300, carol.text);
    const ca = await apiFetch(api.base, '/api/v1/custom-actions', { method: 'POST', headers: auth, body: { name: 'say hi', commands: ['echo hi-from-custom'] } });
    assert.equal(ca.status, 201, ca.text);

    // 1. A rollout of the custom action on two selected servers, one per
    //    batch with a long pause: paused, resumed and aborted from its page.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rollouts' }).click();
    await page.getByRole('heading', { name: 'Rollouts', level: 1 }).waitFor();
    await page.getByLabel('Action').selectOption({ label: 'Custom action: say hi' });
    await page.getByLabel('Servers', { exact: true }).selectOption('servers');
    const picker = page.getByTestId('server-picker');
    await picker.getByLabel('sim-00').check();
    await picker.getByLabel('sim-01').check();
    await picker.getByText('(2 selected)').waitFor();
    await page.getByLabel('Batch size (0: one batch)').fill('1');
    await page.getByLabel('Pause between batches (s)').fill('3600');
    await bothThemes(page, 'rollouts, server selection');
    await page.getByRole('button', { name: 'Preview plan' }).click();
    const plan = page.getByTestId('rollout-plan');
    await plan.getByText('Custom action: say hi on 2 servers in 2 batches').waitFor();
    await plan.getByRole('button', { name: 'Start rollout' }).click();
    await page.waitForURL(/#\/rollouts\/[^/]+$/);
    await page.getByRole('heading', { name: 'Rollout: Custom action: say hi' }).waitFor();
    const status = page.getByTestId('rollout-status');
    await status.filter({ hasText: '1 of 2 servers done' }).waitFor({ timeout: 60000 });
    await status.filter({ hasText: 'Running' }).waitFor();
    await page.getByRole('button', { name: 'Pause' }).click();
    await status.filter({ hasText: 'Paused' }).waitFor();
    await bothThemes(page, 'rollout detail (paused)');
    await page.getByRole('button', { name: 'Resume' }).click();
    await status.filter({ hasText: 'Running' }).waitFor();
    const roID = page.url().split('/').pop();
    const ro = await apiFetch(api.base, `/api/v1/rollouts/${roID}`, { headers: auth });
    assert.equal(ro.json.status, 'running', ro.text);
    await page.getByRole('button', { name: 'Abort' }).click();
    await status.filter({ hasText: 'Aborted' }).waitFor();
    await page.getByRole('link', { name: 'Job output' }).first().click();
    await page.getByTestId('console').filter({ hasText: 'hi-from-custom' }).waitFor({ timeout: 30000 });

    // 2. The approval policy, switched on in the UI: "Update all" waits as
    //    a rollout for a second person.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rollouts' }).click();
    const policy = page.getByTestId('approval-policy');
    await policy.getByRole('checkbox').check();
    await page.getByText('Every rollout and Update all now need a second person').waitFor();
    assert.equal((await apiFetch(api.base, '/api/v1/settings/rollouts', { headers: auth })).json.require_approval, true);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Servers' }).click();
    await page.getByRole('heading', { name: 'Servers', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Update all' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Install security updates' }).click();
    await page.waitForURL(/#\/rollouts\/[^/]+$/);
    await status.filter({ hasText: 'Awaiting approval' }).waitFor();
    const updateAllID = page.url().split('/').pop();

    // The second person approves in their own browser.
    carolBrowser = await launch();
    const cp = carolBrowser.page;
    await uiLogin(cp, api.base, 'carol', carolPw);
    await cp.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await cp.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Approvals' }).click();
    await cp.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor();
    const item = cp.locator('article').filter({ hasText: 'Security updates' }).filter({ hasText: 'requested by admin' });
    await item.getByRole('button', { name: 'Approve' }).waitFor();
    await bothThemes(cp, 'approvals inbox of a second person');
    await item.getByLabel('Comment').fill('checked the plan');
    await item.getByRole('button', { name: 'Approve' }).click();
    await cp.getByRole('cell', { name: 'checked the plan' }).waitFor();
    await status.filter({ hasText: 'Completed' }).waitFor({ timeout: 120000 });
    const done = await apiFetch(api.base, `/api/v1/rollouts/${updateAllID}`, { headers: auth });
    assert.equal(done.json.status, 'completed', done.text);
    assert.equal(done.json.servers, N);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Rollouts' }).click();
    await page.getByTestId('approval-policy').getByRole('checkbox').uncheck();
    await page.getByText('Rollouts start without approval').waitFor();

    // 3. A custom action run from its page on a selected server.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Custom actions' }).click();
    await page.getByRole('heading', { name: 'Custom actions', level: 1 }).waitFor();
    await page.getByTestId('custom-action').filter({ hasText: 'say hi' }).getByRole('button', { name: 'Run…' }).click();
    const dialog = page.getByRole('dialog');
    await dialog.getByTestId('server-picker').getByLabel('sim-02').check();
    await bothThemes(page, 'custom action run dialog');
    await dialog.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/#\/jobs\/bulk\/[^/]+$/);
    await page.getByTestId('bulk-summary').filter({ hasText: '1 of 1 jobs finished' }).waitFor({ timeout: 60000 });
    await page.locator('tr[data-server="sim-02"]').getByRole('link', { name: 'Output' }).click();
    await page.getByTestId('console').filter({ hasText: 'hi-from-custom' }).waitFor({ timeout: 30000 });

    // 4. Maintenance on and off from the server page.
    await page.goto(`${api.base}/#/servers/${ids[0]}`);
    const card = page.getByTestId('maintenance-card');
    await card.getByLabel('Reason').fill('disk swap');
    await card.getByRole('button', { name: 'Start maintenance' }).click();
    await card.getByTestId('maintenance-state').filter({ hasText: 'in maintenance' }).waitFor();
    const m = await apiFetch(api.base, `/api/v1/servers/${ids[0]}/maintenance`, { headers: auth });
    assert.equal(m.json.maintenance.active, true, m.text);
    assert.equal(m.json.maintenance.reason, 'disk swap');
    await bothThemes(page, 'server page in maintenance');
    await card.getByRole('button', { name: 'End maintenance' }).click();
    await card.getByTestId('maintenance-state').filter({ hasText: 'off' }).waitFor();
    const audit = await apiFetch(api.base, '/api/v1/audit?action=server.maintenance.end', { headers: auth });
    assert.equal(audit.json.items.length, 1, audit.text);
  } finally {
    if (carolBrowser) await carolBrowser.close();
    await fleet.stop();
  }
});
