// Harden SSH on a real Debian test host (8) from the server page's Security
// tab, watch the proof, then remove the hardening again. The host is reset
// to its pristine state afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { startApi, launch, uiLogin, apiLogin, apiFetch, testHosts, requireOrSkip, shot, sleep, repoRoot } from './helpers.mjs';

// Host 8 (127.0.0.9) belongs to the hardening area.
const HOST = 8;

async function call(api, token, method, p, body) {
  const r = await apiFetch(api.base, p, { method, body, headers: { Authorization: `Bearer ${token}` } });
  if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
  return r.json;
}

function resetHost() {
  execFileSync('bash', [path.join(repoRoot, 'deploy/testhosts/testhosts.sh'), 'reset', String(HOST)], { stdio: 'inherit' });
}

async function finish(page) {
  await page.waitForURL(/#\/jobs\/[^/]+$/);
  await page.locator('[data-status=success], [data-status=failed], [data-status=blocked], [data-status=aborted]').waitFor({ timeout: 120000 });
  return { status: await page.locator('[data-status]').first().getAttribute('data-status'), out: await page.getByTestId('console').textContent() };
}

test('harden SSH from the Security tab, see the proof, remove the hardening', { timeout: 600000 }, async (t) => {
  const th = testHosts();
  if (!requireOrSkip(t, th && th.hosts.length >= HOST && process.getuid?.() === 0,
    `Debian test host ${HOST} is not up or not resettable (needs root; eval "$(bash deploy/testhosts/testhosts.sh env)")`)) return;
  const target = th.hosts[HOST - 1];
  resetHost();
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const token = await apiLogin(api, 'admin', api.adminPassword);
    const probe = await call(api, token, 'POST', '/api/v1/servers/probe', { host: target.host, port: target.port });
    const joined = await call(api, token, 'POST', '/api/v1/servers/join', {
      name: 'hardening-e2e', host: target.host, port: target.port, username: 'root', auth: 'key', private_key: th.key, host_key: probe.host_key,
    });
    for (let i = 0; ; i++) {
      const j = await call(api, token, 'GET', `/api/v1/jobs/${joined.job_id}`);
      if (j.status === 'success') break;
      if (['failed', 'aborted', 'blocked'].includes(j.status) || i > 120) throw new Error(`join: ${j.status} ${j.error}`);
      await sleep(500);
    }
    const id = joined.server.id;

    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${api.base}/#/servers/${id}`);
    await page.getByRole('heading', { name: 'hardening-e2e' }).waitFor();
    await page.getByRole('tab', { name: 'Security' }).click();
    assert.match(await page.getByTestId('ssh-hardened').textContent(), /no\s+never proven/);
    assert.match(await page.getByTestId('sudo-mode').textContent(), /full/);

    await page.getByRole('button', { name: 'Harden SSH' }).click();
    let r = await finish(page);
    assert.equal(r.status, 'success', r.out);
    assert.match(r.out, /proven: passwordauthentication no/);
    assert.match(r.out, /fresh login as lcm with the management key reaches sudo/);

    await page.goto(`${api.base}/#/servers/${id}`);
    await page.getByRole('tab', { name: 'Security' }).click();
    await page.getByTestId('ssh-hardened').filter({ hasText: /yes\s+proven/ }).waitFor();
    assert.match(await page.getByTestId('ssh-proof').textContent(), /passwordauthentication no/);
    await shot(page, 'server-security-hardened');

    // Port: as on a real server the host listens on an address without a
    // port (the test host's own drop-in pins :22, changed here as root).
    execFileSync('ssh', ['-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${process.env.LCM_TESTHOSTS_KNOWN_HOSTS}`, '-i', process.env.LCM_TESTHOSTS_KEY,
      `root@${target.host}`, "sed -i 's/^ListenAddress \\(.*\\):22$/ListenAddress \\1/' /etc/ssh/sshd_config.d/zz-lcm-testhost.conf && kill -HUP $(cat /run/sshd.pid)"]);
    await sleep(500);
    for (const port of [2222, 22]) {
      await page.getByLabel('New SSH port').fill(String(port));
      await page.getByRole('button', { name: 'Change port…' }).click();
      await page.getByRole('dialog').getByRole('button', { name: 'Continue' }).click();
      r = await finish(page);
      assert.equal(r.status, 'success', r.out);
      assert.match(r.out, new RegExp(`sshd listens on port ${port}`));
      await page.goto(`${api.base}/#/servers/${id}`);
      await page.getByText(`${target.host}:${port}`).waitFor();
      await page.getByRole('tab', { name: 'Security' }).click();
    }

    // Root login off, through the confirmation dialog.
    await page.getByRole('button', { name: 'Forbid root login…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Continue' }).click();
    r = await finish(page);
    assert.equal(r.status, 'success', r.out);
    await page.goto(`${api.base}/#/servers/${id}`);
    await page.getByRole('tab', { name: 'Security' }).click();
    await page.getByTestId('root-login').filter({ hasText: /forbidden\s+proven/ }).waitFor();

    await page.getByRole('button', { name: 'Remove hardening…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Continue' }).click();
    r = await finish(page);
    assert.equal(r.status, 'success', r.out);
    await page.goto(`${api.base}/#/servers/${id}`);
    await page.getByRole('tab', { name: 'Security' }).click();
    await page.getByTestId('ssh-hardened').filter({ hasText: /no\s+proven/ }).waitFor();
    assert.match(await page.getByTestId('ssh-proof').textContent(), /passwordauthentication yes/);

    // Restricted sudo and back, each proven by its job.
    await page.getByRole('button', { name: 'Restrict sudo…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Continue' }).click();
    r = await finish(page);
    assert.equal(r.status, 'success', r.out);
    assert.match(r.out, /proof: sudo -n \/bin\/sh -c true: refused/);
    await page.goto(`${api.base}/#/servers/${id}`);
    await page.getByRole('tab', { name: 'Security' }).click();
    await page.getByTestId('sudo-mode').filter({ hasText: /restricted \(allowlist\)\s+proven/ }).waitFor();
    // The helper the switch installed, as read back (version and when).
    await page.getByTestId('helper-version').filter({ hasText: /lcm-helper \S+ protocol \d+\s+read back/ }).waitFor();
    // The port, proven by the fresh logins of the SSH jobs above.
    await page.getByTestId('ssh-port').filter({ hasText: /22\s+proven/ }).waitFor();
    await shot(page, 'server-security-restricted');
    await page.goto(`${api.base}/#/`);
    await page.getByTestId('count-restricted').filter({ hasText: /^\s*1\s+sudo restricted/ }).waitFor();
    assert.match(await page.getByTestId('count-hardened').textContent(), /^\s*0\s+SSH hardened/);
    await page.goto(`${api.base}/#/servers/${id}`);
    // Reboot is refused while restricted.
    await page.getByRole('button', { name: 'Reboot' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Reboot' }).click();
    await page.getByText(/sudo is restricted on this server/).waitFor();
    await page.getByRole('tab', { name: 'Security' }).click();
    await page.getByRole('button', { name: 'Restore full sudo…' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Continue' }).click();
    r = await finish(page);
    assert.equal(r.status, 'success', r.out);

    // The audit log has the submissions.
    const audit = await call(api, token, 'GET', '/api/v1/audit?action=job.submit');
    const kinds = (audit.items ?? audit).map((e) => e.details?.kind);
    for (const k of ['harden-ssh', 'ssh-root-login', 'unharden-ssh', 'restrict-sudo']) assert.ok(kinds.includes(k), `audit has ${k}: ${kinds}`);
  } finally {
    await b.close();
    await api.stop();
    resetHost();
  }
});
