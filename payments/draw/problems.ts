// The refusals of the draw and balance flows, one constructor each: the draw service (which HTTP,
// MCP and A2A all reach) and the HTTP layer's own checks build them here, so one case is always
// worded the same. Their slugs, statuses and meanings are the table in contract/problems.ts.
import type { CatalogueProduct } from '../../contract/catalogue.ts';
import { TOPUP_MINIMUM_CENTS } from '../../contract/limits.ts';
import { CURRENCY, formatCents } from '../../contract/money.ts';
import type { Quote } from '../../contract/wire.ts';
import { Problem } from '../problem.ts';

/** `/v1/lds/_catalog` for a base_url of `https://host/v1`. */
const cataloguePath = (baseUrl: string) => `${new URL(baseUrl).pathname.replace(/\/$/, '')}/lds/_catalog`;

export const problems = {
  malformed: (field: string, detail: string) => new Problem(400, 'malformed-request', 'Malformed request', detail, { field }),
  currency: (c: string) => new Problem(400, 'unsupported-currency', 'Unsupported currency', `currency must be "${CURRENCY}" (in any case); ${JSON.stringify(c.slice(0, 16))} is not accepted.`, { field: 'currency' }),
  /** `baseUrl`: the catalogue's base_url, whose path the catalogue is read under. */
  unknownProduct: (id: string, baseUrl: string) =>
    new Problem(404, 'unknown-product', 'Unknown product', `There is no product ${JSON.stringify(id.slice(0, 80))}; GET ${cataloguePath(baseUrl)} lists them.`, { field: 'product_id' }),
  unknownUnits: (productId: string, unknown: string[]) =>
    new Problem(404, 'unknown-units', 'Unknown units', `${unknown.length} unit reference${unknown.length > 1 ? 's are' : ' is'} not in ${productId}: ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ', …' : ''}`, { field: 'units', unknown }),
  unavailable: (p: CatalogueProduct, baseUrl: string) =>
    new Problem(
      404,
      'product-unavailable',
      'Product has no live units yet',
      `${p.product_id} is in the catalogue but has no live units to sell yet (launch state ${p.launch_state}): ${p._health?.rollup_reason || 'none of its sources serves rows yet'}. Nothing was quoted or charged; GET ${cataloguePath(baseUrl)} shows live_unit_count per product.`,
      { field: 'product_id', product_id: p.product_id, live_unit_count: 0, reason: p._health?.rollup_reason ?? null },
    ),
  noMatch: (productId: string) => new Problem(404, 'no-matching-units', 'No matching units', `The query matched no unit of ${productId}.`, { field: 'query' }),
  tampered: (field: string, detail: string) => new Problem(400, 'quote-tampered', 'Quote does not match', detail, { field }),
  tokenRequired: () =>
    new Problem(401, 'balance-token-required', 'Balance token required', 'Send `Authorization: Bearer <BALANCE_TOKEN>`. Get a token with a top-up: POST /v1/lds/balance/topup.'),
  invalidToken: () => new Problem(401, 'invalid-balance-token', 'Unknown balance token', 'The balance token is not known. Top up to get one: POST /v1/lds/balance/topup.'),
  revokedToken: () =>
    new Problem(401, 'balance-token-revoked', 'Balance token no longer valid', 'This balance token was rotated or revoked and no longer works. Use the token that replaced it; if it was revoked, ask the operator.'),
  expired: (quote: Quote) => new Problem(402, 'quote-expired', 'Quote expired', 'The quote expired or the data changed; here is a fresh quote for the same request.', { quote }),
  insufficient: (quote: Quote, amountCents: number, balanceCents: number, topupUrl: string) =>
    new Problem(402, 'insufficient-balance', 'Insufficient balance', `The balance (${formatCents(balanceCents)} ${CURRENCY}) does not cover ${quote.amount} ${CURRENCY}.`, {
      balance: formatCents(balanceCents),
      currency: CURRENCY,
      quote,
      topup_url: topupUrl,
      how_to_pay: `Top up at least ${formatCents(Math.max(TOPUP_MINIMUM_CENTS, amountCents - balanceCents))} ${CURRENCY} (POST ${topupUrl}, minimum ${formatCents(TOPUP_MINIMUM_CENTS)}), then repeat the paid draw with the same quote_id.`,
    }),
  otherBalance: () => new Problem(409, 'quote-paid-by-another-balance', 'Quote already paid', 'This quote was paid from another balance. Ask for a new quote.'),
  /**
   * The quote names a unit store version this instance does not hold (another instance switched to
   * a new build first, or this one was restarted since): nothing was charged, and a retry reaches an
   * instance (or a moment) that holds it. Never answered with other units or another price.
   */
  storeUnavailable: (storeVersion: string, expiresAt: number, retryAfterSeconds: number) =>
    new Problem(
      503,
      'quote-store-unavailable',
      'Quote made against a unit store this instance does not hold',
      `The quote was made against unit store ${storeVersion}, which this instance does not hold right now (a new catalogue version is being rolled out). Nothing was charged. Repeat the same request in ${retryAfterSeconds} s: it is paid with exactly the quoted units and price by an instance that holds that store; once the quote expires (${new Date(expiresAt).toISOString()}) the answer is a fresh quote instead.`,
      { store_version: storeVersion, expires_at: new Date(expiresAt).toISOString(), retry_after: retryAfterSeconds },
    ),
  /** The last word of the HTTP layer: nothing at this path, or not with this method. */
  foreignOrigin: (header: 'Host' | 'Origin', value: string) =>
    new Problem(403, 'foreign-origin', 'Foreign origin', `The ${header} header names ${JSON.stringify(value.slice(0, 200))}, which is not this service's address: the MCP endpoint answers only requests to its own address (the catalogue's mcp_url). Nothing was done.`, { header }),
  notFound: (path: string) => new Problem(404, 'not-found', 'Not found', `Nothing is published at ${path.slice(0, 200)}.`),
  methodNotAllowed: (path: string, allowed: readonly string[]) => new Problem(405, 'method-not-allowed', 'Method not allowed', `${path} answers ${allowed.join(', ')}.`),
};
