// What a paid draw delivers: the units with their citation line, one attribution line per source
// from the product's licence rulings, and the receipt, signed from the stored draw record only, so a
// replay signs the same bytes (Ed25519 is deterministic).
import type { CatalogueDoc, CatalogueProduct } from '../../contract/catalogue.ts';
import { CURRENCY, formatCents } from '../../contract/money.ts';
import type { Unit } from '../../contract/store-format.ts';
import type { Attribution, DeliveredUnit, PaidDraw } from '../../contract/wire.ts';
import type { DrawRecord } from '../ledger/ledger.ts';
import type { ReceiptSigner } from '../receipts.ts';
import type { CachedUnit } from '../store/unit-cache.ts';
import { rememberUnitTexts } from './serialise.ts';

/** What the ledger keeps per draw (verbatim in its draw record) so a replay returns the same draw. */
export interface StoredDraw {
  refs: string[];
  units_sha256: string;
  catalogue_version: string;
  store_version: string;
}

/** A unit as delivered: the stored unit plus a one-line citation. */
export function deliver(u: Unit): DeliveredUnit {
  return { ...u, citation_text: `${u.citation.label}. ${u.licence.attribution}` };
}

/** One attribution line per delivered source, from the product's licence rulings. */
export function attributionOf(product: CatalogueProduct, catalogue: CatalogueDoc, units: readonly DeliveredUnit[]): Attribution[] {
  const rulings = new Map(product.licence_basis.map((l) => [l.source, l]));
  const sources = new Map<string, DeliveredUnit>();
  for (const u of units) if (!sources.has(u.source)) sources.set(u.source, u);
  return [...sources.values()].map((u) => {
    const ruling = rulings.get(u.source);
    return {
      source: u.source,
      attribution: ruling?.attribution || u.licence.attribution,
      licence: u.licence.licence,
      licence_url: u.licence.licence === catalogue.licence.id ? catalogue.licence.url : u.licence.terms_url,
      terms_url: ruling?.terms_url || u.licence.terms_url,
      conditions: ruling?.conditions ?? '',
    };
  });
}

/** The paid draw of a draw record (new or replayed) with the units read for it. */
export function paidDraw(record: DrawRecord, product: CatalogueProduct, catalogue: CatalogueDoc, cached: readonly CachedUnit[], receipts: ReceiptSigner): PaidDraw {
  const stored = record.draw as StoredDraw;
  // The quote binds the product, and its draw record names it (records of early versions may not).
  if (record.product_id !== undefined && record.product_id !== product.product_id) throw new Error(`draw ${record.draw_id} is of ${record.product_id}, not of ${product.product_id}`);
  const units = cached.map((u) => u.unit);
  const paid: PaidDraw = {
    units,
    attribution: attributionOf(product, catalogue, units),
    receipt: receipts.sign({
      type: 'draw' as const,
      draw_id: record.draw_id,
      quote_id: record.quote_id,
      product_id: product.product_id,
      unit_count: stored.refs.length,
      units_sha256: stored.units_sha256,
      amount: formatCents(record.amount_cents),
      currency: CURRENCY,
      balance_after: formatCents(record.balance_after_cents),
      catalogue_version: stored.catalogue_version,
      paid_at: record.at,
    }),
  };
  return rememberUnitTexts(paid, cached);
}
