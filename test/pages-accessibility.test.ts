// Issue 37: every HTML page the build publishes passes axe-core's WCAG 2 A and AA rules (2.0, 2.1
// and 2.2) in Chromium. The pages are listed from the build's own output (dist/_headers: every path
// served as text/html), so a page the build adds is checked without touching this file; they are
// served by the service (`lds serve`'s static handler) from the service fixture's build, which has a
// unit store, so the product pages show their previews; each is opened in headless Debian Chromium
// (playwright-core, no downloaded browser) with axe-core's own source run in it before the page's
// own (an init script: sent to the browser once, not once per page). A folder's index.html is
// checked once, at the folder's address.
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { problemBase } from '../contract/problems.ts';
import { parseHeadersFile } from '../payments/http/static.ts';
import { buildFixture, startTestServer, type Fixture, type TestServer } from './helpers/service-harness.ts';
import { CHROMIUM, programPath, suiteNeeding } from './helpers/programs.ts';

const test = suiteNeeding('pages-accessibility.test.ts', [CHROMIUM]);
const FLAGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
/** axe-core's tags for the success criteria of WCAG 2.0, 2.1 and 2.2 at levels A and AA. */
const WCAG2_A_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];
const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

let fx: Fixture;
let server: TestServer;
let browser: Browser;
let pages: string[];

test.before(async () => {
  fx = await buildFixture();
  server = await startTestServer(fx);
  browser = await chromium.launch({ executablePath: programPath(CHROMIUM), headless: true, args: FLAGS });
  const headers = parseHeadersFile(readFileSync(join(fx.dist, '_headers'), 'utf8'));
  const html = [...headers].filter(([, h]) => h.some(([k, v]) => k === 'Content-Type' && v.startsWith('text/html'))).map(([path]) => path);
  pages = html.filter((p) => !(p.endsWith('/index.html') && html.includes(p.slice(0, -'index.html'.length))));
});

test.after(async () => {
  await browser?.close();
  await server?.close();
});

test('the pages people are sent to are HTML pages: the catalogue, each product, the documentation and each problem type', () => {
  const c = fx.catalogue;
  const path = (url: string) => new URL(url).pathname;
  const expected = ['/', ...c.products.map((p: any) => `/products/${p.product_id}.html`), path(c.docs_url), path(problemBase(c.docs_url)), `${path(problemBase(c.docs_url))}quote-tampered`];
  for (const p of expected) assert.ok(pages.includes(p), `${p} is published as text/html (pages: ${pages.join(', ')})`);
});

test('every HTML page passes axe-core\'s WCAG 2 A and AA rules in Chromium', async () => {
  const context = await browser.newContext();
  await context.addInitScript({ content: AXE_SOURCE });
  const page = await context.newPage();
  const failures: string[] = [];
  for (const path of pages) {
    const res = await page.goto(`${server.url}${path}`);
    assert.is(res?.status(), 200, path);
    const result = await page.evaluate(async (tags) => {
      const axe = (globalThis as any).axe;
      const r = await axe.run(document, { runOnly: { type: 'tag', values: tags }, resultTypes: ['violations'] });
      return { violations: r.violations.map((v: any) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 3).map((n: any) => n.target.join(' ')) })), passes: r.passes.length };
    }, WCAG2_A_AA);
    assert.ok(result.passes > 0, `${path}: axe ran its rules`);
    for (const v of result.violations) failures.push(`${path}: ${v.impact} ${v.id} (${v.help}) at ${v.targets.join('; ')}`);
  }
  await context.close();
  assert.ok(pages.length >= 3, `checked the pages (${pages.length})`);
  assert.equal(failures, [], failures.join('\n'));
});

// Issue 50, item 6: the pages carried only nosniff. Each is now sent with a strict Content-Security-Policy
// (nothing loads or runs but its own inline stylesheet, named by hash; no framing, no <base>, no forms)
// and Referrer-Policy: no-referrer, and must still look the same: Chromium applies the stylesheet and
// reports no violation. (The generated nginx, Apache and Caddy rules send the headers _headers lists:
// the hosting suites check every listed header against the real servers.)
test('every page is sent with a strict CSP and no-referrer, and Chromium applies its stylesheet with no CSP violation', async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const violations: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(`${page.url()}: ${m.text()}`);
  });
  for (const path of pages) {
    const res = await page.goto(`${server.url}${path}`);
    assert.is(res?.status(), 200, path);
    const h = res!.headers();
    const csp = h['content-security-policy'] ?? '';
    const directives = new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([k, ...v]) => [k!, v.join(' ')]));
    for (const [k, v] of [['default-src', "'none'"], ['frame-ancestors', "'none'"], ['base-uri', "'none'"], ['form-action', "'none'"]]) assert.is(directives.get(k!), v, `${path}: ${k} in ${csp}`);
    assert.equal([...directives.keys()].sort(), ['base-uri', 'default-src', 'form-action', 'frame-ancestors', 'style-src'], `${path}: nothing else is allowed: ${csp}`);
    assert.is(h['referrer-policy'], 'no-referrer', path);
    // The one stylesheet is the page's own, and the policy names its hash.
    const style = await page.evaluate(() => [...document.querySelectorAll('style')].map((s) => s.textContent ?? ''));
    assert.is(style.length, 1, `${path}: one inline stylesheet`);
    assert.is(directives.get('style-src'), `'sha256-${createHash('sha256').update(style[0]!).digest('base64')}'`, path);
    const applied = await page.evaluate(() => ({ skip: getComputedStyle(document.querySelector('.skip')!).left, width: getComputedStyle(document.querySelector('main')!).maxWidth }));
    assert.equal(applied, { skip: '-999px', width: '1152px' }, `${path}: the stylesheet applies`);
  }
  await context.close();
  assert.equal(violations, [], violations.join('\n'));
});

test.run();
