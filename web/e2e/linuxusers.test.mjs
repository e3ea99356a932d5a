// Linux users and privilege profiles in the UI against the real API: the
// profile editor's live sudoers preview (with --no-pager added and sudoedit
// for an editor), a rejection with its code, the audited danger
// confirmation, the catalogue (user, generated key shown once, activation
// link) and the public page where the person sets the password.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { apiFetch, apiLogin, signedInAdmin } from './helpers.mjs';

test('privilege profile editor, Linux users catalogue and activation page', async () => {
  const { api, b, page } = await signedInAdmin();
  try {

    // Profiles: the two built-ins, a new profile with a live preview.
    await page.goto(`${api.base}/#/admin/profiles`);
    await page.getByRole('heading', { name: 'Privilege profiles', level: 1 }).waitFor();
    await page.locator('[data-profile="Full administrator"]').waitFor();
    await page.locator('[data-profile="Standard user"]').waitFor();
    await page.getByRole('button', { name: 'New profile' }).click();
    await page.getByLabel('Name').fill('Web team');
    const rules = page.getByLabel(/Rules, one per line/);
    await rules.fill('/usr/bin/systemctl status nginx\n/usr/bin/vim /etc/nginx/nginx.conf');
    const preview = page.getByTestId('sudoers-preview');
    await preview.filter({ hasText: '/usr/bin/systemctl --no-pager status nginx' }).waitFor();
    assert.match(await preview.textContent(), /NOPASSWD: sudoedit \/etc\/nginx\/nginx.conf/);
    // A rejection shows its code; a dangerous rule needs the confirmation.
    await rules.fill('systemctl status nginx');
    await page.locator('[data-code="relative_path"]').waitFor();
    await rules.fill('/usr/bin/systemctl status nginx\n/usr/bin/tee /var/log/web/marker');
    await page.locator('[data-code="dangerous_unconfirmed"]').waitFor();
    await page.getByLabel(/I confirm rule 2/).check();
    await preview.filter({ hasText: '/usr/bin/tee /var/log/web/marker' }).waitFor();
    await page.getByRole('button', { name: 'Save profile' }).click();
    await page.locator('[data-profile="Web team"]').waitFor();
    // The family switch renders the Alpine form of the same rights.
    await page.getByLabel('Preview for').selectOption('apk');
    await preview.filter({ hasText: '%lcm-prof-web-team' }).waitFor();
    // A block's preview per family.
    await page.getByLabel('Block', { exact: true }).selectOption({ label: 'Operate nginx' });
    await page.getByLabel('Family', { exact: true }).selectOption('pacman');
    await page.getByTestId('block-preview').filter({ hasText: '/usr/bin/nginx -t' }).waitFor();

    const tok = await apiLogin(api, 'admin', api.adminPassword);
    const audit = await apiFetch(api.base, '/api/v1/audit?action=profile.dangerous_confirmed', { headers: { Authorization: `Bearer ${tok}` } });
    assert.ok(JSON.stringify(audit.json).includes('/usr/bin/tee /var/log/web/marker'), JSON.stringify(audit.json));

    // Linux users: create, generate a key (private key shown once), link.
    await page.goto(`${api.base}/#/admin/linux-users`);
    await page.getByRole('heading', { name: 'Linux users', level: 1 }).waitFor();
    await page.getByRole('button', { name: 'New Linux user' }).click();
    await page.getByLabel('User name').fill('root');
    await page.getByRole('dialog').getByRole('button', { name: 'Add' }).click();
    await page.getByRole('dialog').getByText(/system account name/).waitFor();
    await page.getByLabel('User name').fill('dana');
    await page.getByLabel('Full name').fill('Dana Ops');
    await page.getByLabel('Default profile').selectOption({ label: 'Web team' });
    await page.getByRole('dialog').getByRole('button', { name: 'Add' }).click();
    await page.locator('[data-user="dana"]').waitFor();
    await page.getByTestId('lu-servers').getByText('Not on any server.').waitFor();
    await page.getByRole('button', { name: 'Generate key pair' }).click();
    const priv = await page.getByTestId('lu-private-key').inputValue();
    assert.match(priv, /BEGIN OPENSSH PRIVATE KEY/);
    await page.getByRole('button', { name: 'I saved it' }).click();
    await page.getByTestId('lu-keys').getByText('ssh-ed25519').waitFor();
    assert.ok(!(await page.content()).includes('OPENSSH PRIVATE KEY'));
    await page.getByRole('button', { name: 'Create activation link' }).click();
    const link = (await page.getByTestId('lu-link').textContent()).trim();
    assert.match(link, /#\/linux-user-activation\?token=/);

    // The person opens the link signed out and sets the password.
    const p2 = await b.ctx.newPage();
    await p2.goto(link);
    await p2.getByRole('heading', { name: 'Set your server password' }).waitFor();
    await p2.getByLabel('Password', { exact: true }).fill('short');
    await p2.getByLabel('Repeat password').fill('short');
    await p2.getByRole('button', { name: 'Set password' }).click();
    await p2.getByRole('alert').filter({ hasText: /12/ }).waitFor();
    await p2.getByLabel('Password', { exact: true }).fill('Copper-Lantern-84w');
    await p2.getByLabel('Repeat password').fill('Copper-Lantern-84w');
    await p2.getByRole('button', { name: 'Set password' }).click();
    await p2.getByRole('status').filter({ hasText: 'dana' }).waitFor();
    await p2.close();
    await page.reload();
    await page.locator('[data-user="dana"]').click();
    await page.getByText('set by the person').waitFor();
  } finally {
    await b.close();
    await api.stop();
  }
});

// The server page's Users tab: last scan, LCM's accounts, pending syncs and
// the actions (the fleet data comes from fixtures; the posted jobs are
// recorded).
test('server Users tab: accounts, pending syncs and actions', async () => {
  const { fleetFixtures, makeServers, mockApi } = await import('./mocks.mjs');
  const { api, b, page } = await signedInAdmin();
  try {
    const servers = makeServers(5);
    const fx = fleetFixtures(servers);
    delete fx['GET /api/v1/auth/me'];
    const posted = [];
    fx['GET ~/api/v1/servers/s-[0-9]+/users'] = {
      scanned_at: new Date().toISOString(),
      human: [{ username: 'dana', uid: 1001, home: '/home/dana', shell: '/bin/bash', human: true, locked: false, expired: false, groups: ['lcm-prof-web'], last_login: 'Tue Nov 24 13:02:11 +0000 2026', managed: true }],
      system: [{ username: 'root', uid: 0, home: '/root', shell: '/bin/bash', human: false, locked: false, expired: false, groups: [], last_login: '', managed: false }],
      provisions: [{ user_id: 'lu-1', username: 'dana', profile_slug: 'web', state: 'provisioned', job_id: 'j-1', error: '', updated_at: new Date().toISOString() }],
    };
    fx['GET ~/api/v1/servers/s-[0-9]+/users/pending'] = [{ user_id: 'lu-2', username: 'erik', action: 'create', profile: 'Standard user' }];
    for (const op of ['users/disable', 'users/refresh', 'sync-users']) {
      fx[`POST ~/api/v1/servers/s-[0-9]+/${op}`] = async (req) => {
        posted.push({ op, body: req.postData() });
        return { status: 202, json: { status: 'started', job_id: `j-${op}`, job_name: op, kind: 'linux-user' } };
      };
    }
    await mockApi(page, fx);
    await page.goto(`${api.base}/#/servers/s-2`);
    await page.getByRole('tab', { name: 'Users' }).click();
    await page.getByTestId('accounts').getByRole('cell', { name: /dana/ }).waitFor();
    await page.getByTestId('pending').getByText('erik').waitFor();
    assert.equal(await page.getByTestId('accounts').getByRole('cell', { name: 'root' }).count(), 0);
    await page.getByLabel(/Show 1 system accounts/).check();
    await page.getByTestId('accounts').getByRole('cell', { name: 'root', exact: true }).waitFor();
    await page.getByRole('button', { name: 'Disable' }).click();
    await page.getByRole('button', { name: 'Scan accounts' }).click();
    await page.getByRole('button', { name: 'Sync users' }).click();
    await page.waitForFunction(() => true);
    for (let i = 0; i < 50 && posted.length < 3; i++) await new Promise((r) => setTimeout(r, 100));
    assert.deepEqual(posted.map((p) => p.op), ['users/disable', 'users/refresh', 'sync-users']);
    assert.deepEqual(JSON.parse(posted[0].body), { username: 'dana' });
  } finally {
    await b.close();
    await api.stop();
  }
});
