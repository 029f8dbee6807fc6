// The unit store format: the contract between the generator (which writes the store) and the
// payments service (which reads it). Like the OpenAPI document in dist/, this is data shape only;
// neither half imports the other's code.
//
// Layout on disk: <store_root>/<store_version>/ is one LevelDB; <store_root>/CURRENT holds the
// store_version the service should open. A build writes a new directory and switches CURRENT
// with an atomic rename only once the store is complete.

export type UnitKind = 'P' | 'R' | 'A';

/** One stored version of a unit: a language version of a paragraph, a version of a provision, a record. */
export interface UnitRow {
  lang: string; // ISO 639-1 (en, fi, ...) or 'und' for records
  kind?: string; // A units: FRBR subtype (statute, statute-consolidated); P units: 'paragraph'
  text: string;
}

export interface Citation {
  label: string; // human citation, e.g. "CELEX 32006D0213, paragraph 4"
  celex?: string;
  eli?: string;
  akn?: string; // Akoma Ntoso work IRI, e.g. /akn/fi/act/statute/2026/1
  eid?: string; // Akoma Ntoso eId of the provision
  para?: number; // paragraph index within the act
  record?: string; // record key for R units
  url?: string; // official text, where one can be derived
}

export interface UnitLicence {
  source: string;
  verdict: string;
  licence: string; // licence id (cc-by-4.0)
  attribution: string;
  terms_url: string;
  quote_sha256: string;
}

/** What is sold. Unit refs are unique within the store: `${source}:${local id}`. */
export interface Unit {
  ref: string;
  source: string;
  kind: UnitKind;
  citation: Citation;
  rows: UnitRow[];
  record?: Record<string, string>; // R units: the source record's fields
  licence: UnitLicence;
}

export interface StoreProductMeta {
  units: number;
  rows: number;
  by_source: Record<string, { units: number; rows: number }>;
}

export interface StoreMeta {
  format: 1;
  store_version: string; // `store-<12 hex>` over the canonical unit content
  built_at: string;
  products: Record<string, StoreProductMeta>;
}

/** Read side, implemented in payments/unit-store.ts. */
export interface UnitStoreReader {
  readonly meta: StoreMeta;
  /** Units by reference within a product, in request order; references not in the product are listed in `unknown`. */
  getUnits(productId: string, refs: string[]): Promise<{ units: Unit[]; unknown: string[] }>;
  /** BM25 over the English pivot text within a product; order: score desc, then ref asc. */
  search(productId: string, query: string, limit: number): Promise<Unit[]>;
  close(): Promise<void>;
}
