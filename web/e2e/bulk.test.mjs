// Bulk runs against a real simulated fleet: cmd/fleetsim's pristine Debian
// hosts are onboarded through the API (probe, join), then the servers list
// selects some of them and runs one action on the selection, the progress
// view follows the run to the end, and "Update all" installs security
// updates on every server.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { simulatedFleet, shot, expectNoAxeViolations } from './helpers.mjs';

const N = 6;

test('run on a selection and update all, with live progress', { timeout: 600000 }, async () => {
  const fleet = await simulatedFleet(N, ['-latency', '100ms', '-packages', '200', '-upgradable', '10', '-security', '4']);
  const { api, page } = fleet;
  try {
    await page.goto(`${api.base}/#/servers`);
    await page.getByTestId('server-count').filter({ hasText: `of ${N}` }).waitFor();
    const run = page.getByTestId('run-on-selection');
    assert.equal(await run.isDisabled(), true, 'nothing selected: the action is disabled');
    for (const name of ['sim-00', 'sim-02', 'sim-04']) await page.getByRole('checkbox', { name: `Select ${name}` }).check();
    await page.getByRole('button', { name: 'Run on selection (3)' }).click();
    const dlg = page.getByRole('dialog', { name: 'Run on selection' });
    await dlg.getByLabel('Action').selectOption('refresh');
    await dlg.getByRole('button', { name: 'Start on 3 servers' }).click();
    await page.waitForURL(/#\/jobs\/bulk\/[^/]+$/);
    await page.getByRole('heading', { name: 'Refresh inventory', level: 1 }).waitFor();
    await page.getByTestId('bulk-summary').filter({ hasText: '3 of 3 jobs finished' }).waitFor({ timeout: 120000 });
    assert.equal(await page.locator('tbody tr').count(), 3);
    assert.equal(await page.locator('tbody [data-status=success]').count(), 3);
    await expectNoAxeViolations(page, 'bulk run (finished)');

    // Update all: every server, security updates, then the counters.
    await page.goto(`${api.base}/#/servers`);
    await page.getByTestId('server-count').filter({ hasText: `of ${N}` }).waitFor();
    await page.getByRole('button', { name: 'Update all' }).click();
    await page.getByRole('dialog', { name: 'Update all' }).getByRole('button', { name: 'Install security updates' }).click();
    await page.waitForURL(/#\/jobs\/bulk\/[^/]+$/);
    await page.getByRole('heading', { name: 'Update all: security updates', level: 1 }).waitFor();
    await page.getByTestId('bulk-summary').filter({ hasText: `${N} of ${N} jobs finished` }).waitFor({ timeout: 120000 });
    await shot(page, 'bulk-run');
    assert.equal(await page.locator('tbody [data-status=success]').count(), N);
    // The run's rows link to each job's console.
    await page.getByRole('link', { name: 'Output' }).first().click();
    await page.waitForURL(/#\/jobs\/[^/]+$/);
    await page.getByTestId('console').filter({ hasText: 'lcm: security updates:' }).waitFor({ timeout: 30000 });
  } finally {
    await fleet.stop();
  }
});
