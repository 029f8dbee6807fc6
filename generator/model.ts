// The publisher's model: the validated content of catalog-src/, typed.
// Loading and validation live in load.ts; everything downstream takes a CatalogSrc.

export type UnitKind = 'P' | 'R' | 'A';

export interface Addresses {
  base_url: string; // ends in /v1
  mcp_url: string;
  docs_url: string;
  publisher_url: string;
}

export interface CatalogueSettings {
  title: string;
  description: string;
  publisher: { name: string; url: string; email: string };
  licence: string; // licence id
  addresses: Addresses;
  cache_ttl_seconds: number;
  currency: 'EUR';
  subscribe_status: string;
  agent_skill_order: string[]; // product ids, in agent-card skill order
}

export interface Licence {
  id: string;
  title: string;
  spdx: string;
  iri: string;
  legal_code_url: string;
  deed_url: string;
  text: string;
}

export interface LicenceRuling {
  verdict: string;
  licence: string;
  basis: string;
  attribution: string;
  conditions: string;
  quote_file: string;
  quote_sha256: string;
  ruled_at: string;
  terms_url: string;
}

export type AdapterName =
  | 'aligned-paragraphs'
  | 'aligned-rows'
  | 'akoma-ntoso'
  | 'csv'
  | 'jsonstat'
  | 'eurovoc'
  | 'eurlex57k'
  | 'eurlex-triples'
  | 'esco'
  | 'openaire-results'
  | 'openaire-oaf'
  | 'eea-airbase'
  | 'openfoodtox'
  | 'corine-legend'
  | 'iate';

export interface DataSpec {
  adapter: AdapterName;
  path: string; // relative to catalog-src/
  acts?: string;
  key?: string[]; // csv: columns that identify a record
  text?: string[]; // csv: descriptive columns (searchable, and the row's text)
  title?: string[]; // csv: columns joined into the record's title
  delimiter?: string; // CSV-based adapters: field separator (default ",")
  stations?: string; // eea-airbase: the station list, relative to catalog-src/
}

export interface Source {
  id: string;
  title: string;
  unit: UnitKind | null;
  unit_definition?: string;
  publisher: string;
  routed?: boolean;
  ruling?: LicenceRuling;
  held?: { reason: string; since: string };
  data?: DataSpec[];
  no_data_reason?: string;
  /** What was checked of the licence, and what is only assumed (from the data's PROVENANCE.md). */
  checked?: string;
}

export interface EuroVocRule {
  domains: string[];
  microthesauri: string[];
  descriptors: string[];
}

export interface Pricing {
  currency: 'EUR';
  bulk_unit_rate_micro_eur: number;
  draw_unit_price_micro_eur: number;
}

export interface ProductSrc {
  product_id: string;
  slug: string;
  title: string;
  description: string;
  sectoral_ds: string;
  tag: string;
  marker: string;
  asset_uri: string;
  launch_state: 'draft' | 'preview' | 'launched' | 'retired';
  envelope_state: 'open' | 'sealed';
  licence_state: 'cleared' | 'partial' | 'pending';
  rulebook_ref: string;
  terminal_condition: string;
  row_count_at_launch: number;
  row_count_basis: string;
  unit_count_basis: string;
  sources: { source: string; required: boolean }[];
  routing: EuroVocRule;
  data_themes: string[];
  keywords: string[];
  /** A query the documentation and examples use for this product; the build counts what it matches. */
  example_query: string;
  pricing: Pricing;
}

/** Everything in catalog-src/, validated and cross-checked. Products keep their file order (sorted by id). */
export interface CatalogSrc {
  root: string; // absolute path of catalog-src/
  settings: CatalogueSettings;
  licences: Map<string, Licence>;
  sources: Map<string, Source>;
  products: ProductSrc[];
  /** SHA-256 over every file under catalog-src/ (path + content): data files and tables included. */
  inputs_sha256?: string;
}

/** Rows and units a product serves from one source, as counted in the unit store. */
export interface SourceCount {
  rows: number;
  units: number;
}

/**
 * What the unit store build reports back to the catalogue: the store's identity and,
 * per product and source, what it actually holds. The catalogue's counts, prices and
 * health are computed from this and nothing else.
 */
export interface StoreSummary {
  store_version: string | null; // null when no store was built
  computed_at: string; // ISO timestamp
  products: Record<string, Record<string, SourceCount>>; // product_id -> source id -> counts
  /** Why a served source has no rows, per source id (shown in _health). */
  notes: Record<string, string>;
  /** Why a served source has no rows in one product although it has rows (routing), per product and source. */
  product_notes?: Record<string, Record<string, string>>;
  /** What each source holds in the whole store (a unit sold in several products counts once). */
  sources?: Record<string, SourceCount>;
  /** Per product: how many units its example query matches (any of its words), counted in the index. */
  examples?: Record<string, { query: string; matches: number }>;
  /** Per product: a few units to show for free (reference, title, citation; never text). */
  previews?: Record<string, PreviewUnit[]>;
}

/** A unit as the free preview shows it: what it is and where it comes from, without its text. */
export interface PreviewUnit {
  ref: string;
  source: string;
  kind: UnitKind;
  title: string;
  citation: { label: string; publisher: string; url?: string; celex?: string; eli?: string; doi?: string; uri?: string };
}
