// DNS records in the UI against the real lcm-api with its DNS listener on:
// a project with members and roles, zones, record sets (create, edit,
// delete), a template made from selected record sets and applied (with a
// conflict), sync groups whose enforcement report shows applied, skipped
// (priority) and conflicting sets, and a source host whose update changes
// its bound record sets. After each change `dig @listener` must agree with
// what the UI shows.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startApi, launch, uiLogin, shot, apiFetch, apiLogin, freePort, requireOrSkip, expectNoAxeViolations } from './helpers.mjs';

function hasDig() {
  try {
    execFileSync('dig', ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** dig +short against the listener; answers sorted. */
function dig(addr, name, type) {
  const i = addr.lastIndexOf(':');
  const out = execFileSync('dig', [`@${addr.slice(0, i)}`, '-p', addr.slice(i + 1), '+short', '+tries=1', '+time=2', name, type], { encoding: 'utf8' });
  return out.split('\n').map((x) => x.trim()).filter(Boolean).sort();
}

/** Polls dig until it answers `want` (the listener rebuilds before the API answers; this only absorbs UI timing). */
async function digUntil(addr, name, type, want) {
  let got = [];
  for (let i = 0; i < 20; i++) {
    got = dig(addr, name, type);
    if (JSON.stringify(got) === JSON.stringify(want)) return got;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.deepEqual(got, want, `dig ${name} ${type}`);
  return got;
}

test('records: projects, zones, record sets, templates, sync groups and source hosts; dig agrees', async (t) => {
  if (!requireOrSkip(t, hasDig(), 'dig is not installed (apt-get install dnsutils)')) return;
  const dnsPort = await freePort();
  const api = await startApi({ dev: true, config: { dns: { listen: `127.0.0.1:${dnsPort}` } } });
  const b = await launch();
  try {
    const { page } = b;
    // A second user, to become a member.
    const adminTok = await apiLogin(api, 'admin', api.adminPassword);
    const u = await apiFetch(api.base, '/api/v1/users', { method: 'POST', headers: { Authorization: `Bearer ${adminTok}` },
      body: { username: 'nora', first_name: 'Nora', last_name: 'Lind', email: 'nora@example.test', password: 'Amber-Falcon-Ridge-42', roles: ['manager'] } });
    assert.equal(u.status, 201, u.text);

    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'DNS records' }).click();
    await page.getByRole('heading', { name: 'DNS records', level: 1 }).waitFor();
    const addr = (await page.getByTestId('dns-addr').textContent()).trim();
    assert.equal(addr, `127.0.0.1:${dnsPort}`, 'the UI shows the listener address');
    await expectNoAxeViolations(page, 'records (empty)');

    // Project.
    await page.getByRole('button', { name: 'New project' }).click();
    await page.getByLabel('Name', { exact: true }).fill('Web shop');
    await page.getByLabel('Description', { exact: true }).fill('Public zones of the shop');
    await page.getByRole('button', { name: 'Create project' }).click();
    await page.getByRole('heading', { name: 'Web shop', level: 1 }).waitFor();

    // Members and roles.
    await page.getByRole('tab', { name: /Members/ }).click();
    await page.locator('tr[data-member="admin"]').waitFor();
    await page.getByLabel('User', { exact: true }).selectOption({ label: 'nora' });
    await page.getByLabel('Role', { exact: true }).selectOption('viewer');
    await page.getByRole('button', { name: 'Add member' }).click();
    await page.locator('tr[data-member="nora"]').waitFor();
    await page.getByLabel('Role of nora').selectOption('editor');
    await page.getByText('nora is now editor.').waitFor();
    const pid = page.url().split('/').pop();
    const members = await apiFetch(api.base, `/api/v1/projects/${pid}/members`, { headers: { Authorization: `Bearer ${adminTok}` } });
    assert.equal(members.json.find((m) => m.username === 'nora')?.role, 'editor');

    // Two zones.
    await page.getByRole('tab', { name: /Zones/ }).click();
    for (const zn of ['example.org', 'shop.test']) {
      await page.getByRole('button', { name: 'New zone' }).click();
      await page.getByLabel('Zone name').fill(zn);
      await page.getByRole('button', { name: 'Create zone' }).click();
      await page.getByRole('heading', { name: `${zn}.`, level: 1 }).waitFor();
      if (zn === 'example.org') await page.getByRole('link', { name: 'Web shop' }).click();
      if (zn === 'example.org') await page.getByRole('heading', { name: 'Web shop', level: 1 }).waitFor();
    }
    // On shop.test.: record sets.
    async function newSet(name, type, values, ttl = '') {
      await page.getByRole('button', { name: 'New record set' }).click();
      const d = page.getByRole('dialog');
      await d.getByLabel('Name', { exact: true }).fill(name);
      await d.getByLabel('Type').selectOption(type);
      if (ttl) await d.getByLabel('TTL (seconds)').fill(ttl);
      await d.getByLabel('Values').fill(values);
      await d.getByRole('button', { name: 'Create record set' }).click();
      await page.locator(`tr[data-set="${name} ${type}"]`).waitFor();
    }
    await newSet('www', 'A', '192.0.2.10', '300');
    await digUntil(addr, 'www.shop.test', 'A', ['192.0.2.10']);
    await newSet('@', 'TXT', '"v=spf1 -all"');
    await newSet('mail', 'A', '192.0.2.25');
    await digUntil(addr, 'mail.shop.test', 'A', ['192.0.2.25']);
    assert.match(await page.getByTestId('dig-command').textContent(), new RegExp(`dig @127\\.0\\.0\\.1 -p ${dnsPort} shop\\.test\\. SOA`));
    await expectNoAxeViolations(page, 'zone with record sets');

    // Edit: www gets two addresses.
    await page.getByRole('button', { name: 'Edit www A' }).click();
    await page.getByRole('dialog').getByLabel('Values').fill('192.0.2.11\n192.0.2.12');
    await page.getByRole('button', { name: 'Save record set' }).click();
    await page.locator('tr[data-set="www A"]').getByText('192.0.2.12').waitFor();
    await digUntil(addr, 'www.shop.test', 'A', ['192.0.2.11', '192.0.2.12']);

    // Delete: mail A.
    await page.getByRole('button', { name: 'Delete mail A' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Delete record set' }).click();
    await page.locator('tr[data-set="mail A"]').waitFor({ state: 'detached' });
    await digUntil(addr, 'mail.shop.test', 'A', []);

    // A template from the selected sets (www A and @ TXT).
    await page.getByLabel('Select www A').check();
    await page.getByLabel('Select @ TXT').check();
    await page.getByRole('button', { name: /Create template from 2 selected/ }).click();
    await page.getByLabel('Template name').fill('shop base');
    await page.getByRole('dialog').getByRole('button', { name: 'Create template' }).click();
    await page.getByText('Template shop base created with 2 record sets.').waitFor();
    await shot(page, 'records-zone');

    // example.org. gets a manual www A first: applying the template reports it as a conflict.
    const zones = (await apiFetch(api.base, `/api/v1/projects/${pid}/zones`, { headers: { Authorization: `Bearer ${adminTok}` } })).json;
    const org = zones.find((z) => z.name === 'example.org.');
    await page.goto(`${api.base}/#/records/zones/${org.id}`);
    await page.getByRole('heading', { name: 'example.org.', level: 1 }).waitFor();
    await newSet('www', 'A', '203.0.113.9');
    await page.getByLabel('Template', { exact: true }).selectOption({ label: 'shop base (2)' });
    await page.getByRole('button', { name: 'Apply template', exact: true }).click();
    const rep = page.getByTestId('enforcement-report');
    await rep.waitFor();
    assert.equal((await rep.getByTestId('report-applied').textContent()).trim(), '@ TXT');
    assert.equal((await rep.getByTestId('report-conflicts').textContent()).trim(), 'www A');
    await page.locator('tr[data-set="@ TXT"]').getByText('template').waitFor();
    await digUntil(addr, 'example.org', 'TXT', ['"v=spf1 -all"']);
    await digUntil(addr, 'www.example.org', 'A', ['203.0.113.9']);
    await expectNoAxeViolations(page, 'zone with an enforcement report');

    // Sync groups: priority 10 wins over 100; the report of the loser shows the skipped set.
    await page.goto(`${api.base}/#/records/sync-groups`);
    await page.getByRole('heading', { name: 'Sync groups', level: 1 }).waitFor();
    async function newGroup(name, prio, txt) {
      await page.getByRole('button', { name: 'New sync group' }).click();
      await page.getByLabel('Name', { exact: true }).fill(name);
      await page.getByLabel('Priority').fill(String(prio));
      await page.getByRole('button', { name: 'Create sync group' }).click();
      await page.getByRole('heading', { name, level: 2 }).waitFor();
      await page.getByRole('button', { name: 'Add record set' }).click();
      const d = page.getByRole('dialog');
      await d.getByLabel('Name', { exact: true }).fill('policy');
      await d.getByLabel('Type').selectOption('TXT');
      await d.getByLabel('Values').fill(txt);
      await d.getByRole('button', { name: 'Save and enforce' }).click();
      await page.locator('tr[data-set="policy TXT"]').waitFor();
      await page.getByLabel('Add zone').selectOption({ label: 'example.org.' });
      await page.getByRole('button', { name: 'Add and enforce' }).click();
      await page.getByTestId('enforcement-report').waitFor();
    }
    await newGroup('corporate', 10, '"owner=corporate"');
    assert.equal((await page.getByTestId('report-applied').textContent()).trim(), 'policy TXT');
    await digUntil(addr, 'policy.example.org', 'TXT', ['"owner=corporate"']);
    await newGroup('team', 100, '"owner=team"');
    assert.equal((await page.getByTestId('report-skipped').textContent()).trim(), 'policy TXT');
    assert.equal((await page.getByTestId('report-applied').textContent()).trim(), 'nothing');
    await page.getByText('a sync group with a lower priority number already manages').waitFor();
    await digUntil(addr, 'policy.example.org', 'TXT', ['"owner=corporate"']);
    await shot(page, 'records-sync-groups');
    await expectNoAxeViolations(page, 'sync groups with a report');

    // Source host: bind app A in shop.test., then move the host; the bound set and dig follow.
    await page.goto(`${api.base}/#/records/projects/${pid}`);
    await page.getByRole('heading', { name: 'Web shop', level: 1 }).waitFor();
    await page.getByRole('tab', { name: /Source hosts/ }).click();
    await page.getByRole('button', { name: 'New source host' }).click();
    await page.getByLabel('Name', { exact: true }).fill('web-1');
    await page.getByLabel('IPv4 addresses').fill('198.51.100.7');
    await page.getByRole('button', { name: 'Create source host' }).click();
    const row = page.locator('tr[data-source="web-1"]');
    await row.waitFor();
    await row.getByRole('button', { name: 'Bind…' }).click();
    await page.getByRole('dialog').getByLabel('Zone').selectOption({ label: 'shop.test.' });
    await page.getByRole('dialog').getByLabel('Name', { exact: true }).fill('app');
    await page.getByRole('button', { name: 'Bind', exact: true }).click();
    await row.getByTestId('bound-sets').getByText('app.shop.test. A 198.51.100.7').waitFor();
    await digUntil(addr, 'app.shop.test', 'A', ['198.51.100.7']);
    await row.getByRole('button', { name: 'Edit' }).click();
    await page.getByLabel('IPv4 addresses').fill('198.51.100.8');
    await page.getByRole('button', { name: 'Save source host' }).click();
    await row.getByTestId('bound-sets').getByText('app.shop.test. A 198.51.100.8').waitFor();
    await digUntil(addr, 'app.shop.test', 'A', ['198.51.100.8']);
    await shot(page, 'records-source-hosts');
    await expectNoAxeViolations(page, 'project, source hosts');

    // Roles: nora (editor) edits record sets but does not own the project; as a viewer she only reads.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await uiLogin(page, api.base, 'nora', 'Amber-Falcon-Ridge-42');
    // Signed in: the app may return to the page shown before the sign-out.
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
    await page.goto(`${api.base}/#/records/projects/${pid}`);
    await page.getByTestId('my-role').filter({ hasText: 'editor' }).waitFor();
    assert.equal(await page.getByRole('button', { name: 'Delete project' }).count(), 0);
    await page.getByRole('button', { name: 'New zone' }).waitFor();
    const norasId = members.json.find((m) => m.username === 'nora').userId;
    const adminTok2 = await apiLogin(api, 'admin', api.adminPassword); // signing out in the UI ended the admin's sessions
    const demote = await apiFetch(api.base, `/api/v1/projects/${pid}/members/${norasId}/update`, { method: 'POST', headers: { Authorization: `Bearer ${adminTok2}` }, body: { role: 'viewer' } });
    assert.equal(demote.status, 200, demote.text);
    const shop = zones.find((z) => z.name === 'shop.test.');
    await page.goto(`${api.base}/#/records/zones/${shop.id}`);
    await page.locator('tr[data-set="www A"]').waitFor();
    await page.getByText('Viewers cannot apply templates.').waitFor();
    assert.equal(await page.getByRole('button', { name: 'New record set' }).count(), 0);
    assert.equal(await page.getByRole('button', { name: 'Edit www A' }).count(), 0);

    // Every change left an audit entry.
    const audit = await apiFetch(api.base, '/api/v1/audit?limit=200', { headers: { Authorization: `Bearer ${adminTok2}` } });
    const actions = new Set((audit.json.items ?? audit.json).map((e) => e.action));
    for (const a of ['project.create', 'project.member_add', 'project.member_update', 'zone.create', 'record_set.create', 'record_set.update',
      'record_set.delete', 'template.create', 'template.apply', 'sync_group.create', 'sync_group.update_sets', 'sync_group.member_add',
      'source_host.create', 'source_host.bind', 'source_host.update']) {
      assert.ok(actions.has(a), `audit has ${a}: ${[...actions].join(', ')}`);
    }
  } finally {
    await b.close();
    await api.stop();
  }
});
