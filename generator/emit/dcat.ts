// v1/dcat/catalog/{product_id}: one DCAT-AP 3.0.1 JSON-LD description per product.
//
// Shape of each document (all nodes in one @graph, inline prefix context, no remote context):
//   Catalog (#catalogue) -> Dataset (the dcat_url itself) -> one Distribution per served source
//   (#dist-<source>, licence on the Distribution), a DataService for the draw endpoint
//   (#draw-api), and an ODRL Offer (#offer) with the draw unit price and the bulk annual price.
//   Publisher, contact point, the licence document and the EuroVoc concepts of the product's
//   routing rule are described inline, so SHACL range checks find their types in the document.
// Controlled vocabularies: EU data-theme, licence, file-type, language, access-right,
// planned-availability, continent and currency authority tables; EuroVoc concepts as
// http://eurovoc.europa.eu/<id>, labelled from the catalog-src EuroVoc tables.
// Deterministic: key order is fixed here, the only time is ctx.builtAt.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { dcatUrl, notYetAvailable, type CatalogueProduct } from '../catalog.ts';
import type { CatalogSrc, ProductSrc, Source } from '../model.ts';
import { type EmitContext, type Emitter, JSONLD_TYPE, distPath, jsonBody } from './types.ts';

export const DCAT_CONTEXT = {
  dcat: 'http://www.w3.org/ns/dcat#',
  dct: 'http://purl.org/dc/terms/',
  dcatap: 'http://data.europa.eu/r5r/',
  foaf: 'http://xmlns.com/foaf/0.1/',
  vcard: 'http://www.w3.org/2006/vcard/ns#',
  odrl: 'http://www.w3.org/ns/odrl/2/',
  skos: 'http://www.w3.org/2004/02/skos/core#',
  rdf: 'http://www.w3.org/1999/02/22-rdf-syntax-ns#',
  rdfs: 'http://www.w3.org/2000/01/rdf-schema#',
  xsd: 'http://www.w3.org/2001/XMLSchema#',
} as const;

const AUTH = 'http://publications.europa.eu/resource/authority';
export const VOCAB = {
  dataThemeScheme: `${AUTH}/data-theme`,
  dataTheme: (code: string) => `${AUTH}/data-theme/${code}`,
  language: `${AUTH}/language/ENG`,
  fileTypeJson: `${AUTH}/file-type/JSON`,
  mediaTypeJson: 'http://www.iana.org/assignments/media-types/application/json',
  accessRestricted: `${AUTH}/access-right/RESTRICTED`,
  availabilityStable: `${AUTH}/planned-availability/STABLE`,
  europe: `${AUTH}/continent/EUROPE`,
  eur: `${AUTH}/currency/EUR`,
  eurovocScheme: 'http://eurovoc.europa.eu/100141',
  eurovoc: (id: string) => `http://eurovoc.europa.eu/${id}`,
  openapi31: 'https://spec.openapis.org/oas/v3.1.0',
} as const;

// --- EuroVoc tables (the data of the eu.eurovoc_taxonomy source) -------------------------------

interface EuroVocTables {
  domains: Map<string, { id: string; label: string }>; // domain code -> EuroVoc id + label
  microthesauri: Map<string, string>; // EuroVoc id -> label
  descriptors: Map<string, string>; // EuroVoc id -> label
}

// Per loaded catalog-src (one read for the 14 documents of a build); a new load reads the files again,
// so a long-lived process that rebuilds after an edit never shows old labels. The parse (~60 ms:
// 7,000 descriptors) is kept for the same bytes: a process that builds again (a test suite, a
// long-lived watcher) parses the tables again only when they changed.
const tablesCache = new WeakMap<CatalogSrc, EuroVocTables>();
let lastParsed: { texts: string[]; tables: EuroVocTables } | undefined;

function eurovocDir(cat: CatalogSrc): string {
  for (const src of cat.sources.values()) {
    const spec = src.data?.find((d) => d.adapter === 'eurovoc');
    if (spec) return join(cat.root, spec.path);
  }
  return join(cat.root, 'data', 'eurovoc');
}

const csvRows = (text: string) => parse(text, { columns: true, skip_empty_lines: true }) as Record<string, string>[];

function eurovocTables(cat: CatalogSrc): EuroVocTables {
  let t = tablesCache.get(cat);
  if (!t) {
    const dir = eurovocDir(cat);
    const texts = ['domains.csv', 'microthesauri.csv', 'descriptors.csv'].map((f) => readFileSync(join(dir, f), 'utf8'));
    if (lastParsed && lastParsed.texts.every((text, i) => text === texts[i])) t = lastParsed.tables;
    else {
      const [domains, microthesauri, descriptors] = texts.map(csvRows);
      t = {
        domains: new Map(domains!.map((r) => [r.domain_code, { id: r.domain_eurovoc_id, label: r.label_en }])),
        microthesauri: new Map(microthesauri!.map((r) => [r.mt_eurovoc_id, r.label_en])),
        descriptors: new Map(descriptors!.map((r) => [r.descriptor_id, r.label_en])),
      };
      lastParsed = { texts, tables: t };
    }
    tablesCache.set(cat, t);
  }
  return t;
}

export interface EuroVocConcept { id: string; label: string | null; kind: 'domain' | 'microthesaurus' | 'descriptor'; notation?: string }

/** The EuroVoc concepts of a product's routing rule: domains (mapped to their EuroVoc ids), microthesauri, descriptors. */
export function routingConcepts(cat: CatalogSrc, p: ProductSrc): EuroVocConcept[] {
  const t = eurovocTables(cat);
  const out: EuroVocConcept[] = [];
  for (const code of p.routing.domains) {
    const d = t.domains.get(code);
    if (!d) throw new Error(`${p.product_id}: EuroVoc domain ${code} is not in the EuroVoc domain table`);
    out.push({ id: d.id, label: d.label, kind: 'domain', notation: code });
  }
  for (const id of p.routing.microthesauri) out.push({ id, label: t.microthesauri.get(id) ?? null, kind: 'microthesaurus' });
  for (const id of p.routing.descriptors) out.push({ id, label: t.descriptors.get(id) ?? null, kind: 'descriptor' });
  const seen = new Set<string>();
  return out.filter((c) => (seen.has(c.id) ? false : (seen.add(c.id), true)));
}

// --- document ---------------------------------------------------------------------------------

const en = (value: string) => ({ '@value': value, '@language': 'en' });
const ref = (id: string) => ({ '@id': id });
const decimal = (value: string) => ({ '@value': value, '@type': 'xsd:decimal' });

function payDuty(amount: string, currencyIri: string) {
  return {
    'odrl:action': {
      'rdf:value': ref('odrl:compensate'),
      'odrl:refinement': {
        'odrl:leftOperand': ref('odrl:payAmount'),
        'odrl:operator': ref('odrl:eq'),
        'odrl:rightOperand': decimal(amount),
        'odrl:unit': ref(currencyIri),
      },
    },
  };
}

function distribution(ctx: EmitContext, base: string, src: Source, cp: CatalogueProduct) {
  const { cat, addresses: a } = ctx;
  const r = src.ruling!;
  const lic = cat.licences.get(r.licence)!;
  const def = cp.unit_definition.find((u) => u.source === src.id);
  const description = def
    ? `${src.title} (${src.publisher}), drawn per unit through the metered draw endpoint. Unit ${def.unit}: ${def.definition}.`
    : `${src.title} (${src.publisher}): reference data used to route material into this product; it sells no units of its own.`;
  return {
    '@id': `${base}#dist-${src.id}`,
    '@type': 'dcat:Distribution',
    'dct:identifier': src.id,
    'dct:title': en(src.title),
    'dct:description': en(description),
    'dcat:accessURL': ref(`${a.base_url}/lds/draw`),
    'dcat:accessService': ref(`${base}#draw-api`),
    'dct:format': ref(VOCAB.fileTypeJson),
    'dcat:mediaType': ref(VOCAB.mediaTypeJson),
    'dct:license': ref(lic.iri),
    'dct:rights': {
      '@type': 'dct:RightsStatement',
      'rdfs:label': en(`${r.attribution}. Conditions: ${r.conditions}`),
      'rdfs:seeAlso': ref(r.terms_url),
    },
    'dcatap:availability': ref(VOCAB.availabilityStable),
    'odrl:hasPolicy': ref(`${base}#offer`),
  };
}

/**
 * Which sources the product is made of: served ones are the distributions; a source not yet
 * available (ruled, no data yet) and a held one serve nothing, and the description says why.
 */
function sourcesSentence(cat: CatalogSrc, p: ProductSrc): string {
  const srcs = p.sources.map((x) => cat.sources.get(x.source)!);
  const served = srcs.filter((x) => !x.held && !notYetAvailable(x)).map((x) => x.title);
  const notYet = srcs.filter(notYetAvailable).map((x) => `${x.title} (${(x.no_data_reason ?? 'no data yet').replace(/^not yet available: /, '')})`);
  const held = srcs.filter((x) => x.held).map((x) => x.title);
  return `Sources served: ${served.join('; ')}.${notYet.length ? ` Not yet available: ${notYet.join('; ')}.` : ''}${held.length ? ` Held (licence not yet ruled, no rows served): ${held.join('; ')}.` : ''}`;
}

/** The distributions of a product: its ruled sources that have data (or are reference tables). */
export function distributedSources(cat: CatalogSrc, p: ProductSrc): Source[] {
  return p.sources.map((x) => cat.sources.get(x.source)!).filter((src) => !src.held && !!src.ruling && !notYetAvailable(src));
}

export function dcatDocument(ctx: EmitContext, p: ProductSrc): Record<string, unknown> {
  const { cat, addresses: a, builtAt } = ctx;
  const s = cat.settings;
  const cp = ctx.catalogue.products.find((x) => x.product_id === p.product_id);
  if (!cp) throw new Error(`${p.product_id} is missing from the catalogue`);
  const base = dcatUrl(a, p.product_id);
  const org = `${a.publisher_url}#org`;
  const contact = `${a.publisher_url}#contact`;
  const catLicence = cat.licences.get(s.licence)!;
  const served = distributedSources(cat, p);
  // Every licence named in the document (distributions + catalogue), described once each.
  const licenceByIri = new Map([catLicence, ...served.map((src) => cat.licences.get(src.ruling!.licence)!)].map((l) => [l.iri, l]));
  const licences = [...licenceByIri.values()];
  const concepts = routingConcepts(cat, p);
  const themes = p.data_themes.map((t) => ref(VOCAB.dataTheme(t)));
  const pr = cp.pricing;
  const modified = { '@value': builtAt, '@type': 'xsd:dateTime' };

  const graph: Record<string, unknown>[] = [
    {
      '@id': `${base}#catalogue`,
      '@type': 'dcat:Catalog',
      'dct:title': en(`${s.title}: ${p.title}`),
      'dct:description': en(s.description),
      'dct:publisher': ref(org),
      'dct:license': ref(catLicence.iri),
      'dct:language': ref(VOCAB.language),
      'dct:modified': modified,
      'dct:spatial': ref(VOCAB.europe),
      'foaf:homepage': ref(a.publisher_url),
      'dcat:themeTaxonomy': [ref(VOCAB.dataThemeScheme), ref(VOCAB.eurovocScheme)],
      'dcat:dataset': ref(base),
      'dcat:service': ref(`${base}#draw-api`),
    },
    {
      '@id': base,
      '@type': 'dcat:Dataset',
      'dct:identifier': [p.product_id, p.asset_uri],
      'dct:title': en(p.title),
      'dct:description': en(`${p.description} ${sourcesSentence(cat, p)}`),
      'dct:publisher': ref(org),
      'dcat:contactPoint': ref(contact),
      'dcat:keyword': p.keywords.map(en),
      'dcat:theme': [...themes, ...concepts.map((c) => ref(VOCAB.eurovoc(c.id)))],
      'dct:spatial': ref(VOCAB.europe),
      'dct:language': ref(VOCAB.language),
      'dct:accessRights': ref(VOCAB.accessRestricted),
      'dct:modified': modified,
      'dcat:version': ctx.version,
      'dcat:distribution': served.map((src) => ref(`${base}#dist-${src.id}`)),
    },
    ...served.map((src) => distribution(ctx, base, src, cp)),
    {
      '@id': `${base}#draw-api`,
      '@type': 'dcat:DataService',
      'dct:title': en('Metered draw API'),
      'dct:description': en(
        `POST ${a.base_url}/lds/draw with {product_id, query, limit} or {product_id, units}: the answer is HTTP 402 with a quote (price and quote_id). ` +
          `Repeat the draw with the quote_id and "Authorization: Bearer <balance token>" to pay from a prepaid balance (top up at ${a.base_url}/lds/balance/topup).`,
      ),
      'dcat:endpointURL': ref(`${a.base_url}/lds/draw`),
      'dcat:endpointDescription': ref(`${a.base_url}/specification`),
      'dct:conformsTo': ref(VOCAB.openapi31),
      'dcat:servesDataset': ref(base),
      'dct:format': ref(VOCAB.fileTypeJson),
      'dct:license': ref(catLicence.iri),
      'dct:accessRights': ref(VOCAB.accessRestricted),
      'dct:publisher': ref(org),
      'dcat:contactPoint': ref(contact),
      'dcat:theme': themes,
      'dcat:keyword': p.keywords.map(en),
    },
    {
      '@id': `${base}#offer`,
      '@type': 'odrl:Offer',
      'odrl:uid': ref(`${base}#offer`),
      'odrl:assigner': ref(org),
      'odrl:permission': [
        {
          'rdfs:comment': en(`Per draw: ${pr.draw_unit_price} ${pr.currency} per unit drawn, rounded up to the cent, at least ${pr.draw_minimum_charge} ${pr.currency} per draw.`),
          'odrl:target': ref(base),
          'odrl:action': ref('odrl:use'),
          'odrl:duty': payDuty(pr.draw_unit_price, VOCAB.eur),
        },
        {
          'rdfs:comment': en(`Bulk annual subscription: ${pr.bulk_annual_price} ${pr.currency} per year (${pr.unit_count} units at ${pr.bulk_unit_rate} ${pr.currency} each). Checkout is not live yet.`),
          'odrl:target': ref(base),
          'odrl:action': ref('odrl:use'),
          'odrl:constraint': {
            'odrl:leftOperand': ref('odrl:elapsedTime'),
            'odrl:operator': ref('odrl:lteq'),
            'odrl:rightOperand': { '@value': 'P1Y', '@type': 'xsd:duration' },
          },
          'odrl:duty': payDuty(pr.bulk_annual_price, VOCAB.eur),
        },
      ],
    },
    {
      '@id': org,
      '@type': 'foaf:Agent',
      'foaf:name': en(s.publisher.name),
      'foaf:homepage': ref(a.publisher_url),
    },
    {
      '@id': contact,
      '@type': 'vcard:Organization',
      'vcard:fn': s.publisher.name,
      'vcard:hasEmail': ref(`mailto:${s.publisher.email}`),
      'vcard:hasURL': ref(a.publisher_url),
    },
    ...licences.map((l) => ({
      '@id': l.iri,
      '@type': 'dct:LicenseDocument',
      'dct:title': en(l.title),
      'rdfs:seeAlso': ref(l.legal_code_url),
    })),
    {
      '@id': a.publisher_url,
      '@type': 'foaf:Document',
    },
    ...concepts.map((c) => ({
      '@id': VOCAB.eurovoc(c.id),
      '@type': 'skos:Concept',
      ...(c.label ? { 'skos:prefLabel': en(c.label) } : {}),
      ...(c.notation ? { 'skos:notation': c.notation } : {}),
      'skos:inScheme': ref(VOCAB.eurovocScheme),
    })),
  ];
  return { '@context': DCAT_CONTEXT, '@graph': graph };
}

export const emitDcat: Emitter = (ctx) =>
  ctx.cat.products.map((p) => ({
    path: distPath(dcatUrl(ctx.addresses, p.product_id)),
    contentType: JSONLD_TYPE,
    body: jsonBody(dcatDocument(ctx, p)),
    cache: 'catalogue' as const,
  }));
