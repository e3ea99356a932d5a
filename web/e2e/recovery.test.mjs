// 2FA recovery codes in the browser against the real backend: the codes
// shown once at setup, sign-in with a code when the phone is lost, the same
// code refused the second time, the remaining count and the low warning,
// regeneration in the profile invalidating the old set.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, totp, shot, saveRecoveryCodes, apiFetch, apiLogin } from './helpers.mjs';

const CODE = /^[a-hjkmnp-z2-9]{5}-[a-hjkmnp-z2-9]{5}$/;

async function signOut(page) {
  await page.getByRole('button', { name: 'Sign out' }).click();
  await page.getByTestId('notice').filter({ hasText: 'signed out' }).waitFor();
}

/** Password sign-in, then "Lost your phone?" and a recovery code. */
async function recoveryLogin(page, base, password, code) {
  await uiLogin(page, base, 'admin', password);
  await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
  await page.getByRole('button', { name: 'Lost your phone? Use a recovery code' }).click();
  await page.getByLabel('Recovery code').fill(code);
  await page.getByRole('button', { name: 'Verify' }).click();
}

test('recovery codes: shown at setup, single use, low warning, regeneration', async () => {
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const { page } = b;
    const pw = api.adminPassword;
    await uiLogin(page, api.base, 'admin', pw);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${api.base}/#/profile`);
    await page.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    const secret = (await page.getByTestId('totp-secret').textContent()).trim();
    await page.getByLabel('Enter the 6-digit code the app shows').fill(totp(secret));
    await page.getByRole('button', { name: 'Enable' }).click();
    await page.getByTestId('recovery-codes').waitFor();
    // Continue stays disabled until the user confirms the codes are saved.
    assert.ok(await page.getByTestId('recovery-codes').getByRole('button', { name: 'Continue' }).isDisabled());
    await shot(page, 'recovery-codes');
    const codes = await saveRecoveryCodes(page);
    assert.equal(codes.length, 10);
    assert.equal(new Set(codes).size, 10);
    for (const c of codes) assert.match(c, CODE);
    await page.getByTestId('2fa-on').waitFor();
    await page.getByTestId('recovery-remaining').filter({ hasText: '10 of 10' }).waitFor();
    // Shown only once: a reload shows the count, never the codes.
    await page.reload();
    await page.getByTestId('recovery-remaining').filter({ hasText: '10 of 10' }).waitFor();
    assert.equal(await page.getByTestId('recovery-code').count(), 0);
    await signOut(page);

    // Lost phone: password + recovery code (typed in upper case).
    await recoveryLogin(page, api.base, pw, codes[0].toUpperCase());
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByTestId('recovery-warning').filter({ hasText: '9 recovery codes left' }).waitFor();
    await signOut(page);

    // The same code a second time is refused.
    await recoveryLogin(page, api.base, pw, codes[0]);
    const err = await page.getByTestId('login-error').textContent();
    assert.match(err, /already used/i);
    assert.equal(await page.getByRole('heading', { name: 'Dashboard' }).count(), 0);
    await page.getByRole('button', { name: 'Use another account' }).click();

    // Spend codes down to 2 over the API, then sign in with one more in the
    // UI: one left, and the shell warns.
    for (const c of codes.slice(1, 8)) {
      const r = await apiFetch(api.base, '/api/v1/auth/login', { method: 'POST', body: { username: 'admin', password: pw } });
      assert.equal(r.status, 200);
      const r2 = await apiFetch(api.base, '/api/v1/auth/login/2fa', { method: 'POST', body: { challenge: r.json.challenge, recovery_code: c } });
      assert.equal(r2.status, 200, r2.text);
    }
    await recoveryLogin(page, api.base, pw, codes[8]);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    const warn = page.getByTestId('recovery-warning');
    await warn.filter({ hasText: '1 recovery code left' }).waitFor();
    assert.equal(await warn.getAttribute('role'), 'alert');
    await shot(page, 'recovery-warning');

    // Profile: count, low warning, regenerate with the password.
    await warn.getByRole('link', { name: 'your profile' }).click();
    await page.getByTestId('recovery-remaining').filter({ hasText: '1 of 10' }).waitFor();
    await page.getByTestId('recovery-low').waitFor();
    await page.getByRole('button', { name: 'Generate new recovery codes' }).click();
    await page.getByLabel('Current password', { exact: true }).last().fill('Wrong-Password-2026!');
    await page.getByRole('button', { name: 'Generate new codes' }).click();
    await page.getByRole('alert').filter({ hasText: /password/i }).waitFor();
    await page.getByLabel('Current password', { exact: true }).last().fill(pw);
    await page.getByRole('button', { name: 'Generate new codes' }).click();
    const fresh = await saveRecoveryCodes(page);
    assert.equal(fresh.length, 10);
    for (const c of fresh) assert.match(c, CODE);
    assert.ok(!fresh.includes(codes[9]));
    await page.getByTestId('recovery-remaining').filter({ hasText: '10 of 10' }).waitFor();
    assert.equal(await page.getByTestId('recovery-low').count(), 0);
    await signOut(page);

    // The last code of the old set stopped working; a new one works.
    await recoveryLogin(page, api.base, pw, codes[9]);
    await page.getByTestId('login-error').waitFor();
    await page.getByRole('button', { name: 'Use another account' }).click();
    await recoveryLogin(page, api.base, pw, fresh[0]);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByTestId('recovery-warning').filter({ hasText: '9 recovery codes left' }).waitFor();
    assert.deepEqual(b.errors.filter((e) => !/401|403|Failed to load resource/.test(e)), []);
  } finally {
    await b.close();
    await api.stop();
  }
});

test('an admin resets the 2FA of a user who lost phone and codes', async () => {
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const { page } = b;
    const admin = await apiLogin(api, 'admin', api.adminPassword);
    const auth = (tok) => ({ Authorization: `Bearer ${tok}` });
    const ritaPw = 'Granite-Meadow-Falcon-19';
    let r = await apiFetch(api.base, '/api/v1/users', { method: 'POST', headers: auth(admin), body: { username: 'rita', password: ritaPw, roles: [] } });
    assert.equal(r.status, 201, r.text);
    const rita = await apiLogin(api, 'rita', ritaPw);
    r = await apiFetch(api.base, '/api/v1/auth/2fa/setup', { method: 'POST', headers: auth(rita) });
    r = await apiFetch(api.base, '/api/v1/auth/2fa/enable', { method: 'POST', headers: auth(rita), body: { code: totp(r.json.secret) } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.recovery_codes.length, 10);

    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.goto(`${api.base}/#/admin/users`);
    const row = page.getByRole('row').filter({ hasText: 'rita' });
    await row.getByRole('button', { name: 'Reset 2FA of rita' }).click();
    const dlg = page.getByRole('dialog', { name: 'Reset two-factor authentication' });
    await dlg.getByRole('button', { name: 'Reset 2FA' }).click();
    await row.getByRole('button', { name: 'Reset 2FA of rita' }).waitFor({ state: 'detached' });
    assert.equal((await row.locator('td').nth(3).textContent()).trim(), 'Off');

    // Rita's session ended; she signs in with the password alone.
    assert.equal((await apiFetch(api.base, '/api/v1/auth/me', { headers: auth(rita) })).status, 401);
    r = await apiFetch(api.base, '/api/v1/auth/login', { method: 'POST', body: { username: 'rita', password: ritaPw } });
    assert.equal(r.status, 200);
    assert.ok(r.json.token && !r.json.two_factor_required, r.text);
    r = await apiFetch(api.base, '/api/v1/audit?action=user.2fa_reset', { headers: auth(admin) });
    assert.equal(r.status, 200, r.text);
    assert.match(r.text, /rita/);
  } finally {
    await b.close();
    await api.stop();
  }
});
