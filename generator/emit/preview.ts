// v1/lds/preview/{product_id}: the free preview of each product, so a buyer sees what the product
// (and its example query) will sell before paying: a few units' references, titles and citations,
// the product's counts per source, and what the example query matches. Static and public like the
// rest of dist/, so it never carries a unit's text or record values (test/preview.test.ts scans
// dist/ for them). Also: the OpenAPI path and schema of this document, for openapi.ts.
import { distPath, type EmitContext, type Emitter, JSON_TYPE, jsonBody } from './types.ts';
import { DRAW_EXAMPLE_LIMIT, exampleClaim } from './examples.ts';

export function previewDocument(ctx: EmitContext, productId: string): Record<string, unknown> {
  const p = ctx.catalogue.products.find((x) => x.product_id === productId);
  if (!p) throw new Error(`${productId} is missing from the catalogue`);
  const units = ctx.previews[productId] ?? [];
  const claim = exampleClaim(p, DRAW_EXAMPLE_LIMIT);
  return {
    product_id: p.product_id,
    title: p.title,
    version: ctx.version,
    store_version: ctx.catalogue.store_version,
    about: `A free preview of ${p.title}: up to three units of each source, with their references, titles and citations, never their text. Units are bought per draw: POST ${ctx.addresses.base_url}/lds/draw.`,
    live_unit_count: p.live_unit_count,
    live_row_count: p.live_row_count,
    health: { rollup: p._health.rollup, rollup_reason: p._health.rollup_reason },
    sources: p._health.sources.map((s) => ({ source: s.source, status: s.status, available: s.available, unit: s.unit, units: s.units, rows: s.rows, note: s.note })),
    example_query: { ...p.example_query, draw: claim.request, quote_unit_count: claim.quoted },
    units,
  };
}

export const emitPreview: Emitter = (ctx) =>
  ctx.catalogue.products.map((p) => ({
    path: distPath(p.preview_url),
    contentType: JSON_TYPE,
    body: jsonBody(previewDocument(ctx, p.product_id)),
    cache: 'catalogue' as const,
  }));

/** OpenAPI 3.1 fragments for openapi.ts: the path item and the response schema. */
export const PREVIEW_OPENAPI_SCHEMAS: Record<string, unknown> = {
  PreviewUnit: {
    type: 'object',
    required: ['ref', 'source', 'kind', 'title', 'citation'],
    properties: {
      ref: { $ref: '#/components/schemas/UnitRef' },
      source: { type: 'string' },
      kind: { enum: ['P', 'R', 'A'] },
      title: { type: 'string' },
      citation: {
        type: 'object',
        required: ['label', 'publisher'],
        properties: { label: { type: 'string' }, publisher: { type: 'string' }, url: { type: 'string' }, celex: { type: 'string' }, eli: { type: 'string' }, doi: { type: 'string' }, uri: { type: 'string' } },
      },
    },
  },
  Preview: {
    type: 'object',
    description: 'The free preview of a product: counts per source, what the example query matches, and a few units (reference, title, citation; never their text).',
    required: ['product_id', 'version', 'live_unit_count', 'sources', 'example_query', 'units'],
    properties: {
      product_id: { type: 'string' },
      title: { type: 'string' },
      version: { type: 'string', pattern: '^catalogue-[0-9a-f]{12}$' },
      store_version: { type: ['string', 'null'] },
      live_unit_count: { type: 'integer', minimum: 0 },
      live_row_count: { type: 'integer', minimum: 0 },
      sources: { type: 'array', items: { type: 'object', required: ['source', 'units', 'rows'], properties: { source: { type: 'string' }, units: { type: 'integer' }, rows: { type: 'integer' } } } },
      example_query: {
        type: 'object',
        required: ['query', 'matches'],
        properties: { query: { type: 'string' }, matches: { type: 'integer', minimum: 0, description: 'Units of the product that contain at least one word of the query.' }, draw: { type: 'object' }, quote_unit_count: { type: 'integer' } },
      },
      units: { type: 'array', items: { $ref: '#/components/schemas/PreviewUnit' } },
    },
  },
};

export function previewOpenApiPaths(etagHeaders: unknown, notModified: unknown, notFound: unknown, common: Record<string, unknown>): Record<string, unknown> {
  return {
    '/lds/preview/{product_id}': {
      get: {
        operationId: 'getProductPreview',
        tags: ['catalogue'],
        summary: 'Free preview of one product: a few units (reference, title, citation, no text), counts per source, what the example query matches',
        parameters: [{ name: 'product_id', in: 'path', required: true, schema: { $ref: '#/components/schemas/ProductId' } }],
        responses: {
          '200': { description: 'The preview', headers: etagHeaders, content: { 'application/json': { schema: { $ref: '#/components/schemas/Preview' } } } },
          '304': notModified,
          '404': notFound,
          ...common,
        },
      },
    },
  };
}
