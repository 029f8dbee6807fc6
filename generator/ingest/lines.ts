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
function decode(buf: Buffer, start: number, end: number, line: number): Line {
  const text = buf.toString('utf8', start, end);
  return { line, text, utf8: !text.includes('\uFFFD') || isUtf8(buf.subarray(start, end)) };
}

export async function* readLines(file: string): AsyncGenerator<Line> {
  let line = 0;
  let carry: Buffer | null = null;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    let buf: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    carry = null;
    let start = 0;
    for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
      const end = nl > start && buf[nl - 1] === 13 ? nl - 1 : nl; // tolerate CRLF
      yield decode(buf, start, end, ++line);
      start = nl + 1;
    }
    if (start < buf.length) carry = buf.subarray(start);
    buf = Buffer.alloc(0);
  }
  if (carry && carry.length) {
    const end = carry[carry.length - 1] === 13 ? carry.length - 1 : carry.length;
    yield decode(carry, 0, end, ++line);
  }
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

/**
 * JSON Lines: one parsed value per non-blank line. A line that is not UTF-8 or not JSON goes to
 * onBad with its line number (a truncated file ends in such a line).
 */
export async function* readJsonLines(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<{ line: number; value: unknown }> {
  for await (const { line, text, utf8 } of readLines(file)) {
    if (text.trim() === '') continue; // a trailing blank line is not a record
    if (!utf8) {
      onBad(new IngestError(displayName, String(line), NOT_UTF8));
      continue;
    }
    const parsed = parseJsonLine(text);
    if (!parsed.ok) {
      onBad(new IngestError(displayName, String(line), parsed.reason));
      continue;
    }
    yield { line, value: parsed.value };
  }
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
