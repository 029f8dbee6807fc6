// v1/dcat/catalog.{jsonld,ttl,rdf}: the whole catalogue as one DCAT-AP 3.0.1 document, what a data
// portal's harvester (data.europa.eu, CKAN with ckanext-dcat, piveau) reads: one dcat:Catalog
// listing every product's dataset, in JSON-LD, Turtle and RDF/XML (one graph, three files).
//
// It is made of the per-product documents (dcat.ts), so the two can never disagree: every node of
// each product's document (its dataset, distributions, draw-API data service, ODRL offer,
// publisher, contact point, licences, EuroVoc concepts) goes in as it is, under the same IRI; only
// each product's one-dataset dcat:Catalog is left out, and one catalogue node lists the datasets and
// the data services instead. A node two products share (the publisher, a licence, a concept) must
// be the same in both, or the build stops: the same IRI saying two things would be a defect.
//
// Live counts: DCAT-AP has no property for a number of records, so a dataset's unit count is where
// the per-product document has it, in its ODRL offer (the bulk price's "N units at R EUR each").
import { type RdfSerialisation, RDF_CATALOGUE_PATH, RDF_SERIALISATIONS } from '../../contract/rdf-catalogue.ts';
import { dcatUrl } from '../catalog.ts';
import { DCAT_CONTEXT, VOCAB, dcatDocument } from './dcat.ts';
import { rdfXml, triples, turtle } from './rdf-serialise.ts';
import { type EmitContext, type Emitter, type OutputFile, distPath, jsonBody } from './types.ts';

/** The negotiated address of the whole catalogue (also the dcat:Catalog's IRI). */
export function rdfCatalogueUrl(ctx: Pick<EmitContext, 'addresses'>): string {
  return `${ctx.addresses.base_url}${RDF_CATALOGUE_PATH}`;
}

/** The address of one serialisation's file. */
export function rdfCatalogueFileUrl(ctx: Pick<EmitContext, 'addresses'>, s: RdfSerialisation): string {
  return `${rdfCatalogueUrl(ctx)}${s.suffix}`;
}

const en = (value: string) => ({ '@value': value, '@language': 'en' });
const ref = (id: string) => ({ '@id': id });

export function dcatCatalogueDocument(ctx: EmitContext): { '@context': typeof DCAT_CONTEXT; '@graph': Record<string, unknown>[] } {
  const { cat, addresses: a, builtAt } = ctx;
  const s = cat.settings;
  const catLicence = cat.licences.get(s.licence)!;
  const datasets = cat.products.map((p) => dcatUrl(a, p.product_id));
  const nodes = new Map<string, Record<string, unknown>>();
  const order: string[] = [];
  for (const p of cat.products) {
    const graph = dcatDocument(ctx, p)['@graph'] as Record<string, unknown>[];
    for (const n of graph) {
      if (n['@type'] === 'dcat:Catalog') continue; // the product's own one-dataset catalogue
      const id = n['@id'] as string;
      const seen = nodes.get(id);
      if (seen) {
        if (JSON.stringify(seen) !== JSON.stringify(n)) throw new Error(`DCAT catalogue: <${id}> is described differently by two products' documents`);
        continue;
      }
      nodes.set(id, n);
      order.push(id);
    }
  }
  const catalogue = {
    '@id': rdfCatalogueUrl(ctx),
    '@type': 'dcat:Catalog',
    'dct:title': en(s.title),
    'dct:description': en(s.description),
    'dct:publisher': ref(`${a.publisher_url}#org`),
    'dct:license': ref(catLicence.iri),
    'dct:language': ref(VOCAB.language),
    'dct:modified': { '@value': builtAt, '@type': 'xsd:dateTime' },
    'dct:spatial': ref(VOCAB.europe),
    'foaf:homepage': ref(a.publisher_url),
    'dcat:themeTaxonomy': [ref(VOCAB.dataThemeScheme), ref(VOCAB.eurovocScheme)],
    'dcat:dataset': datasets.map(ref),
    'dcat:service': datasets.map((d) => ref(`${d}#draw-api`)),
  };
  return { '@context': DCAT_CONTEXT, '@graph': [catalogue, ...order.map((id) => nodes.get(id)!)] };
}

/** The three files, from one graph. */
export const emitDcatCatalogue: Emitter = (ctx) => {
  const doc = dcatCatalogueDocument(ctx);
  const ts = triples(doc);
  const bodies: Record<string, string> = {
    '.jsonld': jsonBody(doc),
    '.ttl': turtle(ts, DCAT_CONTEXT),
    '.rdf': rdfXml(ts, DCAT_CONTEXT),
  };
  return RDF_SERIALISATIONS.map(
    (s): OutputFile => ({ path: distPath(rdfCatalogueFileUrl(ctx, s)), contentType: s.contentType, body: bodies[s.suffix]!, cache: 'catalogue' }),
  );
};
