// Portal messages: an administrator publishes one on the admin page; it
// shows as a banner with its body in a dialog.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { shot, signedInAdmin } from './helpers.mjs';

test('portal message: create on the admin page, shown as a banner', async () => {
  const { api, b, page } = await signedInAdmin();
  try {
    await page.goto(`${api.base}/#/admin/announcements`);
    await page.getByRole('button', { name: 'New message' }).click();
    await page.getByLabel('Title').fill('Planned maintenance on Saturday');
    await page.getByLabel('Message', { exact: true }).fill('The LCM host is updated between 06:00 and 08:00 UTC.');
    await page.getByLabel('Severity').selectOption('warning');
    await page.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('cell', { name: 'Planned maintenance on Saturday' }).waitFor();
    await shot(page, 'admin-announcements');
    // The banner loads with the shell.
    await page.goto(`${api.base}/#/`);
    await page.reload();
    const banner = page.getByRole('region', { name: 'Portal messages' });
    await banner.getByText('Planned maintenance on Saturday').waitFor();
    await banner.getByRole('button', { name: 'Read more' }).click();
    await page.getByRole('dialog').getByText('between 06:00 and 08:00 UTC').waitFor();
    await page.keyboard.press('Escape');
    await banner.getByRole('button', { name: /Dismiss message/ }).click();
    assert.equal(await page.getByRole('region', { name: 'Portal messages' }).count(), 0);
  } finally {
    await b.close();
    await api.stop();
  }
});
