// Offline conformance harness: the data files in test/conformance/ (A2A schema, DCAT-AP SHACL,
// RFC 9727 linkset schema; origins and licences in its README), a JSON-LD processor that refuses
// every remote load, and SHACL validation. The files are part of the repository, so a fresh clone
// runs every conformance test; nothing is skipped.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import jsonld from 'jsonld';
import { Parser, type Quad } from 'n3';
import rdf from '@zazuko/env';
import SHACLValidator from 'rdf-validate-shacl';
import { loadCatalogSrc } from '../../generator/load.ts';
import { emitContext } from '../../generator/build.ts';
import { localAddresses } from '../../generator/addresses.ts';
import type { EmitContext } from '../../generator/emit/types.ts';
import type { StoreSummary } from '../../generator/model.ts';
import { CATALOG_SRC, REPO } from './build.ts';

export const CONFORMANCE = join(REPO, 'test', 'conformance');

export function readConformanceJson(rel: string): any {
  return JSON.parse(readFileSync(join(CONFORMANCE, rel), 'utf8'));
}

export const BUILT_AT = '2026-01-01T00:00:00Z';

export function emptyStore(): StoreSummary {
  return { store_version: null, computed_at: BUILT_AT, products: {}, notes: {} };
}

/** Made-up non-zero counts: test input only, so prices are non-zero and computed. */
export function fakeStore(ctxSrc: Awaited<ReturnType<typeof loadCatalogSrc>>): StoreSummary {
  const products: StoreSummary['products'] = {};
  ctxSrc.products.forEach((p, i) => {
    products[p.product_id] = {};
    p.sources.forEach((s, j) => {
      const src = ctxSrc.sources.get(s.source);
      if (!src || src.held || src.unit === null) return; // a real store holds nothing for these
      const units = 1000 * (i + 1) + 37 * (j + 1) + 3; // odd numbers so rounding shows
      products[p.product_id][s.source] = { rows: units * 23, units };
    });
  });
  return { store_version: 'store-0123456789ab', computed_at: BUILT_AT, products, notes: {} };
}

/** The production addresses of catalog-src, or the local ones; the documents are built in-process. */
export async function buildContext(opts: { store?: 'empty' | 'fake'; local?: boolean } = {}): Promise<EmitContext> {
  const cat = await loadCatalogSrc(CATALOG_SRC);
  const addresses = opts.local ? localAddresses('http://127.0.0.1:8080', cat.settings.addresses.publisher_url) : cat.settings.addresses;
  const store = opts.store === 'fake' ? fakeStore(cat) : emptyStore();
  return emitContext(cat, addresses, store, BUILT_AT);
}

// --- JSON-LD, offline -----------------------------------------------------------------------

/** A documentLoader that refuses every load: a document that needs one is not self-contained. */
export const offlineLoader = async (url: string): Promise<never> => {
  throw new Error(`remote JSON-LD load refused (offline): ${url}`);
};

const n3 = (text: string, baseIRI?: string): Quad[] => new Parser({ baseIRI }).parse(text);

export async function jsonldToQuads(doc: object): Promise<Quad[]> {
  const expanded = await jsonld.expand(doc as any, { documentLoader: offlineLoader as any, safe: true } as any);
  const nquads = (await jsonld.toRDF(expanded as any, { format: 'application/n-quads', documentLoader: offlineLoader as any } as any)) as unknown as string;
  return n3(nquads);
}

export function turtleQuads(rel: string): Quad[] {
  const file = join(CONFORMANCE, rel);
  return n3(readFileSync(file, 'utf8'), `file://${file}`);
}

// --- SHACL ----------------------------------------------------------------------------------

export const DCAT_SHAPES = [
  'dcat-ap/dcat-ap-3.0.1-SHACL.ttl',
  'dcat-ap/html-shacl/shapes.ttl',
  'dcat-ap/html-shacl/range.ttl',
  'dcat-ap/html-shacl/mdr-vocabularies.shape.ttl',
  'dcat-ap/html-shacl/deprecateduris.ttl',
];

export interface ShaclResult { shapes: string; severity: string; focus: string; path: string; message: string; value: string; shape: string }

const validators = new Map<string, SHACLValidator>();

function validator(rel: string): SHACLValidator {
  let v = validators.get(rel);
  if (!v) {
    // owl:imports point at the web; the shapes files we need are all local, so imports resolve to nothing.
    v = new SHACLValidator(rdf.dataset(turtleQuads(rel)) as any, { factory: rdf as any, importGraph: () => rdf.dataset() as any });
    validators.set(rel, v);
  }
  return v;
}

const local = (iri: string) => iri.replace(/^.*[#/]/, '');

/**
 * Validates a JSON-LD document (merged with dcat-ap/vocab-stubs.ttl) against every DCAT-AP shapes
 * file, each on its own. Returns every result, violations and warnings alike.
 */
export async function shaclResults(doc: object, shapes: string[] = DCAT_SHAPES): Promise<ShaclResult[]> {
  return shaclResultsOfQuads(await jsonldToQuads(doc), shapes);
}

/** The same for quads read from any serialisation (Turtle, RDF/XML, N-Triples). */
export async function shaclResultsOfQuads(quads: Quad[], shapes: string[] = DCAT_SHAPES): Promise<ShaclResult[]> {
  const data = rdf.dataset([...quads, ...turtleQuads('dcat-ap/vocab-stubs.ttl')] as any);
  const out: ShaclResult[] = [];
  for (const rel of shapes) {
    // Validators are reused: validateAll() starts a fresh report on every call.
    const report = await validator(rel).validate(data as any);
    for (const r of report.results) {
      out.push({
        shapes: rel,
        severity: local(r.severity?.value ?? ''),
        focus: r.focusNode?.value ?? '',
        path: r.path && 'value' in r.path ? String((r.path as any).value) : JSON.stringify(r.path ?? null),
        message: r.message.map((m) => m.value).join(' / '),
        value: r.value?.value ?? '',
        shape: r.sourceShape?.value ?? '',
      });
    }
  }
  return out;
}

export function describeResults(results: ShaclResult[]): string {
  return results.map((r) => `  [${r.severity}] ${r.shapes}: focus <${r.focus}> path <${r.path}> value <${r.value}>: ${r.message}`).join('\n');
}
