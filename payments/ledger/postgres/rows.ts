// Rows of the PostgreSQL ledger's tables as the records every backend shares (../records.ts), and
// the two whole-ledger passes over them: a snapshot read in key order (verify, export) and an
// import in multi-row INSERTs. BIGINT arrives as a string; NULL means the optional field is absent.
import type pg from 'pg';
import { K, type BalanceRecord, type CorrectionRecord, type DrawRecord, type EntryRecord, type StatementRecord, type TokenRecord, type TopupRecord } from '../records.ts';

export type Row = Record<string, unknown>;

export function int(x: unknown): number {
  const n = typeof x === 'number' ? x : Number(x);
  if (!Number.isSafeInteger(n)) throw new Error(`ledger: ${String(x)} is not a safe integer`);
  return n;
}

export function balanceOf(r: Row): BalanceRecord {
  return { token_hash: r.token_hash as string, currency: r.currency as string, cents: int(r.cents), created_at: r.created_at as string };
}

export function topupOf(r: Row): TopupRecord {
  return {
    topup_id: r.topup_id as string,
    token_hash: r.token_hash as string,
    amount_cents: int(r.amount_cents),
    currency: r.currency as string,
    processor: r.processor as string,
    challenge_id: r.challenge_id as string,
    payment_ref: r.payment_ref as string,
    created_balance: r.created_balance as boolean,
    balance_after_cents: int(r.balance_after_cents),
    at: r.at as string,
    ...(r.credential_sha256 != null ? { credential_sha256: r.credential_sha256 as string } : {}),
  };
}

export function drawOf(r: Row): DrawRecord {
  return {
    draw_id: r.draw_id as string,
    quote_id: r.quote_id as string,
    token_hash: r.token_hash as string,
    amount_cents: int(r.amount_cents),
    currency: r.currency as string,
    ...(r.product_id != null ? { product_id: r.product_id as string } : {}),
    balance_after_cents: int(r.balance_after_cents),
    at: r.at as string,
    draw: JSON.parse(r.draw as string),
  };
}

export function entryOf(r: Row): EntryRecord {
  return { seq: int(r.seq), txn: r.txn as string, account: r.account as string, cents: int(r.cents), currency: r.currency as string, at: r.at as string };
}

export function correctionOf(r: Row): CorrectionRecord {
  return {
    correction_id: r.correction_id as string,
    kind: r.kind as CorrectionRecord['kind'],
    idempotency_key: r.idempotency_key as string,
    request_sha256: r.request_sha256 as string,
    token_hash: r.token_hash as string,
    amount_cents: int(r.amount_cents),
    currency: r.currency as string,
    reason: r.reason as string,
    balance_after_cents: int(r.balance_after_cents),
    at: r.at as string,
    ...(r.draw_id != null ? { draw_id: r.draw_id as string } : {}),
    ...(r.topup_id != null ? { topup_id: r.topup_id as string } : {}),
    ...(r.processor != null ? { processor: r.processor as string } : {}),
  };
}

export function correctionRow(v: CorrectionRecord | Record<string, unknown>): unknown[] {
  const c = v as Record<string, unknown>;
  return [c.correction_id, c.kind, c.idempotency_key, c.request_sha256, c.token_hash, c.amount_cents, c.currency, c.reason, c.balance_after_cents, c.at, c.draw_id ?? null, c.topup_id ?? null, c.processor ?? null];
}

export function tokenOf(r: Row): TokenRecord {
  return {
    token_hash: r.token_hash as string,
    balance: r.balance as string,
    created_at: r.created_at as string,
    ...(r.revoked_at != null ? { revoked_at: r.revoked_at as string } : {}),
    ...(r.revoked_reason != null ? { revoked_reason: r.revoked_reason as 'rotated' | 'revoked' } : {}),
  };
}

export function statementRow(hash: string, seq: number, v: StatementRecord | Record<string, unknown>): unknown[] {
  const s = v as Record<string, unknown>;
  return [hash, seq, s.kind, s.id, s.amount_cents, s.currency, s.balance_after_cents, s.at, s.quote_id ?? null, s.product_id ?? null, s.reason ?? null, s.draw_id ?? null, s.topup_id ?? null];
}

export function statementOf(r: Row): StatementRecord {
  return {
    kind: r.kind as StatementRecord['kind'],
    id: r.id as string,
    amount_cents: int(r.amount_cents),
    currency: r.currency as string,
    balance_after_cents: int(r.balance_after_cents),
    at: r.at as string,
    ...(r.quote_id != null ? { quote_id: r.quote_id as string } : {}),
    ...(r.product_id != null ? { product_id: r.product_id as string } : {}),
    ...(r.reason != null ? { reason: r.reason as string } : {}),
    ...(r.draw_id != null ? { draw_id: r.draw_id as string } : {}),
    ...(r.topup_id != null ? { topup_id: r.topup_id as string } : {}),
  };
}

// ---- snapshot and import ----

/** Rows per page of a snapshot read. */
const PAGE = 1000;

/** Pages through one table in key order (keyset pagination; the transaction keeps the snapshot). */
async function* pages(client: pg.PoolClient, table: string, keys: string[]): AsyncGenerator<Row> {
  let last: unknown[] | null = null;
  const cols = keys.join(', ');
  for (;;) {
    const where = last ? `WHERE (${cols}) > (${keys.map((_, i) => `$${i + 1}`).join(', ')})` : '';
    const r: pg.QueryResult<Row> = await client.query(`SELECT * FROM ${table} ${where} ORDER BY ${cols} LIMIT ${PAGE}`, last ?? []);
    yield* r.rows;
    if (r.rows.length < PAGE) return;
    const tail = r.rows[r.rows.length - 1];
    last = keys.map((k) => tail[k]);
  }
}

/**
 * Every record under its logical key (records.ts K), exported tables in key order: balances (b:),
 * draws (d:) each followed by its quote claim (q:), entries (e:), statement lines (s:), top-ups (t:)
 * each followed by its challenge and payment claims. In PostgreSQL a claim is the UNIQUE constraint
 * on the record's column, so verify sees it as the record's claim.
 */
export async function* snapshotRecords(client: pg.PoolClient): AsyncGenerator<[string, unknown]> {
  for await (const r of pages(client, 'lds_balances', ['token_hash'])) yield [K.balance(r.token_hash as string), balanceOf(r)];
  for await (const r of pages(client, 'lds_draws', ['draw_id'])) {
    const d = drawOf(r);
    yield [K.draw(d.draw_id), d];
    yield [K.quote(d.quote_id), { draw_id: d.draw_id, token_hash: d.token_hash }];
  }
  for await (const r of pages(client, 'lds_entries', ['seq'])) yield [K.entry(int(r.seq)), entryOf(r)];
  for await (const r of pages(client, 'lds_tokens', ['token_hash'])) yield [K.token(r.token_hash as string), tokenOf(r)];
  for await (const r of pages(client, 'lds_statement', ['token_hash', 'seq'])) yield [K.statement(r.token_hash as string, int(r.seq)), statementOf(r)];
  for await (const r of pages(client, 'lds_topups', ['topup_id'])) {
    const t = topupOf(r);
    yield [K.topup(t.topup_id), t];
    yield [K.challenge(t.challenge_id), { topup_id: t.topup_id }];
    yield [K.payment(t.processor, t.payment_ref), { topup_id: t.topup_id }];
  }
  for await (const r of pages(client, 'lds_corrections', ['correction_id'])) {
    const c = correctionOf(r);
    yield [K.correction(c.correction_id), c];
    yield [K.idempotency(c.idempotency_key), { correction_id: c.correction_id }];
  }
}

/** Multi-row INSERTs per table, flushed parents first (balances before the rows that reference them). */
export class ImportBatches {
  private readonly rows = new Map<string, unknown[][]>();
  private pending = 0;
  maxSeq = 0;

  constructor(private readonly client: pg.PoolClient) {}

  async add(key: string, value: unknown): Promise<void> {
    const v = value as Record<string, unknown>;
    const row = (() => {
      switch (key.slice(0, 2)) {
        case 'b:':
          return ['lds_balances', [v.token_hash, v.currency, v.cents, v.created_at]];
        case 'd:':
          return ['lds_draws', [v.draw_id, v.quote_id, v.token_hash, v.amount_cents, v.currency, v.product_id ?? null, v.balance_after_cents, v.at, JSON.stringify(v.draw ?? null)]];
        case 't:':
          return ['lds_topups', [v.topup_id, v.token_hash, v.amount_cents, v.currency, v.processor, v.challenge_id, v.payment_ref, v.created_balance, v.balance_after_cents, v.at, v.credential_sha256 ?? null]];
        case 'e:':
          this.maxSeq = Math.max(this.maxSeq, v.seq as number);
          return ['lds_entries', [v.seq, v.txn, v.account, v.cents, v.currency, v.at]];
        case 's:':
          return ['lds_statement', statementRow(key.slice(2, key.lastIndexOf(':')), Number(key.slice(key.lastIndexOf(':') + 1)), v)];
        case 'x:':
          return ['lds_corrections', correctionRow(v)];
        case 'k:':
          return ['lds_tokens', [v.token_hash, v.balance, v.created_at, v.revoked_at ?? null, v.revoked_reason ?? null]];
        default:
          return null; // claims: the UNIQUE constraints of the rows above
      }
    })() as [string, unknown[]] | null;
    if (!row) return;
    const list = this.rows.get(row[0]) ?? [];
    list.push(row[1]);
    this.rows.set(row[0], list);
    if (++this.pending >= 500) await this.flush();
  }

  async flush(): Promise<void> {
    for (const table of ['lds_balances', 'lds_draws', 'lds_topups', 'lds_corrections', 'lds_tokens', 'lds_entries', 'lds_statement']) {
      const list = this.rows.get(table);
      if (!list?.length) continue;
      const width = list[0].length;
      const values = list.map((_, i) => `(${Array.from({ length: width }, (_, j) => `$${i * width + j + 1}`).join(', ')})`).join(', ');
      await this.client.query(`INSERT INTO ${table} (${COLUMNS[table]}) VALUES ${values}`, list.flat());
      this.rows.set(table, []);
    }
    this.pending = 0;
  }
}

export const COLUMNS: Record<string, string> = {
  lds_balances: 'token_hash, currency, cents, created_at',
  lds_draws: 'draw_id, quote_id, token_hash, amount_cents, currency, product_id, balance_after_cents, at, draw',
  lds_topups: 'topup_id, token_hash, amount_cents, currency, processor, challenge_id, payment_ref, created_balance, balance_after_cents, at, credential_sha256',
  lds_entries: 'seq, txn, account, cents, currency, at',
  lds_statement: 'token_hash, seq, kind, id, amount_cents, currency, balance_after_cents, at, quote_id, product_id, reason, draw_id, topup_id',
  lds_corrections: 'correction_id, kind, idempotency_key, request_sha256, token_hash, amount_cents, currency, reason, balance_after_cents, at, draw_id, topup_id, processor',
  lds_tokens: 'token_hash, balance, created_at, revoked_at, revoked_reason',
};
