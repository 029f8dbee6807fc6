// A worker thread of the store build (parallel-lines.ts): turns blocks of lines of an aligned
// paragraphs file into prepared units (prepared.ts): a line in the plain form straight from its
// bytes (paragraph-bytes.ts), any other checked exactly as the sequential reader checks it
// (alignedParagraphOf), its unit built and serialised; then its JSON hashed and its searchable
// text cut into terms. Term ids are the worker's own; each answer lists the terms it saw first, in
// id order, so the main thread can map them to the index's ids.
import { hash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { tokenize } from '../../contract/store-format.ts';
import { alignedParagraphOf } from '../ingest/aligned-paragraphs.ts';
import { decodeLine } from '../ingest/lines.ts';
import type { Source } from '../model.ts';
import type { BlockAnswer, LineJob } from './parallel-lines.ts';
import { ByteSink, paragraphBytes } from './paragraph-bytes.ts';
import { alignedRowUnit, paragraphUnit } from './units.ts';

const job = workerData as LineJob;
const make = job.adapter === 'aligned-paragraphs' ? paragraphUnit : alignedRowUnit;
const src = job.src as Source;
const vocab = new Map<string, number>();
/** Per worker term id: its count in the unit being cut (zero between units). */
let tfOf = new Uint32Array(1 << 16);
const grow = (a: Uint32Array) => {
  const next = new Uint32Array(a.length * 2);
  next.set(a);
  return next;
};

/** A growable array of u32. */
class U32 {
  a = new Uint32Array(4096);
  n = 0;
  push(v: number): void {
    if (this.n === this.a.length) {
      const next = new Uint32Array(this.a.length * 2);
      next.set(this.a);
      this.a = next;
    }
    this.a[this.n++] = v;
  }
  done(): Uint32Array {
    return this.a.slice(0, this.n);
  }
}

/** A growable byte array of 32-byte digests. */
class Bytes {
  a = new Uint8Array(32 * 1024);
  n = 0;
  push(d: Uint8Array): void {
    if (this.n + d.length > this.a.length) {
      const next = new Uint8Array(this.a.length * 2);
      next.set(this.a);
      this.a = next;
    }
    this.a.set(d, this.n);
    this.n += d.length;
  }
  done(): Uint8Array {
    return this.a.slice(0, this.n);
  }
}

const ZERO = new Uint8Array(32);

function answer(block: Buffer, last: boolean, sink: ArrayBuffer | null): { answer: BlockAnswer; transfer: ArrayBuffer[] } {
  const json = new ByteSink(Math.max(1 << 16, block.length + (block.length >> 2)), sink);
  const a: BlockAnswer = { spare: null, lines: 0, items: 0, line: [], reason: [], ref: [], celex: [], json: new Uint8Array(0), jsonEnd: new Uint32Array(0), digests: new Uint8Array(0), rows: new Uint32Array(0), dl: new Uint32Array(0), termEnd: new Uint32Array(0), terms: new Uint32Array(0), tfs: new Uint32Array(0), newTerms: [] };
  const jsonEnd = new U32();
  const digests = new Bytes();
  const rows = new U32();
  const dl = new U32();
  const termEnd = new U32();
  const terms = new U32();
  const tfs = new U32();
  /** One item: a unit (its JSON just written to `json`) or a bad line. */
  const item = (line: number, reason: string | null, ref: string, celex: string, rowCount: number, text: string) => {
    a.line.push(line);
    a.reason.push(reason);
    a.ref.push(ref);
    a.celex.push(celex);
    a.items++;
    const from = jsonEnd.n ? jsonEnd.a[jsonEnd.n - 1] : 0;
    jsonEnd.push(json.used);
    digests.push(reason === null ? hash('sha256', json.buf.subarray(from, json.used), 'buffer') : ZERO);
    rows.push(rowCount);
    const tokens = reason === null ? tokenize(text) : [];
    dl.push(tokens.length);
    const first = terms.n;
    for (const t of tokens) {
      let id = vocab.get(t);
      if (id === undefined) {
        id = vocab.size;
        vocab.set(t, id);
        a.newTerms.push(t);
        if (id === tfOf.length) tfOf = grow(tfOf);
      }
      if (tfOf[id]++ === 0) terms.push(id);
    }
    for (let i = first; i < terms.n; i++) {
      tfs.push(tfOf[terms.a[i]]);
      tfOf[terms.a[i]] = 0;
    }
    termEnd.push(terms.n);
  };
  for (let start = 0; start < block.length; ) {
    let nl = block.indexOf(10, start);
    if (nl === -1) {
      if (!last) throw new Error('ingest worker: a block must end with a newline');
      nl = block.length;
    }
    const line = ++a.lines;
    const end = nl > start && block[nl - 1] === 13 ? nl - 1 : nl; // tolerate CRLF, as decodeLine does
    const bytes = block.subarray(start, end);
    start = nl + 1;
    // the plain form straight from the bytes; anything else the ordinary way
    const fast = job.adapter === 'aligned-paragraphs' ? paragraphBytes(bytes, src, json) : null;
    if (fast) {
      item(line, null, fast.ref, fast.celex, fast.rows, fast.pivotText);
      continue;
    }
    const p = alignedParagraphOf(decodeLine(bytes, 0, bytes.length, line), job.displayName);
    if (p === null) continue;
    if (!p.ok) {
      item(line, p.reason, '', '', 0, '');
      continue;
    }
    const b = make(src, p.value);
    const s = JSON.stringify(b.unit);
    json.reserve(s.length * 3);
    json.used += json.buf.write(s, json.used, 'utf8');
    item(line, null, b.unit.ref, p.value.celex, b.unit.rows.length, b.searchText);
  }
  a.json = new Uint8Array(json.buf.buffer, json.buf.byteOffset, json.used);
  a.jsonEnd = jsonEnd.done();
  a.digests = digests.done();
  a.rows = rows.done();
  a.dl = dl.done();
  a.termEnd = termEnd.done();
  a.terms = terms.done();
  a.tfs = tfs.done();
  return { answer: a, transfer: [json.buf.buffer as ArrayBuffer, a.digests.buffer as ArrayBuffer, a.jsonEnd.buffer as ArrayBuffer, a.rows.buffer as ArrayBuffer, a.dl.buffer as ArrayBuffer, a.termEnd.buffer as ArrayBuffer, a.terms.buffer as ArrayBuffer, a.tfs.buffer as ArrayBuffer] };
}

parentPort!.on('message', (m: { block: Uint8Array; last: boolean; sink: ArrayBuffer | null }) => {
  const { answer: a, transfer } = answer(Buffer.from(m.block.buffer, m.block.byteOffset, m.block.byteLength), m.last, m.sink);
  // the block's buffer goes back too, to be read into again
  a.spare = m.block.buffer as ArrayBuffer;
  parentPort!.postMessage(a, [...transfer, a.spare]);
});
