// The Dataspace Protocol (DSP 2025-1) catalog, built from the same data as the DCAT-AP documents:
//
//   .well-known/dspace-version  the version metadata every DSP connector reads first: 2025-1, HTTPS
//                               binding, the path of the service's catalog endpoints (`/v1/dsp`)
//   v1/dsp/catalog              the Catalog the service answers to a CatalogRequestMessage
//                               (POST /v1/dsp/catalog/request) and takes each dataset from
//                               (GET /v1/dsp/catalog/datasets/{id}); payments/http/dsp.ts
//
// The service only speaks the catalog protocol: contract negotiation and transfer are not offered.
// Each dataset's odrl:Offer states the price per unit in EUR and says how a connector's user buys
// (the metered draw answering 402 with a quote, MCP, A2A); docs/dataspaces.md says the same.
//
// Shapes follow the DSP JSON schemas (test/conformance/dsp/, pinned): the context is the DSP
// context URL alone, the root catalog names its participantId, every dataset has hasPolicy (an
// Offer with no target) and distribution (each with format and accessService). IRIs are the DCAT
// documents' (dataset = dcat_url, offer = dcat_url#offer, distribution = dcat_url#dist-<source>),
// so a connector and a data portal name the same things the same way.
import { DSP_CONTEXT, DSP_VERSION, DSP_VERSION_PATH } from '../../contract/dsp.ts';
import { a2aUrl } from '../addresses.ts';
import { dcatUrl } from '../catalog.ts';
import { VOCAB, distributedSources } from './dcat.ts';
import { rdfCatalogueUrl } from './dcat-catalogue.ts';
import { type EmitContext, type Emitter, JSON_TYPE, jsonBody } from './types.ts';


/** The DSP base path on the service's host (`/v1/dsp`): the catalog endpoints are below it. */
export function dspBasePath(ctx: Pick<EmitContext, 'addresses'>): string {
  return `${new URL(ctx.addresses.base_url).pathname.replace(/\/$/, '')}/dsp`;
}

/** The dist/ path of the Catalog document (also its URL path under the origin). */
export function dspCatalogPath(ctx: Pick<EmitContext, 'addresses'>): string {
  return `${dspBasePath(ctx).slice(1)}/catalog`;
}

export function dspVersion(ctx: EmitContext): unknown {
  return { protocolVersions: [{ version: DSP_VERSION, path: dspBasePath(ctx), binding: 'HTTPS' }] };
}

export function dspCatalog(ctx: EmitContext): Record<string, unknown> {
  const { cat, addresses: a, catalogue } = ctx;
  const s = cat.settings;
  const org = `${a.publisher_url}#org`;
  const draw = `${a.base_url}/lds/draw`;
  const serviceId = `${rdfCatalogueUrl(ctx)}#dsp-draw-api`;
  const datasets = cat.products.map((p) => {
    const cp = catalogue.products.find((x) => x.product_id === p.product_id)!;
    const base = dcatUrl(a, p.product_id);
    const pr = cp.pricing;
    const served = distributedSources(cat, p);
    if (!served.length) throw new Error(`DSP catalog: ${p.product_id} has no served source, and a DSP dataset needs a distribution`);
    const howToBuy =
      `Not negotiated over the Dataspace Protocol (no contract negotiation or transfer): buy draws directly. ` +
      `POST ${draw} with {"product_id":"${p.product_id}","query":"…"} answers HTTP 402 with a quote; repeat it with the quote_id and ` +
      `"Authorization: Bearer <balance token>" to pay from a prepaid balance (top up at ${a.base_url}/lds/balance/topup). ` +
      `The same over MCP at ${a.mcp_url} or A2A at ${a2aUrl(a)}. ` +
      `Price: ${pr.draw_unit_price} ${pr.currency} per unit drawn, rounded up to the cent, at least ${pr.draw_minimum_charge} ${pr.currency} per draw.`;
    return {
      '@id': base,
      '@type': 'Dataset',
      'dct:identifier': p.product_id,
      'dct:title': p.title,
      'dct:description': p.description,
      'dcat:keyword': p.keywords,
      'dcat:theme': p.data_themes.map((t) => ({ '@id': VOCAB.dataTheme(t) })),
      hasPolicy: [
        {
          '@id': `${base}#offer`,
          '@type': 'Offer',
          assigner: org,
          'dct:description': howToBuy,
          'dct:references': [{ '@id': draw }, { '@id': a.mcp_url }, { '@id': a2aUrl(a) }],
          permission: [
            {
              action: 'use',
              duty: [
                {
                  action: 'odrl:compensate',
                  constraint: [
                    {
                      leftOperand: 'odrl:payAmount',
                      operator: 'eq',
                      rightOperand: { '@value': pr.draw_unit_price, '@type': 'xsd:decimal' },
                      'odrl:unit': { '@id': VOCAB.eur },
                    },
                  ],
                },
              ],
            },
          ],
        },
      ],
      distribution: served.map((src) => ({
        '@id': `${base}#dist-${src.id}`,
        '@type': 'Distribution',
        'dct:title': src.title,
        format: VOCAB.fileTypeJson,
        accessService: serviceId,
      })),
    };
  });
  return {
    '@context': [DSP_CONTEXT],
    '@id': rdfCatalogueUrl(ctx),
    '@type': 'Catalog',
    participantId: org,
    'dct:title': s.title,
    'dct:description': s.description,
    'dct:publisher': { '@id': org },
    service: [
      {
        '@id': serviceId,
        '@type': 'DataService',
        endpointURL: draw,
        endpointDescription: `${a.base_url}/specification`,
        'dct:title': 'Metered draw API (HTTP 402 quote, prepaid balance)',
      },
    ],
    dataset: datasets,
  };
}

export const emitDsp: Emitter = (ctx) => [
  // The version entry does not change with counts or prices: static. The catalog carries prices.
  { path: DSP_VERSION_PATH, contentType: JSON_TYPE, body: jsonBody(dspVersion(ctx)), cache: 'static' },
  { path: dspCatalogPath(ctx), contentType: JSON_TYPE, body: jsonBody(dspCatalog(ctx)), cache: 'catalogue' },
];
