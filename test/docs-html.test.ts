// @tier: quick  (npm run test:quick: in-process)
// The documentation (docs_url, llms.txt) and the pages for people (index.html, products/*.html),
// rendered in memory from the real catalog-src: zero counts (no store) and non-zero counts (a
// synthetic store summary), escaping, determinism, and the hook for extra documentation sections.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { emitContext } from '../generator/build.ts';
import { localAddresses } from '../generator/addresses.ts';
import { loadCatalogSrc } from '../generator/load.ts';
import type { CatalogSrc, StoreSummary } from '../generator/model.ts';
import type { EmitContext, OutputFile } from '../generator/emit/types.ts';
import { HTML_TYPE, MARKDOWN_TYPE, TEXT_TYPE } from '../generator/emit/types.ts';
import { BUYING_CHANNEL_SECTIONS, docSections, emitDocs, groupDigits, renderDocs, anchor } from '../generator/emit/docs.ts';
import { emitHtml, esc } from '../generator/emit/html.ts';
import { docsPath } from '../generator/emit/site.ts';
import { EMITTERS } from '../generator/emit/index.ts';
import { markdownHtml } from '../generator/emit/markdown-page.ts';
import { openApiDocument } from '../generator/emit/openapi.ts';
import { CATALOG_SRC } from './helpers/build.ts';

const BUILT_AT = '2026-01-01T00:00:00Z';
let cat: CatalogSrc;

test.before(async () => {
  cat = await loadCatalogSrc(CATALOG_SRC);
});

const addresses = () => localAddresses('http://127.0.0.1:8080', cat.settings.addresses.publisher_url);
const empty = (): StoreSummary => ({ store_version: null, computed_at: BUILT_AT, products: {}, notes: {} });

/** Every served, unit-selling source of every product holds some rows, different per product. */
function syntheticStore(): StoreSummary {
  const products: StoreSummary['products'] = {};
  cat.products.forEach((p, i) => {
    products[p.product_id] = {};
    p.sources.forEach(({ source }, j) => {
      const src = cat.sources.get(source)!;
      if (src.held || src.unit === null) return;
      const units = 1000 * (i + 1) + 37 * j + 1;
      products[p.product_id]![source] = { units, rows: units * 23 };
    });
  });
  return { store_version: 'store-0123456789ab', computed_at: BUILT_AT, products, notes: {} };
}

const render = (ctx: EmitContext): OutputFile[] => [...emitDocs(ctx), ...emitHtml(ctx)];
const file = (files: OutputFile[], path: string) => {
  const f = files.find((x) => x.path === path);
  assert.ok(f, `no ${path}`);
  return f!;
};

test('both emitters are registered', () => {
  assert.ok(EMITTERS.includes(emitDocs));
  assert.ok(EMITTERS.includes(emitHtml));
});

test('files, content types and cache rules', () => {
  const ctx = emitContext(cat, addresses(), empty(), BUILT_AT);
  const files = render(ctx);
  const docs = file(files, 'docs/index.md');
  assert.is(docs.contentType, MARKDOWN_TYPE);
  // docs and llms.txt list live counts and prices, so they follow the catalogue's cache lifetime
  assert.is(docs.cache, 'catalogue');
  assert.is(file(files, 'llms.txt').contentType, TEXT_TYPE);
  assert.is(file(files, 'llms.txt').cache, 'catalogue');
  const pages = files.filter((f) => f.contentType === HTML_TYPE);
  assert.is(pages.length, 1 + ctx.catalogue.products.length + 1, 'the catalogue, one page per product, the documentation');
  for (const p of pages) assert.is(p.cache, 'catalogue');
  file(files, 'index.html');
  assert.is(file(files, 'docs/index.html').contentType, HTML_TYPE);
  for (const p of ctx.catalogue.products) file(files, `products/${p.product_id}.html`);
});

test('docs path follows docs_url', () => {
  assert.is(docsPath('https://x.example/docs/'), 'docs/index.md');
  assert.is(docsPath('https://x.example/'), 'index.md');
  assert.is(docsPath('https://x.example/guide.md'), 'guide.md');
  assert.is(docsPath('https://x.example/a/b/'), 'a/b/index.md');
});

for (const [label, store] of [['zero counts (no store)', empty], ['non-zero counts', syntheticStore]] as const) {
  test(`docs and llms.txt carry every product's counts and prices: ${label}`, () => {
    const ctx = emitContext(cat, addresses(), store(), BUILT_AT);
    const files = render(ctx);
    const docs = file(files, 'docs/index.md').body;
    const llms = file(files, 'llms.txt').body;
    const c = ctx.catalogue;
    if (label === 'non-zero counts') assert.ok(c.products.every((p) => p.live_unit_count > 0), 'the synthetic store gives every product units');
    for (const p of c.products) {
      const row = docs.split('\n').find((l) => l.startsWith(`| [\`${p.product_id}\`]`));
      assert.ok(row, `docs: products row of ${p.product_id}`);
      for (const v of [p.title, groupDigits(p.live_unit_count), groupDigits(p.live_row_count), p.pricing.draw_unit_price, p.pricing.bulk_annual_price, p._health.rollup])
        assert.ok(row!.includes(v), `docs ${p.product_id}: ${v}`);
      assert.ok(docs.includes(p._health.rollup_reason), `docs: health reason of ${p.product_id}`);
      const line = llms.split('\n').find((l) => l.includes(`\`${p.product_id}\``));
      assert.ok(line, `llms.txt: ${p.product_id}`);
      for (const v of [groupDigits(p.live_unit_count), p.pricing.draw_unit_price, p.pricing.bulk_annual_price]) assert.ok(line!.includes(v), `llms ${p.product_id}: ${v}`);
      for (const b of p.licence_basis) if (b.attribution) assert.ok(docs.includes(b.attribution.replace(/\|/g, '\\|')), `docs: attribution of ${b.source}`);
    }
    // the buying flow, with copyable curl examples at the build's addresses
    const base = ctx.addresses.base_url;
    for (const s of [`curl -s ${base}/lds/_catalog`, `curl -i -X POST ${base}/lds/draw`, `curl -i -X POST ${base}/lds/balance/topup`, `curl -s ${base}/lds/balance`, 'Authorization: Bearer <BALANCE_TOKEN>', '"quote_id":"<QUOTE_ID>"', 'Authorization: Payment <MPP_CREDENTIAL>', 'rel="payment"', 'balance_token', 'application/problem+json', c.minimum_topup])
      assert.ok(docs.includes(s), `docs mention ${s}`);
    for (const s of [`${base}/lds/draw`, `${base}/lds/balance/topup`, `${base}/lds/balance`, ctx.addresses.docs_url, `${base}/specification`, '/.well-known/agent-card.json', '/.well-known/svc-catalog.json'])
      assert.ok(llms.includes(s), `llms.txt mentions ${s}`);
    assert.match(llms, /^# .+\n\n> .+\n/);
    // every problem type of the OpenAPI contract is documented, with its status
    const problem = (openApiDocument(ctx) as any).components.schemas.Problem;
    assert.ok(problem.properties.type.enum.length > 0);
    // ... each linked to its own page (the type is that page's address)
    for (const type of problem.properties.type.enum) assert.ok(docs.includes(`| [\`${type}\`](${type}) | `), `docs: problem type ${type}`);
    for (const type of problem.properties.type.enum) assert.match(docs, new RegExp(`\\(${type.replace(/[.?/]/g, '\\$&')}\\) \\| \\d{3} \\| \\S`), `docs: problem type ${type} with status`);
  });

  test(`pages carry every product's counts, prices, licences and health: ${label}`, () => {
    const ctx = emitContext(cat, addresses(), store(), BUILT_AT);
    const files = render(ctx);
    const index = file(files, 'index.html').body;
    for (const p of ctx.catalogue.products) {
      const start = index.indexOf(`<tr id="product-${p.product_id}"`);
      assert.ok(start > 0, `index row of ${p.product_id}`);
      const row = index.slice(start, index.indexOf('</tr>', start));
      assert.ok(row.includes(`>${groupDigits(p.live_unit_count)}<`), `${p.product_id}: units`);
      assert.ok(row.includes(`>${groupDigits(p.live_row_count)}<`), `${p.product_id}: rows`);
      assert.ok(row.includes(`>${p.pricing.draw_unit_price}<`));
      assert.ok(row.includes(`>${p.pricing.bulk_annual_price}<`));
      assert.ok(row.includes(esc(p._health.rollup_reason)));
      assert.ok(row.includes(`href="products/${p.product_id}.html"`));
      const page = file(files, `products/${p.product_id}.html`).body;
      assert.ok(page.includes(`id="live-unit-count">${groupDigits(p.live_unit_count)}<`));
      assert.ok(page.includes(`id="bulk-annual-price">${p.pricing.bulk_annual_price}<`));
      for (const b of p.licence_basis) if (b.attribution) assert.ok(page.includes(esc(b.attribution)), `${p.product_id}: attribution of ${b.source}`);
      assert.ok(page.includes(`href="${esc(p.dcat_url)}"`));
      assert.ok(page.includes('href="../index.html"'));
    }
  });
}

// Issue 37: the documentation was published only as Markdown, which a browser shows as bare text
// (no lang, no title: two serious axe violations at /docs/). Its page is rendered from the same text.
test('the documentation and each problem type are HTML pages rendered from their Markdown, which stays beside them', () => {
  const ctx = emitContext(cat, addresses(), syntheticStore(), BUILT_AT);
  const files = EMITTERS.flatMap((e) => e(ctx));
  const docs = file(files, 'docs/index.html').body;
  const markdown = file(files, 'docs/index.md').body;
  assert.match(docs, `<title>${esc(ctx.catalogue['dct:title'])}: documentation</title>`);
  // every section, at the anchor the Markdown's table of contents links to
  for (const s of docSections()) assert.match(docs, `<h2 id="${anchor(s.title)}">`, s.title);
  for (const s of docSections()) assert.match(markdown, `](#${anchor(s.title)})`);
  assert.match(docs, `<a href="#${anchor('Errors')}">Errors</a>`);
  // the curl examples, as code the keyboard can scroll, and the tables with column headers
  assert.match(docs, `<pre tabindex="0"><code class="language-sh">curl -s ${esc(ctx.addresses.base_url)}/lds/_catalog`);
  assert.match(docs, '<th scope="col">');
  // the Markdown is linked from every page for agents, and llms.txt points at it
  assert.match(file(files, 'index.html').body, '<link rel="alternate" type="text/markdown" href="http://127.0.0.1:8080/docs/index.md"');
  assert.match(file(files, 'llms.txt').body, '- [Documentation](http://127.0.0.1:8080/docs/index.md)');
  const base = 'docs/problems/';
  for (const t of ['quote-tampered', 'rate-limited']) {
    const page = file(files, `${base}${t}`);
    assert.is(page.contentType, HTML_TYPE);
    assert.match(page.body, `<title>Problem: ${t}</title>`);
    assert.match(file(files, `${base}${t}.md`).body, `# Problem: ${t}\n`);
  }
  assert.is(file(files, `${base}index.html`).contentType, HTML_TYPE);
  assert.is(file(files, `${base}index.md`).contentType, MARKDOWN_TYPE);
});

test('raw HTML in a Markdown document is shown as text, and only safe links become links', () => {
  const html = markdownHtml('<script>alert(1)</script>\n\n[x](javascript:alert(1)) [y](https://example.org/) [z](data:text/html,hi)');
  assert.not.match(html, '<script>');
  assert.match(html, '&lt;script&gt;');
  assert.not.match(html, 'href="javascript:');
  assert.not.match(html, 'href="data:');
  assert.match(html, '<a href="https://example.org/">y</a>');
});

test('headings get GitHub\'s anchors, repeats numbered', () => {
  assert.is(anchor('Buying (HTTP, MCP, A2A)'), 'buying-http-mcp-a2a');
  assert.is(anchor('Static hosting: nginx, Apache httpd, Caddy, CDNs'), 'static-hosting-nginx-apache-httpd-caddy-cdns');
  assert.is(anchor('agent_skill_order and Straße'), 'agent_skill_order-and-straße');
  const html = markdownHtml('## Same\n\n## Same\n\n## `lds mcp` here');
  assert.match(html, '<h2 id="same">Same</h2>\n<h2 id="same-1">Same</h2>\n<h2 id="lds-mcp-here">');
});

test('pages are self-contained, accessible and balanced', () => {
  const ctx = emitContext(cat, addresses(), syntheticStore(), BUILT_AT);
  for (const f of EMITTERS.flatMap((e) => e(ctx)).filter((x) => x.contentType === HTML_TYPE)) {
    const b = f.body;
    assert.ok(b.startsWith('<!doctype html>\n<html lang="en">'), f.path);
    assert.ok(b.includes('<meta charset="utf-8">'), f.path);
    assert.is((b.match(/<h1[ >]/g) ?? []).length, 1, `${f.path}: one h1`);
    assert.not.match(b, /<script|<img|<iframe/i, `${f.path}: no scripts or external assets`);
    assert.not.match(b.slice(b.indexOf('<style>'), b.indexOf('</style>')), /@import|url\(/i, `${f.path}: no external styles`);
    assert.not.match(b, /<link rel="stylesheet"/, f.path);
    assert.not.match(b, /<th(?=[ >])(?![^>]*scope=)[^>]*>/, `${f.path}: every th has a scope`);
    for (const tag of ['html', 'head', 'body', 'main', 'table', 'thead', 'tbody', 'tr', 'th', 'td', 'section', 'ul', 'ol', 'li', 'dl', 'details', 'a', 'code', 'p'])
      assert.is((b.match(new RegExp(`<${tag}[ >]`, 'g')) ?? []).length, (b.match(new RegExp(`</${tag}>`, 'g')) ?? []).length, `${f.path}: <${tag}> balanced`);
  }
});

test('text from catalog-src is escaped in HTML and Markdown tables', () => {
  const hostile = '<script>alert("x")</script> & \'q\' | pipe';
  const evil: CatalogSrc = { ...cat, products: cat.products.map((p, i) => (i === 0 ? { ...p, title: hostile, description: hostile } : p)) };
  const ctx = emitContext(evil, addresses(), empty(), BUILT_AT);
  for (const f of emitHtml(ctx)) {
    assert.not.ok(f.body.includes('<script>'), `${f.path}: raw markup`);
  }
  const index = emitHtml(ctx).find((f) => f.path === 'index.html')!.body;
  assert.ok(index.includes('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;q&#39; | pipe'));
  const docs = renderDocs(ctx);
  const row = docs.split('\n').find((l) => l.startsWith(`| [\`${evil.products[0]!.product_id}\`]`))!;
  assert.ok(row.includes('\\| pipe'), 'pipes escaped in Markdown table cells');
  assert.is(esc(`a&b<c>"d"'e'`), 'a&amp;b&lt;c&gt;&quot;d&quot;&#39;e&#39;');
});

test('same inputs give byte-identical documents', () => {
  const a = render(emitContext(cat, addresses(), syntheticStore(), BUILT_AT));
  const b = render(emitContext(cat, addresses(), syntheticStore(), BUILT_AT));
  assert.equal(a, b);
});

test('extra documentation sections go between the HTTP flow and the errors', () => {
  const ctx = emitContext(cat, addresses(), empty(), BUILT_AT);
  BUYING_CHANNEL_SECTIONS.push({ title: 'Buying through Test', render: () => 'test channel body' });
  try {
    const titles = docSections().map((s) => s.title);
    assert.ok(titles.indexOf('Buying through Test') > titles.indexOf('Read your balance'));
    assert.ok(titles.indexOf('Buying through Test') < titles.indexOf('Errors'));
    const docs = renderDocs(ctx);
    assert.ok(docs.includes(`- [Buying through Test](#${anchor('Buying through Test')})`));
    assert.ok(docs.includes('## Buying through Test\n\ntest channel body'));
    assert.ok(docs.indexOf('## Buying through Test') < docs.indexOf('## Errors'));
  } finally {
    BUYING_CHANNEL_SECTIONS.pop();
  }
  for (const s of docSections()) assert.ok(renderDocs(ctx).includes(`## ${s.title}\n`), s.title);
});

test.run();
