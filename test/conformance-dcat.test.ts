// @tier: quick  (npm run test:quick: in-process)
// Issue 2: every v1/dcat/catalog/{product_id} document is self-contained DCAT-AP 3.0.1 JSON-LD.
// Each is expanded offline (any remote load throws), turned into RDF, merged with
// dcat-ap/vocab-stubs.ttl and validated with rdf-validate-shacl against the DCAT-AP 3.0.1 shapes
// (dcat-ap-3.0.1-SHACL.ttl, shapes.ttl, range.ttl, mdr-vocabularies.shape.ttl, deprecateduris.ttl):
// zero violations. The harness is proven both ways: the known-good sample passes, broken copies fail.
// Reads test/conformance/ (in the repository; origins and licences in its README).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import jsonld from 'jsonld';
import type { Quad } from 'n3';
import { bulkAnnualCents, formatCents, formatMicros } from '../contract/money.ts';
import { dcatUrl } from '../generator/catalog.ts';
import { emitDcat } from '../generator/emit/dcat.ts';
import { EMITTERS } from '../generator/emit/index.ts';
import { JSONLD_TYPE, type EmitContext } from '../generator/emit/types.ts';
import { CATALOG_SRC } from './helpers/build.ts';
import {
  buildContext, describeResults, fakeStore, jsonldToQuads, offlineLoader, readConformanceJson, shaclResults, type ShaclResult,
} from './helpers/conformance.ts';
import { SPEC_2_7 } from './helpers/spec-table.ts';

const DCAT = 'http://www.w3.org/ns/dcat#';
const DCT = 'http://purl.org/dc/terms/';
const ODRL = 'http://www.w3.org/ns/odrl/2/';
const RDF_TYPE = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#type';
const RDF_VALUE = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#value';
const XSD_DECIMAL = 'http://www.w3.org/2001/XMLSchema#decimal';
const FOAF_NAME = 'http://xmlns.com/foaf/0.1/name';
const VCARD_EMAIL = 'http://www.w3.org/2006/vcard/ns#hasEmail';

const violations = (rs: ShaclResult[]) => rs.filter((r) => r.severity === 'Violation');

/** A tiny triple index over one document's quads. */
class Graph {
  constructor(readonly quads: Quad[]) {}
  objects(s: string | null, p: string): string[] {
    return this.quads.filter((q) => (s === null || q.subject.value === s) && q.predicate.value === p).map((q) => q.object.value);
  }
  one(s: string, p: string): string {
    const o = this.objects(s, p);
    assert.is(o.length, 1, `exactly one <${p}> on <${s}>, got ${JSON.stringify(o)}`);
    return o[0];
  }
  ofType(type: string): string[] {
    return this.quads.filter((q) => q.predicate.value === RDF_TYPE && q.object.value === type).map((q) => q.subject.value);
  }
}

/** EuroVoc domain code -> EuroVoc id, read straight from the CSV (independent of the emitter). */
function domainIds(): Map<string, string> {
  const lines = readFileSync(join(CATALOG_SRC, 'data', 'eurovoc', 'domains.csv'), 'utf8').trim().split('\n').slice(1);
  return new Map(lines.map((l) => l.split(',')).map(([code, id]) => [code, id]));
}

let ctx: EmitContext; // production addresses, empty store (zero counts)
let fake: EmitContext; // local addresses, made-up non-zero counts (test input only)

const docs = (c: EmitContext) => new Map(emitDcat(c).map((f) => [f.path, JSON.parse(f.body)]));

test.before(async () => {
  ctx = await buildContext();
  fake = await buildContext({ store: 'fake', local: true });
});

test('registered in EMITTERS; 14 files at v1/dcat/catalog/{product_id}, JSON-LD, catalogue cache', () => {
  assert.ok(EMITTERS.includes(emitDcat));
  const files = emitDcat(ctx);
  assert.equal(files.map((f) => f.path).sort(), SPEC_2_7.map((p) => `v1/dcat/catalog/${p.id}`).sort());
  for (const f of files) {
    assert.is(f.contentType, JSONLD_TYPE);
    assert.is(f.cache, 'catalogue');
  }
  for (const p of ctx.catalogue.products) assert.is(`${ctx.addresses.base_url}/dcat/catalog/${p.product_id}`, p.dcat_url);
});

test('deterministic: the same context gives byte-identical documents', () => {
  assert.equal(emitDcat(ctx).map((f) => f.body), emitDcat(ctx).map((f) => f.body));
});

test('harness passes the known-good sample-product.jsonld (0 violations)', async () => {
  const rs = await shaclResults(readConformanceJson('dcat-ap/sample-product.jsonld'));
  assert.is(violations(rs).length, 0, `sample has violations:\n${describeResults(violations(rs))}`);
});

test('the offline loader refuses remote contexts (so a document needing one fails)', async () => {
  const remote = { '@context': 'https://www.w3.org/ns/dcat3.jsonld', '@id': 'urn:x:a', 'title': 'x' };
  let err: unknown = null;
  try {
    await jsonld.expand(remote as any, { documentLoader: offlineLoader as any } as any);
  } catch (e) {
    err = e;
  }
  assert.ok(err, 'a remote context was loaded');
});

for (const which of ['zero counts, production addresses', 'made-up counts, local addresses'] as const) {
  test(`all 14 documents: inline context, offline expansion, 0 SHACL violations (${which})`, async () => {
    const c = which.startsWith('zero') ? ctx : fake;
    const failures: string[] = [];
    for (const [path, doc] of docs(c)) {
      assert.type(doc['@context'], 'object', `${path}: inline context`);
      for (const v of Object.values(doc['@context'])) assert.type(v, 'string', `${path}: prefix-only context`);
      const rs = await shaclResults(doc);
      if (violations(rs).length) failures.push(`${path}:\n${describeResults(violations(rs))}`);
    }
    assert.is(failures.length, 0, `SHACL violations:\n${failures.join('\n')}`);
  });
}

test('broken copies fail: a Distribution without accessURL, a licence that is not a LicenseDocument', async () => {
  const doc = docs(ctx).get('v1/dcat/catalog/svc-language-eu')!;
  const dist = (d: any) => d['@graph'].find((n: any) => n['@type'] === 'dcat:Distribution');

  const noAccess = structuredClone(doc);
  delete dist(noAccess)['dcat:accessURL'];
  const r1 = violations(await shaclResults(noAccess));
  assert.ok(r1.some((r) => r.path === `${DCAT}accessURL`), `missing accessURL not reported:\n${describeResults(r1)}`);

  const badLicence = structuredClone(doc);
  dist(badLicence)['dct:license'] = { '@id': 'https://example.org/not-a-licence-document' };
  const r2 = violations(await shaclResults(badLicence));
  assert.ok(r2.some((r) => r.path === `${DCT}license`), `non-LicenseDocument licence not reported:\n${describeResults(r2)}`);
});

test('content: Catalog -> Dataset -> one Distribution per served source, licence on each Distribution', async () => {
  const licenceIri = JSON.parse(readFileSync(join(CATALOG_SRC, 'licences', 'cc-by-4.0.json'), 'utf8')).iri;
  const a = ctx.addresses;
  for (const spec of SPEC_2_7) {
    const g = new Graph(await jsonldToQuads(docs(ctx).get(`v1/dcat/catalog/${spec.id}`)!));
    const url = dcatUrl(a, spec.id);
    const [catalog] = g.ofType(`${DCAT}Catalog`);
    assert.is(g.ofType(`${DCAT}Catalog`).length, 1, spec.id);
    assert.equal(g.objects(catalog, `${DCAT}dataset`), [url]);
    assert.equal(g.ofType(`${DCAT}Dataset`), [url]);
    assert.is(g.one(url, `${DCT}title`), spec.title);
    assert.ok(g.objects(url, `${DCT}identifier`).includes(spec.id));

    // A ruled source with no data attached yet (Eurostat P, EFSA) has no distribution: the
    // dataset's description names it as not yet available, with the reason.
    const notYet = new Set(ctx.catalogue.sources.filter((x) => x.status === 'not-yet-available').map((x) => x.source));
    const served = spec.sources.filter(([s, , status]) => status === 'CC' && !notYet.has(s)).map(([s]) => s);
    for (const [s] of spec.sources.filter(([x]) => notYet.has(x)))
      assert.ok(g.one(url, `${DCT}description`).split('Not yet available: ')[1]?.includes(`${ctx.cat.sources.get(s)!.title} (`), `${spec.id}: ${s} named as not yet available`);
    const dists = g.objects(url, `${DCAT}distribution`);
    assert.is(dists.length, served.length, `${spec.id}: one distribution per served source`);
    assert.equal(g.ofType(`${DCAT}Distribution`).sort(), [...dists].sort());
    assert.equal(dists.map((d) => g.one(d, `${DCT}identifier`)).sort(), [...served].sort(), `${spec.id}: served sources`);
    for (const d of dists) {
      assert.is(g.one(d, `${DCT}license`), licenceIri, `${spec.id} ${d}: licence`);
      assert.is(g.one(d, `${DCAT}accessURL`), `${a.base_url}/lds/draw`);
      assert.is(g.one(d, `${DCT}format`), 'http://publications.europa.eu/resource/authority/file-type/JSON');
      assert.ok(g.objects(d, `${ODRL}hasPolicy`).length === 1, `${d}: policy`);
    }

    const [service] = g.ofType(`${DCAT}DataService`);
    assert.is(g.ofType(`${DCAT}DataService`).length, 1);
    assert.is(g.one(service, `${DCAT}endpointURL`), `${a.base_url}/lds/draw`);
    assert.is(g.one(service, `${DCAT}endpointDescription`), `${a.base_url}/specification`);
    assert.equal(g.objects(service, `${DCAT}servesDataset`), [url]);
  }
});

test('content: data themes, EuroVoc concepts of the routing rule, publisher and contact point', async () => {
  const domains = domainIds();
  const settings = JSON.parse(readFileSync(join(CATALOG_SRC, 'catalogue.json'), 'utf8'));
  for (const p of ctx.cat.products) {
    const g = new Graph(await jsonldToQuads(docs(ctx).get(`v1/dcat/catalog/${p.product_id}`)!));
    const url = dcatUrl(ctx.addresses, p.product_id);
    const themes = g.objects(url, `${DCAT}theme`);
    for (const t of p.data_themes) assert.ok(themes.includes(`http://publications.europa.eu/resource/authority/data-theme/${t}`), `${p.product_id}: data theme ${t}`);
    const eurovoc = [
      ...p.routing.domains.map((code) => domains.get(code)!),
      ...p.routing.microthesauri,
      ...p.routing.descriptors,
    ].map((id) => `http://eurovoc.europa.eu/${id}`);
    assert.ok(eurovoc.length > 0, `${p.product_id}: routing rule is empty`);
    assert.equal(themes.filter((t) => t.startsWith('http://eurovoc.europa.eu/')).sort(), [...new Set(eurovoc)].sort(), `${p.product_id}: EuroVoc concepts`);
    for (const k of p.keywords) assert.ok(g.objects(url, `${DCAT}keyword`).includes(k), `${p.product_id}: keyword ${k}`);

    const publisher = g.one(url, `${DCT}publisher`);
    assert.is(g.one(publisher, FOAF_NAME), settings.publisher.name);
    const contact = g.one(url, `${DCAT}contactPoint`);
    assert.is(g.one(contact, VCARD_EMAIL), `mailto:${settings.publisher.email}`);
  }
});

test('ODRL offer carries the draw unit price and the bulk annual price, as xsd:decimal EUR (computed from made-up counts)', async () => {
  const held = new Set([...fake.cat.sources.values()].filter((s) => s.held).map((s) => s.id));
  const store = fakeStore(fake.cat);
  let nonZero = 0;
  for (const c of [ctx, fake]) {
    for (const p of c.cat.products) {
      const g = new Graph(await jsonldToQuads(docs(c).get(`v1/dcat/catalog/${p.product_id}`)!));
      const url = dcatUrl(c.addresses, p.product_id);
      const offers = g.ofType(`${ODRL}Offer`);
      assert.is(offers.length, 1, p.product_id);
      assert.equal([...new Set(g.objects(null, `${ODRL}hasPolicy`))], offers);
      // Every payAmount refinement: value, datatype, currency.
      const amounts = g.quads
        .filter((q) => q.predicate.value === `${ODRL}leftOperand` && q.object.value === `${ODRL}payAmount`)
        .map((q) => {
          const refinement = q.subject.value;
          const right = g.quads.find((x) => x.subject.value === refinement && x.predicate.value === `${ODRL}rightOperand`)!;
          assert.is(right.object.termType, 'Literal');
          assert.is((right.object as any).datatype.value, XSD_DECIMAL, `${p.product_id}: xsd:decimal`);
          assert.is(g.one(refinement, `${ODRL}unit`), 'http://publications.europa.eu/resource/authority/currency/EUR');
          assert.is(g.one(refinement, `${ODRL}operator`), `${ODRL}eq`);
          return right.object.value;
        });
      // The compensate duty sits on a permission whose target is the dataset.
      assert.ok(g.objects(null, RDF_VALUE).includes(`${ODRL}compensate`));
      assert.ok(g.objects(null, `${ODRL}target`).every((t) => t === url));
      const units = c === fake
        ? p.sources.filter((s) => !held.has(s.source)).reduce((sum, s) => sum + (store.products[p.product_id]?.[s.source]?.units ?? 0), 0)
        : 0;
      const expected = [formatMicros(p.pricing.draw_unit_price_micro_eur), formatCents(bulkAnnualCents(units, p.pricing.bulk_unit_rate_micro_eur))];
      assert.equal(amounts.sort(), expected.sort(), `${p.product_id}: prices in the offer`);
      if (c === fake && Number(expected[1]) > 0) nonZero++;
    }
  }
  assert.is(nonZero, 14, 'every product had a non-zero bulk price with made-up counts');
});

test.run();
