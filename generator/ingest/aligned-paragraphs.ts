// Adapter 'aligned-paragraphs' (and 'aligned-rows', which reads the same file): one JSON object
// per line, {celex_id, para_idx, pivot_lang, langs, text: {lang: paragraph}}, as cut from
// MultiEURLEX. Streams the file; every record is checked before it is yielded.
import { type BadRecordHandler, IngestError } from './errors.ts';
import { isObject, jsonLine, readLines, type Line } from './lines.ts';

export interface AlignedParagraph {
  file: string;
  line: number;
  celex: string;
  para: number;
  pivot: string;
  /** [lang, text] for every language version, sorted by language code (order-independent input). */
  versions: [string, string][];
}

// CELEX numbers: sector digit or letter, then year, type letters and number, optionally with
// consolidation suffixes. Refs use "/" as separator, so a CELEX may not contain one.
export const CELEX = /^[0-9A-Z][0-9A-Z()._-]{4,40}$/;
const LANG = /^[a-z]{2,3}$/;

export function checkAlignedParagraph(v: unknown): { ok: true; value: Omit<AlignedParagraph, 'file' | 'line'> } | { ok: false; reason: string } {
  if (!isObject(v)) return { ok: false, reason: 'expected a JSON object' };
  const { celex_id, para_idx, pivot_lang, langs, text } = v;
  if (typeof celex_id !== 'string' || !CELEX.test(celex_id)) return { ok: false, reason: `celex_id must be a CELEX number, got ${JSON.stringify(celex_id)}` };
  if (typeof para_idx !== 'number' || !Number.isSafeInteger(para_idx) || para_idx < 0) return { ok: false, reason: `para_idx must be a non-negative integer, got ${JSON.stringify(para_idx)}` };
  if (typeof pivot_lang !== 'string' || !LANG.test(pivot_lang)) return { ok: false, reason: `pivot_lang must be a language code, got ${JSON.stringify(pivot_lang)}` };
  if (!Array.isArray(langs) || !langs.every((l) => typeof l === 'string' && LANG.test(l))) return { ok: false, reason: 'langs must be an array of language codes' };
  if (!isObject(text)) return { ok: false, reason: 'text must be an object {lang: paragraph}' };
  const versions: [string, string][] = [];
  for (const lang of new Set(langs as string[])) {
    const t = text[lang];
    if (typeof t !== 'string') return { ok: false, reason: `text.${lang} is missing although langs lists "${lang}"` };
    versions.push([lang, t]);
  }
  for (const k of Object.keys(text)) if (!(langs as string[]).includes(k)) return { ok: false, reason: `text.${k} is not listed in langs` };
  if (!versions.some(([l]) => l === pivot_lang)) return { ok: false, reason: `the pivot language "${pivot_lang}" has no text` };
  versions.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return { ok: true, value: { celex: celex_id, para: para_idx, pivot: pivot_lang, versions } };
}

/** One line of the file: a paragraph, nothing (a blank line), or why the line is bad. */
export function alignedParagraphOf(l: Line, displayName: string): { ok: true; value: AlignedParagraph } | { ok: false; reason: string } | null {
  const parsed = jsonLine(l);
  if (parsed === null || !parsed.ok) return parsed;
  const checked = checkAlignedParagraph(parsed.value);
  return checked.ok ? { ok: true, value: { file: displayName, line: l.line, ...checked.value } } : checked;
}

export async function* readAlignedParagraphs(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<AlignedParagraph> {
  for await (const l of readLines(file)) {
    const p = alignedParagraphOf(l, displayName);
    if (p === null) continue;
    if (!p.ok) onBad(new IngestError(displayName, String(l.line), p.reason));
    else yield p.value;
  }
}
