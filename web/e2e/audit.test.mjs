// The audit log page shows who did what to which resource: a write made
// with an API key is listed with its action, typed target, the key and
// the details (docs/audit.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, apiLogin, apiFetch } from './helpers.mjs';

test('the audit log lists an API-key write with actor, key, target and details', async () => {
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const token = await apiLogin(api, 'admin', api.adminPassword);
    const key = await apiFetch(api.base, '/api/v1/apikeys', { method: 'POST', body: { name: 'e2e-audit' }, headers: { Authorization: `Bearer ${token}` } });
    assert.equal(key.status, 201, key.text);
    const group = await apiFetch(api.base, '/api/v1/server-groups/create', { method: 'POST', body: { name: 'e2e-audited' }, headers: { 'X-API-Key': key.json.key } });
    assert.equal(group.status, 200, group.text);

    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${api.base}/#/admin/audit`);
    await page.getByRole('heading', { name: 'Audit log' }).waitFor();
    await page.getByLabel('Filter by action').fill('group.create');
    await page.getByLabel('Filter by action').press('Enter');
    const row = page.getByRole('row', { name: /group\.create/ });
    await row.waitFor();
    const text = await row.textContent();
    assert.match(text, /admin\s*via API key/);
    assert.ok(text.includes(key.json.id), text);
    assert.ok(text.includes(`group:${group.json.id}`), text);
    assert.match(text, /name=e2e-audited/);
    assert.equal(await page.getByRole('row').count(), 2); // header and the one entry
  } finally {
    await b.close();
    await api.stop();
  }
});
