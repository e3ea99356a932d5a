// Alerts and notifications (issue 17) against the real lcm-api --demo: an
// administrator adds a signed webhook channel pointing at a real HTTPS
// receiver with its own CA, sends a test (the receiver's answer is shown),
// adds a second channel whose receiver fails, creates a "Reboot required"
// rule, evaluates now and reads the history: one delivery sent (the
// receiver verified the HMAC signature), the other retrying with the reason.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHmac, timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { startApi, launch, uiLogin, shot } from './helpers.mjs';

/** A self-signed certificate for 127.0.0.1 (its own CA) made with openssl. */
function selfSigned() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-alerts-ca-'));
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '1',
    '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', path.join(dir, 'key.pem'), '-out', path.join(dir, 'cert.pem')],
  { stdio: 'ignore' });
  return { key: fs.readFileSync(path.join(dir, 'key.pem'), 'utf8'), cert: fs.readFileSync(path.join(dir, 'cert.pem'), 'utf8') };
}

/** HTTPS receiver: /ok records and answers 200, /fail answers 503. */
async function receiver(tls) {
  const got = [];
  const srv = https.createServer(tls, (req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.url.startsWith('/fail')) {
        res.writeHead(503).end('receiver under maintenance');
        return;
      }
      got.push({ headers: req.headers, body });
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{"received":true}');
    });
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { url: `https://127.0.0.1:${srv.address().port}`, got, close: () => srv.close() };
}

const verify = (secret, r) => {
  const mac = createHmac('sha256', secret).update(`${r.headers['x-lcm-timestamp']}.${r.body}`).digest('hex');
  const sig = Buffer.from(String(r.headers['x-lcm-signature']));
  const want = Buffer.from(`sha256=${mac}`);
  return sig.length === want.length && timingSafeEqual(sig, want);
};

test('alerts: channels with test send, a rule, evaluation and the delivery history', async () => {
  const tls = selfSigned();
  const rcv = await receiver(tls);
  const api = await startApi({ dev: true, args: ['--demo'] });
  const b = await launch();
  try {
    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();

    // A signed generic webhook with the receiver's CA.
    await page.goto(`${api.base}/#/admin/notification-channels`);
    await page.getByRole('heading', { name: 'Notification channels', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New channel' }).click();
    const dlg = page.getByRole('dialog');
    await dlg.getByLabel('Name').fill('ops-webhook');
    await dlg.getByLabel('URL (https only)').fill(`${rcv.url}/ok/secret-path`);
    await dlg.getByLabel('Custom CA (PEM, optional)').fill(tls.cert);
    await dlg.getByRole('button', { name: 'Save' }).click();
    const secretNote = page.getByTestId('signing-secret');
    await secretNote.waitFor();
    const secret = (await secretNote.locator('code').nth(1).textContent()).trim();
    assert.match(secret, /^[0-9a-f]{64}$/);
    await secretNote.getByRole('button', { name: 'Done' }).click();

    // Test send: the receiver's answer appears in the row.
    const row = page.getByRole('row', { name: /ops-webhook/ });
    await row.getByRole('button', { name: 'Send test' }).click();
    await row.getByTestId('test-result').getByText('HTTP 200').waitFor();
    assert.ok(verify(secret, rcv.got[0]), 'the test request carries a valid HMAC signature');
    assert.equal(JSON.parse(rcv.got[0].body).type, 'alert.test');
    assert.ok(!(await page.content()).includes('secret-path'), 'the URL path (a credential) is never shown');

    // A Slack-format channel whose receiver fails.
    await page.getByRole('button', { name: 'New channel' }).click();
    await dlg.getByLabel('Name').fill('flaky-chat');
    await dlg.getByLabel('Format').selectOption('slack');
    await dlg.getByLabel('URL (https only)').fill(`${rcv.url}/fail/hook`);
    await dlg.getByLabel('Custom CA (PEM, optional)').fill(tls.cert);
    await dlg.getByRole('button', { name: 'Save' }).click();
    const flaky = page.getByRole('row', { name: /flaky-chat/ });
    await flaky.getByRole('button', { name: 'Send test' }).click();
    await flaky.getByTestId('test-result').getByText(/503/).waitFor();
    await shot(page, 'alerts-channels');

    // A rule for the demo fleet's pending reboots, to both channels.
    await page.goto(`${api.base}/#/admin/alert-rules`);
    await page.getByRole('button', { name: 'New rule' }).click();
    await dlg.getByLabel('Name').fill('Reboots pending');
    await dlg.getByLabel('Type').selectOption('reboot_required');
    await dlg.getByLabel('Severity').selectOption('critical');
    await dlg.getByLabel('ops-webhook').check();
    await dlg.getByLabel('flaky-chat').check();
    await dlg.getByRole('button', { name: 'Save' }).click();
    await page.getByRole('cell', { name: 'Reboots pending' }).waitFor();
    await page.getByRole('button', { name: 'Evaluate now' }).click();
    const report = page.getByTestId('evaluation');
    await report.waitFor();
    // The rule's alerts are open: fired by this evaluation, or already by
    // the one a finishing demo job triggers (alerts.DefaultDebounce).
    const open = Number((await report.textContent()).match(/(\d+) open/)[1]);
    assert.ok(open > 0, `the demo fleet has reboots pending: ${await report.textContent()}`);
    await shot(page, 'alerts-rules');

    // The history: sent to the webhook, retrying on the failing one.
    await page.goto(`${api.base}/#/admin/alert-events`);
    await page.getByRole('heading', { name: 'Alert history', level: 1 }).waitFor();
    const deliveries = page.getByTestId('delivery');
    for (let i = 0; i < 50; i++) {
      const texts = await deliveries.allTextContents();
      if (texts.some((t) => /sent\s+ops-webhook/.test(t)) && texts.some((t) => /retrying\s+flaky-chat/.test(t))) break;
      await page.waitForTimeout(200);
      await page.getByRole('button', { name: 'Refresh' }).click();
    }
    await deliveries.filter({ hasText: 'ops-webhook' }).filter({ hasText: 'sent' }).first().waitFor();
    await deliveries.filter({ hasText: 'flaky-chat' }).filter({ hasText: 'retrying' }).first().getByText(/503/).waitFor();
    await page.getByLabel('Delivery').selectOption('retrying');
    await page.getByTestId('alert-events').waitFor();
    assert.equal(await deliveries.filter({ hasText: 'flaky-chat' }).count() > 0, true);
    await shot(page, 'alerts-history');

    const firingNow = () => rcv.got.filter((r) => JSON.parse(r.body).type === 'alert.firing');
    for (let i = 0; i < 100 && firingNow().length < open; i++) await page.waitForTimeout(100);
    const firing = firingNow();
    assert.equal(firing.length, open, 'one signed notification per open alert');
    assert.ok(firing.every((r) => verify(secret, r)), 'every notification carries a valid signature');
    // The session probe before sign-in answers 401 by design.
    assert.deepEqual(b.errors.filter((e) => !e.includes('401 (Unauthorized)')), []);
  } finally {
    await b.close();
    await api.stop();
    rcv.close();
  }
});
