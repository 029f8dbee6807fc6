// What every R-unit adapter yields: one source record with what the unit needs beside the record
// itself (its key, title and citation) and the descriptive text a search matches. The store turns
// it into a unit (generator/store/units.ts recordUnit); adapters only read and check their format.

export interface SourceRecord {
  file: string; // for messages: the file as named in catalog-src
  where: string; // line (or XML path) in that file
  /** Identifies the record within its source; the parts are joined by "/" into the unit reference. */
  key: string[];
  title: string; // short, shown before purchase (previews, quotes)
  label: string; // the human citation
  uri?: string; // the record's own identifier (an ESCO URI, an OpenAIRE id)
  doi?: string;
  url?: string; // a landing page of the record, where the format gives one
  /** The record as sold: every field as a string (lists joined with "; "). */
  fields: Record<string, string>;
  /** The descriptive columns, joined: what a query matches, and the unit's row text. */
  text: string;
  /** Units sharing a group (a station, an act) are spread out in previews. */
  group?: string;
}

/** The non-empty values, each once, joined by " · " (a readable row text from descriptive columns). */
export function describe(...values: (string | null | undefined)[]): string {
  const seen = new Set<string>();
  for (const v of values) {
    const t = (v ?? '').trim();
    if (t) seen.add(t);
  }
  return [...seen].join(' · ');
}

/** Lists inside one record field. */
export const joinList = (xs: (string | null | undefined)[]) => xs.map((x) => (x ?? '').trim()).filter(Boolean).join('; ');
