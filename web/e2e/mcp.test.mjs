// The MCP settings page switches the listener on and off, and the official
// TypeScript MCP SDK client (@modelcontextprotocol/sdk) lists and calls
// every tool of the real binary's demo fleet with an mcp-scoped key.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startApi, launch, uiLogin, apiLogin, apiFetch, freePort, sleep } from './helpers.mjs';

async function connect(url, key) {
  const client = new Client({ name: 'lcm-e2e-ts', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${key}` } },
  });
  await client.connect(transport);
  return client;
}

async function waitFor(what, cond, ms = 10000) {
  const end = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

const reachable = (url) => fetch(url, { method: 'POST' }).then(() => true, () => false);

test('MCP page switches the listener; the TypeScript SDK client calls every tool', async () => {
  const mcpPort = await freePort();
  const url = `http://127.0.0.1:${mcpPort}/mcp`;
  const api = await startApi({ dev: true, args: ['--demo'], config: { mcp_port: mcpPort } });
  const b = await launch();
  try {
    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByRole('link', { name: 'MCP for AI agents' }).click();
    await page.getByRole('heading', { name: 'MCP for AI agents' }).waitFor();
    assert.equal(await page.getByTestId('mcp-url').textContent(), url);
    assert.match(await page.getByTestId('mcp-listening').textContent(), /off/);
    assert.equal(await reachable(url), false, 'the listener is off by default');
    assert.match(await page.getByTestId('mcp-snippet').textContent(), new RegExp(url.replace(/[/.]/g, '\\$&')));

    await page.getByLabel('Serve the MCP endpoint').check();
    await page.getByTestId('mcp-listening').getByText('listening').waitFor();
    await waitFor('the MCP port', () => reachable(url));

    const token = await apiLogin(api, 'admin', api.adminPassword);
    const created = await apiFetch(api.base, '/api/v1/apikeys', { method: 'POST', body: { name: 'ts-sdk', scope: 'mcp' }, headers: { Authorization: `Bearer ${token}` } });
    assert.equal(created.status, 201, created.text);
    const key = created.json.key;

    const client = await connect(url, key);
    const { tools } = await client.listTools();
    const names = tools.map((t) => t.name).sort();
    assert.deepEqual(names, ['fleet_summary', 'get_server', 'list_outdated_packages', 'list_servers', 'list_vulnerabilities']);
    for (const t of tools) {
      assert.ok(t.outputSchema, `${t.name} declares an output schema`);
      assert.equal(t.annotations?.readOnlyHint, true, `${t.name} is read-only`);
    }
    // Page through the fleet three at a time.
    const seen = new Set();
    let offset = 0;
    let total = -1;
    for (;;) {
      const r = await client.callTool({ name: 'list_servers', arguments: { limit: 3, offset } });
      assert.ok(!r.isError, JSON.stringify(r.content));
      total = r.structuredContent.total;
      for (const s of r.structuredContent.servers) seen.add(s.id);
      if (r.structuredContent.next_offset == null) break;
      offset = r.structuredContent.next_offset;
    }
    assert.ok(total >= 5);
    assert.equal(seen.size, total);
    const app = await client.callTool({ name: 'get_server', arguments: { name: 'app-01' } });
    assert.equal(app.structuredContent.name, 'app-01');
    assert.equal(app.structuredContent.cve_critical, 1);
    const sum = await client.callTool({ name: 'fleet_summary', arguments: {} });
    assert.equal(sum.structuredContent.total, total);
    assert.equal(sum.structuredContent.servers_with_critical_cve, 1);
    const vulns = await client.callTool({ name: 'list_vulnerabilities', arguments: { severity: 'critical' } });
    assert.equal(vulns.structuredContent.findings[0].cve, 'CVE-2024-6387');
    const outdated = await client.callTool({ name: 'list_outdated_packages', arguments: { security_only: true } });
    assert.ok(outdated.structuredContent.total >= 1);
    const bad = await client.callTool({ name: 'list_servers', arguments: { limit: 9999 } });
    assert.equal(bad.isError, true);
    const res = await client.readResource({ uri: `lcm://servers/${app.structuredContent.id}` });
    assert.match(res.contents[0].text, /"app-01"/);
    await client.close();

    // A session token is not an MCP credential.
    await assert.rejects(connect(url, token));

    await page.getByLabel('Serve the MCP endpoint').uncheck();
    await page.getByTestId('mcp-listening').getByText('off').waitFor();
    await waitFor('the MCP port to close', async () => !(await reachable(url)));
  } finally {
    await b.close();
    await api.stop();
  }
});
