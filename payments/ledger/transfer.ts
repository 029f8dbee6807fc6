// `ledger export` / `ledger import`: the whole ledger as newline-delimited JSON, the same for every
// backend, so a seller can back up, restore, and move from LevelDB to PostgreSQL.
//
// Format (version 1), one RFC 8785 canonical JSON object per line, in this order:
//   {"format":"lds-ledger","type":"header","version":1}
//   {"type":"account", ...BalanceRecord}   per balance, by token_hash   (the account's stored state)
//   {"type":"draw", ...DrawRecord}         per draw, by draw_id          (claims its quote_id)
//   {"type":"entry", ...EntryRecord}       per double-entry line, by seq
//   {"type":"token", ...TokenRecord}       per rotated or revoked token, by token_hash   (version 2)
//   {"type":"topup", ...TopupRecord}       per top-up, by topup_id       (claims its challenge and payment)
//   {"type":"correction", ...CorrectionRecord} per refund or adjustment, by correction_id (claims its idempotency key; version 2)
//   {"type":"footer","accounts":n,"corrections":n,"draws":n,"entries":n,"tokens":n,"topups":n}
// Version 2 added tokens and corrections; a version 1 export (no such lines) still imports.
// Claims are the quote_id / challenge_id / payment_ref of the records (UNIQUE in PostgreSQL, `q:`
// `c:` `p:` keys in LevelDB); statements are derived from the records and rebuilt on import. Nothing
// in the export depends on the backend or the time of export, so export → import → export gives
// identical bytes. The footer makes a truncated file fail before anything is written.
import canonicalize from 'canonicalize';
import { K, PREFIX, correctionStatementLine, statementLine, type BalanceRecord, type ClaimRecord, type CorrectionRecord, type DrawRecord, type EntryRecord, type TokenRecord, type TopupRecord } from './records.ts';
import type { ImportRecord, LedgerRecords } from './ledger.ts';

export const EXPORT_FORMAT = 'lds-ledger';
export const EXPORT_VERSION = 2;
const READABLE_VERSIONS = [1, 2];

type Counts = { accounts: number; corrections: number; draws: number; entries: number; tokens: number; topups: number };
const zeroCounts = (): Counts => ({ accounts: 0, corrections: 0, draws: 0, entries: 0, tokens: 0, topups: 0 });

const canonical = (v: unknown) => (canonicalize as unknown as (v: unknown) => string)(v);

/** Which line type each exported key prefix becomes (claims and statements are derived, not exported). */
const EXPORTED: Record<string, ImportRecord['type']> = {
  [PREFIX.balance]: 'account',
  [PREFIX.draw]: 'draw',
  [PREFIX.entry]: 'entry',
  [PREFIX.token]: 'token',
  [PREFIX.topup]: 'topup',
  [PREFIX.correction]: 'correction',
};
/** Key order of the prefixes (b: d: e: k: t: x:), which is the order a snapshot yields them. */
const TYPE_ORDER: ImportRecord['type'][] = ['account', 'draw', 'entry', 'token', 'topup', 'correction'];
const COUNT_OF: Record<ImportRecord['type'], keyof Counts> = { account: 'accounts', draw: 'draws', entry: 'entries', token: 'tokens', topup: 'topups', correction: 'corrections' };

/** Writes the export of a snapshot (Ledger.readSnapshot) through `write`, one line per call. */
export async function writeExport(records: LedgerRecords, write: (line: string) => void | Promise<void>): Promise<Counts> {
  const counts = zeroCounts();
  await write(canonical({ format: EXPORT_FORMAT, type: 'header', version: EXPORT_VERSION }) + '\n');
  for await (const [key, value] of records) {
    const type = EXPORTED[key.slice(0, 2)];
    if (!type) continue;
    const v = { ...(value as Record<string, unknown>) };
    if (type === 'account') delete v.last_seq; // LevelDB bookkeeping, not part of the account's state
    await write(canonical({ type, ...v }) + '\n');
    counts[COUNT_OF[type]]++;
  }
  await write(canonical({ type: 'footer', ...counts }) + '\n');
  return counts;
}

export class ImportFormatError extends Error {}

/**
 * Reads and checks an export, line by line; yields nothing until the whole file has been checked
 * (shape of every record, order, footer counts), so a damaged or truncated file imports nothing.
 * Records are kept in memory between the check and the yield: a ledger export is small next to the
 * unit store (hundreds of bytes per paid draw).
 */
export async function* readExport(lines: AsyncIterable<string>): AsyncGenerator<ImportRecord> {
  const out: ImportRecord[] = [];
  const counts = zeroCounts();
  let version = 0;
  let n = 0;
  let header = false;
  let footer: Record<string, unknown> | null = null;
  let lastType = -1;
  let lastKey = '';
  const fail = (msg: string): never => {
    throw new ImportFormatError(`line ${n}: ${msg}`);
  };
  for await (const raw of lines) {
    n++;
    const line = raw.trim();
    if (line === '') continue;
    if (footer) fail('content after the footer');
    let v: Record<string, unknown>;
    try {
      v = JSON.parse(line);
    } catch {
      return fail('not JSON');
    }
    if (!v || typeof v !== 'object' || Array.isArray(v)) fail('not a JSON object');
    if (!header) {
      if (v.type !== 'header' || v.format !== EXPORT_FORMAT) fail(`not a ledger export (expected a ${EXPORT_FORMAT} header)`);
      if (!READABLE_VERSIONS.includes(v.version as number)) fail(`export version ${String(v.version)} is not supported (this service reads versions ${READABLE_VERSIONS.join(' and ')})`);
      version = v.version as number;
      header = true;
      continue;
    }
    if (v.type === 'footer') {
      footer = v;
      continue;
    }
    const { type, ...value } = v;
    const order = TYPE_ORDER.indexOf(type as ImportRecord['type']);
    if (order < 0) fail(`unknown record type ${JSON.stringify(type)}`);
    const rec = checkRecord(type as ImportRecord['type'], value, fail);
    const key = keyOf(rec);
    if (order < lastType || (order === lastType && !(key > lastKey))) fail(`records out of order at ${key}`);
    lastType = order;
    lastKey = key;
    counts[COUNT_OF[rec.type]]++;
    out.push(rec);
  }
  if (!header) throw new ImportFormatError('empty file: not a ledger export');
  if (!footer) throw new ImportFormatError(`no footer after line ${n}: the export is truncated`);
  for (const k of Object.keys(counts) as (keyof Counts)[]) {
    if (version === 1 && (k === 'tokens' || k === 'corrections') && footer[k] === undefined && counts[k] === 0) continue;
    if (footer[k] !== counts[k]) throw new ImportFormatError(`the footer says ${String(footer[k])} ${k} but the file holds ${counts[k]}: the export is damaged`);
  }
  yield* out;
}

function keyOf(r: ImportRecord): string {
  switch (r.type) {
    case 'account':
      return K.balance(r.value.token_hash);
    case 'draw':
      return K.draw(r.value.draw_id);
    case 'entry':
      return K.entry(r.value.seq);
    case 'topup':
      return K.topup(r.value.topup_id);
    case 'token':
      return K.token(r.value.token_hash);
    case 'correction':
      return K.correction(r.value.correction_id);
  }
}

const str = (x: unknown) => typeof x === 'string' && x.length > 0 && x.length <= 512;
const int = (x: unknown, min: number) => Number.isSafeInteger(x) && (x as number) >= min;

function checkRecord(type: ImportRecord['type'], v: Record<string, unknown>, fail: (m: string) => never): ImportRecord {
  const need = (ok: boolean, field: string) => ok || fail(`${type} record: ${field} is missing or invalid`);
  if (type === 'token') {
    for (const f of ['token_hash', 'balance']) need(typeof v[f] === 'string' && /^[0-9a-f]{64}$/.test(v[f] as string), f);
    need(str(v.created_at), 'created_at');
    need(v.revoked_at === undefined || str(v.revoked_at), 'revoked_at');
    need(v.revoked_reason === undefined || v.revoked_reason === 'rotated' || v.revoked_reason === 'revoked', 'revoked_reason');
    return { type, value: v as unknown as TokenRecord };
  }
  need(str(v.currency) && /^[A-Z]{3}$/.test(v.currency as string), 'currency');
  switch (type) {
    case 'account':
      need(typeof v.token_hash === 'string' && /^[0-9a-f]{64}$/.test(v.token_hash), 'token_hash');
      need(int(v.cents, 0), 'cents');
      need(str(v.created_at), 'created_at');
      return { type, value: v as unknown as BalanceRecord };
    case 'draw':
      for (const f of ['draw_id', 'quote_id', 'token_hash', 'at']) need(str(v[f]), f);
      need(int(v.amount_cents, 1), 'amount_cents');
      need(int(v.balance_after_cents, 0), 'balance_after_cents');
      need(v.product_id === undefined || str(v.product_id), 'product_id');
      need('draw' in v, 'draw');
      return { type, value: v as unknown as DrawRecord };
    case 'entry':
      need(int(v.seq, 1), 'seq');
      for (const f of ['txn', 'account', 'at']) need(str(v[f]), f);
      need(Number.isSafeInteger(v.cents), 'cents');
      return { type, value: v as unknown as EntryRecord };
    case 'topup':
      for (const f of ['topup_id', 'token_hash', 'processor', 'challenge_id', 'payment_ref', 'at']) need(str(v[f]), f);
      need(int(v.amount_cents, 1), 'amount_cents');
      need(int(v.balance_after_cents, 0), 'balance_after_cents');
      need(typeof v.created_balance === 'boolean', 'created_balance');
      need(v.credential_sha256 === undefined || str(v.credential_sha256), 'credential_sha256');
      return { type, value: v as unknown as TopupRecord };
    case 'correction':
      for (const f of ['correction_id', 'idempotency_key', 'request_sha256', 'token_hash', 'reason', 'at']) need(str(v[f]), f);
      need(['refund', 'credit', 'debit', 'topup_refund'].includes(v.kind as string), 'kind');
      need(int(v.amount_cents, 1), 'amount_cents');
      need(int(v.balance_after_cents, 0), 'balance_after_cents');
      for (const f of ['draw_id', 'topup_id', 'processor']) need(v[f] === undefined || str(v[f]), f);
      return { type, value: v as unknown as CorrectionRecord };
  }
  return fail(`unknown record type ${type}`);
}

/**
 * Everything an import writes, as [logical key, value]: each record, its claims, and the statement
 * line of each balance entry (records.ts statementLine), the same derivation for every backend.
 * In export order a draw precedes its entries and a top-up follows them, so top-up balance
 * entries wait in a map until their record arrives.
 */
export async function* importWrites(records: AsyncIterable<ImportRecord>): AsyncGenerator<[string, unknown]> {
  const draws = new Map<string, DrawRecord>();
  const topupBalanceEntry = new Map<string, EntryRecord>();
  const correctionBalanceEntry = new Map<string, EntryRecord>();
  for await (const r of records) {
    switch (r.type) {
      case 'account':
        yield [K.balance(r.value.token_hash), r.value];
        break;
      case 'draw':
        draws.set(r.value.draw_id, r.value);
        yield [K.draw(r.value.draw_id), r.value];
        yield [K.quote(r.value.quote_id), { draw_id: r.value.draw_id, token_hash: r.value.token_hash } satisfies ClaimRecord];
        break;
      case 'entry': {
        const e = r.value;
        yield [K.entry(e.seq), e];
        if (!e.account.startsWith('balance:')) break;
        const i = e.txn.indexOf(':');
        const [kind, id] = [e.txn.slice(0, i), e.txn.slice(i + 1)];
        const hash = e.account.slice('balance:'.length);
        const d = kind === 'draw' ? draws.get(id) : undefined;
        if (d) yield [K.statement(hash, e.seq), statementLine({ kind: 'draw', ...d })];
        else if (kind === 'topup') topupBalanceEntry.set(id, e);
        else if (kind === 'correction') correctionBalanceEntry.set(id, e);
        break;
      }
      case 'token':
        yield [K.token(r.value.token_hash), r.value];
        break;
      case 'correction': {
        const c = r.value;
        yield [K.correction(c.correction_id), c];
        yield [K.idempotency(c.idempotency_key), { correction_id: c.correction_id }];
        const e = correctionBalanceEntry.get(c.correction_id);
        if (e) yield [K.statement(c.token_hash, e.seq), correctionStatementLine(c)];
        break;
      }
      case 'topup': {
        const t = r.value;
        yield [K.topup(t.topup_id), t];
        yield [K.challenge(t.challenge_id), { topup_id: t.topup_id } satisfies ClaimRecord];
        yield [K.payment(t.processor, t.payment_ref), { topup_id: t.topup_id } satisfies ClaimRecord];
        const e = topupBalanceEntry.get(t.topup_id);
        if (e) yield [K.statement(t.token_hash, e.seq), statementLine({ kind: 'topup', ...t })];
        break;
      }
    }
  }
}
