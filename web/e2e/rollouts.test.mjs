// Staged rollouts against a real simulated fleet: cmd/fleetsim's pristine
// Debian hosts are onboarded through the API, then the Rollouts page
// previews a plan (dry run), starts a rollout with a canary and batches of
// two, follows it live to the end with a link to each server's job output,
// and a rollout that needs approval waits in the approvals inbox, where its
// requester cannot approve it. axe checks each page in both themes.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiFetch, simulatedFleet, expectNoAxeViolations } from './helpers.mjs';

const N = 5;

async function axeBothThemes(page, label) {
  for (const theme of ['light', 'dark']) {
    await page.evaluate((t) => { localStorage.setItem('lcm-theme', t); document.documentElement.dataset.theme = t; }, theme);
    await page.reload();
    await page.getByRole('heading', { level: 1 }).waitFor();
    await page.locator('.spinner').first().waitFor({ state: 'detached', timeout: 15000 }).catch(() => {});
    await expectNoAxeViolations(page, `${label} (${theme})`);
  }
}

test('rollout with canary and batches, live progress, and approvals', { timeout: 600000 }, async () => {
  const fleet = await simulatedFleet(N, ['-latency', '50ms', '-packages', '200', '-upgradable', '10', '-security', '4']);
  const { api, auth, page } = fleet;
  try {
    await page.getByRole('link', { name: 'Rollouts' }).click();
    await page.getByRole('heading', { name: 'Rollouts', level: 1 }).waitFor();

    await page.getByLabel('Action').selectOption('security-updates');
    await page.getByLabel('Canary servers (0: none)').fill('1');
    await page.getByLabel('Batch size (0: one batch)').fill('2');
    await page.getByRole('button', { name: 'Preview plan' }).click();
    const plan = page.getByTestId('rollout-plan');
    await plan.getByText(`on ${N} servers in 3 batches`).waitFor();
    await expectNoAxeViolations(page, 'rollouts, dry-run plan');
    await plan.getByRole('button', { name: 'Start rollout' }).click();
    await page.waitForURL(/#\/rollouts\/[^/]+$/);
    await page.getByTestId('rollout-status').filter({ hasText: 'Completed' }).waitFor({ timeout: 180000 });
    assert.equal(await page.locator('[data-batch]').count(), 3);
    assert.equal(await page.locator('tbody .it-success').count(), N);
    await axeBothThemes(page, 'rollout detail (completed)');
    await page.getByRole('link', { name: 'Job output' }).first().click();
    await page.waitForURL(/#\/jobs\/[^/]+$/);
    await page.getByTestId('console').filter({ hasText: 'lcm: security updates:' }).waitFor({ timeout: 30000 });

    // A rollout that needs approval: its requester sees it in the inbox but
    // cannot approve it (the API refuses too: self_approval).
    const created = await apiFetch(api.base, '/api/v1/rollouts', { method: 'POST', headers: auth,
      body: { action: 'all-updates', all: true, require_approval: true } });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.status, 'awaiting_approval');
    const self = await apiFetch(api.base, `/api/v1/approvals/${created.json.approval_id}/approve`, { method: 'POST', headers: auth, body: { comment: 'me' } });
    assert.equal(self.status, 403, self.text);
    assert.equal(self.json.code, 'self_approval');
    const busy = await apiFetch(api.base, '/api/v1/rollouts', { method: 'POST', headers: auth, body: { action: 'security-updates', all: true } });
    assert.equal(busy.status, 409, busy.text);
    assert.equal(busy.json.code, 'rollout_in_progress');
    await page.getByRole('link', { name: 'Approvals' }).click();
    await page.getByRole('heading', { name: 'Approvals', level: 1 }).waitFor();
    await page.getByText('Your request: another person holding servers:write must decide it.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'Approve' }).count(), 0);
    await axeBothThemes(page, 'approvals');

    // Abort it from its page.
    await page.goto(`${api.base}/#/rollouts/${created.json.id}`);
    await page.getByTestId('rollout-status').filter({ hasText: 'Awaiting approval' }).waitFor();
    await page.getByRole('button', { name: 'Abort' }).click();
    await page.getByTestId('rollout-status').filter({ hasText: 'Aborted' }).waitFor();
    await page.goto(`${api.base}/#/rollouts`);
    await page.locator(`[data-rollout="${created.json.id}"]`).getByText('Aborted').waitFor();
    await axeBothThemes(page, 'rollouts');
  } finally {
    await fleet.stop();
  }
});
