// The fleet Security page and a server's Vulnerabilities tab against real
// data, no page.route: the real lcm-api scans cmd/fleetsim's Debian hosts
// onboarded through the API, with an OSV export uploaded through the API.
// The export holds LCM's own records in Debian's DEBIAN-CVE shape (ids
// LCM-SHAPE-…) for packages fleetsim's hosts run: openssh-server rated by
// the tracker's urgency "high", openssl with a critical CVSS vector and a
// fix. Every refresh is followed by a rescan, so no scan is asked for.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { spawn, execFileSync } from 'node:child_process';
import { startApi, launch, uiLogin, apiLogin, apiFetch, repoRoot, sleep, expectNoAxeViolations } from './helpers.mjs';

const records = {
  'LCM-SHAPE-DEBIAN-CVE-SSH.json': {
    id: 'LCM-SHAPE-DEBIAN-CVE-SSH', modified: new Date().toISOString(), upstream: ['CVE-2099-1001'],
    details: 'A record in the shape of a DEBIAN-CVE record, for the browser test.',
    affected: [{ package: { name: 'openssh-server', ecosystem: 'Debian:12' },
      ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '0' }] }], ecosystem_specific: { urgency: 'high' } }],
  },
  'LCM-SHAPE-DEBIAN-CVE-SSL.json': {
    id: 'LCM-SHAPE-DEBIAN-CVE-SSL', modified: new Date().toISOString(), upstream: ['CVE-2099-1002'],
    summary: 'openssl: a critical flaw (browser test record)',
    severity: [{ type: 'CVSS_V3', score: 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H' }],
    affected: [{ package: { name: 'openssl', ecosystem: 'Debian:12' },
      ranges: [{ type: 'ECOSYSTEM', events: [{ introduced: '0' }, { fixed: '9.0.0-1' }] }] }],
  },
};

function exportZip(dir) {
  const src = path.join(dir, 'records');
  fs.mkdirSync(src);
  for (const [name, rec] of Object.entries(records)) fs.writeFileSync(path.join(src, name), JSON.stringify(rec));
  const zip = path.join(dir, 'all.zip');
  execFileSync('python3', ['-c', 'import sys,zipfile,os\nz=zipfile.ZipFile(sys.argv[1],"w")\nfor f in sorted(os.listdir(sys.argv[2])): z.write(os.path.join(sys.argv[2],f),f)\nz.close()', zip, src]);
  return zip;
}

async function startFleetsim(n, dir) {
  const bin = path.join(dir, 'fleetsim');
  execFileSync('go', ['build', '-o', bin, './cmd/fleetsim'], { cwd: repoRoot, stdio: 'inherit' });
  const proc = spawn(bin, ['-n', String(n), '-latency', '20ms', '-packages', '120'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const hosts = [];
  const rl = readline.createInterface({ input: proc.stdout });
  for await (const line of rl) {
    hosts.push(JSON.parse(line));
    if (hosts.length === n) break;
  }
  return { hosts, stop: () => proc.kill('SIGTERM') };
}

async function waitJob(api, auth, id) {
  const deadline = Date.now() + 120000;
  for (;;) {
    const j = await apiFetch(api.base, `/api/v1/jobs/${id}`, { headers: auth });
    if (j.json?.status === 'success') return;
    assert.ok(!['failed', 'aborted', 'blocked'].includes(j.json?.status), `job ${id}: ${j.text}`);
    assert.ok(Date.now() < deadline, `job ${id} still ${j.json?.status}`);
    await sleep(200);
  }
}

test('security page and vulnerabilities tab on a scanned fleetsim fleet', { timeout: 600000 }, async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-sec-real-'));
  const sim = await startFleetsim(2, dir);
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const token = await apiLogin(api, 'admin', api.adminPassword);
    const auth = { Authorization: `Bearer ${token}` };
    const up = JSON.parse(execFileSync('curl', ['-sk', '-H', `Authorization: Bearer ${token}`, '-F', 'ecosystem=Debian',
      '-F', `file=@${exportZip(dir)}`, `${api.base}/api/v1/security/scanner/update-db`], { encoding: 'utf8' }));
    assert.deepEqual(up, { status: 'imported', ecosystem: 'Debian', records: 2 });
    for (let i = 0; ; i++) {
      const st = await apiFetch(api.base, '/api/v1/security/scanner', { headers: auth });
      if (st.json?.enabled) break;
      assert.ok(i < 100, `scanner not enabled: ${st.text}`);
      await sleep(100);
    }
    const ids = [];
    for (const h of sim.hosts) {
      const [host, port] = h.addr.split(':');
      const probe = await apiFetch(api.base, '/api/v1/servers/probe', { method: 'POST', headers: auth, body: { host, port: Number(port) } });
      const join = await apiFetch(api.base, '/api/v1/servers/join', { method: 'POST', headers: auth, body: {
        name: `sec-${h.index}`, host, port: Number(port), username: 'debian', auth: 'password', password: 'bootstrap', host_key: probe.json.host_key,
      } });
      assert.equal(join.status, 202, join.text);
      await waitJob(api, auth, join.json.job_id);
      ids.push(join.json.server.id);
    }
    for (const id of ids) {
      const r = await apiFetch(api.base, `/api/v1/servers/${id}/refresh-all`, { method: 'POST', headers: auth });
      assert.equal(r.status, 202, r.text);
      await waitJob(api, auth, r.json.job_id);
    }
    // The rescans after the refreshes store 2 findings per server.
    for (let i = 0; ; i++) {
      const v = await apiFetch(api.base, '/api/v1/security/vulnerabilities', { headers: auth });
      if (v.json?.total === 4) break;
      assert.ok(i < 300, `findings after the rescans: ${v.text}`);
      await sleep(100);
    }

    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.goto(`${api.base}/#/security`);
    await page.getByRole('heading', { name: 'Security', level: 1 }).waitFor();
    await page.getByTestId('scanner-status').getByText('Built-in OSV matcher (offline)').waitFor();
    await page.getByTestId('finding-count').filter({ hasText: '4 open findings' }).waitFor();
    await page.getByLabel('Minimum severity').selectOption('critical');
    await page.getByTestId('finding-count').filter({ hasText: '2 open findings' }).waitFor();
    await page.getByLabel('Minimum severity').selectOption('');
    await page.getByRole('tab', { name: 'By package' }).click();
    const pk = page.getByRole('table', { name: 'Vulnerable packages' });
    await pk.waitFor();
    assert.deepEqual((await pk.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.package))).sort(), ['openssh-server', 'openssl']);
    for (const theme of ['light', 'dark']) {
      await page.evaluate((t) => { localStorage.setItem('lcm-theme', t); }, theme);
      await page.reload();
      await page.getByTestId('finding-count').waitFor();
      await expectNoAxeViolations(page, `security page with real findings (${theme})`);
    }

    // The server's tab: the real findings; acknowledging one is read back
    // from the API.
    await page.goto(`${api.base}/#/servers/${ids[0]}`);
    await page.getByRole('tab', { name: 'Vulnerabilities' }).click();
    const table = page.getByRole('table', { name: 'Vulnerabilities of this server' });
    await table.waitFor();
    assert.deepEqual(await table.locator('tbody tr').evaluateAll((rs) => rs.map((r) => r.dataset.advisory)),
      ['LCM-SHAPE-DEBIAN-CVE-SSL', 'LCM-SHAPE-DEBIAN-CVE-SSH']);
    await table.getByText('9.0.0-1').waitFor();
    await table.getByText('no fix yet').waitFor();
    await page.getByRole('button', { name: 'Acknowledge LCM-SHAPE-DEBIAN-CVE-SSH for openssh-server' }).click();
    await table.locator('tr[data-advisory="LCM-SHAPE-DEBIAN-CVE-SSH"]').getByText('acknowledged').waitFor();
    const acked = await apiFetch(api.base, `/api/v1/servers/${ids[0]}/vulnerabilities?state=acknowledged`, { headers: auth });
    assert.deepEqual(acked.json.items.map((f) => [f.advisory, f.state, f.acknowledged_by]), [['LCM-SHAPE-DEBIAN-CVE-SSH', 'acknowledged', 'admin']]);
    await expectNoAxeViolations(page, 'vulnerabilities tab with real findings');
  } finally {
    await b.close();
    await api.stop();
    sim.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
