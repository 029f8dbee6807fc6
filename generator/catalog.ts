// The catalogue snapshot (v1/lds/_catalog): spec 2.1-2.5 for every product. Pure: it takes the
// validated inputs and what the unit store holds, and computes counts, prices, licences and health.
// Nothing here invents a number: every count comes from the StoreSummary.
import { bulkAnnualCents, formatCents, formatMicros } from '../contract/money.ts';
import type { CatalogueDoc, CatalogueProduct, CatalogueSource, Health, LicenceBasis, LicenceSummary, SourceHealth } from '../contract/catalogue.ts';
import type { Addresses, CatalogSrc, ProductSrc, Source, StoreSummary } from './model.ts';

export type { CatalogueDoc, CatalogueProduct } from '../contract/catalogue.ts';

export const MINIMUM_TOPUP_CENTS = 500;

export function dcatUrl(a: Addresses, productId: string): string {
  return `${a.base_url}/dcat/catalog/${productId}`;
}

/** The free preview of a product (a static document in dist/). */
export function previewUrl(a: Addresses, productId: string): string {
  return `${a.base_url}/lds/preview/${productId}`;
}

/** A ruled source that sells units but has no data attached: listed, priced at zero, "not yet available". */
export function notYetAvailable(src: Source): boolean {
  return !src.held && !!src.ruling && src.unit !== null && !src.data?.length;
}

function licenceBasis(src: Source): LicenceBasis {
  const r = src.ruling;
  const checked = src.checked ?? null;
  if (!r) return { source: src.id, verdict: 'held', basis: src.held?.reason ?? null, attribution: null, conditions: null, quote_sha256: null, ruled_at: null, terms_url: null, checked };
  return { source: src.id, verdict: r.verdict, basis: r.basis, attribution: r.attribution, conditions: r.conditions, quote_sha256: r.quote_sha256, ruled_at: r.ruled_at, terms_url: r.terms_url, checked };
}

function licenceSummary(cat: CatalogSrc, src: Source): LicenceSummary {
  if (!src.ruling) return { source: src.id, from: src.publisher, licences: [], display: null };
  const lic = cat.licences.get(src.ruling.licence)!;
  return { source: src.id, from: src.publisher, licences: [lic.spdx], display: `${lic.title} (${lic.spdx}). ${src.ruling.attribution}` };
}

function health(cat: CatalogSrc, p: ProductSrc, store: StoreSummary, builtAt: string): Health {
  const counts = store.products[p.product_id] ?? {};
  const sources: SourceHealth[] = p.sources.map(({ source, required }) => {
    const src = cat.sources.get(source)!;
    const c = src.held ? { rows: 0, units: 0 } : counts[source] ?? { rows: 0, units: 0 };
    let note: string | null = null;
    if (src.held) note = `held: ${src.held.reason}`;
    else if (src.unit === null) note = 'reference data: used for routing, sells no units';
    else if (notYetAvailable(src)) note = src.no_data_reason ?? 'not yet available: no data is attached to this source';
    else if (c.rows === 0)
      note = store.product_notes?.[p.product_id]?.[source] ?? store.notes[source] ?? (store.store_version ? 'no rows in the unit store' : 'the unit store has not been built');
    const available = !src.held && src.unit !== null && !notYetAvailable(src);
    return { source, required, status: src.held ? 'held' : 'served', available, unit: src.unit, rows: c.rows, units: c.units, note };
  });
  const rowCount = sources.reduce((s, x) => s + x.rows, 0);
  const sellable = sources.filter((s) => s.status === 'served' && s.unit !== null);
  const requiredEmpty = sellable.filter((s) => s.required && s.rows === 0);
  const held = sources.filter((s) => s.status === 'held');
  const empty = sellable.filter((s) => !s.required && s.rows === 0);
  let rollup: Health['rollup'] = 'healthy';
  const reasons: string[] = [];
  if (!store.store_version) reasons.push('the unit store has not been built yet, so nothing is served and every count is zero');
  if (requiredEmpty.length) {
    rollup = 'unavailable';
    reasons.push(`required source${requiredEmpty.length > 1 ? 's' : ''} ${requiredEmpty.map((s) => `${s.source} (${s.note})`).join('; ')} serve${requiredEmpty.length > 1 ? '' : 's'} no rows`);
  }
  if (rollup !== 'unavailable' && (held.length || empty.length || rowCount < p.row_count_at_launch)) rollup = 'degraded';
  if (held.length) reasons.push(`${held.length} source${held.length > 1 ? 's' : ''} held (${held.map((s) => s.source).join(', ')}): licence not yet ruled, no rows served`);
  if (empty.length) reasons.push(`no rows yet from ${empty.map((s) => `${s.source} (${s.note})`).join('; ')}`);
  if (rowCount < p.row_count_at_launch) reasons.push(`${rowCount} rows served, below the ${p.row_count_at_launch} at launch`);
  if (rollup === 'healthy') reasons.push(`every source serves rows: ${rowCount} rows from ${sellable.length} source${sellable.length > 1 ? 's' : ''}`);
  return {
    cache_ttl_seconds: cat.settings.cache_ttl_seconds,
    checked_at: builtAt,
    rollup,
    rollup_reason: reasons.join('; '),
    row_count: rowCount,
    row_count_at_launch: p.row_count_at_launch,
    sources_required_count: p.sources.filter((s) => s.required).length,
    sources_optional_count: p.sources.filter((s) => !s.required).length,
    store_version: store.store_version,
    sources,
  };
}

export function catalogueProduct(cat: CatalogSrc, p: ProductSrc, a: Addresses, store: StoreSummary, builtAt: string): CatalogueProduct {
  const srcs = p.sources.map((s) => cat.sources.get(s.source)!);
  const h = health(cat, p, store, builtAt);
  const units = h.sources.reduce((s, x) => s + x.units, 0);
  const pr = p.pricing;
  const bulkCents = bulkAnnualCents(units, pr.bulk_unit_rate_micro_eur);
  return {
    product_id: p.product_id,
    slug: p.slug,
    title: p.title,
    description: p.description,
    sectoral_ds: p.sectoral_ds,
    tag: p.tag,
    marker: p.marker,
    asset_uri: p.asset_uri,
    dcat_url: dcatUrl(a, p.product_id),
    mcp_endpoint: a.mcp_url,
    launch_state: p.launch_state,
    envelope_state: p.envelope_state,
    licence_state: p.licence_state,
    rulebook_ref: p.rulebook_ref,
    terminal_condition: p.terminal_condition,
    live_row_count: h.row_count,
    live_unit_count: units,
    row_count_at_launch: p.row_count_at_launch,
    row_count_basis: p.row_count_basis,
    row_count_computed_at: store.computed_at,
    unit_count_basis: p.unit_count_basis,
    unit_definition: srcs.filter((s) => s.unit !== null).map((s) => ({ source: s.id, unit: s.unit!, definition: s.unit_definition ?? '' })),
    licence_basis: srcs.map(licenceBasis),
    licence_summary: srcs.map((s) => licenceSummary(cat, s)),
    subscribe_status: cat.settings.subscribe_status,
    subscribe_url: null,
    pricing: {
      currency: pr.currency,
      unit_count: units,
      bulk_unit_rate_micro_eur: pr.bulk_unit_rate_micro_eur,
      bulk_unit_rate: formatMicros(pr.bulk_unit_rate_micro_eur),
      bulk_annual_price_cents: bulkCents,
      bulk_annual_price: formatCents(bulkCents),
      draw_unit_price_micro_eur: pr.draw_unit_price_micro_eur,
      draw_unit_price: formatMicros(pr.draw_unit_price_micro_eur),
      draw_minimum_charge: '0.01',
    },
    keywords: p.keywords,
    data_themes: p.data_themes,
    example_query: { query: p.example_query, matches: store.examples?.[p.product_id]?.matches ?? 0 },
    preview_url: previewUrl(a, p.product_id),
    _health: h,
  };
}

/** Every source any product names, with what the whole store holds of it (docs and pages show this table). */
export function catalogueSources(cat: CatalogSrc, store: StoreSummary): CatalogueSource[] {
  const products = new Map<string, string[]>();
  for (const p of cat.products) for (const s of p.sources) products.set(s.source, [...(products.get(s.source) ?? []), p.product_id]);
  return [...products.keys()].sort().map((id) => {
    const src = cat.sources.get(id)!;
    const c = src.held ? { units: 0, rows: 0 } : store.sources?.[id] ?? { units: 0, rows: 0 };
    const status: CatalogueSource['status'] = src.held ? 'held' : src.unit === null ? 'reference' : notYetAvailable(src) ? 'not-yet-available' : 'served';
    const reason =
      status === 'held' ? src.held!.reason
      : status === 'reference' ? 'reference tables used for routing; sells no units'
      : status === 'not-yet-available' ? (src.no_data_reason ?? 'no data is attached to this source')
      : null;
    return {
      source: id,
      title: src.title,
      publisher: src.publisher,
      status,
      reason,
      unit: src.unit,
      units: c.units,
      rows: c.rows,
      licence: src.ruling ? cat.licences.get(src.ruling.licence)!.spdx : null,
      attribution: src.ruling?.attribution ?? null,
      checked: src.checked ?? null,
      products: products.get(id)!,
    };
  });
}

/** The catalogue without its version; the version is computed over the whole build content. */
export function buildCatalogue(cat: CatalogSrc, a: Addresses, store: StoreSummary, builtAt: string, version: string): CatalogueDoc {
  const lic = cat.licences.get(cat.settings.licence)!;
  const products = cat.products.map((p) => catalogueProduct(cat, p, a, store, builtAt));
  return {
    '@context': 'https://www.w3.org/ns/dcat3.jsonld',
    '@type': 'dcat:Catalog',
    'dct:license': lic.iri,
    'dct:publisher': cat.settings.publisher.name,
    'dct:title': cat.settings.title,
    description: cat.settings.description,
    publisher_url: a.publisher_url,
    licence: { id: lic.id, title: lic.title, iri: lic.iri, url: lic.deed_url },
    version,
    store_version: store.store_version,
    generated_at: builtAt,
    base_url: a.base_url,
    mcp_url: a.mcp_url,
    docs_url: a.docs_url,
    currency: cat.settings.currency,
    minimum_topup: formatCents(MINIMUM_TOPUP_CENTS),
    products,
    total: products.length,
    sources: catalogueSources(cat, store),
  };
}
