// Shared helpers for the browser tests: start the real lcm-api binary,
// drive Debian's chromium through playwright-core (no browser download),
// sign in, compute TOTP codes, take screenshots, run cmd/fleetsim and
// onboard its hosts.
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createHmac, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const webDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const repoRoot = path.resolve(webDir, '..');
// LCM_UPDATE_DOCS=1 writes screenshots and measured figures into docs/;
// otherwise a test run leaves the checkout as it was (screenshots go to a
// temporary directory, figures to the test output).
export const updateDocs = process.env.LCM_UPDATE_DOCS === '1';
export const shotsDir = updateDocs
  ? path.join(repoRoot, 'docs', 'screenshots')
  : path.join(os.tmpdir(), 'lcm-ui-screenshots');
export const CHROMIUM = process.env.LCM_CHROMIUM ?? '/usr/bin/chromium';

let builtBin = '';
/** $LCM_API_BIN, or a binary built from this checkout once per run. */
export function apiBinary() {
  if (process.env.LCM_API_BIN) return process.env.LCM_API_BIN;
  if (!builtBin) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-web-bin-'));
    builtBin = path.join(dir, 'lcm-api');
    execFileSync('go', ['build', '-o', builtBin, './cmd/api'], { cwd: repoRoot, stdio: 'inherit' });
  }
  return builtBin;
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

/**
 * Starts lcm-api in a temp dir and waits for /api/v1/health.
 * dev: --dev (plain HTTP, 2FA requirement off); otherwise HTTPS with the
 * self-signed certificate. args: more command-line flags (e.g. --demo).
 */
export async function startApi({ dev = true, config = {}, args: extra = [], dir: reuse = '' } = {}) {
  // dir: start again in an earlier instance's directory (its config.json,
  // data and key), on a new port.
  const dir = reuse || fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-web-e2e-'));
  const port = await freePort();
  const earlier = reuse ? JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) : null;
  const cfg = earlier ? { ...earlier, port, ...config }
    : { jwt_secret: randomBytes(36).toString('base64url').slice(0, 48), port, agent_port: 0, data_dir: 'data', ...config };
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(cfg, null, 2), { mode: 0o600 });
  const args = ['-config', path.join(dir, 'config.json')];
  if (dev) args.push('--dev');
  args.push(...extra);
  const proc = spawn(apiBinary(), args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  proc.stdout.on('data', (d) => (stdout += d));
  proc.stderr.on('data', (d) => (stderr += d));
  let exited = null;
  proc.on('exit', (code) => (exited = code));
  const base = `${dev ? 'http' : 'https'}://127.0.0.1:${port}`;
  const deadline = Date.now() + 20000;
  for (;;) {
    if (exited !== null) throw new Error(`lcm-api exited (${exited}) before it was healthy:\n${stderr}`);
    try {
      const r = await apiFetch(base, '/api/v1/health');
      if (r.status === 200) break;
    } catch {
      /* not up yet */
    }
    if (Date.now() > deadline) throw new Error(`lcm-api not healthy after 20 s:\n${stderr}`);
    await sleep(50);
  }
  // The HTTPS health check runs curl synchronously, which blocks the event
  // loop: give the pending stdout events a turn before reading the
  // password (printed once, before the listeners start).
  const pwDeadline = Date.now() + 5000;
  while (!/password: (\S+)/.test(stdout) && Date.now() < pwDeadline) await sleep(20);
  const m = /password: (\S+)/.exec(stdout);
  return {
    base, dir, port, proc, adminPassword: m?.[1] ?? '',
    stdout: () => stdout, stderr: () => stderr,
    async stop() {
      if (exited === null) {
        proc.kill('SIGTERM');
        await new Promise((r) => { proc.once('exit', r); setTimeout(() => { proc.kill('SIGKILL'); r(); }, 10000); });
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** fetch that accepts the self-signed certificate (via curl for HTTPS). */
export async function apiFetch(base, p, { method = 'GET', body, headers = {} } = {}) {
  if (base.startsWith('http:')) {
    const r = await fetch(base + p, { method, headers: { ...(body ? { 'Content-Type': 'application/json' } : {}), ...headers }, body: body ? JSON.stringify(body) : undefined });
    const text = await r.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
    return { status: r.status, json, text };
  }
  const out = curl(base + p, { method, body, headers });
  return out;
}

/** Runs curl -sk and returns {status, json, text}. */
export function curl(url, { method = 'GET', body, headers = {} } = {}) {
  const args = ['-sk', '-X', method, '-w', '\n%{http_code}'];
  for (const [k, v] of Object.entries(headers)) args.push('-H', `${k}: ${v}`);
  if (body) args.push('-H', 'Content-Type: application/json', '--data-binary', JSON.stringify(body));
  args.push(url);
  const raw = execFileSync('curl', args, { encoding: 'utf8' });
  const i = raw.lastIndexOf('\n');
  const text = raw.slice(0, i);
  let json = null;
  try { json = text ? JSON.parse(text) : null; } catch { /* not JSON */ }
  return { status: Number(raw.slice(i + 1)), json, text };
}

/** Signs in over the API; returns a bearer token (for test set-up only). */
export async function apiLogin(api, username, password) {
  const r = await apiFetch(api.base, '/api/v1/auth/login', { method: 'POST', body: { username, password } });
  if (r.status !== 200 || !r.json?.token) throw new Error(`API login as ${username} failed: ${r.status} ${r.text}`);
  return r.json.token;
}

/** Starts chromium; args adds flags (e.g. a fake microphone for dictation). */
export async function launch({ args: extra = [] } = {}) {
  const userDataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-chromium-'));
  const ctx = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    ignoreHTTPSErrors: true,
    viewport: { width: 1360, height: 860 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', ...extra],
  });
  ctx.setDefaultTimeout(15000);
  const page = ctx.pages()[0] ?? (await ctx.newPage());
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
  return {
    ctx, page, errors,
    async close() {
      await ctx.close();
      fs.rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

/** Signs in through the UI; handles the 2FA challenge when a secret is given. */
export async function uiLogin(page, base, username, password, totpSecret) {
  await page.goto(`${base}/#/login`);
  await page.getByLabel('User name').fill(username);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  if (totpSecret) {
    await page.getByLabel('Authentication code').fill(totp(totpSecret));
    await page.getByRole('button', { name: 'Verify' }).click();
  }
}

/**
 * Starts lcm-api --dev and chromium and signs the generated admin in
 * through the UI, on the dashboard. The caller closes b and stops api.
 */
export async function signedInAdmin() {
  const api = await startApi({ dev: true });
  let b;
  try {
    b = await launch();
    await uiLogin(b.page, api.base, 'admin', api.adminPassword);
    await b.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    return { api, b, page: b.page };
  } catch (e) {
    await b?.close();
    await api.stop();
    throw e;
  }
}

/**
 * Reads the recovery codes shown once after enabling 2FA (or regenerating),
 * confirms they are saved and continues. Returns the codes.
 */
export async function saveRecoveryCodes(page) {
  const list = page.getByTestId('recovery-codes');
  await list.waitFor();
  const codes = (await list.getByTestId('recovery-code').allTextContents()).map((c) => c.trim());
  await page.getByLabel('I have saved these recovery codes').check();
  await list.getByRole('button', { name: 'Continue' }).click();
  await list.waitFor({ state: 'detached' });
  return codes;
}

export async function shot(page, name) {
  fs.mkdirSync(shotsDir, { recursive: true });
  await page.waitForTimeout(150);
  await page.screenshot({ path: path.join(shotsDir, `${name}.png`) });
}

export function sleep(ms) {
  return new Promise((r) => setTimeout(r, ms));
}

// RFC 6238 TOTP (SHA-1, 30 s, 6 digits) from a base32 secret.
export function totp(secret, at = Date.now()) {
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';
  let bits = '';
  for (const c of secret.replace(/=+$/, '').toUpperCase().replace(/\s+/g, '')) bits += alphabet.indexOf(c).toString(2).padStart(5, '0');
  const key = Buffer.alloc(Math.floor(bits.length / 8));
  for (let i = 0; i < key.length; i++) key[i] = parseInt(bits.slice(i * 8, i * 8 + 8), 2);
  const counter = Buffer.alloc(8);
  counter.writeBigUInt64BE(BigInt(Math.floor(at / 1000 / 30)));
  const h = createHmac('sha1', key).update(counter).digest();
  const o = h[h.length - 1] & 0xf;
  const n = ((h[o] & 0x7f) << 24) | (h[o + 1] << 16) | (h[o + 2] << 8) | h[o + 3];
  return String(n % 1e6).padStart(6, '0');
}

/** Waits until the next TOTP window when the current one ends within 3 s (codes are single-use per window on some servers). */
export async function freshTotpWindow() {
  const left = 30000 - (Date.now() % 30000);
  if (left < 3000) await sleep(left + 200);
}

/**
 * Starts cmd/fleetsim (built from this checkout) with n simulated pristine
 * Debian hosts and waits for the line it prints for each ({index, addr,
 * fingerprint}). flags: more of its flags, e.g. ['-latency', '30ms',
 * '-packages', '100']. stop() ends it and removes the binary.
 */
export async function startFleetsim(n, flags = []) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-fleetsim-'));
  const bin = path.join(dir, 'fleetsim');
  execFileSync('go', ['build', '-o', bin, './cmd/fleetsim'], { cwd: repoRoot, stdio: 'inherit' });
  const proc = spawn(bin, ['-n', String(n), ...flags], { stdio: ['ignore', 'pipe', 'inherit'] });
  const hosts = [];
  const rl = readline.createInterface({ input: proc.stdout });
  for await (const line of rl) {
    hosts.push(JSON.parse(line));
    if (hosts.length === n) break;
  }
  return { hosts, stop: () => { proc.kill('SIGTERM'); fs.rmSync(dir, { recursive: true, force: true }); } };
}

/** Polls a job over the API until it succeeded; fails on failed, aborted or blocked, or after two minutes. */
export async function waitJobSuccess(api, auth, id) {
  const deadline = Date.now() + 120000;
  for (;;) {
    const j = await apiFetch(api.base, `/api/v1/jobs/${id}`, { headers: auth });
    if (j.json?.status === 'success') return j.json;
    assert.ok(!['failed', 'aborted', 'blocked'].includes(j.json?.status), `job ${id}: ${j.text}`);
    assert.ok(Date.now() < deadline, `job ${id} still ${j.json?.status}`);
    await sleep(200);
  }
}

/**
 * Onboards fleetsim hosts through the API as an operator would: probe (the
 * fingerprint is the one fleetsim printed), join as sim-00, sim-01, … with
 * the bootstrap password, then wait until every join job succeeded.
 * Returns the servers' ids in the hosts' order.
 */
export async function onboardFleetsim(api, token, hosts) {
  const auth = { Authorization: `Bearer ${token}` };
  const ids = [];
  const jobs = [];
  for (const h of hosts) {
    const [host, port] = h.addr.split(':');
    const probe = await apiFetch(api.base, '/api/v1/servers/probe', { method: 'POST', headers: auth, body: { host, port: Number(port) } });
    assert.equal(probe.json?.fingerprint_sha256, h.fingerprint, probe.text);
    const join = await apiFetch(api.base, '/api/v1/servers/join', { method: 'POST', headers: auth, body: {
      name: `sim-${String(h.index).padStart(2, '0')}`, host, port: Number(port), username: 'debian', auth: 'password', password: 'bootstrap', host_key: probe.json.host_key,
    } });
    assert.equal(join.status, 202, join.text);
    ids.push(join.json.server.id);
    jobs.push(join.json.job_id);
  }
  for (const id of jobs) await waitJobSuccess(api, auth, id);
  return ids;
}

/**
 * The prologue of the browser tests on a simulated fleet: cmd/fleetsim with
 * n hosts (flags as for startFleetsim), a fresh lcm-api (--dev) with them
 * onboarded, and chromium signed in as admin on the Dashboard. Returns
 * {sim, api, b, page, token, auth, ids}; stop() closes what started, in
 * reverse order (also when the set-up itself fails).
 */
export async function simulatedFleet(n, flags = []) {
  const f = { sim: await startFleetsim(n, flags) };
  f.stop = async () => {
    await f.b?.close();
    await f.api?.stop();
    f.sim.stop();
  };
  try {
    f.api = await startApi({ dev: true });
    f.b = await launch();
    f.page = f.b.page;
    f.token = await apiLogin(f.api, 'admin', f.api.adminPassword);
    f.auth = { Authorization: `Bearer ${f.token}` };
    f.ids = await onboardFleetsim(f.api, f.token, f.sim.hosts);
    await uiLogin(f.page, f.api.base, 'admin', f.api.adminPassword);
    await f.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  } catch (e) {
    await f.stop();
    throw e;
  }
  return f;
}

/** Debian test hosts from `deploy/testhosts/testhosts.sh env`, or null. */
export function testHosts() {
  if (!process.env.LCM_TESTHOSTS || !process.env.LCM_TESTHOSTS_KEY) return null;
  const hosts = process.env.LCM_TESTHOSTS.split(',').map((h) => {
    const [host, port] = h.trim().split(':');
    return { host, port: Number(port || 22) };
  });
  return { hosts, key: fs.readFileSync(process.env.LCM_TESTHOSTS_KEY, 'utf8') };
}

/** Fails (CI) or explains the skip when a prerequisite is missing; never silent. */
export function requireOrSkip(t, cond, why) {
  if (cond) return true;
  if (process.env.CI === 'true') throw new Error(`missing prerequisite: ${why}`);
  t.diagnostic(`SKIPPED: ${why}`);
  t.skip(why);
  return false;
}

// Accessibility: axe-core (a devDependency, never shipped) run inside the
// page. The source is evaluated over the DevTools protocol, which the app's
// Content-Security-Policy (no inline scripts) does not apply to.
const require = createRequire(import.meta.url);
let axeSource = '';

/** The rule sets every page is held to: WCAG 2.0/2.1/2.2 A and AA, plus axe's best practices. */
export const AXE_TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa', 'best-practice'];

/**
 * Runs axe on the page (or on `include`, a CSS selector) and returns the
 * violations as {id, impact, help, nodes: [{target, summary}]}.
 * `disable` lists rule ids to leave out; say why wherever it is used.
 */
export async function axeViolations(page, { include, disable = [] } = {}) {
  if (!axeSource) axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  if (!(await page.evaluate(() => typeof window.axe === 'object'))) await page.evaluate(axeSource);
  return page.evaluate(async ({ include, tags, disable }) => {
    const rules = Object.fromEntries(disable.map((id) => [id, { enabled: false }]));
    const r = await window.axe.run(include ?? document, { runOnly: { type: 'tag', values: tags }, rules, resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id, impact: v.impact, help: v.help,
      nodes: v.nodes.map((n) => ({ target: n.target.join(' '), summary: (n.failureSummary ?? '').replace(/\s+/g, ' ').trim() })),
    }));
  }, { include, tags: AXE_TAGS, disable });
}

/** Formats axe violations one node per line: id [impact] target: summary. */
export function formatAxe(violations) {
  return violations.flatMap((v) => v.nodes.map((n) => `  ${v.id} [${v.impact}] ${n.target}: ${n.summary || v.help}`)).join('\n');
}

/**
 * Fails when axe finds any violation of any impact on the page; the message
 * lists each one (rule id, impact, element, what to fix). Use it in every
 * browser test that shows a new page or state:
 *   await expectNoAxeViolations(page, 'servers (dark)');
 */
export async function expectNoAxeViolations(page, label, opts = {}) {
  const v = await axeViolations(page, opts);
  if (v.length) {
    const n = v.reduce((a, x) => a + x.nodes.length, 0);
    throw new Error(`${label}: ${n} accessibility violation(s) (axe-core ${await page.evaluate(() => window.axe.version)}):\n${formatAxe(v)}`);
  }
}


/**
 * expectNoAxeViolations in the light and the dark theme, switched on the
 * page as it is (no reload: an open dialog or a shown error stays).
 */
export async function expectNoAxeViolationsBothThemes(page, label) {
  for (const theme of ['light', 'dark']) {
    await page.evaluate((t) => document.documentElement.setAttribute('data-theme', t), theme);
    await expectNoAxeViolations(page, `${label} (${theme})`);
  }
}
