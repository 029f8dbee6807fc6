// Issue 51: the whole catalogue in DCAT-AP 3.0.1 (v1/dcat/catalog.{jsonld,ttl,rdf}), checked by tools
// no one here wrote:
// - the DCAT-AP 3.0.1 SHACL shapes (rdf-validate-shacl, test/conformance/dcat-ap/) report 0
//   violations on each serialisation: the JSON-LD read by the jsonld package, the Turtle by n3's
//   parser, the RDF/XML by rdfxml-streaming-parser and, again, as rdflib reads it;
// - rdflib (python3-rdflib) reads the three files into isomorphic graphs;
// - what ckanext-dcat's DCAT-AP profiles take (ckan/ckanext-dcat @ 02099725f1d419b4de26c15e90ef5f56df10815f,
//   ckanext/dcat/profiles/euro_dcat_ap_base.py: _parse_dataset_base, graph_from_catalog) is there,
//   asked with SPARQL through rdflib's engine (test/helpers/rdf_harvest.py): every product a dataset
//   with title, description, licence, publisher, themes, keywords and distributions with access
//   URLs and formats;
// - the whole catalogue says what the per-product documents say (every triple of each is in it).
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { Parser, type Quad } from 'n3';
import { RdfXmlParser } from 'rdfxml-streaming-parser';
import { RDF_SERIALISATIONS, negotiateRdf } from '../contract/rdf-catalogue.ts';
import { emitDcat } from '../generator/emit/dcat.ts';
import { emitDcatCatalogue } from '../generator/emit/dcat-catalogue.ts';
import { EMITTERS } from '../generator/emit/index.ts';
import type { EmitContext, OutputFile } from '../generator/emit/types.ts';
import { REPO } from './helpers/build.ts';
import { PYTHON_RDFLIB, locate, suiteNeeding } from './helpers/programs.ts';
import { buildContext, describeResults, jsonldToQuads, shaclResultsOfQuads, type ShaclResult } from './helpers/conformance.ts';

const test = suiteNeeding('conformance-dcat-catalogue', [PYTHON_RDFLIB]);
const PYTHON = (locate(PYTHON_RDFLIB) as { path?: string }).path ?? '/usr/bin/python3';
const DCAT = 'http://www.w3.org/ns/dcat#';
const violations = (rs: ShaclResult[]) => rs.filter((r) => r.severity === 'Violation');
const key = (q: Quad) => `${q.subject.termType === 'BlankNode' ? '_' : q.subject.value} ${q.predicate.value} ${q.object.termType === 'BlankNode' ? '_' : q.object.termType === 'Literal' ? JSON.stringify([q.object.value, (q.object as any).language, (q.object as any).datatype?.value]) : q.object.value}`;

let prod: EmitContext; // production addresses, zero counts
let local: EmitContext; // local addresses, made-up counts
const files = (c: EmitContext) => new Map(emitDcatCatalogue(c).map((f) => [f.path, f]));

async function rdfXmlQuads(text: string, baseIRI: string): Promise<Quad[]> {
  const out: Quad[] = [];
  const parser = new RdfXmlParser({ baseIRI });
  await new Promise<void>((resolve, reject) => {
    Readable.from([text]).pipe(parser).on('data', (q: Quad) => out.push(q)).on('error', reject).on('end', () => resolve());
  });
  return out;
}

/** rdflib's reading of the three files: isomorphism, N-Triples of the RDF/XML, the harvest. */
const rdflibRuns = new Map<string, { report: any; ntriples: string }>();
function rdflib(fs: Map<string, OutputFile>): { report: any; ntriples: string } {
  const memo = [...fs.values()].map((f) => f.body).join('\0');
  const known = rdflibRuns.get(memo);
  if (known) return known;
  const dir = mkdtempSync(join(tmpdir(), 'dcat-catalogue-'));
  const paths = ['v1/dcat/catalog.jsonld', 'v1/dcat/catalog.ttl', 'v1/dcat/catalog.rdf'].map((p) => {
    const file = join(dir, p.replace(/\//g, '_'));
    writeFileSync(file, fs.get(p)!.body);
    return file;
  });
  const nt = join(dir, 'rdfxml.nt');
  const out = execFileSync(PYTHON, [join(REPO, 'test', 'helpers', 'rdf_harvest.py'), ...paths, nt], { encoding: 'utf8', maxBuffer: 64 << 20 });
  const run = { report: JSON.parse(out), ntriples: readFileSync(nt, 'utf8') };
  rdflibRuns.set(memo, run);
  return run;
}

test.before(async () => {
  prod = await buildContext();
  local = await buildContext({ store: 'fake', local: true });
});

test('registered; three files at v1/dcat/catalog.{jsonld,ttl,rdf} with their media types; deterministic bytes', () => {
  assert.ok(EMITTERS.includes(emitDcatCatalogue));
  const fs = emitDcatCatalogue(prod);
  assert.equal(fs.map((f) => [f.path, f.contentType]), [
    ['v1/dcat/catalog.jsonld', 'application/ld+json; charset=utf-8'],
    ['v1/dcat/catalog.ttl', 'text/turtle; charset=utf-8'],
    ['v1/dcat/catalog.rdf', 'application/rdf+xml; charset=utf-8'],
  ]);
  assert.equal(emitDcatCatalogue(prod).map((f) => f.body), fs.map((f) => f.body));
});

for (const which of ['production addresses, zero counts', 'local addresses, made-up counts'] as const) {
  test(`0 SHACL violations${which.startsWith('local') ? ' in each serialisation, each read by a parser that did not write it' : ' (JSON-LD)'} (${which})`, async () => {
    const c = which.startsWith('production') ? prod : local;
    const fs = files(c);
    const base = `${c.addresses.base_url}/dcat/catalog`;
    const readings: [string, Quad[]][] = [['JSON-LD (jsonld)', await jsonldToQuads(JSON.parse(fs.get('v1/dcat/catalog.jsonld')!.body))]];
    // The other readings once (the two contexts differ in addresses and counts, not in form); rdflib
    // reads the RDF/XML too (its three graphs are isomorphic: the test below).
    if (c === local) {
      readings.push(['Turtle (n3)', new Parser({ baseIRI: base }).parse(fs.get('v1/dcat/catalog.ttl')!.body)]);
      readings.push(['RDF/XML (rdfxml-streaming-parser)', await rdfXmlQuads(fs.get('v1/dcat/catalog.rdf')!.body, base)]);
      readings.push(['RDF/XML (rdflib, as N-Triples)', new Parser({ format: 'N-Triples' }).parse(rdflib(fs).ntriples)]);
    }
    const counts = new Set(readings.map(([, q]) => q.length));
    assert.is(counts.size, 1, `the readings differ in size: ${readings.map(([n, q]) => `${n} ${q.length}`).join(', ')}`);
    for (const [name, quads] of readings) {
      const datasets = quads.filter((q) => q.predicate.value.endsWith('#type') && q.object.value === `${DCAT}Dataset`);
      assert.is(datasets.length, c.cat.products.length, `${name}: one dataset per product`);
      const v = violations(await shaclResultsOfQuads(quads));
      assert.is(v.length, 0, `${name}: SHACL violations:\n${describeResults(v)}`);
    }
  });
}

test('SHACL still fails a broken copy (a distribution without accessURL, in Turtle)', async () => {
  const ttl = files(prod).get('v1/dcat/catalog.ttl')!.body;
  const quads = new Parser().parse(ttl);
  const broken = quads.filter((q, i) => !(q.predicate.value === `${DCAT}accessURL` && i === quads.findIndex((x) => x.predicate.value === `${DCAT}accessURL`)));
  assert.is(broken.length, quads.length - 1);
  assert.ok(violations(await shaclResultsOfQuads(broken)).some((r) => r.path === `${DCAT}accessURL`));
});

test('rdflib reads the three files into isomorphic graphs, and tells a changed one apart', () => {
  const fs = files(local);
  const { report } = rdflib(fs);
  assert.equal(report.isomorphic, { jsonld_turtle: true, jsonld_rdfxml: true }, JSON.stringify(report.triples));
  assert.ok(report.triples.jsonld > 1000, `triples: ${JSON.stringify(report.triples)}`);
  // The check can fail: one literal changed in the Turtle is another graph.
  const changed = new Map(fs);
  const ttl = fs.get('v1/dcat/catalog.ttl')!;
  changed.set(ttl.path, { ...ttl, body: ttl.body.replace('"agriculture"@en', '"agriculture!"@en') });
  assert.is.not(changed.get(ttl.path)!.body, ttl.body);
  assert.equal(rdflib(changed).report.isomorphic.jsonld_turtle, false);
});

test("what ckanext-dcat's DCAT-AP profile takes, by SPARQL through rdflib, in every serialisation", () => {
  const c = local;
  const { report } = rdflib(files(c));
  const s = c.cat.settings;
  const a = c.addresses;
  const licences = new Map([...c.cat.licences.values()].map((l) => [l.iri, l]));
  for (const [form, h] of Object.entries(report.harvest) as [string, any][]) {
    assert.is(h.catalogues.length, 1, `${form}: one catalogue`);
    const cat = h.catalogues[0];
    assert.is(cat.uri, `${a.base_url}/dcat/catalog`);
    assert.equal(cat.title, [s.title]);
    assert.equal(cat.description, [s.description]);
    assert.equal(cat.homepage, [a.publisher_url]);
    assert.is(cat.modified.length, 1);
    assert.is(cat.datasets.length, c.cat.products.length, `${form}: every product listed`);
    assert.is(h.datasets.length, c.cat.products.length, `${form}: every product is a dataset`);
    for (const p of c.cat.products) {
      const d = h.datasets.find((x: any) => x.uri === `${a.base_url}/dcat/catalog/${p.product_id}`);
      assert.ok(d, `${form}: ${p.product_id} harvested`);
      const where = `${form} ${p.product_id}`;
      assert.equal(d.title, [p.title], `${where}: title`);
      assert.is(d.notes.length, 1, `${where}: notes`);
      assert.ok(d.notes[0].startsWith(p.description), `${where}: notes`);
      assert.equal(d.tags, [...p.keywords].sort(), `${where}: tags`);
      for (const t of p.data_themes) assert.ok(d.theme.includes(`http://publications.europa.eu/resource/authority/data-theme/${t}`), `${where}: theme ${t}`);
      assert.ok(d.theme.some((t: string) => t.startsWith('http://eurovoc.europa.eu/')), `${where}: EuroVoc subjects`);
      assert.ok(d.identifier.includes(p.product_id), `${where}: identifier`);
      assert.equal(d.publisher_name, [s.publisher.name], `${where}: publisher_name`);
      assert.equal(d.contact_email, [`mailto:${s.publisher.email}`], `${where}: contact_email`);
      assert.equal(d.spatial, ['http://publications.europa.eu/resource/authority/continent/EUROPE'], `${where}: spatial`);
      assert.is(d.modified.length, 1, `${where}: modified`);
      assert.ok(d.resources.length >= 1, `${where}: at least one distribution`);
      for (const r of d.resources) {
        assert.equal(r.access_url, [`${a.base_url}/lds/draw`], `${where} ${r.uri}: access_url`);
        assert.equal(r.format, ['http://publications.europa.eu/resource/authority/file-type/JSON'], `${where} ${r.uri}: format`);
        assert.equal(r.mimetype, ['http://www.iana.org/assignments/media-types/application/json'], `${where} ${r.uri}: mimetype`);
        assert.is(r.license.length, 1, `${where} ${r.uri}: license`);
        assert.ok(licences.has(r.license[0]), `${where} ${r.uri}: the licence is one of catalog-src's`);
        assert.is(r.name.length, 1, `${where} ${r.uri}: name`);
        assert.is(r.access_service.length, 1, `${where} ${r.uri}: access service`);
      }
    }
  }
});

test('consistent with the per-product documents: every triple of each, but its one-dataset catalogue, is in the whole', async () => {
  const whole = new Set((await jsonldToQuads(JSON.parse(files(local).get('v1/dcat/catalog.jsonld')!.body))).map(key));
  for (const f of emitDcat(local)) {
    const quads = await jsonldToQuads(JSON.parse(f.body));
    const ownCatalogue = `${f.path.replace(/^v1/, `${local.addresses.base_url}`)}#catalogue`;
    const missing = quads.filter((q) => q.subject.value !== ownCatalogue).map(key).filter((k) => !whole.has(k));
    assert.equal(missing, [], `${f.path}: triples missing from the whole catalogue`);
  }
});

test('content negotiation: Accept picks the file (q-values, wildcards), nothing acceptable is null', () => {
  const by = (accept: string | undefined) => negotiateRdf(accept)?.suffix ?? null;
  assert.is(by(undefined), '.jsonld');
  assert.is(by('*/*'), '.jsonld');
  assert.is(by('text/turtle'), '.ttl');
  assert.is(by('application/rdf+xml'), '.rdf');
  assert.is(by('application/rdf+xml;q=0.9, text/turtle;q=0.5'), '.rdf');
  assert.is(by('text/turtle, application/ld+json;q=0.8, */*;q=0.1'), '.ttl');
  assert.is(by('text/*'), '.ttl');
  assert.is(by('text/html'), null);
  assert.is(by('application/ld+json;q=0'), null);
  assert.equal(RDF_SERIALISATIONS.map((x) => x.suffix), ['.jsonld', '.ttl', '.rdf']);
});

test('docs/hosting.md names every file with its media type, the negotiated address and the harvester settings', () => {
  const guide = readFileSync(join(REPO, 'docs', 'hosting.md'), 'utf8');
  for (const x of RDF_SERIALISATIONS) {
    assert.ok(guide.includes(`| \`{base_url}/dcat/catalog${x.suffix}\` | \`${x.mediaType}\` |`), `${x.suffix} and ${x.mediaType}`);
    assert.ok(guide.includes(`\`v1/dcat/catalog${x.suffix}\``), `${x.suffix} in the table of published paths`);
  }
  assert.ok(guide.includes('`{base_url}/dcat/catalog` | 303 See Other'));
  // The CKAN settings the guide gives: ckanext-dcat's plugin, profile and harvester configuration key.
  for (const claim of ['dcat_rdf_harvester', 'euro_dcat_ap_3', '{"rdf_format":"text/turtle"}']) assert.ok(guide.includes(claim), claim);
});

test('found from the site: every page links the three files (<link rel="alternate">), llms.txt lists them and the DSP version', () => {
  const all = new Map(EMITTERS.flatMap((e) => e(prod)).map((f) => [f.path, f.body]));
  const base = `${prod.addresses.base_url}/dcat/catalog`;
  const home = all.get('index.html')!;
  const llms = all.get('llms.txt')!;
  for (const x of RDF_SERIALISATIONS) {
    assert.ok(home.includes(`<link rel="alternate" type="${x.mediaType}" href="${base}${x.suffix}"`), `home page links ${x.suffix}`);
    assert.ok(llms.includes(`(${base}${x.suffix})`), `llms.txt lists ${x.suffix}`);
    assert.ok(all.has(`v1/dcat/catalog${x.suffix}`), `${x.suffix} is published`);
  }
  assert.ok(llms.includes(`(${new URL(base).origin}/.well-known/dspace-version)`), 'llms.txt names the DSP version metadata');
  const pages = [...all.keys()].filter((p) => p.endsWith('.html'));
  assert.ok(pages.length > 14);
  for (const p of pages) assert.ok(all.get(p)!.includes(`href="${base}.ttl"`), `${p} links the Turtle`);
});

test.run();
