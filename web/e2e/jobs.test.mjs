// Job history is readable (issue 24, part 3): a job started in the UI
// streams into its console; after leaving the page, the job opened again
// from the Jobs list and from a direct link shows its whole output, which
// downloads with the same content the API stores. A job id that does not
// exist says so. The output size agrees in number ("1 line", "2 lines").
// Real binary in --demo mode: the demo servers' jobs run in the built-in
// simulator (no connection is made).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { startApi, launch, uiLogin, apiFetch, apiLogin, shot, startFleetsim, onboardFleetsim, waitJobSuccess,
  expectNoAxeViolationsBothThemes } from './helpers.mjs';

let api;
let b;
let token;

before(async () => {
  api = await startApi({ args: ['--demo'] });
  token = await apiLogin(api, 'admin', api.adminPassword);
  b = await launch();
  await uiLogin(b.page, api.base, 'admin', api.adminPassword);
  await b.page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(async () => {
  await b?.close();
  await api?.stop();
});

const auth = () => ({ Authorization: `Bearer ${token}` });

/** The console's text and the output summary once the job is final. */
async function finishedConsole(page) {
  await page.getByText('Succeeded').first().waitFor();
  const consoleEl = page.getByTestId('console');
  await consoleEl.getByText('==> finished successfully').waitFor();
  return { text: await consoleEl.innerText(), size: await page.getByTestId('output-size').innerText() };
}

async function downloadOutput(page) {
  const dl = page.getByRole('button', { name: 'Download output' });
  assert.equal(await dl.isEnabled(), true, 'Download output is enabled for a finished job with output');
  const [file] = await Promise.all([page.waitForEvent('download'), dl.click()]);
  return fs.readFileSync(await file.path(), 'utf8');
}

test('a job streams live, and its history opens from the Jobs list and by link with the whole output', async () => {
  const { page } = b;
  const servers = (await apiFetch(api.base, '/api/v1/servers', { headers: auth() })).json;
  const server = servers.find((s) => s.name === 'app-01') ?? servers[0];

  // Run a job in the UI: the server page's Refresh opens the live console.
  await page.goto(`${api.base}/#/servers/${server.id}`);
  await page.getByRole('button', { name: 'Refresh', exact: true }).click();
  await page.waitForURL(/#\/jobs\/[0-9a-f-]{36}$/);
  const jobId = page.url().split('/').pop();
  const live = await finishedConsole(page);
  assert.ok(live.text.includes(`on ${server.name} (`) && live.text.includes("[demo: simulated, no connection made]"), live.text);
  assert.match(live.text, /Collecting facts … ok/);

  // What the API stores for this job.
  const stored = (await apiFetch(api.base, `/api/v1/jobs/${jobId}/ssh-output`, { headers: auth() })).json;
  assert.equal(stored.complete, true);
  const lines = stored.output.split('\n').filter(Boolean).length;
  assert.ok(lines >= 4, `stored output has ${lines} lines`);

  // Leave the page, then open the job from the Jobs list.
  await page.goto(`${api.base}/#/`);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
  await page.getByRole('heading', { name: 'Jobs' }).waitFor();
  await page.locator(`a[href="#/jobs/${jobId}"]`).click();
  const fromList = await finishedConsole(page);
  assert.equal(fromList.text.trim(), stored.output.trim(), 'the console shows the whole stored output');
  assert.match(fromList.size, new RegExp(`^${stored.offset} B · ${lines} lines$`));
  assert.equal(await page.getByTestId('stream-mode').innerText(), '', 'a finished job is not "Updating"');
  assert.equal(await downloadOutput(page), stored.output, 'the download is the stored output');

  // A direct link in a fresh page load.
  await page.goto(`${api.base}/#/`);
  await page.goto(`${api.base}/#/jobs/${jobId}`);
  await page.reload();
  const direct = await finishedConsole(page);
  assert.equal(direct.text.trim(), stored.output.trim());
  assert.equal(await downloadOutput(page), stored.output);
  await shot(page, 'job-history');
});

test('a job id that does not exist says "not found"', async () => {
  const { page } = b;
  for (const id of ['00000000-0000-4000-8000-000000000000', 'no-such-job']) {
    await page.goto(`${api.base}/#/jobs/${id}`);
    await page.reload();
    const alert = page.getByTestId('job-not-found');
    await alert.waitFor();
    assert.match(await alert.innerText(), /was not found/);
    assert.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Job not found');
    assert.equal(await page.getByTestId('stream-mode').innerText(), '', 'not "Updating"');
    assert.equal(await page.getByTestId('console').count(), 0);
  }
});

test('the output size agrees in number: "1 line" for a one-line job, "2 lines" for two', { timeout: 300000 }, async () => {
  const { page } = b;
  // A demo job prints a header, its steps and a closing line, never just
  // one. A custom action prints one "lcm: [i/n] # command" line per
  // command, and `true` prints nothing: run on a cmd/fleetsim host (the
  // in-process worker's real SSH path, no Debian test host), one `true`
  // is one line of output, two are two.
  const sim = await startFleetsim(1, ['-latency', '10ms']);
  try {
    const [serverId] = await onboardFleetsim(api, token, sim.hosts);
    for (const [commands, want] of [[['true'], '1 line'], [['true', 'true'], '2 lines']]) {
      const ca = await apiFetch(api.base, '/api/v1/custom-actions', { method: 'POST', headers: auth(),
        body: { name: `quiet ${commands.length}`, commands } });
      assert.equal(ca.status, 201, ca.text);
      const run = await apiFetch(api.base, `/api/v1/custom-actions/${ca.json.id}/run`, { method: 'POST', headers: auth(),
        body: { server_ids: [serverId] } });
      assert.equal(run.status, 202, run.text);
      const jobId = run.json.items[0]?.job_id;
      assert.ok(jobId, run.text);
      await waitJobSuccess(api, auth(), jobId);
      const stored = (await apiFetch(api.base, `/api/v1/jobs/${jobId}/ssh-output`, { headers: auth() })).json;
      assert.equal(stored.complete, true);
      const expected = commands.map((c, i) => `lcm: [${i + 1}/${commands.length}] # ${c}\n`).join('');
      assert.equal(stored.output, expected, 'the job printed exactly one line per command');

      // A fresh console (from the Dashboard, not from the previous job).
      await page.goto(`${api.base}/#/`);
      await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
      await page.goto(`${api.base}/#/jobs/${jobId}`);
      await page.getByText('Succeeded').first().waitFor();
      // The console has all of the output once it stops following the job.
      await page.waitForFunction(() => document.querySelector('[data-testid=stream-mode]')?.textContent.trim() === '');
      assert.equal((await page.getByTestId('console').innerText()).trim(), expected.trim());
      assert.equal(await page.getByTestId('output-size').innerText(), `${stored.offset} B · ${want}`);
      await expectNoAxeViolationsBothThemes(page, `job console, ${want}`);
    }
  } finally {
    sim.stop();
  }
});
