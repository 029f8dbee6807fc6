// Turns adapter records into units: the reference, the citation (with a link to the official
// text where one can be derived) and the rows. Units are built in a canonical shape (fixed key
// order, rows sorted) so the same content always serialises to the same bytes, which is what the
// store version is a hash of.
import type { Citation, Unit, UnitLicence, UnitRow } from '../../contract/store-format.ts';
import type { AknProvision } from '../ingest/akoma-ntoso.ts';
import type { AlignedParagraph } from '../ingest/aligned-paragraphs.ts';
import type { ActBlock, Eurlex57kAct } from '../ingest/eurlex57k.ts';
import { eliOf, type ActParagraph, type TriplesAct } from '../ingest/eurlex-triples.ts';
import type { IateEntry, IateTerm } from '../ingest/iate.ts';
import type { SourceRecord } from '../ingest/records.ts';
import type { DataSpec, Source } from '../model.ts';

export type StoredUnitBody = Omit<Unit, 'licence'>;

/** A unit plus the text the product indexes search over. */
export interface BuiltUnit {
  unit: StoredUnitBody;
  searchText: string;
  /** The document it belongs to (an act, a station): previews show one unit per group. */
  group?: string;
}

export function unitLicence(src: Source): UnitLicence {
  const r = src.ruling!;
  return { source: src.id, verdict: r.verdict, licence: r.licence, attribution: r.attribution, terms_url: r.terms_url, quote_sha256: r.quote_sha256 };
}

export const eurlexUrl = (celex: string) => `https://eur-lex.europa.eu/legal-content/EN/TXT/?uri=CELEX:${encodeURIComponent(celex)}`;

function paragraphCitation(src: Source, p: AlignedParagraph): Citation {
  return { label: `CELEX ${p.celex}, paragraph ${p.para}`, publisher: src.publisher, celex: p.celex, para: p.para, url: eurlexUrl(p.celex) };
}

/** P unit: one pivot paragraph, one row per language version. */
export function paragraphUnit(src: Source, p: AlignedParagraph): BuiltUnit {
  const rows: UnitRow[] = p.versions.map(([lang, text]) => ({ lang, kind: 'paragraph', text }));
  const pivot = p.versions.find(([l]) => l === p.pivot)![1];
  return {
    unit: { ref: `${src.id}:${p.celex}/${p.para}`, source: src.id, kind: 'P', citation: paragraphCitation(src, p), rows },
    searchText: pivot,
    group: p.celex,
  };
}

/**
 * P unit from a block of a EURLEX57K act (English only, so one row). The block number takes the
 * place of the paragraph number in the reference; the citation says which part of the act it is.
 */
export function actBlockUnit(src: Source, act: Eurlex57kAct, b: ActBlock): BuiltUnit {
  return {
    unit: {
      ref: `${src.id}:${act.celex}/${b.index}`,
      source: src.id,
      kind: 'P',
      title: act.title,
      citation: { label: `CELEX ${act.celex}, ${b.part}`, publisher: src.publisher, part: b.part, celex: act.celex, para: b.index, url: eurlexUrl(act.celex) },
      rows: [{ lang: 'en', kind: 'paragraph', text: b.text }],
    },
    searchText: b.text,
    group: act.celex,
  };
}

/**
 * P unit from one paragraph of an act in the EUR-Lex-Triples packaging (English only, so one row):
 * cited as a lawyer cites it (CELEX, the structure the text shows, the ELI where the CELEX number
 * gives one) with the paragraph's position, which is also its number in the reference.
 */
export function actParagraphUnit(src: Source, act: TriplesAct, p: ActParagraph): BuiltUnit {
  const eli = eliOf(act.celex);
  const citation: Citation = { label: `CELEX ${act.celex}, ${p.cite} (paragraph ${p.pos})`, publisher: src.publisher, part: p.cite, celex: act.celex, para: p.pos };
  if (eli) citation.eli = eli;
  citation.url = eurlexUrl(act.celex);
  return {
    unit: { ref: `${src.id}:${act.celex}/${p.pos}`, source: src.id, kind: 'P', title: act.title, citation, rows: [{ lang: 'en', kind: 'paragraph', text: p.text }] },
    searchText: p.text,
    group: act.celex,
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
      citation: { ...paragraphCitation(src, p), record: `${p.celex}/${p.para}` },
      rows: [{ lang: p.pivot, kind: 'aligned-row', text: pivot }],
      record,
    },
    searchText: pivot,
    group: p.celex,
  };
}

/**
 * P unit: one IATE concept, merged from what the CSV release (its English terms, typed) and the API
 * pull (definition, terms in ten languages, domains) say about it; either may be missing. The
 * English definition (with its IATE source note) and English terms are the pivot, the other
 * languages' terms its language versions. Rows, in this order:
 *  - en `definition` (API pull; as published, source note included);
 *  - en `term`, one per release row in file order, with its `term_type` and `evaluation` (if any);
 *  - `terms`, one per language of the API pull, the terms joined by ", " exactly as published (the
 *    pull joined them so; a term holding ", " itself cannot be told apart, so they are not split);
 *  - en `domain`, one per IATE domain path.
 * Searched by every row but the domains: a concept is found by any of its terms in any language.
 */
export function iateConceptUnit(src: Source, terms: IateTerm[], entry: IateEntry | null): BuiltUnit {
  const id = terms[0]?.id ?? entry!.id;
  const url = terms[0]?.url ?? entry!.url;
  const rows: UnitRow[] = [];
  if (entry?.definition) rows.push({ lang: 'en', kind: 'definition', text: entry.definition });
  for (const t of terms) rows.push({ lang: 'en', kind: 'term', text: t.term, term_type: t.type, ...(t.evaluation ? { evaluation: t.evaluation } : {}) });
  for (const [lang, joined] of entry?.terms ?? []) rows.push({ lang, kind: 'terms', text: joined });
  for (const d of entry?.domains ?? []) rows.push({ lang: 'en', kind: 'domain', text: d });
  // the title: the English term the release prefers, else its first full term, else its first row, else the pull's first English term
  const title =
    terms.find((t) => t.evaluation === 'preferred')?.term ?? terms.find((t) => t.type === 'Term')?.term ?? terms[0]?.term ?? entry!.terms.find(([l]) => l === 'en')![1].split(', ')[0];
  return {
    unit: {
      ref: `${src.id}:${id}`,
      source: src.id,
      kind: 'P',
      title,
      citation: { label: `IATE ${id}, “${title}”`, publisher: src.publisher, iate: id, uri: url, url },
      rows,
    },
    searchText: rows.filter((r) => r.kind !== 'domain').map((r) => r.text).join('\n'),
    group: id,
  };
}

/**
 * A key part may contain anything; escaping keeps "/" as the separator of a record reference.
 * ":" stays readable (OpenAIRE ids are prefix::hash).
 */
const keyPart = (v: string) => encodeURIComponent(v).replace(/%20/g, '+').replace(/%3A/g, ':');

/** A record of a generic CSV or JSON-stat source, with the title, citation and text its data entry names. */
export function genericRecord(src: Source, spec: DataSpec, key: string[], record: Record<string, string>, file: string, where: string): SourceRecord {
  const text = (spec.text ?? Object.keys(record)).map((c) => record[c] ?? '').join(' ');
  return {
    file,
    where,
    key,
    title: spec.title ? spec.title.map((c) => record[c] ?? '').filter(Boolean).join(' · ') : key.join(' / '),
    label: `${src.title}, record ${key.join(' / ')}`,
    fields: record,
    text,
  };
}

/** R unit from a source record: one unit, one row (its descriptive text), the record's fields. */
export function recordUnit(src: Source, r: SourceRecord): BuiltUnit {
  const id = r.key.map(keyPart).join('/');
  const citation: Citation = { label: r.label, publisher: src.publisher, record: id };
  if (r.uri) citation.uri = r.uri;
  if (r.doi) citation.doi = r.doi;
  if (r.url) citation.url = r.url;
  return {
    unit: { ref: `${src.id}:${id}`, source: src.id, kind: 'R', title: r.title, citation, rows: [{ lang: 'und', kind: 'record', text: r.text }], record: r.fields },
    searchText: r.text,
    ...(r.group !== undefined ? { group: r.group } : {}),
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
  const citation: Citation = { label, publisher: src.publisher, akn: act, eid: first.eid };
  if (first.eli) citation.eli = first.eli;
  if (finnish) citation.url = finlexUrl(first.expression);
  return {
    unit: { ref: `${src.id}:${act}#${first.eid}`, source: src.id, kind: 'A', ...(first.heading ? { title: first.heading } : {}), citation, rows },
    // Finlex has no English pivot; the provision's own text (of the original statute) is indexed
    searchText: first.text,
    group: act,
  };
}
