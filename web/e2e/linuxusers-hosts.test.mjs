// Linux users end to end in the browser against the real lcm-api and a
// real Debian test host (9, reset before and after): a custom profile
// block with a parameter, a profile using it (preview with the parameter,
// the block's usage, delete refused while used), a catalogue user edited
// (PATCH), keys added and removed (each change provisioned at once and
// read back on the host), a direct server assignment (the account, its
// sudoers file), delete refused with 409 while provisioned, group
// assignments with the profile override and the priority tie warning,
// removal from the server keeping the group's assignment, removal from
// every server with the home, and the delete that then works. axe in both
// themes on the states this adds.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startApi, launch, uiLogin, apiLogin, apiFetch, testHosts, requireOrSkip, sleep, repoRoot, expectNoAxeViolations } from './helpers.mjs';

// Host 9 (127.0.0.10) belongs to the Linux users area; the browser tests
// run after every Go test, so it is free then.
const HOST = 9;

function resetHost() {
  execFileSync('bash', [path.join(repoRoot, 'deploy/testhosts/testhosts.sh'), 'reset', String(HOST)], { stdio: 'inherit' });
}

function onHost(target, cmd) {
  try {
    return execFileSync('ssh', ['-o', 'BatchMode=yes', '-o', `UserKnownHostsFile=${process.env.LCM_TESTHOSTS_KNOWN_HOSTS}`, '-i', process.env.LCM_TESTHOSTS_KEY,
      `root@${target.host}`, cmd], { encoding: 'utf8' });
  } catch (e) {
    return `exit ${e.status}: ${e.stdout ?? ''}${e.stderr ?? ''}`;
  }
}

function newKey(comment) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-lu-key-'));
  execFileSync('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', comment, '-f', path.join(dir, 'k')]);
  return fs.readFileSync(path.join(dir, 'k.pub'), 'utf8').trim();
}

async function bothThemes(page, label) {
  for (const theme of ['light', 'dark']) {
    await page.evaluate((t) => document.documentElement.setAttribute('data-theme', t), theme);
    await expectNoAxeViolations(page, `${label} (${theme})`);
  }
}

test('Linux users: blocks, profile, keys, assignments, 409 on delete, on a real host', { timeout: 900000 }, async (t) => {
  const th = testHosts();
  if (!requireOrSkip(t, th && th.hosts.length >= HOST && process.getuid?.() === 0,
    `Debian test host ${HOST} is not up or not resettable (needs root; eval "$(bash deploy/testhosts/testhosts.sh env)")`)) return;
  const target = th.hosts[HOST - 1];
  resetHost();
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const tok = await apiLogin(api, 'admin', api.adminPassword);
    const call = async (method, p, body) => {
      const r = await apiFetch(api.base, p, { method, body, headers: { Authorization: `Bearer ${tok}` } });
      if (r.status >= 300) throw new Error(`${method} ${p}: ${r.status} ${r.text}`);
      return r.json;
    };
    const waitJob = async (id) => {
      for (let i = 0; ; i++) {
        const j = await call('GET', `/api/v1/jobs/${id}`);
        if (j.status === 'success') return j;
        if (['failed', 'aborted', 'blocked'].includes(j.status) || i > 240) throw new Error(`job ${j.job_name}: ${j.status} ${j.error}`);
        await sleep(500);
      }
    };
    // The Linux user jobs of the server so far; newJob waits for one that
    // is not in `before` and for its end.
    const jobIds = async (srvId) => {
      const h = await call('GET', `/api/v1/jobs/history?server_id=${srvId}&job_name=linux-user&limit=100`);
      return new Set(h.items.map((j) => j.job_id));
    };
    const newJob = async (srvId, before) => {
      for (let i = 0; i < 80; i++) {
        const h = await call('GET', `/api/v1/jobs/history?server_id=${srvId}&job_name=linux-user&limit=100`);
        const fresh = h.items.filter((j) => !before.has(j.job_id));
        if (fresh.length) return waitJob(fresh[0].job_id);
        await sleep(250);
      }
      throw new Error('no Linux user job started');
    };
    const probe = await call('POST', '/api/v1/servers/probe', { host: target.host, port: target.port });
    const joined = await call('POST', '/api/v1/servers/join', {
      name: 'lu-e2e', host: target.host, port: target.port, username: 'root', auth: 'key', private_key: th.key, host_key: probe.host_key,
    });
    await waitJob(joined.job_id);
    const srvId = joined.server.id;
    const web = await call('POST', '/api/v1/server-groups/create', { name: 'web' });
    await call('POST', `/api/v1/server-groups/${web.id}/assign-server`, { server_id: srvId });
    await sleep(1100); // the second group is strictly younger (the tie goes to the older one)
    const ops = await call('POST', '/api/v1/server-groups/create', { name: 'ops' });
    await call('POST', `/api/v1/server-groups/${ops.id}/assign-server`, { server_id: srvId });

    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();

    // --- A custom block with a parameter, previewed with a value.
    await page.goto(`${api.base}/#/admin/profiles`);
    await page.getByRole('heading', { name: 'Privilege profiles', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New block' }).click();
    const dlg = page.getByRole('dialog');
    await dlg.getByLabel('Block name').fill('Tail a unit log');
    await dlg.getByLabel('Block description').fill('The last 50 journal lines of one unit.');
    await dlg.getByLabel(/Parameters, one per line/).fill('unit name Unit');
    await dlg.getByLabel(/Rules of this variant/).fill('/usr/bin/journalctl -u {unit} -n 50');
    await bothThemes(page, 'profiles, block editor dialog');
    await dlg.getByRole('button', { name: 'Save block' }).click();
    await dlg.waitFor({ state: 'detached' });
    const blockPreview = page.getByTestId('block-preview');
    await page.getByLabel(/^Unit/).fill('ssh');
    await blockPreview.filter({ hasText: '/usr/bin/journalctl --no-pager -u ssh -n 50' }).waitFor();
    await page.getByTestId('block-usage').getByText('No profile uses this block.').waitFor();

    // --- A profile with a command rule and the block.
    await page.getByRole('button', { name: 'New profile' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Ops');
    await page.getByLabel(/Rules, one per line/).fill('/usr/bin/systemctl status ssh');
    await page.getByLabel('Add block').selectOption({ label: 'Tail a unit log' });
    await page.getByLabel('Unit', { exact: true }).fill('cron');
    await page.getByRole('button', { name: 'Add to profile' }).click();
    await page.getByTestId('profile-blocks').getByText('unit=cron').waitFor();
    const preview = page.getByTestId('sudoers-preview');
    await preview.filter({ hasText: '/usr/bin/journalctl --no-pager -u cron -n 50' }).waitFor();
    assert.match(await preview.textContent(), /\/usr\/bin\/systemctl --no-pager status ssh/);
    await bothThemes(page, 'profiles, profile with a block use');
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.locator('[data-profile="Ops"]').waitFor();
    // The block now shows its user, and cannot be deleted.
    await page.getByTestId('block-usage').getByText('Ops').waitFor();
    await page.getByRole('button', { name: 'Delete block' }).click();
    await page.getByText(/used by a privilege profile/).waitFor();

    // --- The catalogue user: create, edit (PATCH), a key.
    await page.goto(`${api.base}/#/admin/linux-users`);
    await page.getByRole('heading', { name: 'Linux users', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New Linux user' }).click();
    await page.getByLabel('User name').fill('erin');
    await page.getByRole('dialog').getByRole('button', { name: 'Add' }).click();
    await page.locator('[data-user="erin"]').waitFor();
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByLabel('Full name').fill('Erin Ops');
    await page.getByLabel('Shell').selectOption('/bin/sh');
    await bothThemes(page, 'Linux users, edit dialog');
    await page.getByRole('dialog').getByRole('button', { name: 'Save' }).click();
    await page.locator('.facts').getByText('Erin Ops').waitFor();
    await page.locator('.facts').getByText('/bin/sh').waitFor();
    const k1 = newKey('erin@one');
    await page.getByLabel('Public key').fill(k1);
    await page.getByRole('button', { name: 'Add key' }).click();
    await page.getByTestId('lu-keys').getByText('erin@one').waitFor();

    // --- A direct assignment with the profile: provisioned on the host.
    let since = await jobIds(srvId);
    await page.getByLabel('Server', { exact: true }).selectOption({ label: 'lu-e2e' });
    await page.getByLabel('Profile on the server').selectOption({ label: 'Ops' });
    await page.getByRole('button', { name: 'Assign and provision' }).click();
    await newJob(srvId, since);
    assert.match(onHost(target, 'getent passwd erin'), /^erin:.*:Erin Ops:\/home\/erin:\/bin\/sh$/m);
    assert.match(onHost(target, 'cat /etc/sudoers.d/lcm-prof-ops*'), /journalctl --no-pager -u cron -n 50/);
    assert.match(onHost(target, 'cat /home/erin/.ssh/authorized_keys'), /erin@one/);
    await page.reload();
    await page.locator('[data-user="erin"]').click();
    await page.locator('[data-server="lu-e2e"]').filter({ hasText: /Ops \(assigned directly\)/ }).filter({ hasText: 'provisioned' }).waitFor();

    // --- Keys: a second one and a removal reach the host at once.
    since = await jobIds(srvId);
    const k2 = newKey('erin@two');
    await page.getByLabel('Public key').fill(k2);
    await page.getByRole('button', { name: 'Add key' }).click();
    await newJob(srvId, since);
    assert.match(onHost(target, 'cat /home/erin/.ssh/authorized_keys'), /erin@one[\s\S]*erin@two|erin@two[\s\S]*erin@one/);
    since = await jobIds(srvId);
    await page.getByTestId('lu-keys').getByRole('button', { name: /Remove key/ }).first().click();
    await newJob(srvId, since);
    assert.equal((onHost(target, 'grep -c "^ssh-ed25519" /home/erin/.ssh/authorized_keys').trim()), '1');

    // --- Delete while provisioned: 409 in the dialog.
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByTestId('lu-delete-error').filter({ hasText: /still has an account on 1 server/ }).waitFor();
    await bothThemes(page, 'Linux users, delete refused (409)');
    await page.getByRole('dialog').getByRole('button', { name: 'Cancel' }).click();

    // --- Groups: web with the default, then its profile overridden; the
    // direct assignment still wins; ops ties with web (priority 100 each).
    await page.getByLabel('Group', { exact: true }).selectOption({ label: 'web' });
    await page.getByRole('button', { name: 'Assign', exact: true }).click();
    await page.locator('[data-group="web"]').waitFor();
    await page.getByLabel('Profile for group web').selectOption({ label: 'Full administrator' });
    await page.getByLabel('Group', { exact: true }).selectOption({ label: 'ops' });
    await page.getByRole('button', { name: 'Assign', exact: true }).click();
    await page.locator('[data-group="ops"]').waitFor();
    // Removing the direct assignment: web (the older of the tied groups)
    // keeps erin, now a full administrator, with the tie warning.
    since = await jobIds(srvId);
    await page.getByRole('button', { name: 'Remove erin from lu-e2e' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove' }).click();
    await newJob(srvId, since);
    assert.match(onHost(target, 'id -nG erin'), /\bsudo\b/);
    await page.reload();
    await page.locator('[data-user="erin"]').click();
    const row = page.locator('[data-server="lu-e2e"]');
    await row.filter({ hasText: /Full administrator \(through group web\)/ }).waitFor();
    await row.getByRole('note').filter({ hasText: /the older group "web" wins/ }).waitFor();
    await bothThemes(page, 'Linux users, assignments with the tie warning');

    // --- Remove from every server (with the home), then delete.
    since = await jobIds(srvId);
    await page.getByRole('button', { name: 'Remove from all servers…' }).click();
    await page.getByRole('dialog').getByLabel('Also delete the home directories').check();
    await page.getByRole('dialog').getByRole('button', { name: 'Remove everywhere' }).click();
    await newJob(srvId, since);
    assert.match(onHost(target, 'id erin 2>&1; test -d /home/erin && echo HOME || echo NOHOME'), /no such user[\s\S]*NOHOME/);
    await page.getByRole('button', { name: 'Delete', exact: true }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete' }).click();
    await page.getByText('Linux user deleted.').waitFor();
  } finally {
    await b.close();
    await api.stop();
    resetHost();
  }
});
