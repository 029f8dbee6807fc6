// What a new catalogue changes for buyers, compared with the one before: pure, (catalogue,
// catalogue) -> changes. `lds diff` (cli/diff.ts) reads the two documents and renders the result
// (render.ts) as Markdown for a pull request or as JSON for a script.
//
// What counts as a change a buyer sees: products added, removed or renamed; a price the publisher
// set (draw unit price, bulk unit rate, minimum charge); unit and row counts; licence rulings and
// attributions; a source held, released, added, removed or otherwise changing status; the four
// public addresses (not a move between two loopback addresses, which only a local build makes: those
// are listed apart); any other product field shown to buyers (description, keywords, launch state,
// the sources a product draws from, health, ...); the catalogue's own title, description, licence,
// currency and minimum top-up. The version, the store version and the build time are reported but
// are not changes on their own: they move with every rebuild that uses another SOURCE_DATE_EPOCH.
import { isLoopbackUrl } from '../../contract/addresses.ts';
import type { CatalogueDoc, CatalogueProduct, CatalogueSource, LicenceBasis } from '../../contract/catalogue.ts';

export interface Change<T> {
  old: T;
  new: T;
}

export interface ProductRef {
  product_id: string;
  title: string;
  slug: string;
}

export interface Renamed {
  product_id: string;
  title: Change<string> | null;
  slug: Change<string> | null;
}

/** A price the publisher sets, per product. Amounts are EUR decimal strings as the catalogue prints them. */
export interface PriceChange {
  product_id: string;
  price: 'draw_unit_price' | 'bulk_unit_rate' | 'draw_minimum_charge';
  old: string;
  new: string;
  /** (new - old) / old in percent, one decimal; null when the old price was zero. */
  change_percent: number | null;
}

/** A product's counts; the bulk annual price (units x bulk rate) moves with them. */
export interface ProductCountChange {
  product_id: string;
  units: Change<number>;
  rows: Change<number>;
  bulk_annual_price: Change<string>;
}

export interface SourceCountChange {
  source: string;
  units: Change<number>;
  rows: Change<number>;
}

/** A source's licence as buyers see it: the ruling (from the products' licence_basis) and the SPDX id. */
export interface SourceLicence {
  licence: string | null;
  verdict: string | null;
  basis: string | null;
  attribution: string | null;
  conditions: string | null;
  quote_sha256: string | null;
  ruled_at: string | null;
  terms_url: string | null;
  checked: string | null;
}

export interface SourceStatusChange {
  source: string;
  title: string;
  status: Change<CatalogueSource['status'] | null>;
  /** Why it is not served now (the hold's reason, ...); null when it is served. */
  reason: string | null;
  /** The licence before a hold (withdrawn with it) or after a release (granted with it). */
  licence: string | null;
  attribution: string | null;
  products: string[];
}

export interface LicenceChange {
  source: string;
  field: keyof SourceLicence;
  old: string | null;
  new: string | null;
}

export interface FieldChange {
  field: string;
  old: unknown;
  new: unknown;
}

export interface ProductFieldChange extends FieldChange {
  product_id: string;
}

export interface CatalogueChanges {
  version: Change<string>;
  store_version: Change<string | null>;
  generated_at: Change<string>;
  /** How many changes a buyer sees (every entry below); 0 means `lds diff` exits 0. */
  change_count: number;
  /**
   * The kinds of change a person should approve before they reach buyers (CI asks for a label):
   * prices, licence rulings and attributions, holds and releases, products removed. Counts that
   * move with the data, new products and wording do not need it.
   */
  review: string[];
  products: { added: ProductRef[]; removed: ProductRef[]; renamed: Renamed[] };
  prices: PriceChange[];
  product_counts: ProductCountChange[];
  source_counts: SourceCountChange[];
  sources: {
    held: SourceStatusChange[];
    released: SourceStatusChange[];
    /** Any other move: served <-> not-yet-available, a source added to or removed from the catalogue. */
    status: SourceStatusChange[];
  };
  licences: LicenceChange[];
  addresses: FieldChange[];
  /**
   * Addresses that moved from one loopback address to another (a local build for another port:
   * 8080 → 18611): no buyer reaches either, so they are listed apart and are not a change a buyer sees.
   */
  local_addresses: FieldChange[];
  product_fields: ProductFieldChange[];
  catalogue_fields: FieldChange[];
}

export const ADDRESS_FIELDS = ['base_url', 'mcp_url', 'docs_url', 'publisher_url'] as const;

/**
 * Product fields compared one by one beyond names, prices, counts and licences. Left out on
 * purpose: the addresses derived from base_url (reported once under addresses), the time counts
 * were computed, and licence_basis / licence_summary (reported per source under licences).
 */
const PRODUCT_FIELDS: { field: string; get: (p: CatalogueProduct) => unknown }[] = [
  ...(['description', 'sectoral_ds', 'tag', 'marker', 'asset_uri', 'launch_state', 'envelope_state', 'licence_state', 'rulebook_ref',
    'terminal_condition', 'row_count_at_launch', 'row_count_basis', 'unit_count_basis', 'subscribe_status', 'keywords', 'data_themes'] as const)
    .map((f) => ({ field: f, get: (p: CatalogueProduct) => p[f] })),
  { field: 'example_query', get: (p) => p.example_query.query },
  { field: 'unit_definition', get: (p) => p.unit_definition },
  { field: 'sources', get: (p) => p._health.sources.map((s) => `${s.source}${s.required ? ' (required)' : ''}`) },
  { field: 'health', get: (p) => p._health.rollup },
  { field: 'currency', get: (p) => p.pricing.currency },
];

const CATALOGUE_FIELDS: { field: string; get: (c: CatalogueDoc) => unknown }[] = [
  { field: 'title', get: (c) => c['dct:title'] },
  { field: 'description', get: (c) => c.description },
  { field: 'publisher', get: (c) => c['dct:publisher'] },
  { field: 'licence', get: (c) => c.licence?.id ?? null },
  { field: 'currency', get: (c) => c.currency },
  { field: 'minimum_topup', get: (c) => c.minimum_topup },
];

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Percent change of an integer amount, one decimal; null from zero. */
export function percentChange(oldValue: number, newValue: number): number | null {
  if (oldValue === 0) return null;
  return Math.round(((newValue - oldValue) / oldValue) * 1000) / 10;
}

/** "0.01" -> 100 (micro-euros per cent x cents), for the percentage of a decimal EUR amount. */
function decimalMicros(amount: string): number {
  const [whole, frac = ''] = amount.split('.');
  return Number(whole) * 1_000_000 + Number(frac.padEnd(6, '0').slice(0, 6));
}

function prices(o: CatalogueProduct, n: CatalogueProduct): PriceChange[] {
  const out: PriceChange[] = [];
  const add = (price: PriceChange['price'], oldMicros: number, newMicros: number, oldText: string, newText: string) => {
    if (oldMicros !== newMicros) out.push({ product_id: n.product_id, price, old: oldText, new: newText, change_percent: percentChange(oldMicros, newMicros) });
  };
  add('draw_unit_price', o.pricing.draw_unit_price_micro_eur, n.pricing.draw_unit_price_micro_eur, o.pricing.draw_unit_price, n.pricing.draw_unit_price);
  add('bulk_unit_rate', o.pricing.bulk_unit_rate_micro_eur, n.pricing.bulk_unit_rate_micro_eur, o.pricing.bulk_unit_rate, n.pricing.bulk_unit_rate);
  add('draw_minimum_charge', decimalMicros(o.pricing.draw_minimum_charge), decimalMicros(n.pricing.draw_minimum_charge), o.pricing.draw_minimum_charge, n.pricing.draw_minimum_charge);
  return out;
}

/** Each source's licence as the catalogue shows it (its ruling is the same in every product that lists it). */
function sourceLicences(c: CatalogueDoc): Map<string, SourceLicence> {
  const basis = new Map<string, LicenceBasis>();
  for (const p of c.products) for (const b of p.licence_basis) if (!basis.has(b.source)) basis.set(b.source, b);
  const out = new Map<string, SourceLicence>();
  for (const s of c.sources) {
    const b = basis.get(s.source);
    out.set(s.source, {
      licence: s.licence,
      verdict: b?.verdict ?? null,
      basis: b?.basis ?? null,
      attribution: s.attribution,
      conditions: b?.conditions ?? null,
      quote_sha256: b?.quote_sha256 ?? null,
      ruled_at: b?.ruled_at ?? null,
      terms_url: b?.terms_url ?? null,
      checked: s.checked,
    });
  }
  return out;
}

function statusChange(source: string, o: CatalogueSource | undefined, n: CatalogueSource | undefined): SourceStatusChange {
  const now = n ?? o!;
  // A hold withdraws the ruling: show the licence it had; a release shows the licence it gets.
  const licensed = n && n.status !== 'held' ? n : o;
  return {
    source,
    title: now.title,
    status: { old: o?.status ?? null, new: n?.status ?? null },
    reason: n?.reason ?? null,
    licence: licensed?.licence ?? null,
    attribution: licensed?.attribution ?? null,
    products: now.products,
  };
}

export function diffCatalogues(oldDoc: CatalogueDoc, newDoc: CatalogueDoc): CatalogueChanges {
  const oldProducts = new Map(oldDoc.products.map((p) => [p.product_id, p]));
  const newProducts = new Map(newDoc.products.map((p) => [p.product_id, p]));
  const ref = (p: CatalogueProduct): ProductRef => ({ product_id: p.product_id, title: p.title, slug: p.slug });

  const changes: CatalogueChanges = {
    version: { old: oldDoc.version, new: newDoc.version },
    store_version: { old: oldDoc.store_version, new: newDoc.store_version },
    generated_at: { old: oldDoc.generated_at, new: newDoc.generated_at },
    change_count: 0,
    review: [],
    products: {
      added: newDoc.products.filter((p) => !oldProducts.has(p.product_id)).map(ref),
      removed: oldDoc.products.filter((p) => !newProducts.has(p.product_id)).map(ref),
      renamed: [],
    },
    prices: [],
    product_counts: [],
    source_counts: [],
    sources: { held: [], released: [], status: [] },
    licences: [],
    addresses: [],
    local_addresses: [],
    product_fields: [],
    catalogue_fields: [],
  };

  for (const n of newDoc.products) {
    const o = oldProducts.get(n.product_id);
    if (!o) continue;
    if (o.title !== n.title || o.slug !== n.slug)
      changes.products.renamed.push({
        product_id: n.product_id,
        title: o.title !== n.title ? { old: o.title, new: n.title } : null,
        slug: o.slug !== n.slug ? { old: o.slug, new: n.slug } : null,
      });
    changes.prices.push(...prices(o, n));
    if (o.live_unit_count !== n.live_unit_count || o.live_row_count !== n.live_row_count || o.pricing.bulk_annual_price !== n.pricing.bulk_annual_price)
      changes.product_counts.push({
        product_id: n.product_id,
        units: { old: o.live_unit_count, new: n.live_unit_count },
        rows: { old: o.live_row_count, new: n.live_row_count },
        bulk_annual_price: { old: o.pricing.bulk_annual_price, new: n.pricing.bulk_annual_price },
      });
    for (const { field, get } of PRODUCT_FIELDS)
      if (!same(get(o), get(n))) changes.product_fields.push({ product_id: n.product_id, field, old: get(o), new: get(n) });
  }

  const oldSources = new Map(oldDoc.sources.map((s) => [s.source, s]));
  const newSources = new Map(newDoc.sources.map((s) => [s.source, s]));
  const oldLicences = sourceLicences(oldDoc);
  const newLicences = sourceLicences(newDoc);
  const ids = [...new Set([...oldSources.keys(), ...newSources.keys()])].sort();
  for (const id of ids) {
    const o = oldSources.get(id);
    const n = newSources.get(id);
    const wasHeld = o?.status === 'held';
    const isHeld = n?.status === 'held';
    if (o?.status !== n?.status) {
      const entry = statusChange(id, o, n);
      if (o && n && isHeld) changes.sources.held.push(entry);
      else if (o && n && wasHeld) changes.sources.released.push(entry);
      else changes.sources.status.push(entry);
    }
    if (o && n && (o.units !== n.units || o.rows !== n.rows))
      changes.source_counts.push({ source: id, units: { old: o.units, new: n.units }, rows: { old: o.rows, new: n.rows } });
    // A hold or a release carries its licence with it (above); a source that came or went likewise.
    if (!o || !n || wasHeld !== isHeld) continue;
    const ol = oldLicences.get(id)!;
    const nl = newLicences.get(id)!;
    for (const field of Object.keys(nl) as (keyof SourceLicence)[])
      if (ol[field] !== nl[field]) changes.licences.push({ source: id, field, old: ol[field], new: nl[field] });
  }

  for (const field of ADDRESS_FIELDS) {
    if (oldDoc[field] === newDoc[field]) continue;
    const local = isLoopbackUrl(oldDoc[field]) && isLoopbackUrl(newDoc[field]);
    (local ? changes.local_addresses : changes.addresses).push({ field, old: oldDoc[field], new: newDoc[field] });
  }
  for (const { field, get } of CATALOGUE_FIELDS)
    if (!same(get(oldDoc), get(newDoc))) changes.catalogue_fields.push({ field, old: get(oldDoc), new: get(newDoc) });

  changes.change_count =
    changes.products.added.length + changes.products.removed.length + changes.products.renamed.length +
    changes.prices.length + changes.product_counts.length + changes.source_counts.length +
    changes.sources.held.length + changes.sources.released.length + changes.sources.status.length +
    changes.licences.length + changes.addresses.length + changes.product_fields.length + changes.catalogue_fields.length;
  const gated: [string, number][] = [
    ['prices', changes.prices.length],
    ['licences', changes.licences.length],
    ['sources held', changes.sources.held.length],
    ['sources released', changes.sources.released.length],
    ['products removed', changes.products.removed.length],
  ];
  changes.review = gated.filter(([, n]) => n > 0).map(([name]) => name);
  return changes;
}
