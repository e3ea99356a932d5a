// The Backups page against the real binary: schedule and retention
// settings, backup now, download (an encrypted .lcmbak), delete, a refused
// upload, a restore from the list that stages the backup and ends the
// process with exit code 42, and a successful upload of the downloaded file
// on a fresh instance, applied at its next start (docs/backups.md).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startApi, launch, uiLogin, apiLogin, apiFetch, sleep } from './helpers.mjs';

test('backups page: settings, backup now, download, delete, refused upload, restore exits 42, upload restores', async () => {
  process.env.LCM_BACKUP_PASSPHRASE = 'browser-Backup-pass-7';
  const api = await startApi({ dev: true });
  delete process.env.LCM_BACKUP_PASSPHRASE;
  let exitCode = null;
  api.proc.on('exit', (code) => (exitCode = code));
  let fresh = null;
  let restored = null;
  const b = await launch();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-bk-ui-'));
  try {
    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Backups' }).click();
    await page.getByRole('heading', { name: 'Backups', level: 1 }).waitFor();
    assert.match(await page.getByTestId('last-success').textContent(), /none yet/);

    // Schedule and retention.
    await page.getByLabel('Time of day (UTC)').fill('04:15');
    await page.getByLabel('Backups kept (0: no limit)').fill('3');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.getByText('Backup settings saved.').waitFor();
    const token = await apiLogin(api, 'admin', api.adminPassword);
    const auth = { Authorization: `Bearer ${token}` };
    let st = (await apiFetch(api.base, '/api/v1/system/backups', { headers: auth })).json;
    assert.equal(st.time_of_day, '04:15');
    assert.equal(st.retention_count, 3);
    assert.equal(st.schedule, '15 4 * * *');

    // Backup now, twice; the newest is listed first.
    await page.getByRole('button', { name: 'Backup now' }).click();
    await page.getByRole('cell', { name: /^lcm-.*\.lcmbak$/ }).first().waitFor();
    await sleep(1100); // names carry the second
    await page.getByRole('button', { name: 'Backup now' }).click();
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 2);
    st = (await apiFetch(api.base, '/api/v1/system/backups', { headers: auth })).json;
    assert.equal(st.backups.length, 2);
    const [newest, older] = st.backups;

    // Download: the file is the encrypted backup.
    const [dl] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: `Download ${newest.name}` }).click()]);
    assert.equal(dl.suggestedFilename(), newest.name);
    const saved = path.join(tmp, newest.name);
    await dl.saveAs(saved);
    const bytes = fs.readFileSync(saved);
    assert.equal(bytes.length, newest.size);
    assert.equal(bytes.subarray(0, 6).toString(), 'LCMBAK');

    // Delete the older one.
    await page.getByRole('button', { name: `Delete ${older.name}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.waitForFunction(() => document.querySelectorAll('tbody tr').length === 1);

    // An upload that is no backup is refused in the dialog; nothing changes.
    const junk = path.join(tmp, 'junk.lcmbak');
    fs.writeFileSync(junk, 'this is not a backup');
    await page.getByRole('button', { name: 'Upload and restore' }).click();
    await page.getByLabel('Backup file (.lcmbak)').setInputFiles(junk);
    await page.getByRole('dialog').getByRole('button', { name: 'Restore and restart' }).click();
    await page.getByRole('dialog').getByRole('alert').getByText(/not an LCM backup file/).waitFor();
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();
    assert.equal(exitCode, null, 'a refused upload must not end the process');

    // Restore from the list: staged, then the process exits with 42.
    await page.getByRole('button', { name: `Restore ${newest.name}` }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Restore and restart' }).click();
    await page.getByTestId('restore-staged').waitFor();
    const end = Date.now() + 20000;
    while (exitCode === null && Date.now() < end) await sleep(100);
    assert.equal(exitCode, 42, 'a staged restore ends the process with 42');
    assert.ok(fs.existsSync(path.join(api.dir, 'data', 'restore-staged', 'manifest.json')), 'the restore is staged');

    // A successful upload: a fresh instance restores the downloaded file
    // through the dialog; it stages it and exits with 42, and its next
    // start applies it: the first instance's admin and settings are there.
    process.env.LCM_BACKUP_PASSPHRASE = 'browser-Backup-pass-7';
    fresh = await startApi({ dev: true });
    delete process.env.LCM_BACKUP_PASSPHRASE;
    let freshExit = null;
    fresh.proc.on('exit', (code) => (freshExit = code));
    await uiLogin(page, fresh.base, 'admin', fresh.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Backups' }).click();
    await page.getByRole('heading', { name: 'Backups', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'Upload and restore' }).click();
    await page.getByLabel('Backup file (.lcmbak)').setInputFiles(saved);
    await page.getByRole('dialog').getByRole('button', { name: 'Restore and restart' }).click();
    await page.getByTestId('restore-staged').waitFor();
    const end2 = Date.now() + 20000;
    while (freshExit === null && Date.now() < end2) await sleep(100);
    assert.equal(freshExit, 42, 'an uploaded restore ends the process with 42');
    const manifest = JSON.parse(fs.readFileSync(path.join(fresh.dir, 'data', 'restore-staged', 'manifest.json'), 'utf8'));
    assert.ok(manifest.files.some((f) => f.name === 'database/lcm.db'), 'the staged restore holds the database');
    process.env.LCM_BACKUP_PASSPHRASE = 'browser-Backup-pass-7';
    restored = await startApi({ dev: true, dir: fresh.dir });
    delete process.env.LCM_BACKUP_PASSPHRASE;
    assert.match(restored.stderr(), /restore applied/);
    assert.equal(restored.adminPassword, '', 'the restored instance created no new admin');
    const rt = await apiLogin(restored, 'admin', api.adminPassword);
    const rst = (await apiFetch(restored.base, '/api/v1/system/backups', { headers: { Authorization: `Bearer ${rt}` } })).json;
    assert.equal(rst.time_of_day, '04:15', "the first instance's settings came with the backup");
    assert.equal(rst.retention_count, 3);
    await uiLogin(page, restored.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    assert.deepEqual(b.errors.filter((e) => !/Failed to fetch|Failed to load resource|ERR_CONNECTION_REFUSED|net::/.test(e)), []);
  } finally {
    await b.close();
    await api.stop();
    if (restored) await restored.stop();
    else if (fresh) await fresh.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
