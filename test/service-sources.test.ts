// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// The sources of issue 13 through the real service (real build, real LevelDB, sandbox top-up):
// a paid draw names the right publisher for every unit it delivers, never delivers an OpenAIRE
// abstract, and nothing of a held source (or of EFSA, whose copy is not served) is ever drawable:
// not by query, not by naming its unit references. IATE (issue 25): a paid query draw delivers its
// concepts with their IATE citations and the source's attribution.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { bearer, buildFixture, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';
import { buildFixtureFrom } from './helpers/source-fixture.ts';
import { CATALOG_SRC, copyCatalogSrc, editJson } from './helpers/build.ts';
import { openAireAbstracts } from './helpers/store-fixtures.ts';

let fx: Fixture;
let srv: TestServer;
let refs: Map<string, string[]>;
let token: string;

test.before(async () => {
  fx = await buildFixture();
  refs = await refsByProduct(fx.store);
  srv = await startTestServer(fx);
  token = await topUp(srv.base, '50.00', 'spt_test_sources');
});
test.after(async () => {
  await srv?.close();
});

/** Quote and pay a draw of these units; returns the 200 body. */
async function buy(product_id: string, units: string[]): Promise<any> {
  const q = (await (await postJson(`${srv.base}/lds/draw`, { product_id, units })).json()) as any;
  assert.ok(q.quote_id, JSON.stringify(q));
  const res = await postJson(`${srv.base}/lds/draw`, { product_id, units, quote_id: q.quote_id }, bearer(token));
  assert.is(res.status, 200);
  return res.json();
}

const firstOf = (pid: string, source: string, n = 1) => refs.get(pid)!.filter((r) => r.startsWith(`${source}:`)).slice(0, n);

test('a paid draw names the right publisher for every unit, one attribution per source', async () => {
  const cases: [string, string[], Record<string, RegExp>][] = [
    ['svc-green-deal-eu', ['eu.eurlex', 'global.eea', 'global.copernicus'], { 'eu.eurlex': /EUR-Lex \/ Publications Office/, 'global.eea': /European Environment Agency \(EEA\), AirBase v7/, 'global.copernicus': /Copernicus Land Monitoring Service, European Environment Agency/ }],
    ['svc-skills-eu', ['eu.eurlex', 'global.esco', 'fi.finlex'], { 'eu.eurlex': /EUR-Lex/, 'global.esco': /ESCO classification .* European Commission \(DG EMPL\)/, 'fi.finlex': /Finlex/ }],
    ['svc-research-eu', ['eu.eurlex', 'global.openaire'], { 'eu.eurlex': /EURLEX57K/, 'global.openaire': /OpenAIRE Research Graph Dump v1\.0\.0-beta/ }],
    ['svc-media-eu', ['eu.eurlex'], { 'eu.eurlex': /EURLEX57K/ }],
    ['svc-tourism-eu', ['eu.eurlex'], { 'eu.eurlex': /EURLEX57K/ }],
  ];
  for (const [pid, sources, attributions] of cases) {
    const product = fx.catalogue.products.find((p: any) => p.product_id === pid);
    const publisherOf = new Map(product.licence_summary.map((s: any) => [s.source, s.from]));
    const units = sources.flatMap((s) => firstOf(pid, s, 2));
    assert.is(units.length, sources.length * 2, `${pid}: units of every source`);
    const paid = await buy(pid, units);
    assert.equal(paid.units.map((u: any) => u.ref).sort(), [...units].sort());
    for (const u of paid.units) {
      assert.is(u.citation.publisher, publisherOf.get(u.source), `${u.ref}: publisher`);
      assert.is(u.licence.source, u.source);
      assert.ok(u.citation_text.includes(u.licence.attribution), `${u.ref}: citation text carries the attribution`);
    }
    assert.equal(paid.attribution.map((a: any) => a.source).sort(), [...sources].sort(), `${pid}: one attribution per source drawn`);
    for (const a of paid.attribution) assert.match(a.attribution, attributions[a.source], `${pid} ${a.source}`);
  }
});

test('OpenAIRE units are drawn without their abstracts', async () => {
  const abstracts = openAireAbstracts();
  const units = firstOf('svc-research-eu', 'global.openaire', 57);
  assert.is(units.length, 57);
  const body = JSON.stringify([...(await buy('svc-research-eu', units.slice(0, 50))).units, ...(await buy('svc-research-eu', units.slice(50))).units]);
  for (const a of abstracts) assert.not.ok(body.includes(a.slice(10, 70)), `abstract delivered: ${a.slice(0, 60)}`);
});

test('nothing of a held source is drawable through the draw endpoint: by query or by reference', async () => {
  // A copy of catalog-src where OpenAIRE is put on hold (its ruling withdrawn), built and served.
  const src = await copyCatalogSrc();
  await editJson(join(src, 'sources/global.openaire.json'), (d) => {
    delete d.ruling;
    delete d.data;
    d.held = { reason: 'test: licence withdrawn', since: '2026-11-23' };
  });
  const heldFx = await buildFixtureFrom(src);
  const heldRefs = await refsByProduct(heldFx.store); // a scan of the built store
  for (const [pid, rs] of heldRefs) assert.not.ok(rs.some((r) => r.startsWith('global.openaire:') || r.startsWith('eu.efsa:')), `${pid}: stored units of a held source`);
  const held = await startTestServer(heldFx);
  try {
    const product = heldFx.catalogue.products.find((p: any) => p.product_id === 'svc-research-eu');
    assert.is(product.licence_basis.find((l: any) => l.source === 'global.openaire').verdict, 'held');
    // by query: words of OpenAIRE titles and projects find EUR-Lex units only
    const q = (await (await postJson(`${held.base}/lds/draw`, { product_id: 'svc-research-eu', query: 'research H2020 PEMETH healthy aging cortical layers', limit: 100 })).json()) as any;
    assert.ok(q.resolved_units.length > 0);
    assert.ok(q.resolved_units.every((r: string) => r.startsWith('eu.eurlex:')), q.resolved_units.join());
    // by reference: the units the served build sells are unknown here
    const openaire = firstOf('svc-research-eu', 'global.openaire', 3);
    const r = await postJson(`${held.base}/lds/draw`, { product_id: 'svc-research-eu', units: openaire });
    assert.is(r.status, 404);
    const problem = (await r.json()) as any;
    assert.match(problem.type, /unknown-units$/);
    assert.equal(problem.unknown, openaire);
  } finally {
    await held.close();
  }
  // and in the served build: EFSA (ruled, its copy not served) sells nothing in agriculture
  const agri = fx.catalogue.products.find((p: any) => p.product_id === 'svc-agriculture-eu');
  const efsa = agri._health.sources.find((s: any) => s.source === 'eu.efsa');
  assert.equal([efsa.units, efsa.rows, efsa.available], [0, 0, false]);
  assert.match(efsa.note, /^not yet available: the licence of the OpenFoodTox sample is not confirmed/);
  assert.not.ok(refs.get('svc-agriculture-eu')!.some((r) => r.startsWith('eu.efsa:')));
});

test('"covid" on svc-health-eu quotes COVID-19 records (issue 14 item 10)', async () => {
  for (const query of ['covid', 'COVID-19', 'Covid 19']) {
    const q = (await (await postJson(`${srv.base}/lds/draw`, { product_id: 'svc-health-eu', query, limit: 10 })).json()) as any;
    assert.is(q.unit_count, 10, query);
    assert.ok(q.resolved_units.every((r: string) => r.startsWith('global.ecdc:')), `${query}: ${q.resolved_units.join()}`);
  }
});

test('a paid draw of "koronavirus" on svc-language-eu delivers the IATE concepts with IATE citations and the source\'s attribution (issue 25)', async () => {
  // the concepts that have the word (case and accents folded) in a term or the definition, read from the files here
  const fold = (t: string) => t.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
  const has = (t: string) => /(^|[^\p{L}\p{N}])koronavirus($|[^\p{L}\p{N}])/u.test(fold(t));
  const pull = JSON.parse(readFileSync(join(CATALOG_SRC, 'data/iate/iate_data_covid19_first330.json'), 'utf8')) as Record<string, any>[];
  const release = readFileSync(join(CATALOG_SRC, 'data/iate/OP_Covid19_IATE_2872020.csv'), 'utf8');
  const expected = pull.filter((e) => Object.entries(e).some(([k, v]) => k !== 'domains' && k !== 'iate_link' && typeof v === 'string' && has(v))).map((e) => String(e.id_concept));
  assert.not.ok(has(release), 'the release is English only: no "koronavirus" there');
  const spec = JSON.parse(readFileSync(join(fx.dist, 'v1/specification'), 'utf8'));
  const defaultLimit = spec.components.schemas.DrawRequest.properties.limit.default as number;
  assert.ok(expected.length > 1 && expected.length <= defaultLimit, `${expected.length} concepts`);

  const draw = { product_id: 'svc-language-eu', query: 'koronavirus' };
  const quoteRes = await postJson(`${srv.base}/lds/draw`, draw);
  assert.is(quoteRes.status, 402);
  const q = (await quoteRes.json()) as any;
  assert.equal([...q.resolved_units].sort(), expected.map((id) => `eu.iate:${id}`).sort(), 'every concept with the word, nothing else');
  const paidRes = await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(token));
  assert.is(paidRes.status, 200);
  const paid = (await paidRes.json()) as any;
  const ruling = fx.catalogue.products.find((p: any) => p.product_id === 'svc-language-eu').licence_basis.find((l: any) => l.source === 'eu.iate');
  assert.equal(paid.units.map((u: any) => u.ref).sort(), [...q.resolved_units].sort());
  for (const u of paid.units) {
    const id = u.ref.slice('eu.iate:'.length);
    const e = pull.find((x) => String(x.id_concept) === id)!;
    assert.equal([u.source, u.kind], ['eu.iate', 'P']);
    assert.equal([u.citation.iate, u.citation.url, u.citation.uri], [id, e.iate_link, e.iate_link], `${u.ref}: IATE id and entry URL`);
    assert.match(u.citation.label, new RegExp(`^IATE ${id}, “.+”$`));
    assert.ok(u.citation_text.startsWith(u.citation.label) && u.citation_text.includes(u.licence.attribution), u.citation_text);
    assert.is(u.licence.attribution, ruling.attribution);
    // what was bought: the definition, the terms of every language the pull has, each as published
    assert.equal(u.rows.find((r: any) => r.kind === 'definition')?.text, e.en_def || undefined, `${u.ref}: definition`);
    for (const l of ['en', 'cs', 'da', 'de', 'es', 'fi', 'fr', 'it', 'nl', 'pt']) assert.is(u.rows.find((r: any) => r.kind === 'terms' && r.lang === l)?.text, e[l] || undefined, `${u.ref} ${l}`);
    assert.ok(u.rows.some((r: any) => r.kind === 'term' && r.lang === 'en' && r.term_type), `${u.ref}: the release's typed English terms`);
  }
  assert.equal(paid.attribution.map((a: any) => a.source), ['eu.iate']);
  assert.match(paid.attribution[0].attribution, /^Source: IATE \(Interactive Terminology for Europe\), © European Union; .* the API entries \(iate_data_covid19_first330\.json\) are a cut: the first 330 concepts of that repository's pull from the IATE API/);
  assert.is(paid.receipt.unit_count, expected.length);
});

test.run();
