// The catalogue for people, as a person sees it: dist/ served by the real nginx (with the generated
// include), opened in headless Debian Chromium through playwright-core. Every expected value comes
// from the catalogue JSON that the same build wrote and nginx serves, never from literals.
import * as assert from 'uvu/assert';
import { chromium, type Browser, type Page } from 'playwright-core';
import { buildAndServe, failLoudly, type HostedDist } from './helpers/nginx.ts';
import { CHROMIUM, NGINX, programPath, suiteNeeding } from './helpers/programs.ts';

// Debian's Chromium (never a downloaded browser); skipped with the install command when it or nginx is missing.
const test = suiteNeeding('hosting-chromium.test.ts', [NGINX, CHROMIUM]);
// How Chromium runs on these machines (playwright adds --headless and a new empty --user-data-dir).
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let hosted: HostedDist;
let browser: Browser;
let page: Page;
let catalogue: any;
const requested: string[] = [];

test.before(() =>
  failLoudly(async () => {
    hosted = await buildAndServe();
    const res = await fetch(`${hosted.nginx.origin}/v1/lds/_catalog`);
    assert.is(res.status, 200);
    catalogue = await res.json();
    browser = await chromium.launch({ executablePath: programPath(CHROMIUM), headless: true, args: FLAGS });
    page = await browser.newPage();
    page.on('request', (r) => requested.push(r.url()));
  }),
);

test.after(async () => {
  await browser?.close();
  await hosted?.stop();
});

const digits = (text: string | null) => (text ?? '').replace(/[,\s]/g, '');

test('the catalogue is the one this test was built for', () => {
  assert.is(catalogue.version, hosted.build.version);
  assert.is(catalogue.total, 14);
  assert.is(catalogue.products.length, 14);
  assert.is(catalogue.base_url, `${hosted.nginx.origin}/v1`);
});

test('index.html from nginx lists all 14 products with counts, prices, licences and health', async () => {
  const res = await page.goto(`${hosted.nginx.origin}/`);
  assert.ok(res);
  assert.is(res!.status(), 200);
  assert.is(res!.headers()['content-type'], 'text/html; charset=utf-8');
  // Issue 50, item 6: nginx sends the page's strict policy from the generated include, and the page
  // still renders under it (its one inline stylesheet applies: the skip link is off-screen).
  assert.match(res!.headers()['content-security-policy'] ?? '', /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/]+=*'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'$/);
  assert.is(res!.headers()['referrer-policy'], 'no-referrer');
  assert.is(await page.evaluate(() => getComputedStyle(document.querySelector('.skip')!).left), '-999px');
  assert.is(await page.title(), catalogue['dct:title']);
  assert.is(await page.getAttribute('html', 'lang'), 'en');
  assert.is(await page.locator('h1').count(), 1);

  const rows = page.locator('#products tbody tr');
  assert.is(await rows.count(), catalogue.total);
  for (const p of catalogue.products) {
    const row = page.locator(`tr#product-${p.product_id}`);
    assert.is(await row.count(), 1, `${p.product_id}: row`);
    assert.ok(await row.isVisible(), `${p.product_id}: row visible`);
    const head = await row.locator('th').innerText();
    assert.ok(head.includes(p.title) && head.includes(p.product_id), `${p.product_id}: title cell "${head}"`);
    assert.is(digits(await row.locator('.units').innerText()), String(p.live_unit_count), `${p.product_id}: units`);
    assert.is(digits(await row.locator('.rows').innerText()), String(p.live_row_count), `${p.product_id}: rows`);
    assert.is((await row.locator('.draw-price').innerText()).trim(), p.pricing.draw_unit_price, `${p.product_id}: draw price`);
    assert.is((await row.locator('.bulk-price').innerText()).trim(), p.pricing.bulk_annual_price, `${p.product_id}: bulk annual price`);
    const licences = await row.locator('.licences').innerText();
    for (const s of p.licence_summary) for (const l of s.licences) assert.ok(licences.includes(l), `${p.product_id}: licence ${l} in "${licences}"`);
    const held = p.licence_basis.filter((b: any) => b.verdict === 'held').length;
    if (held) assert.ok(licences.includes(`${held} source`), `${p.product_id}: ${held} held sources in "${licences}"`);
    const health = row.locator('.health-cell');
    assert.ok((await health.innerText()).includes(p._health.rollup), `${p.product_id}: health rollup`);
    assert.is((await health.locator('.health-reason').textContent())?.trim(), p._health.rollup_reason, `${p.product_id}: health reason`);
  }
});

test('index.html links every machine document at its published address', async () => {
  const hrefs = new Set(await page.locator('a[href]').evaluateAll((as) => as.map((a) => (a as HTMLAnchorElement).href)));
  const origin = hosted.nginx.origin;
  const expected = [
    `${catalogue.base_url}/lds/_catalog`,
    `${origin}/.well-known/agent-card.json`,
    `${origin}/.well-known/svc-catalog.json`,
    `${catalogue.base_url}/specification`,
    catalogue.docs_url,
    `${origin}/llms.txt`,
  ];
  for (const url of expected) assert.ok(hrefs.has(url), `index.html links ${url}`);
  // DCAT: one link per product, from its product page (the index names the URL template)
  assert.ok((await page.locator('.machine-docs').innerText()).includes(`${catalogue.base_url}/dcat/catalog/{product_id}`));
  // the links that point at this nginx work
  for (const url of [...hrefs].filter((h) => h.startsWith(origin))) {
    const res = await fetch(url);
    await res.arrayBuffer();
    assert.is(res.status, 200, `link ${url}`);
  }
});

test('the page is self-contained and accessible', async () => {
  assert.ok(requested.length > 0);
  for (const url of requested) assert.ok(url.startsWith(hosted.nginx.origin), `only nginx is asked: ${url}`);
  assert.is(await page.locator('script').count(), 0);
  assert.is(await page.locator('th:not([scope])').count(), 0, 'every th has a scope');
  assert.is(await page.locator('table:not(:has(caption))').count(), 0, 'every table has a caption');
});

test('a product link leads to its page with the counts, prices, licences and health', async () => {
  // the product with the most units (the first one when all counts are zero)
  const p = catalogue.products.reduce((best: any, x: any) => (x.live_unit_count > best.live_unit_count ? x : best));
  await Promise.all([page.waitForURL(`**/products/${p.product_id}.html`), page.locator(`tr#product-${p.product_id} th a`).click()]);
  assert.is(page.url(), `${hosted.nginx.origin}/products/${p.product_id}.html`);
  assert.is((await page.locator('h1').innerText()).trim(), p.title);
  assert.is(await page.title(), p.title);

  assert.is(digits(await page.locator('#live-unit-count').innerText()), String(p.live_unit_count));
  assert.is(digits(await page.locator('#live-row-count').innerText()), String(p.live_row_count));
  assert.is(digits(await page.locator('#row-count-at-launch').innerText()), String(p.row_count_at_launch));
  assert.is((await page.locator('#draw-unit-price').innerText()).trim(), p.pricing.draw_unit_price);
  assert.is((await page.locator('#bulk-annual-price').innerText()).trim(), p.pricing.bulk_annual_price);
  assert.is((await page.locator('#health-reason').innerText()).trim(), p._health.rollup_reason);

  const sources = page.locator('#sources tbody tr');
  assert.is(await sources.count(), p._health.sources.length);
  for (const [i, s] of p._health.sources.entries()) {
    const cells = sources.nth(i).locator('td');
    assert.ok((await sources.nth(i).locator('th').innerText()).includes(s.source));
    assert.is(digits(await cells.nth(3).innerText()), String(s.units), `${s.source}: units`);
    assert.is(digits(await cells.nth(4).innerText()), String(s.rows), `${s.source}: rows`);
  }

  const licenceRows = page.locator('#licences tbody tr');
  assert.is(await licenceRows.count(), p.licence_basis.length);
  const licenceText = await page.locator('#licences').innerText();
  for (const b of p.licence_basis) {
    assert.ok(licenceText.includes(b.source));
    if (b.attribution) assert.ok(licenceText.includes(b.attribution), `attribution of ${b.source}`);
  }

  const dcat = await page.locator(`a[href="${p.dcat_url}"]`).count();
  assert.ok(dcat >= 1, 'links its DCAT description');

  // and back to the index
  await Promise.all([page.waitForURL(`${hosted.nginx.origin}/index.html`), page.locator('nav[aria-label="Breadcrumb"] a').click()]);
  assert.is(await page.locator('#products tbody tr').count(), catalogue.total);
});

test.run();
