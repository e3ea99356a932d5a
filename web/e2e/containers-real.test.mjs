// The server's Containers tab against a real Podman, no page.route: test
// host 14 (internal/containersvc's host; the Go tests finish before the
// browser tests start) gets podman and one running container, is joined
// through the API, and the tab shows what the container refresh read. A
// stop from the tab is a real job whose read-back the tab then shows. The
// host is reset afterwards.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { startApi, launch, uiLogin, apiLogin, apiFetch, testHosts, requireOrSkip, repoRoot, sleep, expectNoAxeViolations } from './helpers.mjs';

const HOST = 14;

// As internal/containersvc's hostSetup: podman with runc, the cgroup v1
// hierarchies in the host's mount namespace, an image imported from a few
// binaries of the host, one container running without network.
const setup = `set -e
command -v podman >/dev/null && command -v runc >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -q podman runc >/tmp/lcm-apt.log 2>&1
if ! grep -q ' /sys/fs/cgroup/pids ' /proc/self/mountinfo; then
  mountpoint -q /sys/fs/cgroup || mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
  for c in cpu cpuacct cpuset memory devices freezer blkio pids; do mkdir -p /sys/fs/cgroup/$c; mount -t cgroup -o $c cgroup /sys/fs/cgroup/$c; done
  mkdir -p /sys/fs/cgroup/systemd; mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
fi
mkdir -p /etc/containers
printf '[containers]\\ndefault_ulimits = ["nofile=1024:1024","nproc=1024:1024"]\\n[engine]\\nruntime = "runc"\\n' >/etc/containers/containers.conf
podman rm -f -a >/dev/null
r=$(mktemp -d); mkdir -p $r/bin $r/lib/x86_64-linux-gnu $r/lib64 $r/tmp $r/proc $r/dev $r/sys $r/etc
cp /bin/sleep /bin/sh /bin/true $r/bin/; cp /lib/x86_64-linux-gnu/libc.so.6 $r/lib/x86_64-linux-gnu/; cp /lib64/ld-linux-x86-64.so.2 $r/lib64/
tar -C $r -c . | podman import - localhost/uitest:1 >/dev/null
rm -rf $r
podman run -d --network none --name lcme-ui localhost/uitest:1 /bin/sh -c 'trap "exit 0" TERM; while :; do sleep 1; done' >/dev/null
`;

function reset() {
  execFileSync('bash', [path.join(repoRoot, 'deploy/testhosts/testhosts.sh'), 'reset', String(HOST)], { stdio: 'ignore' });
}

async function waitJob(api, auth, id, want = 'success') {
  const deadline = Date.now() + 300000;
  for (;;) {
    const j = await apiFetch(api.base, `/api/v1/jobs/${id}`, { headers: auth });
    if (j.json?.status === want) return;
    assert.ok(!['success', 'failed', 'aborted', 'blocked'].includes(j.json?.status), `job ${id}: ${j.text}`);
    assert.ok(Date.now() < deadline, `job ${id} still ${j.json?.status}`);
    await sleep(250);
  }
}

test('containers tab on a real podman host: inventory, stop with read-back', { timeout: 900000 }, async (t) => {
  const th = testHosts();
  if (!requireOrSkip(t, th && th.hosts.length >= HOST, `Debian test host ${HOST} is not up (eval "$(bash deploy/testhosts/testhosts.sh env)")`)) return;
  const target = th.hosts[HOST - 1];
  reset();
  execFileSync('ssh', ['-i', process.env.LCM_TESTHOSTS_KEY, '-o', `UserKnownHostsFile=${process.env.LCM_TESTHOSTS_KNOWN_HOSTS}`, '-o', 'BatchMode=yes',
    '-p', String(target.port), `root@${target.host}`, 'bash -s'], { input: setup, stdio: ['pipe', 'ignore', 'inherit'], timeout: 600000 });
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const token = await apiLogin(api, 'admin', api.adminPassword);
    const auth = { Authorization: `Bearer ${token}` };
    const probe = await apiFetch(api.base, '/api/v1/servers/probe', { method: 'POST', headers: auth, body: { host: target.host, port: target.port } });
    assert.equal(probe.status, 200, probe.text);
    const join = await apiFetch(api.base, '/api/v1/servers/join', { method: 'POST', headers: auth, body: {
      name: 'e2e-podman', host: target.host, port: target.port, username: 'root', auth: 'key', private_key: th.key, host_key: probe.json.host_key,
    } });
    assert.equal(join.status, 202, join.text);
    await waitJob(api, auth, join.json.job_id);
    const id = join.json.server.id;
    const refresh = await apiFetch(api.base, `/api/v1/servers/${id}/docker/refresh`, { method: 'POST', headers: auth });
    assert.equal(refresh.status, 202, refresh.text);
    await waitJob(api, auth, refresh.json.job_id);

    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.goto(`${api.base}/#/servers/${id}`);
    await page.getByRole('tab', { name: 'Containers' }).click();
    const cs = page.getByTestId('docker-containers');
    await cs.waitFor();
    await page.getByTestId('docker-engines').getByText(/podman 4\./).waitFor();
    const row = cs.locator('tr', { hasText: 'lcme-ui' });
    await row.getByText('running').waitFor();
    await page.getByTestId('docker-images').getByText('localhost/uitest').waitFor();
    for (const theme of ['light', 'dark']) {
      await page.evaluate((x) => { localStorage.setItem('lcm-theme', x); }, theme);
      await page.reload();
      await page.getByRole('tab', { name: 'Containers' }).click();
      await cs.waitFor();
      await expectNoAxeViolations(page, `containers tab, real podman (${theme})`);
    }

    // Stop from the tab: a real job; its read-back shows on the tab.
    const stopped = page.waitForResponse((r) => r.url().includes('/docker/containers/lcme-ui/stop'));
    await page.getByRole('button', { name: 'Stop lcme-ui' }).click();
    const resp = await stopped;
    assert.equal(resp.status(), 202);
    const jobId = (await resp.json()).job_id;
    await page.getByText('Stop of lcme-ui started.').waitFor();
    await waitJob(api, auth, jobId);
    await page.reload();
    await page.getByRole('tab', { name: 'Containers' }).click();
    await cs.locator('tr', { hasText: 'lcme-ui' }).getByText('exited').waitFor();
    await page.getByTestId('docker-last-action').getByText(/stop lcme-ui/).waitFor();
    const v = await apiFetch(api.base, `/api/v1/servers/${id}/docker`, { headers: auth });
    assert.equal(v.json.containers.find((c) => c.name === 'lcme-ui')?.state, 'exited', v.text);
  } finally {
    await b.close();
    await api.stop();
    reset();
  }
});
