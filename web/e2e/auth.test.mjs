// Sign-in flows against the real identity backend: without 2FA, with the
// 2FA challenge, the forced 2FA setup for roles that require it, logout.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, totp, sleep, shot, saveRecoveryCodes, signedInAdmin } from './helpers.mjs';

async function nextWindow() {
  // TOTP codes are single-use per 30 s window: wait for a fresh one.
  await sleep(30000 - (Date.now() % 30000) + 300);
}

async function setup2fa(page) {
  const secret = (await page.getByTestId('totp-secret').textContent()).trim();
  assert.match(secret, /^[A-Z2-7]+=*$/);
  assert.ok(await page.getByAltText('QR code for the authenticator app').isVisible());
  await page.getByLabel('Enter the 6-digit code the app shows').fill(totp(secret));
  await page.getByRole('button', { name: 'Enable' }).click();
  // The first recovery codes are shown once before anything else.
  const codes = await saveRecoveryCodes(page);
  assert.equal(codes.length, 10);
  return secret;
}

test('sign-in without 2FA, wrong password, footer version, logout', async () => {
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    assert.ok(api.adminPassword, 'admin password printed on first start');
    const { page } = b;
    await uiLogin(page, api.base, 'admin', 'wrong-password-123');
    const err = await page.getByTestId('login-error').textContent();
    assert.match(err, /wrong|invalid|incorrect/i);
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    assert.match(await page.getByTestId('version').textContent(), /^LCM \d+\.\d+\.\d+/);
    // The session lives in an HttpOnly cookie; nothing in web storage.
    const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
    assert.doesNotMatch(stored, /eyJ/);
    const cookies = await b.ctx.cookies();
    assert.ok(cookies.find((c) => c.name === 'lcm_session' && c.httpOnly), 'HttpOnly session cookie');
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByTestId('notice').filter({ hasText: 'signed out' }).waitFor();
    // After logout, the app is back at sign-in even on reload.
    await page.goto(`${api.base}/#/servers`);
    await page.getByRole('button', { name: 'Sign in' }).waitFor();
  } finally {
    await b.close();
    await api.stop();
  }
});

test('sign-in with the 2FA challenge', async () => {
  const { api, b, page } = await signedInAdmin();
  try {
    await page.goto(`${api.base}/#/profile`);
    await page.getByRole('button', { name: 'Set up two-factor authentication' }).click();
    const secret = await setup2fa(page);
    await page.getByTestId('2fa-on').waitFor();
    await page.getByRole('button', { name: 'Sign out' }).click();
    await nextWindow();
    await page.goto(`${api.base}/#/login`);
    await page.getByLabel('User name').fill('admin');
    await page.getByLabel('Password', { exact: true }).fill(api.adminPassword);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Two-factor authentication' }).waitFor();
    await shot(page, 'login-2fa');
    await page.getByLabel('Authentication code').fill('000000');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('alert').waitFor();
    await page.getByLabel('Authentication code').fill(totp(secret));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  } finally {
    await b.close();
    await api.stop();
  }
});

test('forced 2FA setup for a role that requires it (not --dev)', async () => {
  // Without --dev the seeded require_2fa_roles (admin) is enforced; the
  // listener is HTTPS with the self-signed certificate.
  const api = await startApi({ dev: false });
  const b = await launch();
  try {
    const { page } = b;
    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Set up two-factor authentication' }).waitFor();
    // Nothing else is reachable: the navigation is not shown.
    assert.equal(await page.getByRole('navigation', { name: 'Main' }).count(), 0);
    await shot(page, 'forced-2fa');
    await setup2fa(page);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  } finally {
    await b.close();
    await api.stop();
  }
});
