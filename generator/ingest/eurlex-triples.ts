// Adapter 'eurlex-triples': EUR-Lex acts as packaged by EUR-Lex-Sum / EUR-Lex-Triples, one JSON
// object per line (a .gz file is read through gunzip): celex_id, reference (the English act text,
// one paragraph a line), summary, tags (EuroVoc descriptor LABELS, English), subjects, split.
//
// What a paragraph is (the unit_definition of eu.eurlex and docs/publishing.md say the same):
//  - the Official Journal page furniture at the top (date, "EN", "Official Journal of the European
//    Union", the OJ page reference; in older acts "EUR-Lex - <CELEX> - EN", "Important legal
//    notice", "|", the CELEX number and the "Official Journal L …" line) is not a paragraph;
//  - nor is the act's title: the lines before the citations ("Having regard …", "THE COUNCIL …"),
//    the recitals or the first article (at most 7 of at most 300 characters each; else the first
//    line alone). It is every unit's title, shown free before purchase, never sold;
//  - every other non-empty line is one paragraph, except a line that only introduces the next one,
//    which joins the paragraph it introduces (its text comes first, on a line of its own):
//      * a label: "(12)", "(a)", "1.", "‘8.", "(iv)", a dash or bullet alone;
//      * a heading: "Article 5" (outside annexes), the article's title line after it (short, no
//        final punctuation), "CHAPTER II", "TITLE III", "SECTION 2", "PART A", "ANNEX I", "Whereas:";
//  - annex tables come one cell a line (the packaging lost the row structure): each cell is a
//    paragraph, so a correlation table is sold cell by cell, as the text shows it;
//  - heading or label lines left at the very end form one last paragraph, so no text is dropped.
// The paragraph's position (1-based, in this order) is its number in the reference: the same text
// always gives the same references. The citation names the structure the text shows: recital (n),
// Article n, Article n(p), Article n(p)(a), Article n, point (x), Annex I, the
// citations ("Having regard to …"), the closing part and its footnotes.
import { createReadStream } from 'node:fs';
import { createGunzip } from 'node:zlib';
import { CELEX } from './aligned-paragraphs.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { isObject, jsonLine, readLines, splitLines } from './lines.ts';

export interface ActParagraph {
  pos: number; // 1-based position among the act's paragraphs
  cite: string; // structural citation: "Article 5(2)", "recital (12)", "Annex I", "title", …
  text: string;
}

export interface TriplesAct {
  file: string;
  line: number;
  celex: string;
  title: string;
  tags: string[]; // EuroVoc labels as published (each once, in order)
  paragraphs: ActParagraph[];
}

const FURNITURE = [
  /^\d{1,2}\.\d{1,2}\.\d{4}$/, // 28.5.2014
  /^EN$/,
  /^Official Journal of the European Union$/,
  /^[LC] \d+[A-Z]?\s*\/\s*\d+$/, // L 159/1
  /^EUR-Lex - .+ - EN$/,
  /^(Important legal notice|Avis juridique important)$/,
  /^\|$/,
  /^Official Journal [LC] \d+[A-Z]? ?, /, // Official Journal L 300 , 31/12/1972 P. 0189 - 0280
];
/** How far down the page furniture may sit (the older packaging puts the title before the OJ line). */
const FURNITURE_LINES = 8;

const LABEL = /^[‘'"(]?(\d{1,3}[a-z]?|[a-z]{1,2}|[ivxlc]{1,6})[.)]$|^\(\d{1,3}[a-z]?\)$|^[—–•\-]$/;
const ARTICLE = /^Article (\d+[a-z]*)$/;
const ANNEX = /^ANNEX(?: ([IVXLC]+|\d+[A-Z]?|[A-Z]))?$/;
const DIVISION = /^(CHAPTER|TITLE|SECTION|PART|Chapter|Title|Section|Part) ([IVXLC]+|\d+[A-Z]?|[A-Z])$/;
const RECITALS = /^Whereas:?$/;
const DONE_AT = /^Done at /;
const FOOTNOTE = /^\((\d{1,3})\)\s+\S/;
const NUMBERED = /^(\d{1,3})\.\s+\S/;
const TITLE_LINE = (l: string) => l.length <= 150 && !/[.;:,]$/.test(l) && !LABEL.test(l) && !ANNEX.test(l) && !DIVISION.test(l) && !RECITALS.test(l);

type Section = 'citations' | 'recitals' | 'enacting terms' | 'closing' | 'annex';

/** Where the act's title ends: the citations, the recitals or the first article. */
const TITLE_END = /^(Having regard|THE |HAVE |HAS |Whereas|Article \d)/;
const TITLE_LINES = 7;
const TITLE_LINE_MAX = 300;

/** The act's text without page furniture, split into its title lines and the rest (see the header of this file). */
export function actLines(celex: string, reference: string): { title: string[]; body: string[] } {
  const lines = reference
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '')
    .filter((l, i) => !(i < FURNITURE_LINES && (l === celex || FURNITURE.some((re) => re.test(l)))));
  const end = lines.slice(0, TITLE_LINES + 1).findIndex((l) => TITLE_END.test(l));
  let n = end > 0 && lines.slice(0, end).every((l) => l.length <= TITLE_LINE_MAX) ? end : lines.length > 1 && lines[0].length <= TITLE_LINE_MAX ? 1 : 0;
  if (end === 0) n = 0;
  return { title: lines.slice(0, n), body: lines.slice(n) };
}

/** The act's text cut into paragraphs (see the header of this file). Pure: the same text, the same paragraphs. */
export function cutParagraphs(celex: string, reference: string): ActParagraph[] {
  const lines = actLines(celex, reference).body;
  const out: ActParagraph[] = [];
  let section: Section = 'citations';
  let recital: string | null = null;
  let article: string | null = null;
  let para: string | null = null;
  let point: string | null = null;
  let sub: string | null = null;
  let annex: string | null = null;
  let footnote: string | null = null;
  let afterArticle = false;
  let pending: string[] = [];
  let labelled = false;

  const cite = (): string => {
    switch (section) {
      case 'citations':
        return 'citations';
      case 'recitals':
        return recital ? `recital (${recital})` : 'recitals';
      case 'enacting terms': {
        if (!article) return 'enacting terms';
        let c = `Article ${article}${para ? `(${para})` : ''}`;
        if (point) c += para ? `(${point})${sub ? `(${sub})` : ''}` : `, point (${point})${sub ? `(${sub})` : ''}`;
        else if (sub) c += para ? `(${sub})` : `, point (${sub})`;
        return c;
      }
      case 'closing':
        return footnote ? `footnote (${footnote})` : 'closing';
      case 'annex':
        return annex ? `Annex ${annex}` : 'Annex';
    }
  };

  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    if (section !== 'annex') {
      const a = ARTICLE.exec(l);
      if (a) {
        section = 'enacting terms';
        article = a[1];
        para = point = sub = null;
        pending.push(l);
        afterArticle = true;
        continue;
      }
      if (afterArticle && TITLE_LINE(l) && i + 1 < lines.length) {
        pending.push(l);
        afterArticle = false;
        continue;
      }
    }
    afterArticle = false;
    const ax = ANNEX.exec(l);
    if (ax) {
      section = 'annex';
      annex = ax[1] ?? null;
      pending.push(l);
      continue;
    }
    if (DIVISION.test(l)) {
      pending.push(l);
      continue;
    }
    if (RECITALS.test(l) && section !== 'annex') {
      section = 'recitals';
      pending.push(l);
      continue;
    }
    if (LABEL.test(l)) {
      const v = l.replace(/^[‘'"(]/, '').replace(/[.)]$/, '');
      if (section === 'recitals' && /^\d/.test(v)) recital = v;
      else if (section === 'enacting terms') {
        if (/^\d/.test(v) && l.endsWith('.')) (para = v), (point = sub = null);
        else if (/^\d/.test(v)) (point = v), (sub = null);
        else if (/^[a-z]/.test(v)) {
          if (point !== null && /^\d/.test(point)) sub = v; // (2)(a)
          else (point = v), (sub = null);
        }
      }
      pending.push(l);
      labelled = true;
      continue;
    }
    // a content line
    if (DONE_AT.test(l) && section !== 'annex') (section = 'closing'), (footnote = null);
    if (section === 'closing') {
      const f = FOOTNOTE.exec(l);
      footnote = f ? f[1] : footnote;
    }
    if (section === 'enacting terms') {
      const n = NUMBERED.exec(l);
      if (n) (para = n[1]), (point = sub = null);
      else if (!labelled) point = sub = null; // a line without its own label is not a point
    }
    out.push({ pos: out.length + 1, cite: cite(), text: [...pending, l].join('\n') });
    pending = [];
    labelled = false;
  }
  if (pending.length) out.push({ pos: out.length + 1, cite: cite(), text: pending.join('\n') });
  return out;
}

/** The act's title: its title lines joined (free to show: not a paragraph, never sold as one). */
function titleOf(celex: string, reference: string): string {
  const s = actLines(celex, reference).title.join(' ').replace(/\s+/g, ' ').trim();
  if (!s) return `CELEX ${celex}`;
  return s.length > 300 ? `${s.slice(0, 299)}…` : s;
}

export function checkTriplesAct(v: unknown): { ok: true; value: Omit<TriplesAct, 'file' | 'line'> } | { ok: false; reason: string } {
  if (!isObject(v)) return { ok: false, reason: 'expected a JSON object' };
  const { celex_id, reference, tags } = v;
  if (typeof celex_id !== 'string' || !CELEX.test(celex_id)) return { ok: false, reason: `celex_id must be a CELEX number, got ${JSON.stringify(celex_id)}` };
  if (typeof reference !== 'string') return { ok: false, reason: `reference of ${celex_id} must be the act's text` };
  if (!Array.isArray(tags) || !tags.every((t) => typeof t === 'string')) return { ok: false, reason: `tags of ${celex_id} must be an array of EuroVoc labels` };
  const paragraphs = cutParagraphs(celex_id, reference);
  if (paragraphs.length === 0) return { ok: false, reason: `${celex_id} has no text` };
  return { ok: true, value: { celex: celex_id, title: titleOf(celex_id, reference), tags: [...new Set(tags as string[])], paragraphs } };
}

/** The lines of a file, gunzipped when its name ends in .gz. */
export function readTextLines(file: string, readAt?: (bytes: number) => void) {
  if (!file.endsWith('.gz')) return readLines(file);
  const raw = createReadStream(file, { highWaterMark: 1 << 20 });
  if (readAt) raw.on('data', () => readAt(raw.bytesRead)); // beside pipe()'s own listener: it only reads the count
  return splitLines(raw.pipe(createGunzip({ chunkSize: 1 << 20 })));
}

export async function* readEurlexTriples(file: string, displayName: string, onBad: BadRecordHandler, readAt?: (bytes: number) => void): AsyncGenerator<TriplesAct> {
  for await (const l of readTextLines(file, readAt)) {
    const parsed = jsonLine(l);
    if (parsed === null) continue;
    const checked = parsed.ok ? checkTriplesAct(parsed.value) : parsed;
    if (!checked.ok) {
      onBad(new IngestError(displayName, String(l.line), checked.reason));
      continue;
    }
    yield { file: displayName, line: l.line, ...checked.value };
  }
}

/** EuroVoc label -> descriptor id: exact after trimming, case-insensitive (no guessing). */
export const labelKey = (label: string) => label.trim().toLowerCase();

/** The ELI of an act, where the CELEX number gives it (sector 3 directives, regulations, decisions). */
export function eliOf(celex: string): string | undefined {
  const m = /^3(\d{4})([LRD])(\d{4})$/.exec(celex);
  if (!m) return undefined;
  const type = { L: 'dir', R: 'reg', D: 'dec' }[m[2] as 'L' | 'R' | 'D'];
  return `http://data.europa.eu/eli/${type}/${m[1]}/${Number(m[3])}/oj`;
}

/** The CELEX number and EuroVoc labels of every act in a file of this format (for `lds check`: the text is not cut). */
export async function* readTriplesTags(file: string): AsyncGenerator<{ line: number; celex: string; tags: string[] }> {
  for await (const l of readTextLines(file)) {
    // The cut writes celex_id first and tags after the act's text: reading those two alone spares
    // parsing 140 MB of text (`lds check` in 1 CPU-s, not 4); any other shape is parsed whole.
    const head = /^\{"celex_id": ("(?:[^"\\]|\\.)*"), /.exec(l.text);
    const at = l.text.lastIndexOf(', "tags": [');
    const end = at < 0 ? -1 : l.text.indexOf('], "subjects": ', at);
    if (head && end > 0) {
      try {
        const celex: unknown = JSON.parse(head[1]);
        const tags: unknown = JSON.parse(l.text.slice(at + 10, end + 1));
        if (typeof celex === 'string' && Array.isArray(tags)) {
          yield { line: l.line, celex, tags: tags.filter((t): t is string => typeof t === 'string') };
          continue;
        }
      } catch {
        // parsed whole below
      }
    }
    const parsed = jsonLine(l);
    if (parsed === null || !parsed.ok || !isObject(parsed.value)) continue; // the build reports a bad line
    const { celex_id, tags } = parsed.value;
    if (typeof celex_id === 'string' && Array.isArray(tags)) yield { line: l.line, celex: celex_id, tags: tags.filter((t): t is string => typeof t === 'string') };
  }
}
