// Streams a text file line by line with 1-based line numbers; memory use is one read chunk plus
// one line. Lines are split on "\n" in the raw bytes (a UTF-8 continuation byte is never 0x0A)
// and decoded one at a time, which is markedly faster than readline on multi-GB exports.
import { createReadStream } from 'node:fs';

export async function* readLines(file: string): AsyncGenerator<{ line: number; text: string }> {
  let line = 0;
  let carry: Buffer | null = null;
  for await (const chunk of createReadStream(file, { highWaterMark: 1 << 20 }) as AsyncIterable<Buffer>) {
    let buf: Buffer = carry ? Buffer.concat([carry, chunk]) : chunk;
    carry = null;
    let start = 0;
    for (let nl = buf.indexOf(10, start); nl !== -1; nl = buf.indexOf(10, start)) {
      const end = nl > start && buf[nl - 1] === 13 ? nl - 1 : nl; // tolerate CRLF
      line++;
      yield { line, text: buf.toString('utf8', start, end) };
      start = nl + 1;
    }
    if (start < buf.length) carry = buf.subarray(start);
    buf = Buffer.alloc(0);
  }
  if (carry && carry.length) {
    line++;
    const end = carry[carry.length - 1] === 13 ? carry.length - 1 : carry.length;
    yield { line, text: carry.toString('utf8', 0, end) };
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

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
