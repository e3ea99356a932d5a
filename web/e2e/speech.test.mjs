// Dictation: the button under the portal message body records with the
// browser's MediaRecorder (chromium's fake microphone plays a phrase spoken
// by espeak-ng), posts the recording to /v1/speech/stt of the real lcm-api
// with the local provider (ffmpeg + pocketsphinx, the expected phrases as a
// grammar) and inserts the text. With speech off, the UI says so plainly.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startApi, launch, uiLogin, apiFetch, apiLogin, requireOrSkip, expectNoAxeViolations, shot } from './helpers.mjs';

const PHRASE = 'refresh all servers';

function has(tool) {
  try {
    execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A WAV of the phrase with silence around it, for --use-file-for-fake-audio-capture. */
function phraseWav(dir) {
  const raw = path.join(dir, 'phrase-raw.wav');
  const out = path.join(dir, 'phrase.wav');
  execFileSync('espeak-ng', ['-v', 'en-us', '-s', '140', '-w', raw, PHRASE]);
  execFileSync('ffmpeg', ['-loglevel', 'error', '-y', '-i', raw, '-af', 'adelay=400|400,apad=pad_dur=1.5', '-ar', '48000', '-ac', '1', '-c:a', 'pcm_s16le', out]);
  return out;
}

async function dictate(page) {
  const resp = page.waitForResponse((r) => r.url().endsWith('/v1/speech/stt') && r.request().method() === 'POST', { timeout: 30000 });
  await page.getByTestId('dictation').click();
  await page.getByTestId('dictation-stop').waitFor();
  await page.waitForTimeout(3500); // the phrase plays once (0.4 s silence, ~1.5 s speech, then silence)
  await page.getByTestId('dictation-stop').click();
  return resp;
}

test('dictation: portal message body via MediaRecorder and /v1/speech/stt (local provider)', async (t) => {
  if (!requireOrSkip(t, ['ffmpeg', 'pocketsphinx_continuous', 'espeak-ng'].every(has), 'local speech tools missing (apt-get install ffmpeg pocketsphinx pocketsphinx-en-us espeak-ng)')) return;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'lcm-dictation-'));
  const wav = phraseWav(tmp);
  const api = await startApi({ dev: true });
  const b = await launch({ args: ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream', `--use-file-for-fake-audio-capture=${wav}%noloop`] });
  try {
    const { page } = b;
    await b.ctx.grantPermissions(['microphone'], { origin: api.base });
    const tok = await apiLogin(api, 'admin', api.adminPassword);
    const auth = { Authorization: `Bearer ${tok}` };
    const set = await apiFetch(api.base, '/api/v1/settings/speech', { method: 'PUT', headers: auth,
      body: { provider: 'local', sttLanguage: 'en-US', phrases: [PHRASE, 'reboot the web server', 'upgrade security packages'] } });
    assert.equal(set.status, 200, set.text);

    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${api.base}/#/admin/announcements`);
    await page.getByRole('button', { name: 'New message' }).click();
    const body = page.getByLabel('Message', { exact: true });
    await body.fill('Tonight:');

    const r = await (await dictate(page));
    assert.equal(r.status(), 200, await r.text());
    const sent = JSON.parse(r.request().postData());
    assert.match(sent.mime_type, /^audio\/(webm|ogg)/, 'the browser recording is sent as is');
    assert.ok(Buffer.from(sent.audio, 'base64').length > 1000, 'a real recording was sent');
    const { text } = await r.json();
    t.diagnostic(`recognised: "${text}"`);
    // With the phrases as a grammar, pocketsphinx recognises the synthesized phrase exactly.
    assert.equal(text, PHRASE);
    await page.getByTestId('dictation-status').filter({ hasText: `Inserted: “${PHRASE}”` }).waitFor();
    assert.equal(await body.inputValue(), `Tonight: ${PHRASE}`);
    await expectNoAxeViolations(page, 'portal message dialog after dictation');
    await shot(page, 'dictation');

    // Speech turned off: the request still reaches the API and the UI says why it failed.
    const off = await apiFetch(api.base, '/api/v1/settings/speech', { method: 'PUT', headers: auth, body: { provider: '' } });
    assert.equal(off.status, 200, off.text);
    const r2 = await dictate(page);
    assert.equal(r2.status(), 503);
    const err = await r2.json();
    assert.equal(err.code, 'speech_not_configured');
    const status = page.getByTestId('dictation-status');
    await status.filter({ hasText: 'Dictation failed:' }).waitFor();
    assert.equal(await status.getAttribute('role'), 'alert');
    assert.equal(await body.inputValue(), `Tonight: ${PHRASE}`, 'nothing inserted on failure');
  } finally {
    await b.close();
    await api.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});
