// Add a server via the agent in the UI: the one-time token and install
// command are shown, the page waits for the agent, a real lcm-agent (the
// binary `make build` produced, run on this machine) enrolls with the token
// and connects, and the page says so; the server page shows the agent's
// state, and a regenerated token disconnects it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { startApi, launch, uiLogin, freePort, repoRoot, shot } from './helpers.mjs';

test('add a server via the agent: token, install command, live wait, agent state, regenerate', { timeout: 180000 }, async () => {
  const agentBin = path.join(repoRoot, 'bin', 'lcm-agent');
  assert.ok(fs.existsSync(agentBin), 'bin/lcm-agent missing: run make build');
  const agentPort = await freePort();
  const api = await startApi({ dev: true, config: { agent_port: agentPort, agent_host: '127.0.0.1' } });
  const b = await launch();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-agent-e2e-'));
  const cfg = path.join(dir, 'etc', 'agent.json');
  let agent;
  try {
    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${api.base}/#/servers/add`);
    await page.getByTestId('add-via-agent').click();
    await page.getByRole('heading', { name: 'Add server via agent', level: 1 }).waitFor();
    await page.getByLabel('Display name').fill('edge-e2e');
    await page.getByRole('button', { name: 'Create server and token' }).click();

    const cmd = (await page.getByTestId('agent-install-command').textContent()).trim();
    const token = (await page.getByTestId('agent-token').textContent()).trim();
    assert.match(token, /^lcmenroll_[A-Za-z0-9_-]+$/);
    assert.ok(cmd.includes(`enroll -force '${token}'`), cmd);
    assert.match(cmd, /\/api\/v1\/agent\/download\/amd64'/);
    assert.match(cmd, /echo '[0-9a-f]{64} {2}\/tmp\/lcm-agent' \| sha256sum -c -/);
    await page.getByRole('button', { name: 'Copy install command' }).waitFor();
    await page.getByText('Waiting for the agent…').waitFor();
    await shot(page, 'add-server-agent');

    // The checksum in the command is the download's.
    const sum = /echo '([0-9a-f]{64})/.exec(cmd)[1];
    const dl = await fetch(`${api.base}/api/v1/agent/download/amd64`);
    assert.equal(dl.status, 200);
    assert.equal(dl.headers.get('x-checksum-sha256'), sum);

    // A real agent enrolls with the token shown and connects.
    const enroll = spawnSync(agentBin, ['enroll', '-config', cfg, token], { encoding: 'utf8', timeout: 30000 });
    assert.equal(enroll.status, 0, enroll.stderr + enroll.stdout);
    agent = spawn(agentBin, ['run', '-config', cfg], { stdio: 'ignore' });
    await page.getByText('Agent connected').waitFor({ timeout: 60000 });
    await page.getByRole('link', { name: 'Open the server' }).click();
    await page.getByRole('heading', { name: 'edge-e2e', level: 1 }).waitFor();
    assert.equal((await page.getByTestId('agent-status').textContent()).trim(), 'Online');
    assert.notEqual((await page.getByTestId('agent-version').textContent()).trim(), '—');
    // The gateway it is connected to (the listener inside lcm-api) and its protocol.
    assert.match((await page.getByTestId('agent-gateway').textContent()).trim(), /^lcm-api@/);
    assert.equal((await page.getByTestId('agent-capability').textContent()).trim(), 'v1');

    // A new token disconnects the running agent.
    await page.getByRole('button', { name: 'Regenerate token…' }).click();
    await page.getByRole('button', { name: 'Issue new token' }).click();
    const token2 = (await page.getByTestId('agent-token').textContent()).trim();
    assert.notEqual(token2, token);
    await page.getByRole('button', { name: 'Done' }).click();
    const deadline = Date.now() + 20000;
    for (;;) {
      await page.reload();
      await page.getByTestId('agent-status').waitFor();
      if ((await page.getByTestId('agent-status').textContent()).trim() === 'Offline') break;
      assert.ok(Date.now() < deadline, 'the old agent still counts as connected after a new token');
      await new Promise((r) => setTimeout(r, 1000));
    }
  } finally {
    agent?.kill('SIGTERM');
    await b.close();
    await api.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
