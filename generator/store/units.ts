// Turns adapter records into units: the reference, the citation (with a link to the official
// text where one can be derived) and the rows. Units are built in a canonical shape (fixed key
// order, rows sorted) so the same content always serialises to the same bytes, which is what the
// store version is a hash of.
import type { Citation, Unit, UnitLicence, UnitRow } from '../../contract/store-format.ts';
import type { AknProvision } from '../ingest/akoma-ntoso.ts';
import type { AlignedParagraph } from '../ingest/aligned-paragraphs.ts';
import type { DataSpec, Source } from '../model.ts';

export type StoredUnitBody = Omit<Unit, 'licence'>;

/** A unit plus the text the product indexes search over. */
export interface BuiltUnit {
  unit: StoredUnitBody;
  searchText: string;
}

export function unitLicence(src: Source): UnitLicence {
  const r = src.ruling!;
  return { source: src.id, verdict: r.verdict, licence: r.licence, attribution: r.attribution, terms_url: r.terms_url, quote_sha256: r.quote_sha256 };
}

export const eurlexUrl = (celex: string) => `https://eur-lex.europa.eu/legal-content/EN/TXT/?uri=CELEX:${encodeURIComponent(celex)}`;

function paragraphCitation(p: AlignedParagraph): Citation {
  return { label: `CELEX ${p.celex}, paragraph ${p.para}`, celex: p.celex, para: p.para, url: eurlexUrl(p.celex) };
}

/** P unit: one pivot paragraph, one row per language version. */
export function paragraphUnit(src: Source, p: AlignedParagraph): BuiltUnit {
  const rows: UnitRow[] = p.versions.map(([lang, text]) => ({ lang, kind: 'paragraph', text }));
  const pivot = p.versions.find(([l]) => l === p.pivot)![1];
  return {
    unit: { ref: `${src.id}:${p.celex}/${p.para}`, source: src.id, kind: 'P', citation: paragraphCitation(p), rows },
    searchText: pivot,
  };
}

/** R unit from an aligned row: the row is one record (all its language columns), one stored row. */
export function alignedRowUnit(src: Source, p: AlignedParagraph): BuiltUnit {
  const pivot = p.versions.find(([l]) => l === p.pivot)![1];
  const record: Record<string, string> = { celex_id: p.celex, para_idx: String(p.para), pivot_lang: p.pivot, langs: p.versions.map(([l]) => l).join(',') };
  for (const [lang, text] of p.versions) record[`text.${lang}`] = text;
  return {
    unit: {
      ref: `${src.id}:${p.celex}/${p.para}`,
      source: src.id,
      kind: 'R',
      citation: { ...paragraphCitation(p), record: `${p.celex}/${p.para}` },
      rows: [{ lang: p.pivot, kind: 'aligned-row', text: pivot }],
      record,
    },
    searchText: pivot,
  };
}

/** A key part may contain anything; escaping keeps "/" as the separator of a record reference. */
const keyPart = (v: string) => encodeURIComponent(v).replace(/%20/g, '+');

/** R unit from a record (CSV row or JSON-stat cell): one unit, one row. */
export function recordUnit(src: Source, spec: DataSpec, key: string[], record: Record<string, string>): BuiltUnit {
  const id = key.map(keyPart).join('/');
  const textCols = spec.text ?? Object.keys(record);
  const text = textCols.map((c) => record[c] ?? '').join(' ');
  return {
    unit: {
      ref: `${src.id}:${id}`,
      source: src.id,
      kind: 'R',
      citation: { label: `${src.title}, record ${key.join(' / ')}`, record: id },
      rows: [{ lang: 'und', kind: 'record', text }],
      record,
    },
    searchText: text,
  };
}

// ISO 639-2 (as in FRBRlanguage) to the 639-1 codes rows use; unknown codes are kept as given.
const ISO639_2: Record<string, string> = { fin: 'fi', swe: 'sv', eng: 'en', smi: 'se', sme: 'se', deu: 'de', ger: 'de', fra: 'fr', fre: 'fr' };

export const finlexUrl = (expression: string) => `https://opendata.finlex.fi/finlex/avoindata/v1${expression}`;

/**
 * The act an A unit belongs to, the same for every kind: a consolidated version
 * (/akn/fi/act/statute-consolidated/...) is a version of the statute /akn/fi/act/statute/...
 */
export function aknAct(p: AknProvision): string {
  return p.work.replace(/\/statute-consolidated\//, '/statute/');
}

/** A unit: all versions (kind x language) of one provision, given sorted by kind then language. */
export function provisionUnit(src: Source, versions: AknProvision[]): BuiltUnit {
  const first = versions.find((v) => v.kind === 'statute') ?? versions[0];
  const act = aknAct(first);
  const rows: UnitRow[] = versions.map((v) => ({ lang: ISO639_2[v.lang] ?? v.lang, kind: v.kind, text: v.text }));
  const finnish = act.startsWith('/akn/fi/');
  const label = [finnish && first.docNumber ? `Finlex ${first.docNumber}` : act, first.num ?? first.eid, first.heading].filter(Boolean).join(', ');
  const citation: Citation = { label, akn: act, eid: first.eid };
  if (first.eli) citation.eli = first.eli;
  if (finnish) citation.url = finlexUrl(first.expression);
  return {
    unit: { ref: `${src.id}:${act}#${first.eid}`, source: src.id, kind: 'A', citation, rows },
    // Finlex has no English pivot; the provision's own text (of the original statute) is indexed
    searchText: first.text,
  };
}
