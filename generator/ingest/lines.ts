// Streams a text file line by line with 1-based line numbers; memory use is one read chunk plus
// one line. Lines are split on "\n" in the raw bytes (a UTF-8 continuation byte is never 0x0A)
// and decoded one at a time, which is markedly faster than readline on multi-GB exports.
import { isUtf8 } from 'node:buffer';
import { createReadStream } from 'node:fs';
import { type BadRecordHandler, IngestError } from './errors.ts';

export interface Line {
  line: number;
  text: string;
  /** false when the line's bytes are not valid UTF-8 (text then holds U+FFFD replacements) */
  utf8: boolean;
}

// Decoding replaces invalid bytes with U+FFFD; only a line that shows one needs the exact check.
export function decodeLine(buf: Buffer, start: number, end: number, line: number): Line {
  if (end > start && buf[end - 1] === 13) end--; // tolerate CRLF
  const text = buf.toString('utf8', start, end);
  return { line, text, utf8: !text.includes('\uFFFD') || isUtf8(buf.subarray(start, end)) };
}

export function readLines(file: string): AsyncGenerator<Line> {
  return splitLines(createReadStream(file, { highWaterMark: 1 << 20 }));
}

/** The lines of a byte stream (a file, or a gunzip of one). */
export async function* splitLines(bytes: AsyncIterable<Buffer>): AsyncGenerator<Line> {
  let line = 0;
  let carry: Buffer | null = null;
  for await (const chunk of bytes) {
    let start = 0;
    let nl = chunk.indexOf(10);
    if (carry && nl !== -1) {
      // the line that spans the two chunks: join only its bytes
      const joined = Buffer.concat([carry, chunk.subarray(0, nl)]);
      yield decodeLine(joined, 0, joined.length, ++line);
      carry = null;
      start = nl + 1;
      nl = chunk.indexOf(10, start);
    }
    for (; nl !== -1; nl = chunk.indexOf(10, start)) {
      yield decodeLine(chunk, start, nl, ++line);
      start = nl + 1;
    }
    if (start < chunk.length) carry = carry ? Buffer.concat([carry, chunk]) : chunk.subarray(start);
  }
  if (carry && carry.length) yield decodeLine(carry, 0, carry.length, ++line);
}

/** Parses one JSON line; a syntax error becomes a located IngestError message. */
export function parseJsonLine(text: string): { ok: true; value: unknown } | { ok: false; reason: string } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (err) {
    return { ok: false, reason: `invalid JSON: ${(err as Error).message}` };
  }
}

export const NOT_UTF8 = 'not valid UTF-8 (the file must be UTF-8 encoded)';

/** One line of a JSON Lines file: a value, nothing (a blank line is not a record), or why it is bad. */
export function jsonLine({ text, utf8 }: Line): { ok: true; value: unknown } | { ok: false; reason: string } | null {
  if (text.trim() === '') return null; // a trailing blank line is not a record
  if (!utf8) return { ok: false, reason: NOT_UTF8 };
  return parseJsonLine(text);
}

/**
 * JSON Lines: one parsed value per non-blank line. A line that is not UTF-8 or not JSON goes to
 * onBad with its line number (a truncated file ends in such a line).
 */
export async function* readJsonLines(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<{ line: number; value: unknown }> {
  for await (const l of readLines(file)) {
    const parsed = jsonLine(l);
    if (parsed === null) continue;
    if (!parsed.ok) {
      onBad(new IngestError(displayName, String(l.line), parsed.reason));
      continue;
    }
    yield { line: l.line, value: parsed.value };
  }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
