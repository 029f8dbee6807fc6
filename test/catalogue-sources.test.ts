// Issue 13 as a buyer reads it, from one real build (dist/ + unit store): which products sell what,
// the per-source table (catalogue, docs, pages) with rows, units, licence, attribution and what was
// checked, IATE served with its real rows and units everywhere (no "not yet available" left), cultural heritage at zero with
// its reason, and the free previews: listed everywhere a host or a client looks, never any text.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { catalogSrcBuild } from './helpers/publish.ts';
import { catalog, CATALOG_SRC, countTriplesParagraphs, expectedCounts, scanStore, triplesActs } from './helpers/store-fixtures.ts';

let dist: string;
let catalogue: any;
let units: { ref: string; source: string; title?: string; rows: { text: string }[]; record?: Record<string, string> }[];
let products: string[][];
const read = (p: string) => readFileSync(join(dist, p), 'utf8');

test.before(async () => {
  // `lds build --local` of catalog-src at a fixed clock, made once per machine (helpers/publish.ts).
  const built = await catalogSrcBuild();
  dist = built.out;
  catalogue = JSON.parse(read('v1/lds/_catalog'));
  const scan = await scanStore(join(built.store, catalogue.store_version));
  units = scan.units as any;
  products = scan.products;
});

const product = (id: string) => catalogue.products.find((p: any) => p.product_id === id);
const source = (id: string) => catalogue.sources.find((s: any) => s.source === id);
const health = (pid: string, sid: string) => product(pid)._health.sources.find((s: any) => s.source === sid);

test('every product sells real units, cultural heritage included; the new sources are in their products', async () => {
  const live = Object.fromEntries(catalogue.products.map((p: any) => [p.product_id, p.live_unit_count]));
  // recounted from catalog-src's files (helpers/store-fixtures.ts): a unit in several sources of a product counts once per source
  const { counts } = expectedCounts(await catalog());
  assert.equal(live, Object.fromEntries(Object.entries(counts).map(([pid, bySource]) => [pid, Object.values(bySource).reduce((n, c) => n + c.units, 0)])));
  assert.is(Object.values(live).filter((n) => (n as number) > 0).length, 14, 'every product sells');
  assert.equal([health('svc-green-deal-eu', 'global.eea').units, health('svc-green-deal-eu', 'global.copernicus').units], [2138, 44]);
  assert.is(health('svc-skills-eu', 'global.esco').units, 403);
  assert.is(health('svc-research-eu', 'global.openaire').units, 57);
  assert.is(health('svc-language-eu', 'eu.iate').units, 458, 'IATE (issue 25): 1,173 units before, 458 concepts more');
  // counts come from the store: every unit scanned, per product
  for (const p of catalogue.products) assert.is(products.filter((ps) => ps.includes(p.product_id)).length, p.live_unit_count, p.product_id);
  // cultural heritage (issue 49): the culture acts of the EUR-Lex-Triples cut, Europeana still held
  const ch = product('svc-cultural-heritage-eu');
  const heritage = units.filter((u, i) => products[i].includes('svc-cultural-heritage-eu')).map((u) => u.ref.split('/')[0]);
  for (const celex of ['32014L0060', '32009R0116']) assert.ok(heritage.includes(`eu.eurlex:${celex}`), celex);
  assert.is(health('svc-cultural-heritage-eu', 'global.europeana').units, 0);
  assert.not.ok(read(`products/svc-cultural-heritage-eu.html`).includes('No units to preview'));
  assert.ok(ch.live_unit_count > 0);
});

test('the per-source table: rows, units, licence, attribution and what was checked, in the catalogue, docs and pages', () => {
  // the sample's 1,107 units and 14,202 rows, and one unit (one English row) per paragraph of each routed EUR-Lex-Triples act
  const tripleUnits = triplesActs(CATALOG_SRC).reduce((n, a) => n + countTriplesParagraphs(a.celex_id, a.reference), 0);
  const expected: Record<string, [string, number, number]> = {
    'eu.eurlex': ['served', 1107 + tripleUnits, 14202 + tripleUnits], 'eu.aligned_paragraphs': ['served', 749, 749], 'fi.finlex': ['served', 232, 232], 'global.ecdc': ['served', 1240, 1240],
    'global.esco': ['served', 403, 403], 'global.openaire': ['served', 57, 57], 'global.eea': ['served', 2138, 2138], 'global.copernicus': ['served', 44, 44],
    'eu.iate': ['served', 458, 4859], 'eu.efsa': ['not-yet-available', 0, 0], 'eu.eurostat': ['not-yet-available', 0, 0], 'eu.eurovoc_taxonomy': ['reference', 0, 0],
    'global.europeana': ['held', 0, 0],
  };
  for (const [id, [status, u, r]] of Object.entries(expected)) assert.equal([source(id).status, source(id).units, source(id).rows], [status, u, r], id);
  // a unit sold in several products counts once: the table equals a scan of the store by source
  for (const s of catalogue.sources) assert.is(units.filter((x) => x.source === s.source).length, s.units, s.source);
  const all = read('docs/index.md');
  const from = all.indexOf('\n## Sources: what each holds and what was checked\n');
  assert.ok(from > 0, 'docs: the sources section');
  const docs = all.slice(from, all.indexOf('\n## ', from + 10));
  const index = read('index.html');
  for (const s of catalogue.sources) {
    if (s.status !== 'held') assert.ok(s.checked, `${s.source}: says what was checked`);
    const row = docs.split('\n').find((l) => l.startsWith(`| \`${s.source}\` | ${s.publisher.replace(/\|/g, '\\|')} |`));
    assert.ok(row, `docs: source row of ${s.source}`);
    for (const v of [s.units.toLocaleString('en-US'), s.rows.toLocaleString('en-US'), s.attribution ?? '', s.checked ?? '']) assert.ok(row!.includes(v.replace(/\|/g, '\\|')), `docs ${s.source}: ${v}`);
    const start = index.indexOf(`<tr id="source-${s.source}"`);
    assert.ok(start > 0, `index.html: source row of ${s.source}`);
    const html = index.slice(start, index.indexOf('</tr>', start));
    assert.ok(html.includes(`>${s.units.toLocaleString('en-US')}<`) && html.includes(`>${s.rows.toLocaleString('en-US')}<`), `index.html ${s.source}: counts`);
  }
  // the rulings carry what was checked, per product too (catalogue and product pages)
  const esco = product('svc-skills-eu').licence_basis.find((l: any) => l.source === 'global.esco');
  assert.match(esco.checked, /ESCO handbook \(2017\)/);
  assert.ok(read('products/svc-skills-eu.html').includes('No explicit CC BY 4.0 statement for the data files was found'));
  assert.match(product('svc-research-eu').licence_basis.find((l: any) => l.source === 'global.openaire').basis, /Held and never stored: abstracts/);
});

test('IATE is served with its real rows and units in the catalogue, DCAT, docs, pages and agent card; "not yet available" is gone', () => {
  const iate = source('eu.iate');
  assert.equal([iate.status, iate.units, iate.rows], ['served', 458, 4859]);
  assert.is(iate.reason, null);
  assert.match(iate.checked, /^Not checked at source, assumed: reuse under the Commission's reuse policy \(Decision 2011\/833\/EU\)/);
  assert.match(iate.attribution, /© European Union; COVID-19 terminology snapshot of 28\.7\.2020, via github\.com\/ecartierlipn\/covid19-anglicisms; the API entries \(iate_data_covid19_first330\.json\) are a cut/);
  const h = health('svc-language-eu', 'eu.iate');
  assert.equal([h.available, h.units, h.rows], [true, 458, 4859]);
  assert.not.ok(h.note?.startsWith('not yet available'), h.note);
  const dcat = JSON.parse(read('v1/dcat/catalog/svc-language-eu'));
  const dataset = dcat['@graph'].find((n: any) => n['@type'] === 'dcat:Dataset');
  assert.not.ok(dataset['dct:description']['@value'].includes('Not yet available'), dataset['dct:description']['@value']);
  assert.match(dataset['dct:description']['@value'], /Sources served: [^.]*IATE terminology/);
  assert.ok(dcat['@graph'].some((n: any) => n['@type'] === 'dcat:Distribution' && n['dct:identifier'] === 'eu.iate'), 'a distribution for IATE');
  const rows = read('docs/index.md').split('\n').filter((l) => l.startsWith('| `eu.iate` |'));
  assert.ok(rows.length >= 2, 'docs: the licence and the source tables list IATE');
  assert.ok(rows.some((r) => /\| 458 \| 4,859 \|/.test(r)), rows.join('\n'));
  for (const r of rows) assert.not.ok(r.includes('not yet available'), r);
  const card = JSON.parse(read('.well-known/agent-card.json'));
  const skill = card.skills.find((s: any) => s.id === 'svc-language-eu').description;
  assert.ok(skill.includes('eu.iate') && !skill.includes('not yet available: eu.iate'), skill);
  // the old reason is nowhere in what the build publishes
  for (const f of ['v1/lds/_catalog', 'docs/index.md', 'index.html', 'products/svc-language-eu.html', '.well-known/agent-card.json', 'v1/dcat/catalog/svc-language-eu', 'llms.txt'])
    assert.not.ok(read(f).includes('no IATE sample'), f);
});

test('free previews: one per product, listed in _headers, the nginx include, OpenAPI, docs and pages', () => {
  const headers = read('_headers');
  const nginx = read('_nginx/lds.conf');
  const openapi = JSON.parse(read('v1/specification'));
  assert.ok(openapi.paths['/lds/preview/{product_id}'].get, 'OpenAPI GET path');
  const docs = read('docs/index.md');
  for (const p of catalogue.products) {
    const path = `v1/lds/preview/${p.product_id}`;
    assert.is(p.preview_url, `${catalogue.base_url}/lds/preview/${p.product_id}`);
    const doc = JSON.parse(read(path));
    assert.is(doc.product_id, p.product_id);
    assert.is(doc.live_unit_count, p.live_unit_count);
    assert.equal(doc.example_query.matches, p.example_query.matches);
    assert.ok(headers.includes(`/${path}\n  Content-Type: application/json`), `_headers lists ${path}`);
    assert.ok(nginx.includes(`location = /${path} {`), `nginx lists ${path}`);
    assert.ok(docs.includes(p.preview_url), `docs list ${path}`);
    assert.ok(read(`products/${p.product_id}.html`).includes(p.preview_url), `page links ${path}`);
    // previews show units the product really sells, at most three per source, spread over documents
    const refs = new Set(units.filter((_, i) => products[i].includes(p.product_id)).map((u) => u.ref));
    for (const u of doc.units) assert.ok(refs.has(u.ref), `${p.product_id}: ${u.ref} is sold by the product`);
    const perSource = new Map<string, number>();
    for (const u of doc.units) perSource.set(u.source, (perSource.get(u.source) ?? 0) + 1);
    for (const n of perSource.values()) assert.ok(n <= 3);
    if (p.live_unit_count > 0) assert.ok(doc.units.length > 0, `${p.product_id}: something to preview`);
    for (const u of doc.units) assert.equal(Object.keys(u).sort(), ['citation', 'kind', 'ref', 'source', 'title']);
  }
});

test('dist/ never carries sellable text: no unit text or record value of any stored unit is published', () => {
  const files: string[] = [];
  const walk = (d: string) => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) walk(p);
      else files.push(p);
    }
  };
  walk(dist);
  const published = files.map((f) => readFileSync(f, 'utf8')).join('\n');
  const sellable = new Set<string>();
  for (const u of units) {
    for (const r of u.rows) if (r.text.length >= 40) sellable.add(r.text);
    // long record values (descriptions, lists of labels); a unit's title is free to show (previews)
    for (const v of Object.values(u.record ?? {})) if (v.length >= 80 && v !== u.title) sellable.add(v);
  }
  assert.ok(sellable.size > 5000);
  const leaks = [...sellable].filter((t) => published.includes(t) || published.includes(JSON.stringify(t).slice(1, -1)));
  assert.equal(leaks.slice(0, 3), [], `${leaks.length} texts published in ${files.map((f) => relative(dist, f)).length} files`);
});

test.run();
