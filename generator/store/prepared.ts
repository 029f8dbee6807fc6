// A unit ready to be stored: its reference, its JSON, and the terms of its searchable text. The
// store build makes one from every BuiltUnit an adapter yields (prepare, on the main thread), and
// the ingest workers make them from the lines of large JSON Lines files (ingest-worker.ts), so the
// costly part of a unit (serialising it, cutting its text into terms) runs on every core.
import { hash } from 'node:crypto';
import type { IndexWriter } from './index-writer.ts';
import type { BuiltUnit, StoredUnitBody } from './units.ts';

export interface PreparedUnit {
  ref: string;
  /** JSON.stringify(unit), as a string or as its UTF-8 bytes */
  json: string | Uint8Array;
  /** SHA-256 of those bytes: the store version is a hash of these (build-store.ts) */
  digest: Uint8Array;
  rows: number;
  /** the document it belongs to (previews show one unit per group) */
  group: string;
  /** the unit itself, for the few a preview shows (parsed again only for those) */
  unit: () => StoredUnitBody;
  /** the distinct terms of its searchable text as index term ids, with their counts: termIds[termStart .. termEnd) */
  termIds: Uint32Array;
  tfs: Uint32Array;
  termStart: number;
  termEnd: number;
  /** its searchable text's token count */
  dl: number;
}

/** Prepares an adapter's unit on the main thread; its term arrays are valid until the next call. */
export function prepare(b: BuiltUnit, index: IndexWriter): PreparedUnit {
  const { ids, tfs, n, dl } = index.termsOf(b.searchText);
  const json = JSON.stringify(b.unit);
  return { ref: b.unit.ref, json, digest: hash('sha256', json, 'buffer'), rows: b.unit.rows.length, group: b.group ?? b.unit.ref, unit: () => b.unit, termIds: ids, tfs, termStart: 0, termEnd: n, dl };
}
