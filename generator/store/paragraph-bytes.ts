// The JSON of a P unit made straight from the bytes of its aligned-paragraphs line, for the ingest
// workers: the language versions (nine tenths of a line) are copied as they are instead of being
// decoded, parsed, serialised and encoded again. It handles the plain form such files take (the
// five fields, strings whose escapes are the short ones JSON.stringify writes) and gives up, with
// null, on anything else; the caller then reads the line the ordinary way (alignedParagraphOf,
// paragraphUnit), which also words the errors. So a line handled here gives exactly the bytes of
// JSON.stringify(paragraphUnit(...).unit) (the tests compare the two on every line they have).
// It works on the bytes with plain loops: a line costs a few instructions per byte.
import { isUtf8 } from 'node:buffer';
import { CELEX } from '../ingest/aligned-paragraphs.ts';
import { eurlexUrl } from './units.ts';

const QUOTE = 0x22;
/** The escapes JSON.stringify writes itself (\uXXXX aside): a string holding only these is copied as it is. */
const SHORT_ESCAPE = new Uint8Array(128);
for (const c of '"\\bfnrt') SHORT_ESCAPE[c.charCodeAt(0)] = 1;

export interface ParagraphBytes {
  ref: string;
  celex: string;
  rows: number;
  /** the pivot version's text (what the index reads) */
  pivotText: string;
}

/** Where the unit JSON goes: a buffer that grows, written from `used` on. */
export class ByteSink {
  buf: Buffer;
  used = 0;
  /** A buffer of at least `size` bytes: `reuse` when it is that large. */
  constructor(size: number, reuse: ArrayBuffer | null = null) {
    this.buf = reuse && reuse.byteLength >= size ? Buffer.from(reuse) : Buffer.allocUnsafeSlow(size);
  }
  /** Room for `n` more bytes. */
  reserve(n: number): void {
    if (this.used + n <= this.buf.length) return;
    const next = Buffer.allocUnsafeSlow(Math.max(this.buf.length * 2, this.used + n));
    this.buf.copy(next, 0, 0, this.used);
    this.buf = next;
  }
}

/** A language code (2 or 3 letters a-z) as a number that sorts as the code does; -1 if it is not one. */
function langCode(s: string, start: number, end: number): number {
  const n = end - start;
  if (n !== 2 && n !== 3) return -1;
  let code = 0;
  for (let i = 0; i < 3; i++) {
    const c = i < n ? s.charCodeAt(start + i) : 0;
    if (i < n && !(c >= 0x61 && c <= 0x7a)) return -1;
    code = code * 256 + c;
  }
  return code;
}

/** `{"lang":"xx","kind":"paragraph","text":` of each language code, made once. */
const rowHeads = new Map<number, string>();
function rowHead(code: number): string {
  let h = rowHeads.get(code);
  if (h === undefined) {
    const lang = String.fromCharCode(...[code >> 16, (code >> 8) & 255, code & 255].filter(Boolean));
    rowHeads.set(code, (h = `{"lang":"${lang}","kind":"paragraph","text":`));
  }
  return h;
}

/** The five keys of a line, by their bytes. */
const KEYS = ['celex_id', 'para_idx', 'pivot_lang', 'langs', 'text'];
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u001f]/;

/** Past the JSON white space at p (a tab excepted: such lines go the ordinary way). */
function skipSpace(s: string, p: number): number {
  for (let c = s.charCodeAt(p); c === 0x20 || c === 0x0a || c === 0x0d; c = s.charCodeAt(++p));
  return p;
}

/** Whether the string scanned last held an escape; the next backslash of the line (-1: none). */
let escapedLast = false;
let nextBackslash = -1;

/**
 * The end (after the closing quote) of the string literal at p, or -1 when there is none or it
 * holds an escape other than the short ones. `s` is the line as latin1 (a character per byte),
 * already known to hold no raw control character.
 */
function scanString(s: string, p: number): number {
  if (s.charCodeAt(p) !== QUOTE) return -1;
  let escaped = false;
  let from = p + 1;
  for (;;) {
    const q = s.indexOf('"', from);
    if (q < 0) return -1;
    // each backslash of the line is looked for once, not once per string
    if (nextBackslash >= 0 && nextBackslash < from) nextBackslash = s.indexOf('\\', from);
    if (nextBackslash < 0 || nextBackslash > q) {
      escapedLast = escaped;
      return q + 1;
    }
    const e = s.charCodeAt(nextBackslash + 1);
    if (!(e < 128 && SHORT_ESCAPE[e] === 1)) return -1;
    escaped = true;
    from = nextBackslash + 2;
  }
}

/**
 * The items of the JSON array or object at p (opened by `open`, closed by `close`, separated by
 * commas): item(position) reads one and returns the position after it, or -1. Returns the
 * position after the closing bracket, or -1.
 */
function items(s: string, p: number, open: number, close: number, item: (p: number) => number): number {
  if (s.charCodeAt(p++) !== open) return -1;
  p = skipSpace(s, p);
  if (s.charCodeAt(p) === close) return p + 1;
  for (;;) {
    p = item(skipSpace(s, p));
    if (p < 0) return -1;
    p = skipSpace(s, p);
    const c = s.charCodeAt(p++);
    if (c === close) return p;
    if (c !== 0x2c) return -1;
  }
}

/** The key at [start, end) (its quotes included): its index in KEYS, or -1. */
function keyOf(s: string, start: number, end: number): number {
  const len = end - start - 2;
  for (let k = 0; k < KEYS.length; k++) if (KEYS[k].length === len && s.startsWith(KEYS[k], start + 1)) return k;
  return -1;
}

/**
 * Writes the unit JSON of a line of an aligned paragraphs file into `sink` (from sink.used on,
 * which it advances), or returns null, having written nothing, to read the line the ordinary way.
 */
export function paragraphBytes(b: Buffer, src: { id: string; publisher: string }, sink: ByteSink): ParagraphBytes | null {
  const n = b.length;
  if (!isUtf8(b)) return null;
  const s = b.toString('latin1');
  // a raw control character is not JSON inside a string (the ordinary reader says so), and
  // outside one only as white space: either way, the ordinary way
  if (CONTROL.test(s)) return null;
  nextBackslash = 0;
  let celex: string | null = null;
  let para = -1;
  let pivot = -1;
  const langs: number[] = [];
  let sawLangs = false;
  const texts: number[] = []; // code, start, end of each text literal
  let sawText = false;
  /** A language code string at p: its end, or -1; the code in `code`. */
  let code = -1;
  const lang = (p: number): number => {
    const end = scanString(s, p);
    code = end < 0 ? -1 : langCode(s, p + 1, end - 1);
    return code < 0 ? -1 : end;
  };
  const field = (p: number): number => {
    const k0 = p;
    p = scanString(s, p);
    if (p < 0 || escapedLast) return -1;
    const key = keyOf(s, k0, p);
    p = skipSpace(s, p);
    if (s.charCodeAt(p++) !== 0x3a) return -1;
    p = skipSpace(s, p);
    const v0 = p;
    if (key === 0 && celex === null) {
      p = scanString(s, p);
      if (p < 0 || escapedLast) return -1;
      celex = s.slice(v0 + 1, p - 1);
      return CELEX.test(celex) ? p : -1;
    }
    if (key === 1 && para < 0) {
      for (let c = s.charCodeAt(p); c >= 0x30 && c <= 0x39; c = s.charCodeAt(++p));
      const after = s.charCodeAt(p);
      if (p === v0 || p - v0 > 15 || (s.charCodeAt(v0) === 0x30 && p - v0 > 1) || after === 0x2e || after === 0x65 || after === 0x45) return -1;
      para = Number(s.slice(v0, p));
      return p;
    }
    if (key === 2 && pivot < 0) {
      p = lang(p);
      pivot = code;
      return p;
    }
    if (key === 3 && !sawLangs) {
      sawLangs = true;
      return items(s, p, 0x5b, 0x5d, (q) => {
        q = lang(q);
        if (q >= 0) langs.push(code);
        return q;
      });
    }
    if (key === 4 && !sawText) {
      sawText = true;
      return items(s, p, 0x7b, 0x7d, (q) => {
        q = lang(q);
        if (q < 0) return -1;
        for (let i = 0; i < texts.length; i += 3) if (texts[i] === code) return -1; // given twice
        const c = code;
        q = skipSpace(s, q);
        if (s.charCodeAt(q++) !== 0x3a) return -1;
        const t0 = skipSpace(s, q);
        q = scanString(s, t0);
        if (q >= 0) texts.push(c, t0, q);
        return q;
      });
    }
    return -1; // another key, or one given twice
  };
  const end = items(s, skipSpace(s, 0), 0x7b, 0x7d, field);
  if (end < 0 || skipSpace(s, end) !== n || celex === null || para < 0 || pivot < 0 || !sawLangs || !sawText) return null;

  // what checkAlignedParagraph requires, else the ordinary reader words the error: every listed
  // language has a text and every text a listed language, and the pivot is one of them
  const versions = [...new Set(langs)].sort((x, y) => x - y);
  if (versions.length !== texts.length / 3 || !versions.includes(pivot)) return null;
  const textAt = (code: number) => {
    for (let i = 0; i < texts.length; i += 3) if (texts[i] === code) return i;
    return -1;
  };
  if (versions.some((code) => textAt(code) < 0)) return null;

  const ref = `${src.id}:${celex}/${para}`;
  const head =
    `{"ref":${JSON.stringify(ref)},"source":${JSON.stringify(src.id)},"kind":"P","citation":{"label":${JSON.stringify(`CELEX ${celex}, paragraph ${para}`)},` +
    `"publisher":${JSON.stringify(src.publisher)},"celex":${JSON.stringify(celex)},"para":${para},"url":${JSON.stringify(eurlexUrl(celex))}},"rows":[`;
  // The JSON as a latin1 string (a character per byte: the head's UTF-8 bytes, then the line's own
  // bytes of each text), written with one call: cheaper than a copy per language.
  let json = Buffer.byteLength(head, 'utf8') === head.length ? head : Buffer.from(head, 'utf8').toString('latin1');
  for (let v = 0; v < versions.length; v++) {
    const i = textAt(versions[v]);
    json += (v === 0 ? '' : ',') + rowHead(versions[v]) + s.slice(texts[i + 1], texts[i + 2]) + '}';
  }
  json += ']}';
  sink.reserve(json.length);
  sink.used += sink.buf.write(json, sink.used, 'latin1');
  const i = textAt(pivot);
  const raw = b.toString('utf8', texts[i + 1], texts[i + 2]);
  return { ref, celex, rows: versions.length, pivotText: raw.includes('\\') ? (JSON.parse(raw) as string) : raw.slice(1, -1) };
}
