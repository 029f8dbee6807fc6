// A worker thread of the store build (parallel-lines.ts): turns blocks of lines of an aligned
// paragraphs file into prepared units (prepared.ts): each line checked exactly as the sequential
// reader checks it (alignedParagraphOf), its unit built, serialised and its searchable text cut
// into terms. Term ids are the worker's own; each answer lists the terms it saw first, in id
// order, so the main thread can map them to the index's ids.
import { hash } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { tokenize } from '../../contract/store-format.ts';
import { alignedParagraphOf } from '../ingest/aligned-paragraphs.ts';
import { decodeLine } from '../ingest/lines.ts';
import type { Source } from '../model.ts';
import type { BlockAnswer, LineJob } from './parallel-lines.ts';
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

function answer(block: Buffer, last: boolean): { answer: BlockAnswer; transfer: ArrayBuffer[] } {
  let json = Buffer.allocUnsafeSlow(Math.max(1 << 16, block.length * 2));
  let used = 0;
  const a: BlockAnswer = { lines: 0, items: 0, line: [], reason: [], ref: [], celex: [], json: new Uint8Array(0), jsonEnd: new Uint32Array(0), digests: new Uint8Array(0), rows: new Uint32Array(0), dl: new Uint32Array(0), termEnd: new Uint32Array(0), terms: new Uint32Array(0), tfs: new Uint32Array(0), newTerms: [] };
  const jsonEnd = new U32();
  let digests = new Uint8Array(32 * 1024);
  const digest = (d: Uint8Array | null) => {
    if (32 * a.items > digests.length) {
      const next = new Uint8Array(digests.length * 2);
      next.set(digests);
      digests = next;
    }
    if (d) digests.set(d, 32 * (a.items - 1));
  };
  const rows = new U32();
  const dl = new U32();
  const termEnd = new U32();
  const terms = new U32();
  const tfs = new U32();
  const item = (line: number, reason: string | null) => {
    a.line.push(line);
    a.reason.push(reason);
    a.items++;
  };
  for (let start = 0; start < block.length; ) {
    let nl = block.indexOf(10, start);
    if (nl === -1) {
      if (!last) throw new Error('ingest worker: a block must end with a newline');
      nl = block.length;
    }
    const l = decodeLine(block, start, nl, ++a.lines);
    start = nl + 1;
    const p = alignedParagraphOf(l, job.displayName);
    if (p === null) continue;
    if (!p.ok) {
      item(l.line, p.reason);
      digest(null);
      a.ref.push('');
      a.celex.push('');
      jsonEnd.push(used);
      rows.push(0);
      dl.push(0);
      termEnd.push(terms.n);
      continue;
    }
    const b = make(src, p.value);
    item(l.line, null);
    a.ref.push(b.unit.ref);
    a.celex.push(p.value.celex);
    const s = JSON.stringify(b.unit);
    if (used + s.length * 3 > json.length) {
      const next = Buffer.allocUnsafeSlow(Math.max(json.length * 2, used + s.length * 3));
      json.copy(next, 0, 0, used);
      json = next;
    }
    const from = used;
    used += json.write(s, used, 'utf8');
    jsonEnd.push(used);
    digest(hash('sha256', json.subarray(from, used), 'buffer'));
    rows.push(b.unit.rows.length);
    const tokens = tokenize(b.searchText);
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
  }
  a.json = new Uint8Array(json.buffer, 0, used);
  a.digests = digests.slice(0, 32 * a.items);
  a.jsonEnd = jsonEnd.done();
  a.rows = rows.done();
  a.dl = dl.done();
  a.termEnd = termEnd.done();
  a.terms = terms.done();
  a.tfs = tfs.done();
  return { answer: a, transfer: [json.buffer as ArrayBuffer, a.digests.buffer as ArrayBuffer, a.jsonEnd.buffer as ArrayBuffer, a.rows.buffer as ArrayBuffer, a.dl.buffer as ArrayBuffer, a.termEnd.buffer as ArrayBuffer, a.terms.buffer as ArrayBuffer, a.tfs.buffer as ArrayBuffer] };
}

parentPort!.on('message', (m: { block: Uint8Array; last: boolean }) => {
  const { answer: a, transfer } = answer(Buffer.from(m.block.buffer, m.block.byteOffset, m.block.byteLength), m.last);
  parentPort!.postMessage(a, transfer);
});
