// Whether a paying request repeats its quote: the quote_id must verify (QuoteSigner) and the
// product, currency and request must be the quoted ones. A refusal names the field that differs.
import type { DrawBounds } from '../../contract/limits.ts';
import type { Problem } from '../problem.ts';
import { problems } from './problems.ts';
import { requestDigest, type QuoteTerms } from './quote.ts';
import type { CheckedRequest } from './request.ts';
import type { UnitResolver } from './resolution.ts';

/** The quote's terms when `r` repeats exactly what was quoted; `terms` is the verified quote_id (null: it did not verify). */
export function checkBinding(quoteId: unknown, terms: QuoteTerms | null, r: CheckedRequest, resolver: UnitResolver, bounds: DrawBounds): QuoteTerms {
  if (typeof quoteId !== 'string' || quoteId === '') throw problems.malformed('quote_id', 'quote_id is required to pay');
  if (!terms) throw problems.tampered('quote_id', 'The quote_id is not one this service issued (or it was altered).');
  if (terms.productId !== r.product.product_id) throw problems.tampered('product_id', 'product_id differs from the quoted product.');
  if (terms.currency !== r.currency) throw problems.tampered('currency', 'currency differs from the quote.');
  const asked = resolver.requestDigest(r);
  if (terms.mode !== asked.mode || terms.requestDigest !== asked.digest) throw differingField(terms, r, bounds);
  return terms;
}

/**
 * The refusal of a request that does not repeat its quote, naming the field that differs. A
 * query quote binds query and limit in one digest; the limit is one of at most `maxLimit` values,
 * so trying the request's query with each of them (only here, on a refusal) tells whether only
 * the limit changed, and to what it was quoted.
 */
function differingField(terms: QuoteTerms, r: CheckedRequest, bounds: DrawBounds): Problem {
  const again = 'repeat the quoted request exactly.';
  if (terms.mode === 'u') return problems.tampered('units', `The request's units differ from the quoted ones (as a set; order and repeats do not matter): ${again}`);
  if (r.units) return problems.tampered('query', `The quote was made for a query (with its limit), not for a list of units: ${again}`);
  for (let limit = 1; limit <= bounds.maxLimit; limit++) {
    if (limit !== r.limit && requestDigest({ product_id: terms.productId, query: r.query, limit }, bounds.defaultLimit).digest === terms.requestDigest)
      return problems.tampered('limit', `limit is ${r.limit}, but the quote was made with limit ${limit}: ${again}`);
  }
  return problems.tampered('query', `The request's query differs from the quoted one: ${again}`);
}
