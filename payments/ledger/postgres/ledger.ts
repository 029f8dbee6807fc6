// The PostgreSQL ledger (LDS_LEDGER_URL=postgres://...): the same records and guarantees as the
// LevelDB ledger, shared by any number of stateless service instances.
//
// Each state change is ONE SQL statement (data-modifying CTEs), so it is one implicit transaction
// and one round trip:
//   - the balance moves first (UPDATE ... WHERE cents >= amount, or INSERT of a new balance), which
//     takes the balance's row lock, so every later part of the statement - the entry sequence
//     numbers included - is ordered after any earlier change of that balance;
//   - the business record is inserted next: its UNIQUE claim (quote, challenge, payment) makes a
//     duplicate fail the whole statement, debit included, even when it comes from another instance;
//   - then the two double-entry lines and the statement line.
// A paid draw's statement itself resolves the token the buyer presented (DEBIT_SQL), so the
// draw is one round trip and is decided, token included, by that statement's snapshot.
// A statement that moved nothing (revoked token, no such balance, insufficient funds) or hit a claim
// is then explained by reads; nothing is ever decided by reading first and writing after in Node.
// Connections (connections.ts) choose the server (one of several in a multi-host URL: the writable
// one), bound every call in time, retry serialization failures and deadlocks (40001, 40P01), and
// turn a database that cannot be used into a LedgerUnavailableError (503) that says whether the
// change may have been made (outcome 'unknown': a retry of the same request is safe, the claims above
// make it replay or pay once). Rows become records in rows.ts.
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import {
  ACCOUNT,
  correctionCredits,
  correctionEntries,
  correctionStatementLine,
  txnOf,
  type CorrectionRecord,
  type DrawRecord,
  type TopupRecord,
} from '../records.ts';
import {
  LedgerNotEmptyError,
  LedgerUnavailableError,
  checkCorrectionInput,
  checkCreditInput,
  checkDebitInput,
  correctionFingerprint,
  type CorrectionInput,
  type CorrectionResult,
  type TokenBalance,
  drawRecord,
  topupRecord,
  type TokenChangeResult,
  type TokenResolution,
  newId,
  statementLimit,
  type BalanceInfo,
  type ChallengeClaim,
  type CreditTopupInput,
  type CreditTopupResult,
  type DebitDrawInput,
  type DebitDrawResult,
  type ImportRecord,
  type Ledger,
  type LedgerRecords,
  type LoggerLike,
  toStatementEntry,
  type StatementEntry,
  tokenResolution,
} from '../ledger.ts';
import { importWrites } from '../transfer.ts';
import { verifyRecords, type Violation } from '../verify.ts';
import { hashesEqual, isTokenHash, tokenHint } from '../../tokens.ts';
import { migrate } from './migrations.ts';
import { redactUrl } from '../location.ts';
import type { FaultHooks, FaultOp } from '../../faults.ts';
import { Connections, type Query, type QueryOptions, type ServerInUse } from './connections.ts';
import type { TargetSessionAttrs } from './hosts.ts';
import { DEFAULT_QUERY_TIMEOUT_MS, defaultStatementTimeoutMs } from './defaults.ts';
import { COLUMNS, ImportBatches, balanceOf, correctionOf, correctionRow, drawOf, int, snapshotRecords, statementOf, statementRow, topupOf, type Row } from './rows.ts';

export interface PgLedgerOptions {
  /** One server or several (libpq's multi-host form, hosts.ts). */
  url: string;
  /** When the URL names no target_session_attrs: the service and commands that write read-write, read-only commands any. */
  defaultTarget?: TargetSessionAttrs;
  /** Connections per instance (LDS_PG_POOL_SIZE). */
  poolSize?: number;
  /** Every ledger call ends within this, measured by the client (LDS_PG_QUERY_TIMEOUT_MS). */
  queryTimeoutMs?: number;
  /** Server-side statement timeout (LDS_PG_STATEMENT_TIMEOUT_MS), below the query timeout. */
  statementTimeoutMs?: number;
  /** Apply pending migrations on open (the service does; `ledger verify` and export do not). */
  migrate?: boolean;
  logger?: LoggerLike;
  /** Simulator only (payments/faults.ts); production never passes it. */
  faults?: FaultHooks;
}

/** Retries of a debit or credit whose statement raced another change (a top-up landed, a claimant rolled back). */
const MAX_ATTEMPTS = 8;

export class PgLedger implements Ledger {
  readonly backend = 'postgres' as const;
  private closed = false;

  private constructor(
    private readonly db: Connections,
    readonly location: string,
    private readonly logger?: LoggerLike,
    private readonly faults?: FaultHooks,
  ) {}

  /** Pool use, the server in use and the running totals, for the metrics (payments/metrics.ts). */
  poolStats() {
    return { ...this.db.poolFigures(), ...this.db.stats, server: this.db.inUse() };
  }

  /** The server in use and whether it takes writes (GET /readyz); null while none is chosen. */
  serverInUse(): ServerInUse | null {
    return this.db.inUse();
  }

  static async open(o: PgLedgerOptions): Promise<PgLedger> {
    const location = redactUrl(o.url);
    const queryTimeoutMs = o.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS;
    let db: Connections;
    try {
      db = new Connections({
        url: o.url,
        defaultTarget: o.defaultTarget ?? 'read-write',
        poolSize: o.poolSize ?? 10,
        queryTimeoutMs,
        statementTimeoutMs: o.statementTimeoutMs ?? defaultStatementTimeoutMs(queryTimeoutMs),
        location,
        ...(o.logger ? { logger: o.logger } : {}),
      });
    } catch (err) {
      throw new Error(`cannot open the PostgreSQL ledger at ${location}: ${(err as Error).message}`, { cause: err });
    }
    try {
      if (o.migrate !== false) await db.session((_client, pool) => migrate(pool, (msg) => o.logger?.info({ ledger: location }, msg)));
      else await db.call((query) => query('SELECT 1 FROM lds_balances LIMIT 1'));
    } catch (err) {
      await db.close();
      const reason = err instanceof LedgerUnavailableError ? err.reason : (err as Error).message;
      throw new Error(`cannot open the PostgreSQL ledger at ${location}: ${reason}`, { cause: err });
    }
    return new PgLedger(db, location, o.logger, o.faults);
  }

  // ---------------------------------------------------------------- draws

  async debitDraw(tokenHash: string, input: DebitDrawInput): Promise<DebitDrawResult> {
    this.assertOpen();
    checkDebitInput(input);
    if (!isTokenHash(tokenHash)) return { kind: 'unknown_balance' };
    const drawId = input.drawId ?? newId('drw');
    const at = new Date().toISOString();
    return this.db.call(async (query) => {
      for (let attempt = 0; ; attempt++) {
        let claimed = false;
        try {
          // One statement: the presented token resolved to its balance, and that balance debited.
          const r = await this.change<{ token_hash: string; balance_after_cents: string }>(query, 'debit', DEBIT_SQL, debitParams(tokenHash, drawId, input, at));
          if (r.rows.length === 1) {
            const after = int(r.rows[0].balance_after_cents);
            // The balance id is the one the presented token names (the statement resolved it).
            return { kind: 'ok', draw: drawRecord(input, drawId, r.rows[0].token_hash, after, at), balanceAfterCents: after };
          }
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
          claimed = true; // the quote (or, never in practice, the random draw id) is taken
        }
        // Nothing moved: explain why from durable state (off the hot path: several reads).
        const who = await readTokenBalance(query, tokenHash);
        if (who.kind === 'revoked') return { kind: 'revoked' };
        const prior = await readDrawByQuote(query, input.quoteId);
        if (prior) return hashesEqual(prior.token_hash, who.balance) ? { kind: 'replay', draw: prior } : { kind: 'other_balance' };
        const bal = who.info;
        if (!bal) return { kind: 'unknown_balance' };
        if (bal.currency !== input.currency) return { kind: 'currency_mismatch', balanceCurrency: bal.currency };
        if (bal.cents < input.amountCents) return { kind: 'insufficient', balanceCents: bal.cents, currency: bal.currency };
        // The state changed between the statement and the read (a top-up landed, a claimant rolled
        // back, the token was rotated in): try again, a bounded number of times.
        if (attempt >= MAX_ATTEMPTS) throw new LedgerUnavailableError(`debit of quote ${input.quoteId.slice(0, 16)}… kept racing (${claimed ? 'claim' : 'balance'})`);
      }
    });
  }

  // ---------------------------------------------------------------- top-ups

  async creditTopup(input: CreditTopupInput): Promise<CreditTopupResult> {
    this.assertOpen();
    checkCreditInput(input);
    if (!isTokenHash(input.tokenHash)) return { kind: 'unknown_balance' };
    const topupId = newId('top');
    const at = new Date().toISOString();
    return this.db.call(async (query) => {
      for (let attempt = 0; ; attempt++) {
        try {
          const r = await this.change<{ balance_after_cents: string }>(query, 'credit', input.createBalance ? CREDIT_NEW_SQL : CREDIT_SQL, [
            input.tokenHash,
            topupId,
            input.amountCents,
            input.currency,
            input.processor,
            input.challengeId,
            input.paymentRef,
            at,
            input.credentialSha256 ?? null,
            txnOf.topup(topupId),
            ACCOUNT.balance(input.tokenHash),
            ACCOUNT.clearing(input.processor),
            input.tokenSeal?.sealed ?? null,
            input.tokenSeal?.expiresAt ?? null,
            Date.now(),
          ]);
          if (r.rows.length === 1) {
            const after = int(r.rows[0].balance_after_cents);
            const topup = topupRecord(input, topupId, after, at);
            this.logger?.info({ topup: topupId, balance: tokenHint(input.tokenHash), amount_cents: input.amountCents, processor: input.processor }, 'ledger credited top-up');
            return { kind: 'ok', topup, balanceAfterCents: after };
          }
        } catch (err) {
          if (!isUniqueViolation(err)) throw err;
        }
        const prior = (await readTopup(query, 'challenge_id = $1', [input.challengeId])) ?? (await readTopup(query, 'processor = $1 AND payment_ref = $2', [input.processor, input.paymentRef]));
        if (prior) return { kind: 'already_credited', topup: prior };
        const bal = await readBalance(query, input.tokenHash);
        if (input.createBalance && bal) return { kind: 'balance_exists' };
        if (!input.createBalance && !bal) return { kind: 'unknown_balance' };
        if (bal && bal.currency !== input.currency) return { kind: 'currency_mismatch', balanceCurrency: bal.currency };
        if (attempt >= MAX_ATTEMPTS) throw new LedgerUnavailableError(`credit of challenge ${input.challengeId.slice(0, 12)}… kept racing`);
      }
    });
  }

  async findTokenSeal(challengeId: string, expiresAt: number): Promise<string | null> {
    const now = Date.now();
    if (!(expiresAt > now)) return null;
    const r = await this.oneStatement<{ sealed: string }>('SELECT sealed FROM lds_token_seals WHERE challenge_id = $1 AND expires_at > $2', [challengeId, now]);
    return r.rows[0]?.sealed ?? null;
  }

  findTopupByChallenge(challengeId: string): Promise<TopupRecord | null> {
    return this.db.call((query) => readTopup(query, 'challenge_id = $1', [challengeId]));
  }

  findTopupByPayment(processor: string, paymentRef: string): Promise<TopupRecord | null> {
    return this.db.call((query) => readTopup(query, 'processor = $1 AND payment_ref = $2', [processor, paymentRef]));
  }

  findDrawByQuote(quoteId: string): Promise<DrawRecord | null> {
    return this.db.call((query) => readDrawByQuote(query, quoteId));
  }

  async claimChallenge(challengeId: string, leaseMs: number): Promise<ChallengeClaim | null> {
    const holder = randomBytes(12).toString('base64url');
    const now = Date.now();
    const r = await this.oneStatement(
      `INSERT INTO lds_challenge_claims (challenge_id, holder, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (challenge_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE lds_challenge_claims.expires_at < $4
       RETURNING holder`,
      [challengeId, holder, now + leaseMs, now],
      { commits: true },
    );
    if (r.rows.length === 0) return null;
    return {
      release: async () => {
        // Best effort: if the database is gone the lease simply lapses.
        await this.oneStatement('DELETE FROM lds_challenge_claims WHERE challenge_id = $1 AND holder = $2', [challengeId, holder], { commits: true }).catch(() => {});
      },
    };
  }

  // ---------------------------------------------------------------- reads

  getBalance(tokenHash: string): Promise<BalanceInfo | null> {
    if (!isTokenHash(tokenHash)) return Promise.resolve(null);
    return this.db.call((query) => readBalance(query, tokenHash));
  }

  async statement(tokenHash: string, limit?: number, beforeSeq?: number): Promise<StatementEntry[]> {
    if (!isTokenHash(tokenHash)) return [];
    const r =
      beforeSeq === undefined
        ? await this.oneStatement('SELECT * FROM lds_statement WHERE token_hash = $1 ORDER BY seq DESC LIMIT $2', [tokenHash, statementLimit(limit)])
        : await this.oneStatement('SELECT * FROM lds_statement WHERE token_hash = $1 AND seq < $3 ORDER BY seq DESC LIMIT $2', [tokenHash, statementLimit(limit), beforeSeq]);
    return r.rows.map((row) => toStatementEntry(statementOf(row), int(row.seq)));
  }

  // ---------------------------------------------------------------- tokens

  async resolveToken(tokenHash: string): Promise<TokenResolution> {
    if (!isTokenHash(tokenHash)) return { kind: 'balance', balance: tokenHash };
    const r = await this.oneStatement('SELECT balance, revoked_at FROM lds_tokens WHERE token_hash = $1', [tokenHash]);
    return tokenResolution(tokenHash, r.rows[0] as { balance: string; revoked_at: string | null } | undefined);
  }

  tokenBalance(tokenHash: string): Promise<TokenBalance> {
    if (!isTokenHash(tokenHash)) return Promise.resolve({ kind: 'balance', balance: tokenHash, info: null });
    return this.db.call((query) => readTokenBalance(query, tokenHash));
  }

  async rotateToken(oldHash: string, newHash: string): Promise<TokenChangeResult> {
    return this.changeToken(oldHash, 'rotated', newHash);
  }

  async revokeToken(tokenHash: string): Promise<TokenChangeResult> {
    return this.changeToken(tokenHash, 'revoked');
  }

  /** One transaction: the token's row locked (or its insert racing on the primary key), revoked, the new one added. */
  private async changeToken(hash: string, why: 'rotated' | 'revoked', newHash?: string): Promise<TokenChangeResult> {
    this.assertOpen();
    if (!isTokenHash(hash) || (newHash !== undefined && !isTokenHash(newHash))) return { kind: 'unknown' };
    return this.transaction(async (c) => {
      const at = new Date().toISOString();
      const row = (await c.query('SELECT * FROM lds_tokens WHERE token_hash = $1 FOR UPDATE', [hash])).rows[0];
      if (row?.revoked_at != null) return { kind: 'revoked' } as const;
      const balance = row ? (row.balance as string) : hash;
      if (!(await c.query('SELECT 1 FROM lds_balances WHERE token_hash = $1', [balance])).rows.length) return { kind: 'unknown' } as const;
      if (row) await c.query('UPDATE lds_tokens SET revoked_at = $2, revoked_reason = $3 WHERE token_hash = $1', [hash, at, why]);
      else await c.query('INSERT INTO lds_tokens (token_hash, balance, created_at, revoked_at, revoked_reason) VALUES ($1, $2, $3, $3, $4)', [hash, balance, at, why]);
      if (newHash) await c.query('INSERT INTO lds_tokens (token_hash, balance, created_at) VALUES ($1, $2, $3)', [newHash, balance, at]);
      return { kind: 'ok', balance } as const;
    });
  }

  // ---------------------------------------------------------------- corrections

  async findDraw(drawId: string): Promise<DrawRecord | null> {
    const r = await this.oneStatement('SELECT * FROM lds_draws WHERE draw_id = $1', [drawId]);
    return r.rows[0] ? drawOf(r.rows[0]) : null;
  }

  async findTopup(topupId: string): Promise<TopupRecord | null> {
    const r = await this.oneStatement('SELECT * FROM lds_topups WHERE topup_id = $1', [topupId]);
    return r.rows[0] ? topupOf(r.rows[0]) : null;
  }

  /**
   * One transaction: the refunded draw or top-up row is locked (so refunds of one record add up
   * across instances), then the balance row; the idempotency key's UNIQUE constraint makes a
   * concurrent duplicate fail and retry into a replay.
   */
  async correct(input: CorrectionInput): Promise<CorrectionResult> {
    this.assertOpen();
    checkCorrectionInput(input);
    const fp = correctionFingerprint(input);
    return this.transaction(async (c): Promise<CorrectionResult> => {
      const prior = (await c.query('SELECT * FROM lds_corrections WHERE idempotency_key = $1', [input.idempotencyKey])).rows[0];
      if (prior) {
        const rec = correctionOf(prior);
        return rec.request_sha256 === fp ? { kind: 'replay', correction: rec } : { kind: 'key_reused', correction: rec };
      }
      let hash: string;
      let total = 0;
      let processor: string | undefined;
      if (input.kind === 'refund') {
        const d = (await c.query('SELECT * FROM lds_draws WHERE draw_id = $1 FOR UPDATE', [input.drawId])).rows[0];
        if (!d) return { kind: 'not_found', what: 'draw' };
        hash = d.token_hash as string;
        total = int(d.amount_cents);
      } else if (input.kind === 'topup_refund') {
        const t = (await c.query('SELECT * FROM lds_topups WHERE topup_id = $1 FOR UPDATE', [input.topupId])).rows[0];
        if (!t) return { kind: 'not_found', what: 'topup' };
        hash = t.token_hash as string;
        total = int(t.amount_cents);
        processor = t.processor as string;
      } else hash = input.balance!;
      if (!isTokenHash(hash)) return { kind: 'not_found', what: 'balance' };
      const refunded =
        input.kind === 'refund' || input.kind === 'topup_refund'
          ? int((await c.query(`SELECT COALESCE(SUM(amount_cents), 0) AS s FROM lds_corrections WHERE ${input.kind === 'refund' ? 'draw_id' : 'topup_id'} = $1`, [input.drawId ?? input.topupId])).rows[0].s)
          : 0;
      const b = (await c.query('SELECT * FROM lds_balances WHERE token_hash = $1 FOR UPDATE', [hash])).rows[0];
      if (!b) return { kind: 'not_found', what: 'balance' };
      const bal = balanceOf(b);
      let amount = input.amountCents ?? 0;
      const available = total - refunded;
      if (input.kind === 'refund') {
        amount = input.amountCents ?? available;
        if (amount <= 0 || amount > available) return { kind: 'exceeds', availableCents: Math.max(0, available) };
      } else if (input.kind === 'topup_refund') {
        if (input.amountCents !== undefined && input.amountCents > available) return { kind: 'exceeds', availableCents: Math.max(0, available) };
        amount = Math.min(input.amountCents ?? available, available, bal.cents);
        if (amount <= 0) return { kind: 'nothing_to_refund' };
      } else if (input.kind === 'debit' && amount > bal.cents) return { kind: 'insufficient', balanceCents: bal.cents };
      const after = correctionCredits(input.kind) ? bal.cents + amount : bal.cents - amount;
      if (!Number.isSafeInteger(after) || after < 0) return { kind: 'insufficient', balanceCents: bal.cents };
      const seqs = (await c.query(`SELECT nextval('lds_entry_seq') AS a, nextval('lds_entry_seq') AS b`)).rows[0];
      const rec: CorrectionRecord = {
        correction_id: newId('cor'),
        kind: input.kind,
        idempotency_key: input.idempotencyKey,
        request_sha256: fp,
        token_hash: hash,
        amount_cents: amount,
        currency: bal.currency,
        reason: input.reason,
        balance_after_cents: after,
        at: new Date().toISOString(),
        ...(input.kind === 'refund' ? { draw_id: input.drawId } : {}),
        ...(input.kind === 'topup_refund' ? { topup_id: input.topupId, processor } : {}),
      };
      const entries = correctionEntries(rec, int(seqs.a), int(seqs.b));
      const balanceSeq = entries.find((e) => e.account === ACCOUNT.balance(hash))!.seq;
      const line = correctionStatementLine(rec);
      await c.query(`INSERT INTO lds_corrections (${COLUMNS.lds_corrections}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, correctionRow(rec));
      await c.query('UPDATE lds_balances SET cents = $2 WHERE token_hash = $1', [hash, after]);
      for (const e of entries) await c.query('INSERT INTO lds_entries (seq, txn, account, cents, currency, at) VALUES ($1, $2, $3, $4, $5, $6)', [e.seq, e.txn, e.account, e.cents, e.currency, e.at]);
      await c.query(`INSERT INTO lds_statement (${COLUMNS.lds_statement}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`, statementRow(hash, balanceSeq, line));
      return { kind: 'ok', correction: rec };
    });
  }

  /**
   * Runs `fn` in one READ COMMITTED transaction, within the query timeout (connections.ts); a unique
   * violation (a concurrent duplicate), serialization failure or deadlock rolls it back and runs it
   * again, so the retry reads what won.
   */
  private transaction<T>(fn: (c: { query: Query }) => Promise<T>): Promise<T> {
    return this.db.call((_query, transaction) => transaction((query) => fn({ query })));
  }

  /** One REPEATABLE READ, read-only transaction: every table read at the same instant, while instances serve. */
  async readSnapshot<T>(read: (records: LedgerRecords) => Promise<T>): Promise<T> {
    this.assertOpen();
    return this.db.session(async (client) => {
      try {
        await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
        const result = await read(snapshotRecords(client));
        await client.query('COMMIT');
        return result;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  async verify(): Promise<Violation[]> {
    return this.readSnapshot(verifyRecords);
  }

  /** The whole import is one transaction: a failure leaves the ledger empty. */
  async importRecords(records: AsyncIterable<ImportRecord>): Promise<void> {
    this.assertOpen();
    await this.db.session(async (client) => {
      try {
        await client.query('BEGIN');
        const nonEmpty = await client.query(`SELECT 1 FROM lds_balances UNION ALL SELECT 1 FROM lds_entries LIMIT 1`);
        if (nonEmpty.rows.length) throw new LedgerNotEmptyError(`the ledger ${this.location} is not empty: import into a new, empty database`);
        const batches = new ImportBatches(client);
        for await (const [key, value] of importWrites(records)) await batches.add(key, value);
        await batches.flush();
        if (batches.maxSeq > 0) await client.query(`SELECT setval('lds_entry_seq', $1)`, [batches.maxSeq]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        throw err;
      }
    });
  }

  /**
   * Ready when the server in use (found by walking the host list when there is none) answers within
   * 2 s and takes writes: not a standby, not default_transaction_read_only (a failover that left us
   * on a replica cannot take debits). Not counted as unavailability, not logged as an error: a probe
   * every few seconds while the database is down would only repeat itself.
   */
  async ready(): Promise<string | null> {
    if (this.closed) return 'ledger is closed';
    return this.db.probe();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.db.close();
  }

  // ---------------------------------------------------------------- internals

  private assertOpen(): void {
    if (this.closed) throw new LedgerUnavailableError('ledger is closed');
  }

  /** One statement as a call of its own. */
  private oneStatement<R extends pg.QueryResultRow = Row>(sql: string, params: unknown[], o?: QueryOptions): Promise<pg.QueryResult<R>> {
    this.assertOpen();
    return this.db.call((query) => query<R>(sql, params, o));
  }

  /** A state-changing statement, with the simulator's commit points around it (payments/faults.ts). */
  private async change<R extends pg.QueryResultRow>(query: Query, op: FaultOp, sql: string, params: unknown[]): Promise<pg.QueryResult<R>> {
    const o = { commits: true };
    if (!this.faults) return query<R>(sql, params, o);
    this.faults.commit('before-commit', op);
    const running = query<R>(sql, params, o);
    this.faults.commit('during-commit', op);
    const r = await running;
    if (r.rows.length === 1) this.faults.commit('after-commit', op);
    return r;
  }
}

// ---- reads shared by the calls above (each runs on the call's query) ----

async function readDrawByQuote(query: Query, quoteId: string): Promise<DrawRecord | null> {
  const r = await query('SELECT * FROM lds_draws WHERE quote_id = $1', [quoteId]);
  return r.rows[0] ? drawOf(r.rows[0]) : null;
}

async function readTopup(query: Query, where: string, params: unknown[]): Promise<TopupRecord | null> {
  const r = await query(`SELECT * FROM lds_topups WHERE ${where}`, params);
  return r.rows[0] ? topupOf(r.rows[0]) : null;
}

async function readBalance(query: Query, tokenHash: string): Promise<BalanceInfo | null> {
  const r = await query('SELECT * FROM lds_balances WHERE token_hash = $1', [tokenHash]);
  const b = r.rows[0] ? balanceOf(r.rows[0]) : null;
  return b ? { cents: b.cents, currency: b.currency, createdAt: b.created_at } : null;
}

/**
 * The token resolved (ledger.ts tokenResolution) and the balance it names, in one statement: a
 * quote made with a Bearer token reads the ledger once for its `Link` (measured by
 * `npm run bench:pg-statements`). Exactly one row: `revoked` is null without a token record.
 */
const TOKEN_BALANCE_SQL = `
WITH tok AS (SELECT balance, revoked_at FROM lds_tokens WHERE token_hash = $1::text),
     k AS (SELECT COALESCE((SELECT balance FROM tok), $1::text) AS id)
SELECT k.id, (SELECT revoked_at IS NOT NULL FROM tok) AS revoked, b.cents, b.currency, b.created_at
FROM k LEFT JOIN lds_balances b ON b.token_hash = k.id`;

async function readTokenBalance(query: Query, tokenHash: string): Promise<TokenBalance> {
  const row = (await query<{ id: string; revoked: boolean | null; cents: string | null; currency: string | null; created_at: string | null }>(TOKEN_BALANCE_SQL, [tokenHash])).rows[0]!;
  if (row.revoked) return { kind: 'revoked' };
  return { kind: 'balance', balance: row.id, info: row.cents === null ? null : { cents: int(row.cents), currency: row.currency!, createdAt: row.created_at! } };
}

function isUniqueViolation(err: unknown): boolean {
  return (err as { code?: unknown })?.code === '23505';
}

// ---- SQL of the two state changes (see the file comment) ----
// $1 presented token hash, $2 draw id, $3 amount, $4 currency, $5 quote id, $6 product id, $7 at,
// $8 draw JSON, $9 txn. Exported with its parameters for bench/service.ts, whose raw loop issues
// exactly this statement straight from the Node client (the ceiling of a paid draw).
export function debitParams(tokenHash: string, drawId: string, input: DebitDrawInput, at: string): unknown[] {
  return [tokenHash, drawId, input.amountCents, input.currency, input.quoteId, input.productId ?? null, at, JSON.stringify(input.draw ?? null), txnOf.draw(drawId)];
}

// The debit is not a named prepared statement (it was, until issue 52): through PgBouncer in
// transaction mode a statement prepared on one server connection is missing on the next, and
// PgBouncer before 1.21 cannot track it (connections.ts, inline.ts). PostgreSQL parses and plans
// its 1.4 KB again on every paid draw; BENCHMARKS.md has what that costs.

/**
 * The UPDATE's key resolves the presented token within the statement's snapshot (ledger.ts
 * resolveToken), as a one-time index probe of lds_tokens (an InitPlan): no row → the hash is its own
 * balance id; a live row → its balance; a revoked row → '' , which names no balance, so nothing
 * below happens. Everything after it uses the balance id the UPDATE returns, so the draw, its entries
 * and its statement line name the balance, as on LevelDB.
 */
export const DEBIT_SQL = `
WITH bal AS (
  UPDATE lds_balances SET cents = cents - $3::bigint
  WHERE token_hash = COALESCE((SELECT CASE WHEN t.revoked_at IS NULL THEN t.balance ELSE '' END FROM lds_tokens t WHERE t.token_hash = $1::text), $1::text)
    AND currency = $4 AND cents >= $3::bigint
  RETURNING token_hash, cents
), drw AS (
  INSERT INTO lds_draws (draw_id, quote_id, token_hash, amount_cents, currency, product_id, balance_after_cents, at, draw)
  SELECT $2, $5, bal.token_hash, $3::bigint, $4, $6, bal.cents, $7, $8 FROM bal
  RETURNING token_hash, balance_after_cents
), seqs AS (
  SELECT nextval('lds_entry_seq') AS debit_seq, nextval('lds_entry_seq') AS credit_seq FROM drw
), ent AS (
  INSERT INTO lds_entries (seq, txn, account, cents, currency, at)
  SELECT debit_seq, $9, '${ACCOUNT.balance('')}' || drw.token_hash, -($3::bigint), $4, $7 FROM seqs, drw
  UNION ALL SELECT credit_seq, $9, '${ACCOUNT.revenue}', $3::bigint, $4, $7 FROM seqs
), stm AS (
  INSERT INTO lds_statement (token_hash, seq, kind, id, amount_cents, currency, balance_after_cents, at, quote_id, product_id)
  SELECT drw.token_hash, seqs.debit_seq, 'draw', $2, $3::bigint, $4, drw.balance_after_cents, $7, $5, $6 FROM seqs, drw
)
SELECT token_hash, balance_after_cents FROM drw`;

// $1 token hash, $2 top-up id, $3 amount, $4 currency, $5 processor, $6 challenge id, $7 payment ref,
// $8 at, $9 credential sha256, $10 txn, $11 balance account, $12 clearing account,
// $13 sealed token (or NULL), $14 its expiry (ms), $15 now (ms): seals expired by now are deleted
const creditSql = (balance: string, created: boolean) => `
WITH bal AS (${balance}
), top AS (
  INSERT INTO lds_topups (topup_id, token_hash, amount_cents, currency, processor, challenge_id, payment_ref, created_balance, balance_after_cents, at, credential_sha256)
  SELECT $2, $1, $3::bigint, $4, $5, $6, $7, ${created}, bal.cents, $8, $9 FROM bal
  RETURNING balance_after_cents
), seqs AS (
  SELECT nextval('lds_entry_seq') AS clearing_seq, nextval('lds_entry_seq') AS credit_seq FROM top
), ent AS (
  INSERT INTO lds_entries (seq, txn, account, cents, currency, at)
  SELECT clearing_seq, $10, $12, -($3::bigint), $4, $8 FROM seqs
  UNION ALL SELECT credit_seq, $10, $11, $3::bigint, $4, $8 FROM seqs
), stm AS (
  INSERT INTO lds_statement (token_hash, seq, kind, id, amount_cents, currency, balance_after_cents, at, quote_id, product_id)
  SELECT $1, seqs.credit_seq, 'topup', $2, $3::bigint, $4, top.balance_after_cents, $8, NULL, NULL FROM seqs, top
), seal AS (
  INSERT INTO lds_token_seals (challenge_id, sealed, expires_at)
  SELECT $6, $13::text, $14::bigint FROM top WHERE $13::text IS NOT NULL
), sweep AS (
  DELETE FROM lds_token_seals WHERE expires_at <= $15::bigint
)
SELECT balance_after_cents FROM top`;

const CREDIT_SQL = creditSql(
  `
  UPDATE lds_balances SET cents = cents + $3::bigint WHERE token_hash = $1 AND currency = $4
  RETURNING cents`,
  false,
);
const CREDIT_NEW_SQL = creditSql(
  `
  INSERT INTO lds_balances (token_hash, currency, cents, created_at) VALUES ($1, $4, $3::bigint, $8)
  RETURNING cents`,
  true,
);
