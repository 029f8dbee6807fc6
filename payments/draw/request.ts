// A draw request checked and completed: the product it names, the currency, and either its
// distinct units or its query and limit (the default applied). A pure function of the request,
// the catalogue's products and the bounds. The HTTP layer checks the same bounds against the
// OpenAPI document first; MCP and A2A reach the draw service without it, so it checks them too.
import type { CatalogueProduct } from '../../contract/catalogue.ts';
import type { DrawBounds } from '../../contract/limits.ts';
import { CURRENCY } from '../../contract/money.ts';
import type { DrawRequest } from '../../contract/wire.ts';
import { problems } from './problems.ts';

/** A draw request checked: validated, defaults applied; either its units or its query and limit. */
export type CheckedRequest = {
  product: CatalogueProduct;
  currency: typeof CURRENCY;
  /** Digests of `units` (request and sorted set), made once per request when needed (resolution.ts). */
  digests?: { request: string; units: string };
} & (
  | { /** de-duplicated, in request order */ units: string[]; query?: undefined; limit?: undefined }
  | { units?: undefined; query: string; limit: number }
);

/** Throws the malformed-request, unsupported-currency, unknown-product or product-unavailable problem naming what is wrong. */
export function checkDrawRequest(req: DrawRequest, products: ReadonlyMap<string, CatalogueProduct>, bounds: DrawBounds, baseUrl: string): CheckedRequest {
  if (!req || typeof req !== 'object' || Array.isArray(req)) throw problems.malformed('(body)', 'the draw request must be a JSON object such as {"product_id": "svc-language-eu", "query": "data protection"}');
  if (typeof req.product_id !== 'string' || req.product_id === '') throw problems.malformed('product_id', 'product_id is required: a product id from the catalogue, e.g. "svc-language-eu"');
  const currency = req.currency ?? CURRENCY;
  if (typeof currency !== 'string') throw problems.malformed('currency', `currency must be a three-letter currency code; only "${CURRENCY}" (in any case) is accepted`);
  if (currency.toUpperCase() !== CURRENCY) throw problems.currency(currency);
  const product = products.get(req.product_id);
  if (!product) throw problems.unknownProduct(req.product_id, baseUrl);
  // A product without live units can match nothing: say why (the catalogue knows) instead of a
  // no-matching-units that suggests the query was wrong.
  if (product.live_unit_count === 0) throw problems.unavailable(product, baseUrl);
  const hasUnits = req.units !== undefined;
  if (hasUnits === (req.query !== undefined)) throw problems.malformed('units', 'give either `units` (unit references) or `query` (with an optional `limit`), not both');
  return hasUnits ? { product, currency: CURRENCY, units: checkUnits(req, bounds) } : { product, currency: CURRENCY, ...checkQuery(req, bounds) };
}

/** The distinct unit references of a `units` request. */
function checkUnits(req: DrawRequest, bounds: DrawBounds): string[] {
  if (req.limit !== undefined) throw problems.malformed('limit', '`limit` goes with `query`, not with `units`');
  const u = req.units;
  const unitsWanted = `a list of 1 to ${bounds.maxUnits} distinct unit references, e.g. ["eu.eurlex:32016R0679#p12"]`;
  if (!Array.isArray(u) || u.length < 1 || u.length > bounds.maxUnitItems) throw problems.malformed('units', `units must be ${unitsWanted}`);
  u.forEach((ref, i) => {
    if (typeof ref !== 'string' || ref.length < 3 || ref.length > 200 || !ref.includes(':'))
      throw problems.malformed(`units.${i}`, `units.${i} must be a unit reference <source>:<local id> of 3 to 200 characters, e.g. "eu.eurlex:32016R0679#p12"`);
  });
  // Duplicates count once: remove them first, then apply the limit on distinct references.
  const distinct = [...new Set(u)];
  if (distinct.length > bounds.maxUnits) throw problems.malformed('units', `units must be ${unitsWanted}; this request names ${distinct.length} distinct references`);
  return distinct;
}

/** The query and limit (default applied) of a `query` request. */
function checkQuery(req: DrawRequest, bounds: DrawBounds): { query: string; limit: number } {
  const query = req.query;
  if (typeof query !== 'string' || query.trim() === '' || query.length > bounds.maxQueryChars) throw problems.malformed('query', `query must be a search text of 1 to ${bounds.maxQueryChars} characters, e.g. "data protection"`);
  const limit = req.limit ?? bounds.defaultLimit;
  if (!Number.isInteger(limit) || limit < 1 || limit > bounds.maxLimit) throw problems.malformed('limit', `limit must be a whole number from 1 to ${bounds.maxLimit} (got ${JSON.stringify(limit)})`);
  return { query, limit };
}
