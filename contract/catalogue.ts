// The shape of the catalogue snapshot (v1/lds/_catalog): what the generator writes into dist/ and
// the service reads back at start. Types only - the document itself is the contract.

/**
 * The catalogue's format: the API version every base_url ends in (/v1) and the shape below. A
 * change a reader of v1 could not follow needs a new number and a new base path. `lds --version`
 * prints it.
 */
export const CATALOGUE_FORMAT = 1 as const;

export interface UnitDefinition { source: string; unit: string; definition: string }

export interface LicenceBasis {
  source: string;
  verdict: string;
  basis: string | null;
  attribution: string | null;
  conditions: string | null;
  quote_sha256: string | null;
  ruled_at: string | null;
  terms_url: string | null;
  /** What was checked of the licence, and what is only assumed. */
  checked: string | null;
}

export interface LicenceSummary { source: string; from: string; licences: string[]; display: string | null }

export interface SourceHealth {
  source: string;
  required: boolean;
  status: 'served' | 'held';
  /** false when the source serves nothing at all yet (held, or ruled but no data attached: see note) */
  available: boolean;
  unit: string | null;
  rows: number;
  units: number;
  note: string | null;
}

export interface Health {
  cache_ttl_seconds: number;
  checked_at: string;
  rollup: 'healthy' | 'degraded' | 'unavailable';
  rollup_reason: string;
  row_count: number;
  row_count_at_launch: number;
  sources_required_count: number;
  sources_optional_count: number;
  store_version: string | null;
  sources: SourceHealth[];
}

export interface ProductPricing {
  currency: 'EUR';
  unit_count: number;
  bulk_unit_rate_micro_eur: number;
  bulk_unit_rate: string;
  bulk_annual_price_cents: number;
  bulk_annual_price: string;
  draw_unit_price_micro_eur: number;
  draw_unit_price: string;
  draw_minimum_charge: string;
}

/** What a product's example query matches in the unit store (any of its words), at this version. */
export interface ExampleQuery {
  query: string;
  matches: number;
}

export interface CatalogueProduct {
  product_id: string;
  slug: string;
  title: string;
  description: string;
  sectoral_ds: string;
  tag: string;
  marker: string;
  asset_uri: string;
  dcat_url: string;
  mcp_endpoint: string;
  launch_state: string;
  envelope_state: string;
  licence_state: string;
  rulebook_ref: string;
  terminal_condition: string;
  live_row_count: number;
  live_unit_count: number;
  row_count_at_launch: number;
  row_count_basis: string;
  row_count_computed_at: string;
  unit_count_basis: string;
  unit_definition: UnitDefinition[];
  licence_basis: LicenceBasis[];
  licence_summary: LicenceSummary[];
  subscribe_status: string;
  subscribe_url: null;
  pricing: ProductPricing;
  keywords: string[];
  data_themes: string[];
  example_query: ExampleQuery;
  /** Free, static preview: a few units' references, titles and citations (never their text). */
  preview_url: string;
  _health: Health;
}

/**
 * One source of the catalogue with what it holds in the whole store (a unit sold in several
 * products counts once), its licence and what was checked of it.
 */
export interface CatalogueSource {
  source: string;
  title: string;
  publisher: string;
  /** served: sells units; not-yet-available: ruled, no data attached yet; held: no ruling, nothing read; reference: tables, sells no units */
  status: 'served' | 'not-yet-available' | 'held' | 'reference';
  reason: string | null; // why it is not served (status other than served)
  unit: string | null;
  units: number;
  rows: number;
  licence: string | null; // SPDX id of the ruling's licence; null when held
  attribution: string | null;
  checked: string | null; // what was checked of the licence, what is assumed
  products: string[];
}

export interface CatalogueDoc {
  '@context': string;
  '@type': string;
  'dct:license': string;
  'dct:publisher': string;
  'dct:title': string;
  description: string;
  publisher_url: string;
  licence: { id: string; title: string; iri: string; url: string };
  version: string;
  store_version: string | null;
  generated_at: string;
  base_url: string;
  mcp_url: string;
  docs_url: string;
  currency: 'EUR';
  minimum_topup: string;
  products: CatalogueProduct[];
  total: number;
  sources: CatalogueSource[];
}
