// Issue 20: `lds diff OLD NEW` tells a reviewer what a catalog-src change means for buyers.
// Real builds (unit store included, SOURCE_DATE_EPOCH fixed): a price change on one product and one
// source held name exactly those changes and exit 1; two identical builds exit 0. The pure core is
// then exercised on edited copies of the real catalogue for what a build cannot cheaply show.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CATALOG_SRC, cli, copyCatalogSrc, tempDir } from './helpers/build.ts';
import { buildInto, catalogSrcBuild, holdSource, setDrawPrice } from './helpers/publish.ts';
import { diffCatalogues } from '../generator/diff/changes.ts';
import { diffMarkdown } from '../generator/diff/render.ts';
import type { CatalogueDoc } from '../contract/catalogue.ts';

const PRICED = 'svc-energy-eu';
const HELD = 'global.ecdc';
const catalogueOf = (dist: string): CatalogueDoc => JSON.parse(readFileSync(join(dist, 'v1/lds/_catalog'), 'utf8'));

let base: string, again: string, changed: string, oldPrice: number, newPrice: number;

test.before(async () => {
  const src = await copyCatalogSrc();
  oldPrice = JSON.parse(readFileSync(join(src, 'products', `${PRICED}.json`), 'utf8')).pricing.draw_unit_price_micro_eur;
  newPrice = oldPrice + oldPrice / 5; // +20 %
  await setDrawPrice(src, PRICED, newPrice);
  await holdSource(src, HELD, 'licence under review after the publisher changed its terms');
  base = (await catalogSrcBuild()).out; // the shared build of catalog-src (helpers/publish.ts); made once per machine
  again = (await buildInto(CATALOG_SRC)).out; // and the same build made now
  changed = (await buildInto(src)).out;
});

test('price change on one product and one source held: exactly those changes, exit 1', () => {
  const r = cli(['diff', base, changed, '--format', 'json']);
  assert.is(r.code, 1, r.stderr);
  const d = JSON.parse(r.stdout);
  const before = catalogueOf(base);
  const after = catalogueOf(changed);
  assert.ok(d.buyer_visible);
  assert.equal(d.version, { old: before.version, new: after.version });
  assert.is.not(d.version.old, d.version.new);

  // The price: old -> new with the percentage, for that product only.
  const fmt = (m: number) => (m / 1e6).toFixed(6);
  assert.equal(d.prices, [{ product_id: PRICED, price: 'draw_unit_price', old: fmt(oldPrice), new: fmt(newPrice), change_percent: 20 }]);

  // The hold: that source only, with the licence it loses and the products it leaves.
  const heldBefore = before.sources.find((s) => s.source === HELD)!;
  assert.is(heldBefore.status, 'served');
  assert.ok(heldBefore.units > 0, 'the held source sold units before');
  assert.equal(d.sources.held.map((s: any) => s.source), [HELD]);
  const h = d.sources.held[0];
  assert.equal(h.status, { old: 'served', new: 'held' });
  assert.is(h.reason, 'licence under review after the publisher changed its terms');
  assert.is(h.licence, heldBefore.licence);
  assert.is(h.attribution, heldBefore.attribution);
  assert.equal(h.products, heldBefore.products);
  assert.equal(d.sources.released, []);
  assert.equal(d.sources.status, []);

  // Counts: the held source's units leave exactly the products that listed it.
  assert.equal(d.source_counts, [{ source: HELD, units: { old: heldBefore.units, new: 0 }, rows: { old: heldBefore.rows, new: 0 } }]);
  assert.equal(d.product_counts.map((p: any) => p.product_id), heldBefore.products);
  for (const p of d.product_counts) {
    const was = before.products.find((x) => x.product_id === p.product_id)!;
    const fromHeld = was._health.sources.find((s) => s.source === HELD)!;
    assert.equal(p.units, { old: was.live_unit_count, new: was.live_unit_count - fromHeld.units });
    assert.equal(p.rows, { old: was.live_row_count, new: was.live_row_count - fromHeld.rows });
  }

  // Nothing else: no product came, went or was renamed; no other ruling, address or field moved.
  assert.equal(d.products, { added: [], removed: [], renamed: [] });
  assert.equal(d.licences, []);
  assert.equal(d.addresses, []);
  for (const id of heldBefore.products) assert.is.not(before.products.find((x) => x.product_id === id)!._health.rollup, 'healthy', 'a product health change would be a further change');
  assert.equal(d.product_fields, []);
  assert.equal(d.catalogue_fields, []);
  assert.is(d.change_count, 1 + 1 + d.product_counts.length + 1);
  assert.equal(d.review, ['prices', 'sources held']);
});

test('the Markdown form names the same changes, one section each', () => {
  const r = cli(['diff', base, changed]);
  assert.is(r.code, 1, r.stderr);
  const md = r.stdout;
  assert.match(md, /^## Catalogue changes for buyers/);
  assert.match(md, `| ${PRICED} | draw price per unit | ${(oldPrice / 1e6).toFixed(6)} | ${(newPrice / 1e6).toFixed(6)} | +20.0 % |`);
  assert.match(md, new RegExp(`### Sources held\\n[^#]*\\| ${HELD.replace('.', '\\.')} \\| served → held \\|`));
  assert.match(md, `| version | ${catalogueOf(base).version} | ${catalogueOf(changed).version} |`);
  const sections = [...md.matchAll(/^### (.+)$/gm)].map((m) => m[1]);
  assert.equal(sections, ['Prices (EUR)', 'Sources held', 'Units and rows per product', 'Units and rows per source']);
  assert.match(r.stderr, /changes a buyer sees/);
  assert.match(md, '**Needs review before it reaches buyers:** prices, sources held.');
});

test('two identical builds: no change a buyer sees, exit 0 (directories and catalogue files alike)', () => {
  const r = cli(['diff', base, again]);
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.match(r.stdout, 'No change a buyer sees.');
  assert.not.match(r.stdout, /^### /m);
  const j = cli(['diff', join(base, 'v1/lds/_catalog'), join(again, 'v1/lds/_catalog'), '--format', 'json']);
  assert.is(j.code, 0, j.stderr);
  const d = JSON.parse(j.stdout);
  assert.is(d.change_count, 0);
  assert.equal(d.review, []);
  assert.is(d.buyer_visible, false);
  assert.is(d.version.old, d.version.new, 'SOURCE_DATE_EPOCH makes the two builds the same version');
});

test('exit 2 when it cannot run: a missing input, a folder without a catalogue, a file that is not one, a bad option', async () => {
  const empty = await tempDir('diff-empty');
  const notCatalogue = join(empty, 'x.json');
  writeFileSync(notCatalogue, '{"hello": 1}');
  const cases: [string[], RegExp][] = [
    [['diff', join(empty, 'nope'), base], /no such file or folder/],
    [['diff', empty, base], /no catalogue in this folder/],
    [['diff', notCatalogue, base], /not a catalogue document \(missing version, products, sources, base_url\)/],
    [['diff', base, base, '--format', 'xml'], /Allowed choices are markdown, json/],
  ];
  for (const [args, message] of cases) {
    const r = cli(args);
    assert.is(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, message);
    assert.is(r.stdout, '');
  }
});

// The pure core on edited copies of the real catalogue: what the two builds above do not exercise.
test('renames, added and removed products, a released source, a ruling and an address are named', () => {
  const old = catalogueOf(base);
  const next: CatalogueDoc = structuredClone(old);
  next.products[0]!.title = 'Renamed product';
  const gone = next.products.splice(1, 1)[0]!;
  next.products.push({ ...structuredClone(old.products[2]!), product_id: 'svc-new-eu', title: 'New', slug: 'new' });
  // As a build would: a source no product lists any more leaves the catalogue.
  const listed = (id: string) => next.products.some((p) => p._health.sources.some((s) => s.source === id));
  const unlisted = next.sources.filter((s) => !listed(s.source)).map((s) => s.source);
  next.sources = next.sources.filter((s) => listed(s.source));
  const held = next.sources.find((s) => s.status === 'held')!;
  Object.assign(held, { status: 'served', reason: null, licence: 'CC-BY-4.0', attribution: 'Source: them' });
  const ruled = next.sources.find((s) => s.status === 'served' && s.source !== held.source)!;
  ruled.attribution = 'A new attribution line';
  next.base_url = 'https://other.example/v1';
  const c = diffCatalogues(old, next);
  assert.equal(c.products.renamed, [{ product_id: old.products[0]!.product_id, title: { old: old.products[0]!.title, new: 'Renamed product' }, slug: null }]);
  assert.equal(c.products.removed.map((p) => p.product_id), [gone.product_id]);
  assert.equal(c.products.added.map((p) => p.product_id), ['svc-new-eu']);
  assert.equal(c.sources.released.map((s) => [s.source, s.licence]), [[held.source, 'CC-BY-4.0']]);
  assert.ok(unlisted.length > 0, `${gone.product_id} was the only product of a source`);
  assert.equal(c.sources.status.map((s) => [s.source, s.status.new]), unlisted.map((id) => [id, null]));
  assert.equal(c.licences, [{ source: ruled.source, field: 'attribution', old: old.sources.find((s) => s.source === ruled.source)!.attribution, new: 'A new attribution line' }]);
  assert.equal(c.addresses, [{ field: 'base_url', old: old.base_url, new: 'https://other.example/v1' }]);
  const md = diffMarkdown(c);
  for (const heading of ['### Products', '### Sources released', '### Licence rulings and attributions', '### Addresses']) assert.match(md, heading);
  assert.match(md, `| ${gone.product_id} | removed |`);
  // Removed products, releases and rulings need a person's approval; renames, additions and addresses do not.
  assert.equal(c.review, ['licences', 'sources released', 'products removed']);
});

// Issue 50, item 13: a local build for another port (the service moved from 8080 to 18611) changed every
// address from one loopback origin to another, and `lds diff` reported it as a change buyers see.
test('addresses that move between loopback origins (a local build for another port) are listed apart, not as a change a buyer sees', () => {
  const old = catalogueOf(base);
  assert.match(old.base_url, /^http:\/\/127\.0\.0\.1:\d+\/v1$/, 'the shared build is a local one');
  const next: CatalogueDoc = structuredClone(old);
  const moved = (url: string) => url.replace(/^http:\/\/127\.0\.0\.1:\d+/, 'http://127.0.0.1:18611');
  next.base_url = moved(old.base_url);
  next.mcp_url = moved(old.mcp_url);
  next.docs_url = moved(old.docs_url).replace('127.0.0.1', 'localhost');
  const c = diffCatalogues(old, next);
  assert.is(c.change_count, 0);
  assert.equal(c.addresses, []);
  assert.equal(c.local_addresses.map((a) => [a.field, a.new]), [['base_url', next.base_url], ['mcp_url', next.mcp_url], ['docs_url', next.docs_url]]);
  const md = diffMarkdown(c);
  assert.match(md, 'No change a buyer sees.');
  assert.match(md, '### Local addresses (not a change a buyer sees)');
  assert.match(md, `| base_url | ${old.base_url} | ${next.base_url} |`);
  // From a loopback address to a public one (or back) is still a change buyers see.
  next.base_url = 'https://lds.example.org/v1';
  const published = diffCatalogues(old, next);
  assert.is(published.change_count, 1);
  assert.equal(published.addresses.map((a) => a.field), ['base_url']);
});

test('a price from zero has no percentage; a table cell keeps its pipes escaped', () => {
  const old = catalogueOf(base);
  const next: CatalogueDoc = structuredClone(old);
  old.products[0]!.pricing.bulk_unit_rate_micro_eur = 0;
  old.products[0]!.pricing.bulk_unit_rate = '0.000000';
  next.products[0]!.title = 'A | B';
  const c = diffCatalogues(old, next);
  assert.equal(c.prices.map((p) => [p.price, p.change_percent]), [['bulk_unit_rate', null]]);
  const md = diffMarkdown(c);
  assert.match(md, '| from zero |');
  assert.match(md, 'A \\| B');
});

test('a changed unit definition reads as text from where it changes (issue 49: a publisher reviews the new cut)', () => {
  const old = catalogueOf(base);
  const next: CatalogueDoc = structuredClone(old);
  const defs = next.products[0]!.unit_definition;
  const before = defs[0]!.definition;
  defs[0]!.definition = `${before}; and a new cut of acts into paragraphs`;
  const md = diffMarkdown(diffCatalogues(old, next));
  const row = md.split('\n').find((l) => l.startsWith(`| ${next.products[0]!.product_id} | unit_definition |`))!;
  assert.ok(row, md);
  assert.not.match(row, '[object Object]');
  assert.match(row, /\| …[^|]+ \| …[^|]+and a new cut of acts into paragraphs/);
});

test.run();
