// Help: the operator docs embedded in lcm-api (GET /api/v1/docs), the list,
// a document with tables, code and links between docs; a document that
// carries HTML and script links renders them as text (no injection); axe
// in both themes on the list and on a long document.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { startApi, launch, uiLogin, apiFetch, expectNoAxeViolations } from './helpers.mjs';
import { mockApi } from './mocks.mjs';

const evil = [
  '# Evil',
  '',
  '<script>window.__pwned = 1</script>',
  '',
  '<img src=x onerror="window.__pwned = 2">',
  '',
  '[click](javascript:window.__pwned=3) and [data](data:text/html,hi) and [ok](https://example.org/x) and [doc](install.md#upgrade)',
  '',
  '| a | b |',
  '|---|---|',
  '| <b>bold?</b> | `<i>code</i>` |',
].join('\n');

test('help: list, a document, links between docs, no HTML injection, axe in both themes', async () => {
  const api = await startApi({ dev: true });
  const b = await launch();
  try {
    const { page } = b;
    // Public API: no sign-in needed.
    const list = await apiFetch(api.base, '/api/v1/docs');
    assert.equal(list.status, 200);
    assert.ok(list.json.items.some((d) => d.slug === 'packages-deb' && d.title === 'Debian packages'));
    // A path never reaches a file: refused as a slug, or no route at all.
    const trav = await apiFetch(api.base, '/api/v1/docs/..%2f..%2fgo.mod');
    assert.ok([400, 404].includes(trav.status) && trav.json?.code && !/module github/.test(trav.text), `${trav.status} ${trav.text}`);
    assert.equal((await apiFetch(api.base, '/api/v1/docs/Install')).status, 400);

    await uiLogin(page, api.base, 'admin', api.adminPassword);
    await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
    await page.getByRole('link', { name: 'Help' }).click();
    await page.getByRole('heading', { name: 'Help', level: 1 }).waitFor();
    await page.getByTestId('doc-list').getByRole('link', { name: 'Debian packages' }).waitFor();
    await page.getByLabel('Find a topic').fill('debian');
    assert.equal(await page.getByTestId('doc-list').getByRole('link').count(), 1);
    await page.getByTestId('doc-list').getByRole('link', { name: 'Debian packages' }).click();
    await page.getByRole('heading', { name: 'Debian packages', level: 1 }).waitFor();
    await page.getByRole('heading', { name: 'Self-management of the LCM host', level: 2 }).waitFor();
    assert.ok((await page.locator('.md table').count()) >= 1, 'tables render');
    assert.ok((await page.locator('.md pre code').count()) >= 1, 'code blocks render');
    // A link to another doc opens it as help.
    assert.equal(await page.locator('.md a', { hasText: 'backups.md' }).first().getAttribute('href'), '#/help/backups');
    await page.locator('.md a', { hasText: 'backups.md' }).first().click();
    await page.getByRole('heading', { name: /Backups/, level: 1 }).waitFor();

    for (const theme of ['light', 'dark']) {
      for (const [path, ready] of [['/#/help', (p) => p.getByTestId('doc-list').getByRole('link').first().waitFor()],
        ['/#/help/packages-deb', (p) => p.getByRole('heading', { name: 'Debian packages', level: 1 }).waitFor()],
        ['/#/help/install', (p) => p.locator('.md h2').first().waitFor()]]) {
        const p = await b.ctx.newPage();
        await p.emulateMedia({ colorScheme: theme === 'dark' ? 'light' : 'dark' });
        await p.addInitScript((t) => localStorage.setItem('lcm-theme', t), theme);
        await p.goto(api.base + path);
        await ready(p);
        assert.equal(await p.evaluate(() => document.documentElement.dataset.theme), theme);
        await expectNoAxeViolations(p, `help ${path} (${theme})`);
        await p.close();
      }
    }

    // A hostile document: everything stays text, unsafe links are dropped.
    const p = await b.ctx.newPage();
    await mockApi(p, { 'GET /api/v1/docs/evil': { slug: 'evil', title: 'Evil', markdown: evil } });
    await p.goto(`${api.base}/#/help/evil`);
    await p.getByRole('heading', { name: 'Evil', level: 1 }).waitFor();
    await p.getByText('<script>window.__pwned = 1</script>').waitFor();
    assert.equal(await p.evaluate(() => window.__pwned), undefined);
    assert.equal(await p.locator('.md img, .md script, .md b, .md i').count(), 0);
    const hrefs = await p.locator('.md a').evaluateAll((as) => as.map((a) => a.getAttribute('href')));
    assert.deepEqual(hrefs, ['https://example.org/x', '#/help/install']);
    await p.getByRole('cell', { name: '<b>bold?</b>' }).waitFor();
    await p.close();
    assert.deepEqual(b.errors.filter((e) => !e.includes('401 (Unauthorized)')), []);
  } finally {
    await b.close();
    await api.stop();
  }
});
