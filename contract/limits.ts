// The service's bounds, written once: both halves use them. The generator writes them into the
// OpenAPI document and the docs; the service enforces them (payments/draw, payments/http,
// payments/topup); the client checks them before it sends anything (client/). Money amounts are
// integer cents (contract/money.ts).

/** Lines of a balance statement per page: `limit` when none is given, and the largest `limit`. */
export const STATEMENT_PAGE = { defaultLines: 20, maxLines: 1000 } as const;

/** The smallest top-up: 5.00 EUR (card fees make smaller payments a loss). */
export const TOPUP_MINIMUM_CENTS = 500;
/** The largest top-up: 10,000.00 EUR, a sanity bound, not a business rule. */
export const TOPUP_MAXIMUM_CENTS = 1_000_000;
/** The default ceiling of one operator adjustment (LDS_MAX_ADJUSTMENT): the top-up maximum. */
export const DEFAULT_MAX_ADJUSTMENT_CENTS = TOPUP_MAXIMUM_CENTS;

/**
 * The bounds of a draw request. Their values live in the OpenAPI document the build publishes
 * (the DrawRequest schema and `x-lds-limits`, read by payments/http/openapi-validate.ts), so the
 * document, the HTTP check and the draw service (which MCP and A2A reach without HTTP) agree.
 */
export interface DrawBounds {
  /** Distinct unit references per draw (duplicates are removed before this applies). */
  maxUnits: number;
  /** Entries of the `units` list as sent, duplicates included. */
  maxUnitItems: number;
  maxLimit: number;
  defaultLimit: number;
  maxQueryChars: number;
  maxBodyBytes: number;
}

/**
 * The bounds the build publishes (generator/emit/openapi.ts writes them into the OpenAPI document,
 * and the service enforces what the document says): the defaults a client assumes when it cannot
 * read the document of the service it talks to.
 */
export const DRAW_BOUNDS = {
  /** Distinct unit references per draw (duplicates count once, so they are removed before this applies). */
  maxUnits: 100,
  /** Entries of the `units` list as sent, duplicates included (the 16 KiB body bounds it anyway). */
  maxUnitItems: 1000,
  maxLimit: 100,
  maxQueryChars: 500,
  maxBodyBytes: 16 * 1024,
  quoteLifetimeSeconds: 15 * 60,
} as const;

/**
 * The draw bounds an OpenAPI document states (its DrawRequest schema and `x-lds-limits`): the
 * service enforces these (payments/http/openapi-validate.ts), and a client that reads the
 * document of the service it talks to (`lds mcp`) bounds its tools by them. Throws naming what the
 * document does not state.
 */
export function drawBoundsOf(doc: unknown): DrawBounds {
  const d = doc as { components?: { schemas?: Record<string, unknown> }; 'x-lds-limits'?: { max_body_bytes?: unknown } } | null;
  const req = d?.components?.schemas?.DrawRequest as { properties?: Record<string, Record<string, unknown> | undefined> } | undefined;
  if (!req?.properties) throw new Error('the OpenAPI document has no DrawRequest schema');
  const num = (v: unknown, name: string): number => {
    if (typeof v !== 'number') throw new Error(`the OpenAPI document does not state ${name}`);
    return v;
  };
  const p = req.properties;
  return {
    maxUnits: num(p.units?.['x-lds-max-distinct'], 'units.x-lds-max-distinct'),
    maxUnitItems: num(p.units?.maxItems, 'units.maxItems'),
    maxLimit: num(p.limit?.maximum, 'limit.maximum'),
    defaultLimit: num(p.limit?.default, 'limit.default'),
    maxQueryChars: num(p.query?.maxLength, 'query.maxLength'),
    maxBodyBytes: num(d?.['x-lds-limits']?.max_body_bytes, 'x-lds-limits.max_body_bytes'),
  };
}

/** The longest product id, unit reference and quote id a draw request may carry, as a document states them. */
export interface DrawFieldLengths {
  productId: number;
  unitRef: number;
  quoteId: number;
}

/** The field lengths of an OpenAPI document's DrawRequest (its `$ref`s to components followed). Throws naming what is missing. */
export function drawFieldLengthsOf(doc: unknown): DrawFieldLengths {
  const schemas = (doc as { components?: { schemas?: Record<string, Record<string, unknown>> } } | null)?.components?.schemas ?? {};
  const deref = (s: Record<string, unknown> | undefined): Record<string, unknown> | undefined =>
    typeof s?.$ref === 'string' ? schemas[s.$ref.replace('#/components/schemas/', '')] : s;
  const p = (schemas.DrawRequest?.properties ?? {}) as Record<string, Record<string, unknown> | undefined>;
  const max = (s: Record<string, unknown> | undefined, name: string): number => {
    const v = deref(s)?.maxLength;
    if (typeof v !== 'number') throw new Error(`the OpenAPI document does not state the longest ${name}`);
    return v;
  };
  return { productId: max(p.product_id, 'product_id'), unitRef: max(p.units?.items as Record<string, unknown> | undefined, 'unit reference'), quoteId: max(p.quote_id, 'quote_id') };
}
