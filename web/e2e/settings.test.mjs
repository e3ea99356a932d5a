// Operator settings against the real lcm-api: the mail server (the system
// mail channel) with a password that is stored encrypted, never shown, never
// logged, and still reaches the mail server; a test mail and an invitation
// through it; config.json's "smtp" key imported at the first start (its
// password removed from the file); schedules; the speech provider with its
// voice list; the DNS listener's address.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import {
  startApi, launch, uiLogin, shot, apiFetch, apiLogin, freePort, requireOrSkip, expectNoAxeViolations, sleep, signedInAdmin,
} from './helpers.mjs';
import { startSmtpSink } from './smtpsink.mjs';

const SECRET = 'Smtp-Pass-Orchid-7731';
const LEGACY = 'Legacy-Conf-Pass-5519';

function filesUnder(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? filesUnder(path.join(dir, e.name)) : [path.join(dir, e.name)]));
}

function has(tool) {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

async function waitFor(fn, what, ms = 10000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (fn()) return;
    await sleep(50);
  }
  assert.fail(`timed out waiting for ${what}`);
}

test('settings: mail server (system mail channel: password encrypted, masked, never logged), test mail, schedules, DNS listener', async () => {
  const sink = await startSmtpSink();
  const dnsPort = await freePort();
  // config.json's smtp key is imported into the system mail channel at the first start; its password is then removed from the file.
  const api = await startApi({ dev: true, config: { smtp: { host: '127.0.0.1', port: sink.port, from: 'legacy@example.test', username: 'legacy', password: LEGACY },
    dns: { listen: `127.0.0.1:${dnsPort}` } } });
  const b = await launch();
  try {
    const { page } = b;
    const tok = await apiLogin(api, 'admin', api.adminPassword);
    const auth = { Authorization: `Bearer ${tok}` };
    const cfgFile = fs.readFileSync(path.join(api.dir, 'config.json'), 'utf8');
    assert.ok(!cfgFile.includes(LEGACY), 'the imported password is gone from config.json');
    assert.equal(JSON.parse(cfgFile).smtp.host, '127.0.0.1');
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();

    // Mail: the imported settings are shown, the imported password masked.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Mail (SMTP)' }).click();
    await page.getByRole('heading', { name: 'Mail (SMTP)', level: 1 }).waitFor();
    await page.getByTestId('smtp-source').filter({ hasText: 'In use' }).waitFor();
    assert.equal(await page.getByLabel('Server').inputValue(), '127.0.0.1');
    assert.equal(await page.getByLabel('Port').inputValue(), String(sink.port));
    assert.equal(await page.getByLabel('Encryption').inputValue(), 'none');
    assert.equal(await page.getByLabel('User name').inputValue(), 'legacy');
    await page.getByTestId('smtp-password-mask').waitFor();
    // Change the sender, the user and the password.
    await page.getByLabel('Sender address').fill('LCM <lcm@example.test>');
    await page.getByLabel('User name').fill('mailer');
    await page.getByRole('button', { name: 'Change', exact: true }).click();
    await page.getByLabel('Password').fill(SECRET);
    await page.getByRole('button', { name: 'Save mail settings' }).click();
    await page.getByText('Mail settings saved.').first().waitFor();
    await page.getByTestId('smtp-password-mask').waitFor();
    assert.equal(await page.getByLabel('Password').count(), 0, 'no password field with the stored password in it');
    assert.ok(!(await page.content()).includes(SECRET), 'the page never holds the password');
    await expectNoAxeViolations(page, 'mail settings');

    const got = await apiFetch(api.base, '/api/v1/settings/mail-channel', { headers: auth });
    assert.equal(got.status, 200);
    assert.equal(got.json.configured, true);
    assert.equal(got.json.channel.passwordSet, true);
    assert.equal(got.json.channel.config.username, 'mailer');
    assert.equal(got.json.channel.password, undefined);
    assert.ok(!got.text.includes(SECRET) && !got.text.includes(LEGACY));

    // A test mail goes through the saved server with the stored (decrypted) password; the page shows the server's answer.
    await page.getByLabel('Recipient').fill('ops@example.test');
    await page.getByRole('button', { name: 'Send test mail' }).click();
    await page.getByTestId('test-mail-result').filter({ hasText: 'The mail server accepted the test mail for ops@example.test' }).waitFor();
    assert.match(await page.getByTestId('test-mail-result').textContent(), new RegExp(`accepted by 127\\.0\\.0\\.1:${sink.port}`));
    await waitFor(() => sink.messages.some((m) => m.to.includes('ops@example.test')), 'the test mail');
    // The answer shown is the mail server's own reply, with the queue id it gave this message.
    const queued = sink.messages.find((m) => m.to.includes('ops@example.test')).queueId;
    assert.ok((await page.getByTestId('test-mail-result').textContent()).includes(`250 2.0.0 Ok: queued as ${queued}`), 'the server reply with its queue id');
    assert.ok(sink.auths.some((a) => a.user === 'mailer' && a.password === SECRET), 'the mail server got the decrypted password (AUTH PLAIN)');
    assert.match(sink.messages.find((m) => m.to.includes('ops@example.test')).data, /test e-mail from LCM/);
    await shot(page, 'settings-mail');

    // Invitations go through the system mail channel too (the mailer reads it at every send).
    const inv = await apiFetch(api.base, '/api/v1/users', { method: 'POST', headers: auth,
      body: { username: 'omar', first_name: 'Omar', last_name: 'Diaz', email: 'omar@example.test', roles: ['manager'] } });
    assert.equal(inv.status, 201, inv.text);
    await waitFor(() => sink.messages.some((m) => m.to.includes('omar@example.test')), 'the invitation');
    assert.match(sink.messages.find((m) => m.to.includes('omar@example.test')).from, /lcm@example\.test/);

    // A server that refuses: a clear error, no success.
    await page.getByLabel('Port').fill(String(await freePort()));
    await page.getByRole('button', { name: 'Save mail settings' }).click();
    await page.getByText('Mail settings saved.').first().waitFor();
    await page.getByRole('button', { name: 'Send test mail' }).click();
    const refused = page.getByRole('alert').filter({ hasText: 'The test mail was not sent' });
    await refused.waitFor();
    assert.match(await refused.textContent(), /connection refused|connect/i);
    assert.equal(await page.getByText('The mail server accepted').count(), 0);
    // Invalid input is refused with the reason, in plain words.
    await page.getByLabel('Sender address').fill('not an address');
    await page.getByRole('button', { name: 'Save mail settings' }).click();
    await page.getByRole('alert').filter({ hasText: 'from must be an e-mail address' }).waitFor();
    await page.getByLabel('Sender address').fill('lcm@example.test');
    await page.getByLabel('Server').fill('');
    await page.getByLabel('Server').evaluate((el) => el.removeAttribute('required'));
    await page.getByRole('button', { name: 'Save mail settings' }).click();
    await page.getByRole('alert').filter({ hasText: "host must be an SMTP server's host name or address" }).waitFor();

    // The password is nowhere in plain text: not in the data directory, not in the log, not in the audit log.
    for (const f of filesUnder(path.join(api.dir, 'data'))) {
      const data = fs.readFileSync(f);
      assert.ok(!data.includes(Buffer.from(SECRET)) && !data.includes(Buffer.from(LEGACY)), `${f} holds a password in plain text`);
    }
    assert.ok(!fs.readFileSync(path.join(api.dir, 'config.json'), 'utf8').includes(SECRET), 'config.json never gets the new password');
    for (const out of [api.stdout(), api.stderr()]) assert.ok(!out.includes(SECRET) && !out.includes(LEGACY), 'the log never holds a password');
    const audit = await apiFetch(api.base, '/api/v1/audit?limit=100', { headers: auth });
    assert.ok(!audit.text.includes(SECRET) && !audit.text.includes(LEGACY));
    const items = audit.json.items ?? audit.json;
    const saves = items.filter((e) => e.action === 'settings.mail_channel_updated');
    assert.ok(saves.length >= 2, 'each save is audited');
    assert.ok(saves.some((e) => /password\W+set/.test(JSON.stringify(e))), 'the audit says the password was set, not what it is');
    const tests = items.filter((e) => e.action === 'settings.test_mail');
    assert.ok(tests.length >= 2, 'each test mail is audited');

    // Schedules.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Schedules', exact: true }).click();
    const row = page.locator('tr[data-task="refresh_all"]');
    await row.waitFor();
    await row.getByRole('textbox').fill('0 4 * * *');
    await page.getByRole('button', { name: 'Save schedules' }).click();
    await page.getByText('Schedules saved.').waitFor();
    const sch = await apiFetch(api.base, '/api/v1/settings/schedules', { headers: auth });
    assert.equal(sch.json.tasks.find((t) => t.name === 'refresh_all').spec, '0 4 * * *');
    await row.getByRole('textbox').fill('every full moon');
    await page.getByRole('button', { name: 'Save schedules' }).click();
    await page.getByRole('alert').waitFor();
    await expectNoAxeViolations(page, 'schedules with an error');
    await page.getByRole('button', { name: 'Reset to defaults' }).click();
    await page.getByRole('button', { name: 'Save schedules' }).click();
    await page.getByText('Schedules saved.').first().waitFor();
    const back = await apiFetch(api.base, '/api/v1/settings/schedules', { headers: auth });
    const t = back.json.tasks.find((x) => x.name === 'refresh_all');
    assert.equal(t.spec, t.default_spec);

    // DNS listener: the address to dig.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'DNS listener' }).click();
    await page.getByTestId('dns-addr').filter({ hasText: `127.0.0.1:${dnsPort}` }).waitFor();
    assert.match(await page.getByTestId('dig-command').textContent(), new RegExp(`dig @127\\.0\\.0\\.1 -p ${dnsPort} `));

    // Security settings are there as well.
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Security' }).click();
    await page.getByLabel('Public base URL').waitFor();
  } finally {
    await b.close();
    await api.stop();
    await sink.close();
  }
});

test('settings: speech provider (local) and its voice list', async (t) => {
  if (!requireOrSkip(t, ['ffmpeg', 'pocketsphinx_continuous', 'espeak-ng'].every(has), 'local speech tools missing (apt-get install ffmpeg pocketsphinx pocketsphinx-en-us espeak-ng)')) return;
  const { api, b, page } = await signedInAdmin();
  try {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Speech' }).click();
    await page.getByRole('heading', { name: 'Speech', level: 1 }).waitFor();
    await page.getByLabel('Provider').selectOption('local');
    await page.getByLabel('Dictation language').fill('en-US');
    await page.getByLabel('Expected phrases').fill('refresh all servers\nreboot the web server');
    await page.getByRole('button', { name: 'Save speech settings' }).click();
    await page.getByText('Speech settings saved.').waitFor();
    const voices = page.getByTestId('voices');
    await voices.waitFor();
    // The list defaults to the voice language (en-US): espeak-ng's American English voice (named by its file) is there.
    await voices.getByRole('cell', { name: 'gmw/en-US', exact: true }).first().waitFor();
    await page.getByLabel('Language', { exact: true }).fill('de');
    await page.getByRole('button', { name: 'Show voices' }).click();
    await voices.locator('tbody tr').first().filter({ hasText: /de/ }).waitFor();
    await expectNoAxeViolations(page, 'speech settings with voices');
    await shot(page, 'settings-speech');
    const tok = await apiLogin(api, 'admin', api.adminPassword);
    const s = await apiFetch(api.base, '/api/v1/settings/speech', { headers: { Authorization: `Bearer ${tok}` } });
    assert.equal(s.json.provider, 'local');
    assert.deepEqual(s.json.phrases, ['refresh all servers', 'reboot the web server']);
  } finally {
    await b.close();
    await api.stop();
  }
});
