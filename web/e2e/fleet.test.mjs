// Add a real Debian test host through the wizard, then run upgrade-security
// and watch its output arrive live in the console; and the wizard's plain
// words when nothing listens on the SSH port.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import {
  testHosts, requireOrSkip, shot, freePort, expectNoAxeViolationsBothThemes, signedInAdmin,
} from './helpers.mjs';

test('add a server (probe → fingerprint → join) and run upgrade-security with live output', { timeout: 600000 }, async (t) => {
  const th = testHosts();
  if (!requireOrSkip(t, th && th.hosts.length >= 6, 'Debian test hosts 1-6 are not up (eval "$(bash deploy/testhosts/testhosts.sh env)")')) return;
  // Host 6: cmd/api's fleet e2e uses it too, but the Go tests finish before the browser tests start.
  const target = th.hosts[5];
  const { api, b, page } = await signedInAdmin();
  try {
    await page.goto(`${api.base}/#/servers/add`);
    await page.getByLabel('Host name or IP address').fill(target.host);
    await page.getByLabel('SSH port').fill(String(target.port));
    await page.getByRole('button', { name: 'Read host key' }).click();
    // The probe answers with the fingerprint or a plain-word error: wait for
    // either, and fail with the error the user would read.
    await page.locator('[data-testid=fingerprint], [data-testid=wizard-error]').first().waitFor({ timeout: 60000 });
    if (await page.getByTestId('wizard-error').count()) {
      assert.fail(`probe of ${target.host}:${target.port} failed: ${await page.getByTestId('wizard-error').textContent()}`);
    }
    const fp = (await page.getByTestId('fingerprint').textContent()).trim();
    assert.match(fp, /^SHA256:/);
    await shot(page, 'add-server');
    await page.getByLabel("The fingerprint matches the server's host key").check();
    await page.getByRole('button', { name: 'Confirm and continue' }).click();
    await page.getByLabel('Display name').fill(`e2e-${target.host}`);
    await page.getByLabel('SSH user').fill('root');
    await page.getByLabel(/^Private key/).fill(th.key);
    await page.getByRole('button', { name: 'Join server' }).click();
    await page.waitForURL(/#\/jobs\/[^/]+$/);
    await page.locator('[data-status=success], [data-status=failed], [data-status=blocked], [data-status=aborted]').waitFor({ timeout: 240000 });
    assert.equal(await page.locator('[data-status]').first().getAttribute('data-status'), 'success', await page.getByTestId('console').textContent());

    await page.getByRole('link', { name: `e2e-${target.host}` }).click();
    await page.getByRole('heading', { name: `e2e-${target.host}` }).waitFor();
    await shot(page, 'server-detail-real');
    await page.getByRole('button', { name: 'Upgrade security' }).click();
    await page.waitForURL(/#\/jobs\/[^/]+$/);
    // Live: output appears while the job is still running.
    let sawLive = false;
    const deadline = Date.now() + 300000;
    for (;;) {
      const status = await page.locator('[data-status]').first().getAttribute('data-status');
      const text = await page.getByTestId('console').textContent();
      if ((status === 'running' || status === 'started') && text.trim().length > 0) sawLive = true;
      if (['success', 'failed', 'aborted', 'blocked'].includes(status)) break;
      if (Date.now() > deadline) throw new Error('upgrade-security did not finish in 5 min');
      await page.waitForTimeout(200);
    }
    await shot(page, 'job-console-real');
    const status = await page.locator('[data-status]').first().getAttribute('data-status');
    const out = await page.getByTestId('console').textContent();
    assert.equal(status, 'success', out);
    assert.ok(sawLive, 'output was visible while the job was running');
    // A host already patched by an earlier run reports "no security updates".
    assert.match(out, /security upgrade|Reading package lists|Unpacking|Setting up/i);
  } finally {
    await b.close();
    await api.stop();
  }
});

/** The error code of a TCP connection attempt to 127.0.0.1:port ('' when it connected). */
function connectError(port) {
  return new Promise((resolve) => {
    const c = net.connect({ host: '127.0.0.1', port });
    c.once('connect', () => { c.destroy(); resolve(''); });
    c.once('error', (e) => resolve(e.code));
  });
}

test('the wizard says in plain words that nothing listens on the SSH port', { timeout: 120000 }, async () => {
  // A port nobody listens on, proven closed before and after the probe
  // (so the refusal the page explains is the one this test arranged).
  const port = await freePort();
  assert.equal(await connectError(port), 'ECONNREFUSED', `127.0.0.1:${port} must be closed`);
  const { api, b, page } = await signedInAdmin();
  try {
    await page.goto(`${api.base}/#/servers/add`);
    await page.getByLabel('Host name or IP address').fill('127.0.0.1');
    await page.getByLabel('SSH port').fill(String(port));
    await page.getByRole('button', { name: 'Read host key' }).click();
    const alert = page.getByTestId('wizard-error');
    await alert.waitFor();
    const text = (await alert.innerText()).trim();
    // internal/remote/explain.go's words for ECONNREFUSED, whole (the UI
    // starts the sentence with a capital: lib/errors.ts).
    assert.equal(text, `Connection refused on port ${port} of 127.0.0.1: is sshd running and listening on that port (systemctl status ssh), and is it the right port?`);
    // Not a Go error chain, not the wrong diagnosis.
    assert.doesNotMatch(text, /dial tcp|connect: |ECONNREFUSED|remote: |probe: |unreachable/i);
    assert.equal(await alert.getAttribute('role'), 'alert');
    assert.equal(await page.getByTestId('fingerprint').count(), 0, 'no host key step after a refused probe');
    assert.equal(await connectError(port), 'ECONNREFUSED', `127.0.0.1:${port} stayed closed`);
    await expectNoAxeViolationsBothThemes(page, 'add server, probe refused');
  } finally {
    await b.close();
    await api.stop();
  }
});
