// Create an API key in the UI, read the plaintext once from the page and use
// it with curl.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { curl, signedInAdmin } from './helpers.mjs';

test('create an API key in the UI and use it with curl', async () => {
  const { api, b, page } = await signedInAdmin();
  try {
    await page.goto(`${api.base}/#/admin/apikeys`);
    await page.getByRole('button', { name: 'Create API key' }).click();
    await page.getByLabel('Name').fill('e2e-curl');
    await page.getByLabel('Scope').selectOption('read');
    await page.getByRole('button', { name: 'Create key' }).click();
    const key = (await page.getByTestId('api-key-plaintext').textContent()).trim();
    assert.match(key, /^lcm_/);
    await page.getByRole('cell', { name: 'e2e-curl' }).waitFor();

    const me = curl(`${api.base}/api/v1/auth/me`, { headers: { 'X-API-Key': key } });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.json.username, 'admin');
    const list = curl(`${api.base}/api/v1/users`, { headers: { 'X-API-Key': key } });
    assert.equal(list.status, 200, list.text);
    // Read scope: unsafe methods are refused.
    const w = curl(`${api.base}/api/v1/apikeys`, { method: 'POST', body: { name: 'x' }, headers: { 'X-API-Key': key } });
    assert.equal(w.status, 403, w.text);

    // After "Done" the plaintext is gone from the page for good.
    await page.getByRole('button', { name: 'Done' }).click();
    assert.equal(await page.getByTestId('api-key-plaintext').count(), 0);
    await page.reload();
    await page.getByRole('cell', { name: 'e2e-curl' }).waitFor();
    assert.ok(!(await page.content()).includes(key));
    // Revoke: the key stops working.
    await page.getByRole('row', { name: /e2e-curl/ }).getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('row', { name: /e2e-curl/ }).getByText('Revoked').waitFor();
    assert.equal(curl(`${api.base}/api/v1/auth/me`, { headers: { 'X-API-Key': key } }).status, 401);
  } finally {
    await b.close();
    await api.stop();
  }
});
