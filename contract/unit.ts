// What is sold: a unit with its rows, citation and licence. The unit store keeps it
// (contract/store-format.ts) and a paid draw delivers it (contract/wire.ts), so both the service and
// the buyer's client (client/, which compiles this file into its package) read this one shape.

export type UnitKind = 'P' | 'R' | 'A';

/** One stored version of a unit: a language version of a paragraph, a version of a provision, a record. */
export interface UnitRow {
  lang: string; // ISO 639-1 (en, fi, ...) or 'und' for records
  kind?: string; // A units: FRBR subtype (statute, statute-consolidated); P units: 'paragraph' (IATE: 'definition', 'term', 'terms', 'domain')
  text: string;
  /** IATE term rows (kind 'term'): the term's type as the release gives it (Term, Redirection, Abbrev, ...). */
  term_type?: string;
  /** IATE term rows: the term's evaluation (preferred, admitted, deprecated, obsolete, proposed), where one is given. */
  evaluation?: string;
}

export interface Citation {
  label: string; // human citation, e.g. "CELEX 32006D0213, paragraph 4"
  publisher: string; // who published this unit (the source's publisher, or the data file's where it differs)
  part?: string; // which part of a document: "recitals", "article 2 of 3", ...
  celex?: string;
  eli?: string;
  akn?: string; // Akoma Ntoso work IRI, e.g. /akn/fi/act/statute/2026/1
  eid?: string; // Akoma Ntoso eId of the provision
  para?: number; // paragraph index within the act
  iate?: string; // IATE concept id (the entry is at url)
  record?: string; // record key for R units
  uri?: string; // the record's own identifier where it has one (an ESCO concept URI, an OpenAIRE id)
  doi?: string;
  url?: string; // official text or landing page, where one can be derived
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
  /** A short human title (an act's title, a record's label); free to show before purchase, never the sold text. */
  title?: string;
  citation: Citation;
  rows: UnitRow[];
  record?: Record<string, string>; // R units: the source record's fields
  licence: UnitLicence;
}
