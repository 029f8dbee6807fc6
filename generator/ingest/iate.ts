// Adapter 'iate': IATE (Interactive Terminology for Europe) terminology, from a folder holding two
// formats of the same concepts:
//  - *.csv: the Publications Office's term list release (one row per English term: TERM, IATE
//    entry URL, IATE ID, TERM TYPE, EVALUATION), e.g. the COVID-19 snapshot of 28 July 2020;
//  - *.json: IATE entries as pulled from the IATE API and reshaped by a third party (a JSON array
//    of one object per concept: id_concept, iate_link, en_def, one field per language with all
//    its terms joined by ", ", and domains, the IATE domain paths joined by ", ").
// Both are read and checked here; generator/store/units.ts (iateConceptUnit) merges what each
// says about one concept into one unit. Every value is kept as published.
import { readdir, readFile } from 'node:fs/promises';
import { isUtf8 } from 'node:buffer';
import { join } from 'node:path';
import { readCsv } from './csv.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { isObject, NOT_UTF8 } from './lines.ts';

export const IATE_CSV_COLUMNS = ['TERM', 'IATE entry URL', 'IATE ID', 'TERM TYPE', 'EVALUATION'] as const;
/** The languages the API pull carries, in its field order (English first: the pivot). */
export const IATE_LANGUAGES = ['en', 'cs', 'da', 'de', 'es', 'fi', 'fr', 'it', 'nl', 'pt'] as const;
/** IATE's term evaluations (reliability of use); an empty cell means none was given. */
export const IATE_EVALUATIONS: ReadonlySet<string> = new Set(['preferred', 'admitted', 'deprecated', 'obsolete', 'proposed']);

const ID = /^[1-9][0-9]{0,9}$/;
export const iateEntryUrl = (id: string) => `https://iate.europa.eu/entry/result/${id}`;

/** One row of the CSV release: an English term of a concept. */
export interface IateTerm {
  file: string;
  line: number;
  id: string;
  url: string;
  term: string;
  type: string; // Term, Redirection, Abbrev, Short Form, Appellation, Phrase, ...
  evaluation: string; // '' when the release gives none
}

/** One concept of the API pull. */
export interface IateEntry {
  file: string;
  where: string; // line:column of the object's "{" (the pull is one line of JSON)
  index: number; // 0-based position in the array
  id: string;
  url: string;
  definition: string; // English definition with its IATE source note, exactly as published ('' when none)
  /** Per language (IATE_LANGUAGES order, only those present and non-empty): the terms joined by ", " as published. */
  terms: [string, string][];
  /** The IATE domain paths, e.g. "SOCIAL QUESTIONS > health > medical science > epidemiology". */
  domains: string[];
}

export interface IateFile {
  path: string;
  name: string;
  format: 'csv' | 'json';
}

/** The IATE files of a folder, sorted by name: *.csv term lists and *.json API pulls. */
export async function iateFiles(dir: string): Promise<IateFile[]> {
  const names = (await readdir(dir)).sort();
  const out: IateFile[] = [];
  for (const name of names) {
    if (/\.csv$/i.test(name)) out.push({ path: join(dir, name), name, format: 'csv' });
    else if (/\.json$/i.test(name)) out.push({ path: join(dir, name), name, format: 'json' });
  }
  return out;
}

/** The term rows of a CSV release, each checked (id, URL naming the id, a term, a type, an evaluation IATE knows). */
export async function* readIateTerms(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<IateTerm> {
  for await (const { line, record } of readCsv(file, displayName, onBad, { columns: IATE_CSV_COLUMNS })) {
    const id = record['IATE ID'];
    const url = record['IATE entry URL'];
    let reason = '';
    if (!ID.test(id)) reason = `IATE ID must be a number, got ${JSON.stringify(id)}`;
    else if (url !== iateEntryUrl(id)) reason = `IATE entry URL must be ${iateEntryUrl(id)} (the entry of IATE ID ${id}), got ${JSON.stringify(url)}`;
    else if (record.TERM.trim() === '') reason = `IATE ${id} has an empty TERM`;
    else if (record['TERM TYPE'].trim() === '') reason = `IATE ${id} "${record.TERM}" has no TERM TYPE`;
    else if (record.EVALUATION !== '' && !IATE_EVALUATIONS.has(record.EVALUATION)) reason = `EVALUATION must be empty or one of ${[...IATE_EVALUATIONS].join(', ')}, got ${JSON.stringify(record.EVALUATION)}`;
    if (reason) {
      onBad(new IngestError(displayName, String(line), reason));
      continue;
    }
    yield { file: displayName, line, id, url, term: record.TERM, type: record['TERM TYPE'], evaluation: record.EVALUATION };
  }
}

/**
 * Splits the top level of a JSON array into its elements' [start, end) offsets without parsing
 * them, so each element is parsed (and, when broken, reported) on its own. Returns the offset of
 * the first thing that is not an array of objects when the text is not one.
 */
export function splitJsonArray(text: string): { ok: true; items: [number, number][] } | { ok: false; at: number; reason: string; items: [number, number][] } {
  const items: [number, number][] = [];
  let i = 0;
  const ws = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\n' || text[i] === '\r' || text[i] === '\t')) i++;
  };
  ws();
  if (text[i] !== '[') return { ok: false, at: i, reason: 'the file must be a JSON array of IATE entries', items };
  i++;
  ws();
  if (text[i] === ']') return { ok: true, items };
  for (;;) {
    ws();
    if (text[i] !== '{') return { ok: false, at: i, reason: i >= text.length ? 'the file ends inside the array (truncated?)' : 'every element must be a JSON object', items };
    const start = i;
    let depth = 0;
    let inString = false;
    for (; i < text.length; i++) {
      const c = text[i];
      if (inString) {
        if (c === '\\') i++;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{' || c === '[') depth++;
      else if (c === '}' || c === ']') {
        depth--;
        if (depth === 0) break;
      }
    }
    if (i >= text.length) return { ok: false, at: start, reason: 'the entry is cut off: the file ends inside it (truncated?)', items };
    items.push([start, ++i]);
    ws();
    if (text[i] === ',') {
      i++;
      continue;
    }
    if (text[i] === ']') {
      i++;
      ws();
      return i === text.length ? { ok: true, items } : { ok: false, at: i, reason: 'unexpected text after the array', items };
    }
    return { ok: false, at: i, reason: i >= text.length ? 'the file ends inside the array (truncated?)' : 'expected "," or "]" after an entry', items };
  }
}

/** 1-based line:column of offsets, asked in increasing order (each call walks on from the last). */
function positioner(text: string): (offset: number) => string {
  let at = 0;
  let line = 1;
  let col = 1;
  return (offset) => {
    if (offset < at) [at, line, col] = [0, 1, 1];
    for (; at < offset && at < text.length; at++) {
      if (text.charCodeAt(at) === 10) {
        line++;
        col = 1;
      } else col++;
    }
    return `${line}:${col}`;
  };
}

// A new domain path starts with a top-level IATE domain, written in capitals ("SOCIAL QUESTIONS > ..."):
// only there is ", " a separator (a lower-level label could hold a comma).
const DOMAIN_SPLIT = /, (?=[A-Z][A-Z ,&'-]*[A-Z](?: > |$))/;

const KNOWN_FIELDS: ReadonlySet<string> = new Set(['id_concept', 'iate_link', 'en_def', 'domains', ...IATE_LANGUAGES]);

function checkEntry(v: unknown): { ok: true; id: string; url: string; definition: string; terms: [string, string][]; domains: string[] } | { ok: false; reason: string } {
  if (!isObject(v)) return { ok: false, reason: 'an entry must be a JSON object' };
  const id = typeof v.id_concept === 'number' && Number.isInteger(v.id_concept) ? String(v.id_concept) : typeof v.id_concept === 'string' ? v.id_concept : '';
  if (!ID.test(id)) return { ok: false, reason: `id_concept must be an IATE id (a number), got ${JSON.stringify(v.id_concept)}` };
  if (v.iate_link !== iateEntryUrl(id)) return { ok: false, reason: `iate_link of IATE ${id} must be ${iateEntryUrl(id)}, got ${JSON.stringify(v.iate_link)}` };
  const unknown = Object.keys(v).filter((k) => !KNOWN_FIELDS.has(k));
  if (unknown.length) return { ok: false, reason: `IATE ${id}: unknown field(s) ${unknown.join(', ')} (a language outside ${IATE_LANGUAGES.join(', ')}?)` };
  for (const k of ['en_def', 'domains', ...IATE_LANGUAGES]) {
    if (k in v && typeof v[k] !== 'string') return { ok: false, reason: `IATE ${id}: ${k} must be a string, got ${JSON.stringify(v[k])}` };
  }
  const terms: [string, string][] = [];
  for (const lang of IATE_LANGUAGES) {
    const t = (v[lang] as string | undefined) ?? '';
    if (t.trim()) terms.push([lang, t]); // kept as published (stray spaces included)
  }
  if (!terms.some(([l]) => l === 'en')) return { ok: false, reason: `IATE ${id} has no English term (en)` };
  const domains = ((v.domains as string | undefined) ?? '').split(DOMAIN_SPLIT).map((d) => d.trim()).filter(Boolean);
  const definition = (v.en_def as string | undefined) ?? '';
  return { ok: true, id, url: iateEntryUrl(id), definition: definition.trim() ? definition : '', terms, domains };
}

/**
 * The concepts of an API pull, each checked. The pull is one JSON array on one line; it is read
 * whole (it is the size of an API answer, not of a full IATE export) and each element is parsed
 * on its own, so a broken element is reported at its line:column and, with --skip-bad-records,
 * skipped alone.
 */
export async function* readIateEntries(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<IateEntry> {
  const bytes = await readFile(file);
  // Decoding turns bad bytes into U+FFFD; an entry showing one in a file that is not UTF-8 is bad.
  const utf8 = isUtf8(bytes);
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
  const split = splitJsonArray(text);
  const position = positioner(text);
  for (const [index, [start, end]] of split.items.entries()) {
    const where = position(start);
    const raw = text.slice(start, end);
    if (!utf8 && raw.includes('\uFFFD')) {
      onBad(new IngestError(displayName, position(start + raw.indexOf('\uFFFD')), `entry ${index + 1}: ${NOT_UTF8}`));
      continue;
    }
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (err) {
      onBad(new IngestError(displayName, where, `entry ${index + 1}: invalid JSON: ${(err as Error).message}`));
      continue;
    }
    const e = checkEntry(value);
    if (!e.ok) {
      onBad(new IngestError(displayName, where, `entry ${index + 1}: ${e.reason}`));
      continue;
    }
    yield { file: displayName, where, index, id: e.id, url: e.url, definition: e.definition, terms: e.terms, domains: e.domains };
  }
  // A structural error (a truncated file, text after the array) ends what can be read as entries.
  if (!split.ok) {
    const entry = split.reason.startsWith('the entry') ? `entry ${split.items.length + 1}: ` : `after entry ${split.items.length}: `;
    onBad(new IngestError(displayName, position(split.at), entry + split.reason));
  }
}

/** The terms of a language field of the API pull, as its ", " joins them (a term that itself holds ", " is split too). */
export const splitTerms = (joined: string) => joined.split(', ').map((t) => t.trim()).filter(Boolean);
