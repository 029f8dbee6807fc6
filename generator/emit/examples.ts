// The example draws every document shows (docs, llms.txt, product pages, agent card, previews),
// with what each one returns. A product's example query is chosen by its publisher
// (products/*.json `example_query`); the build counts the units it matches in the unit store
// (catalogue `example_query.matches`), so every example states a result that is true for the
// catalogue version it is published with, and test/docs-examples.test.ts runs them to prove it.
import type { CatalogueProduct } from '../catalog.ts';
import { groupDigits } from './markdown.ts';

/** The `limit` of the HTTP draw examples in the docs and on the product pages. */
export const DRAW_EXAMPLE_LIMIT = 5;

export interface ExampleClaim {
  request: { product_id: string; query: string; limit: number };
  matches: number; // units with at least one word of the query
  quoted: number; // units the quote is for: min(limit, matches)
  /** One sentence saying what the example returns. */
  sentence: string;
}

export function exampleClaim(p: Pick<CatalogueProduct, 'product_id' | 'example_query' | 'live_unit_count'>, limit: number): ExampleClaim {
  const { query, matches } = p.example_query;
  const quoted = Math.min(limit, matches);
  const q = JSON.stringify(query);
  const sentence =
    matches === 0
      ? `${q} matches no unit of \`${p.product_id}\`${p.live_unit_count === 0 ? ', which has no live units yet (its health says why)' : ''}, so no quote can be made for it.`
      : `${q} matches ${groupDigits(matches)} unit${matches === 1 ? '' : 's'} of \`${p.product_id}\`; with \`"limit": ${limit}\` the quote is for ${quoted} unit${quoted === 1 ? '' : 's'}.`;
  return { request: { product_id: p.product_id, query, limit }, matches, quoted, sentence };
}

/**
 * The product the main examples use: the first (in catalogue order) whose example query fills the
 * limit, so the example shows a full quote; else the one with the most matches.
 */
export function mainExampleProduct<P extends Pick<CatalogueProduct, 'example_query'>>(products: P[], limit: number): P {
  const full = products.find((p) => p.example_query.matches >= limit);
  if (full) return full;
  const best = [...products].sort((a, b) => b.example_query.matches - a.example_query.matches)[0];
  if (!best) throw new Error('the catalogue has no products to use in the examples');
  return best;
}
