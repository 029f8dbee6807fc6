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
// Serialization failures and deadlocks (40001, 40P01) roll the statement back and are retried with
// jittered backoff; a lost connection or a database that is down is a LedgerUnavailableError (503),
// and the pool reconnects by itself when the database returns.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import {
  ACCOUNT,
  K,
  correctionCredits,
  correctionEntries,
  correctionStatementLine,
  txnOf,
  type BalanceRecord,
  type CorrectionRecord,
  type DrawRecord,
  type EntryRecord,
  type StatementRecord,
  type TokenRecord,
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

export interface PgLedgerOptions {
  url: string;
  /** Connections per instance (LDS_PG_POOL_SIZE). */
  poolSize?: number;
  /** Server-side statement timeout (LDS_PG_STATEMENT_TIMEOUT_MS): a stuck statement fails, it never hangs a request. */
  statementTimeoutMs?: number;
  /** How long to wait for a connection before answering 503. */
  connectTimeoutMs?: number;
  /** Apply pending migrations on open (the service does; `ledger verify` and export do not). */
  migrate?: boolean;
  logger?: LoggerLike;
  /** Simulator only (payments/faults.ts); production never passes it. */
  faults?: FaultHooks;
}

/** Retries of a statement rolled back by a serialization failure or deadlock. */
const MAX_ATTEMPTS = 8;
const PAGE = 1000;

export class PgLedger implements Ledger {
  readonly backend = 'postgres' as const;
  private closed = false;
  /** Serialization retries and unavailability, for operators (and metrics later). */
  readonly stats = { retries: 0, unavailable: 0 };

  private constructor(
    private readonly pool: pg.Pool,
    readonly location: string,
    private readonly logger?: LoggerLike,
    private readonly faults?: FaultHooks,
  ) {}

  /** Pool use and the running totals above, for the metrics (payments/metrics.ts). */
  poolStats(): { total: number; idle: number; waiting: number; max: number; retries: number; unavailable: number } {
    return { total: this.pool.totalCount, idle: this.pool.idleCount, waiting: this.pool.waitingCount, max: this.pool.options.max ?? 10, ...this.stats };
  }

  static async open(o: PgLedgerOptions): Promise<PgLedger> {
    const pool = new pg.Pool({
      connectionString: o.url,
      max: o.poolSize ?? 10,
      statement_timeout: o.statementTimeoutMs ?? 5000,
      connectionTimeoutMillis: o.connectTimeoutMs ?? 5000,
      idleTimeoutMillis: 30_000,
      application_name: 'lds-payments',
    });
    const location = redactUrl(o.url);
    // An idle connection that dies (database restart) is reported here; the pool drops it and
    // opens a new one on demand. Without a listener Node would treat it as an uncaught error.
    pool.on('error', (err) => o.logger?.warn({ err: err.message, ledger: location }, 'ledger: idle database connection lost'));
    try {
      if (o.migrate !== false) await migrate(pool, (msg) => o.logger?.info({ ledger: location }, msg));
      else await pool.query('SELECT 1 FROM lds_balances LIMIT 1');
    } catch (err) {
      await pool.end().catch(() => {});
      throw new Error(`cannot open the PostgreSQL ledger at ${location}: ${(err as Error).message}`, { cause: err });
    }
    return new PgLedger(pool, location, o.logger, o.faults);
  }

  // ---------------------------------------------------------------- draws

  async debitDraw(tokenHash: string, input: DebitDrawInput): Promise<DebitDrawResult> {
    this.assertOpen();
    checkDebitInput(input);
    if (!isTokenHash(tokenHash)) return { kind: 'unknown_balance' };
    const drawId = input.drawId ?? newId('drw');
    const at = new Date().toISOString();
    for (let attempt = 0; ; attempt++) {
      let claimed = false;
      try {
        // One statement: the presented token resolved to its balance, and that balance debited.
        const r = await this.changeQuery<{ token_hash: string; balance_after_cents: string }>('debit', DEBIT_SQL, debitParams(tokenHash, drawId, input, at), DEBIT_STATEMENT);
        if (r.rows.length === 1) {
          const after = int(r.rows[0].balance_after_cents);
          const draw: DrawRecord = {
            draw_id: drawId,
            quote_id: input.quoteId,
            token_hash: r.rows[0].token_hash, // the balance id, which the presented token names
            amount_cents: input.amountCents,
            currency: input.currency,
            ...(input.productId !== undefined ? { product_id: input.productId } : {}),
            balance_after_cents: after,
            at,
            draw: input.draw ?? null,
          };
          return { kind: 'ok', draw, balanceAfterCents: after };
        }
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
        claimed = true; // the quote (or, never in practice, the random draw id) is taken
      }
      // Nothing moved: explain why from durable state (off the hot path: several reads).
      const who = await this.resolveToken(tokenHash);
      if (who.kind === 'revoked') return { kind: 'revoked' };
      const balance = who.balance;
      const prior = await this.findDrawByQuote(input.quoteId);
      if (prior) return hashesEqual(prior.token_hash, balance) ? { kind: 'replay', draw: prior } : { kind: 'other_balance' };
      const bal = await this.getBalance(balance);
      if (!bal) return { kind: 'unknown_balance' };
      if (bal.currency !== input.currency) return { kind: 'currency_mismatch', balanceCurrency: bal.currency };
      if (bal.cents < input.amountCents) return { kind: 'insufficient', balanceCents: bal.cents, currency: bal.currency };
      // The state changed between the statement and the read (a top-up landed, a claimant rolled
      // back, the token was rotated in): try again, a bounded number of times.
      if (attempt >= MAX_ATTEMPTS) throw new LedgerUnavailableError(`debit of quote ${input.quoteId.slice(0, 16)}… kept racing (${claimed ? 'claim' : 'balance'})`);
    }
  }

  // ---------------------------------------------------------------- top-ups

  async creditTopup(input: CreditTopupInput): Promise<CreditTopupResult> {
    this.assertOpen();
    checkCreditInput(input);
    if (!isTokenHash(input.tokenHash)) return { kind: 'unknown_balance' };
    const topupId = newId('top');
    const at = new Date().toISOString();
    for (let attempt = 0; ; attempt++) {
      try {
        const r = await this.changeQuery<{ balance_after_cents: string }>('credit', input.createBalance ? CREDIT_NEW_SQL : CREDIT_SQL, [
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
          const topup: TopupRecord = {
            topup_id: topupId,
            token_hash: input.tokenHash,
            amount_cents: input.amountCents,
            currency: input.currency,
            processor: input.processor,
            challenge_id: input.challengeId,
            payment_ref: input.paymentRef,
            created_balance: input.createBalance,
            balance_after_cents: after,
            at,
            ...(input.credentialSha256 ? { credential_sha256: input.credentialSha256 } : {}),
          };
          this.logger?.info({ topup: topupId, balance: tokenHint(input.tokenHash), amount_cents: input.amountCents, processor: input.processor }, 'ledger credited top-up');
          return { kind: 'ok', topup, balanceAfterCents: after };
        }
      } catch (err) {
        if (!isUniqueViolation(err)) throw err;
      }
      const prior = (await this.findTopupByChallenge(input.challengeId)) ?? (await this.findTopupByPayment(input.processor, input.paymentRef));
      if (prior) return { kind: 'already_credited', topup: prior };
      const bal = await this.getBalance(input.tokenHash);
      if (input.createBalance && bal) return { kind: 'balance_exists' };
      if (!input.createBalance && !bal) return { kind: 'unknown_balance' };
      if (bal && bal.currency !== input.currency) return { kind: 'currency_mismatch', balanceCurrency: bal.currency };
      if (attempt >= MAX_ATTEMPTS) throw new LedgerUnavailableError(`credit of challenge ${input.challengeId.slice(0, 12)}… kept racing`);
    }
  }

  async findTokenSeal(challengeId: string, expiresAt: number): Promise<string | null> {
    const now = Date.now();
    if (!(expiresAt > now)) return null;
    const r = await this.query<{ sealed: string }>('SELECT sealed FROM lds_token_seals WHERE challenge_id = $1 AND expires_at > $2', [challengeId, now]);
    return r.rows[0]?.sealed ?? null;
  }

  async findTopupByChallenge(challengeId: string): Promise<TopupRecord | null> {
    const r = await this.query('SELECT * FROM lds_topups WHERE challenge_id = $1', [challengeId]);
    return r.rows[0] ? topupOf(r.rows[0]) : null;
  }

  async findTopupByPayment(processor: string, paymentRef: string): Promise<TopupRecord | null> {
    const r = await this.query('SELECT * FROM lds_topups WHERE processor = $1 AND payment_ref = $2', [processor, paymentRef]);
    return r.rows[0] ? topupOf(r.rows[0]) : null;
  }

  async findDrawByQuote(quoteId: string): Promise<DrawRecord | null> {
    const r = await this.query('SELECT * FROM lds_draws WHERE quote_id = $1', [quoteId]);
    return r.rows[0] ? drawOf(r.rows[0]) : null;
  }

  async claimChallenge(challengeId: string, leaseMs: number): Promise<ChallengeClaim | null> {
    const holder = randomBytes(12).toString('base64url');
    const now = Date.now();
    const r = await this.query(
      `INSERT INTO lds_challenge_claims (challenge_id, holder, expires_at) VALUES ($1, $2, $3)
       ON CONFLICT (challenge_id) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
       WHERE lds_challenge_claims.expires_at < $4
       RETURNING holder`,
      [challengeId, holder, now + leaseMs, now],
    );
    if (r.rows.length === 0) return null;
    return {
      release: async () => {
        // Best effort: if the database is gone the lease simply lapses.
        await this.query('DELETE FROM lds_challenge_claims WHERE challenge_id = $1 AND holder = $2', [challengeId, holder]).catch(() => {});
      },
    };
  }

  // ---------------------------------------------------------------- reads

  async getBalance(tokenHash: string): Promise<BalanceInfo | null> {
    if (!isTokenHash(tokenHash)) return null;
    const r = await this.query('SELECT * FROM lds_balances WHERE token_hash = $1', [tokenHash]);
    const b = r.rows[0] ? balanceOf(r.rows[0]) : null;
    return b ? { cents: b.cents, currency: b.currency, createdAt: b.created_at } : null;
  }

  async statement(tokenHash: string, limit?: number, beforeSeq?: number): Promise<StatementEntry[]> {
    if (!isTokenHash(tokenHash)) return [];
    const r =
      beforeSeq === undefined
        ? await this.query('SELECT * FROM lds_statement WHERE token_hash = $1 ORDER BY seq DESC LIMIT $2', [tokenHash, statementLimit(limit)])
        : await this.query('SELECT * FROM lds_statement WHERE token_hash = $1 AND seq < $3 ORDER BY seq DESC LIMIT $2', [tokenHash, statementLimit(limit), beforeSeq]);
    return r.rows.map((row) => toStatementEntry(statementOf(row), int(row.seq)));
  }

  // ---------------------------------------------------------------- tokens

  async resolveToken(tokenHash: string): Promise<TokenResolution> {
    if (!isTokenHash(tokenHash)) return { kind: 'balance', balance: tokenHash };
    const r = await this.query('SELECT balance, revoked_at FROM lds_tokens WHERE token_hash = $1', [tokenHash]);
    return tokenResolution(tokenHash, r.rows[0] as { balance: string; revoked_at: string | null } | undefined);
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
    const r = await this.query('SELECT * FROM lds_draws WHERE draw_id = $1', [drawId]);
    return r.rows[0] ? drawOf(r.rows[0]) : null;
  }

  async findTopup(topupId: string): Promise<TopupRecord | null> {
    const r = await this.query('SELECT * FROM lds_topups WHERE topup_id = $1', [topupId]);
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
   * Runs `fn` in one READ COMMITTED transaction; a unique violation (a concurrent duplicate),
   * serialization failure or deadlock rolls it back and runs it again, so the retry reads what won.
   */
  private async transaction<T>(fn: (c: pg.PoolClient) => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const client = await this.connect();
      try {
        await client.query('BEGIN');
        const out = await fn(client);
        await client.query('COMMIT');
        return out;
      } catch (err) {
        await client.query('ROLLBACK').catch(() => {});
        const code = sqlState(err);
        if ((code === '23505' || code === '40001' || code === '40P01') && attempt < MAX_ATTEMPTS) {
          this.stats.retries++;
          await new Promise((r) => setTimeout(r, Math.random() * Math.min(200, 5 * 2 ** attempt)));
          continue;
        }
        throw unavailableOr(err);
      } finally {
        client.release();
      }
    }
  }

  /** One REPEATABLE READ, read-only transaction: every table read at the same instant, while instances serve. */
  async readSnapshot<T>(read: (records: LedgerRecords) => Promise<T>): Promise<T> {
    this.assertOpen();
    const client = await this.connect();
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      const result = await read(snapshotRecords(client));
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      throw unavailableOr(err);
    } finally {
      client.release();
    }
  }

  async verify(): Promise<Violation[]> {
    return this.readSnapshot(verifyRecords);
  }

  /** The whole import is one transaction: a failure leaves the ledger empty. */
  async importRecords(records: AsyncIterable<ImportRecord>): Promise<void> {
    this.assertOpen();
    const client = await this.connect();
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
    } finally {
      client.release();
    }
  }

  /**
   * Ready when a pooled connection answers within 2 s and the server is not a read-only standby
   * (a failover that left us on a replica cannot take debits). Not counted in `stats`, not logged as
   * an error: a probe every few seconds while the database is down would only repeat itself.
   */
  async ready(): Promise<string | null> {
    if (this.closed) return 'ledger is closed';
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve('database did not answer within 2 s'), 2000);
    });
    const probe = this.pool.query<{ standby: boolean }>('SELECT pg_is_in_recovery() AS standby').then(
      (r) => (r.rows[0]?.standby ? 'database is a read-only standby' : null),
      (err: Error) => `database: ${err.message}`,
    );
    try {
      return await Promise.race([probe, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  // ---------------------------------------------------------------- internals

  private assertOpen(): void {
    if (this.closed) throw new LedgerUnavailableError('ledger is closed');
  }

  private async connect(): Promise<pg.PoolClient> {
    try {
      return await this.pool.connect();
    } catch (err) {
      throw unavailableOr(err);
    }
  }

  /** A state-changing statement: `query`, with the simulator's commit points around it (payments/faults.ts). */
  private async changeQuery<R extends pg.QueryResultRow>(op: FaultOp, sql: string, params: unknown[], name?: string): Promise<pg.QueryResult<R>> {
    if (!this.faults) return this.query<R>(sql, params, name);
    this.faults.commit('before-commit', op);
    const running = this.query<R>(sql, params, name);
    this.faults.commit('during-commit', op);
    const r = await running;
    if (r.rows.length === 1) this.faults.commit('after-commit', op);
    return r;
  }

  /** One statement with the retry rule: rolled-back conflicts are retried, an unreachable database is a 503. */
  private async query<R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, params: unknown[], name?: string): Promise<pg.QueryResult<R>> {
    this.assertOpen();
    for (let attempt = 1; ; attempt++) {
      try {
        return await (name ? this.pool.query<R>({ name, text: sql, values: params }) : this.pool.query<R>(sql, params));
      } catch (err) {
        const code = sqlState(err);
        if ((code === '40001' || code === '40P01') && attempt < MAX_ATTEMPTS) {
          this.stats.retries++;
          // Full jitter: 0..(5 ms × 2^attempt), capped at 200 ms.
          await new Promise((r) => setTimeout(r, Math.random() * Math.min(200, 5 * 2 ** attempt)));
          continue;
        }
        const mapped = unavailableOr(err);
        if (mapped instanceof LedgerUnavailableError) {
          this.stats.unavailable++;
          this.logger?.error({ err: mapped.reason, ledger: this.location }, 'ledger: database unavailable');
        }
        throw mapped;
      }
    }
  }
}

// ---- SQL of the two state changes (see the file comment) ----
// $1 presented token hash, $2 draw id, $3 amount, $4 currency, $5 quote id, $6 product id, $7 at,
// $8 draw JSON, $9 txn. Exported with its parameters for bench/service.ts, whose raw loop issues
// exactly this statement straight from the Node client (the ceiling of a paid draw).
export function debitParams(tokenHash: string, drawId: string, input: DebitDrawInput, at: string): unknown[] {
  return [tokenHash, drawId, input.amountCents, input.currency, input.quoteId, input.productId ?? null, at, JSON.stringify(input.draw ?? null), txnOf.draw(drawId)];
}

/**
 * The debit is a named prepared statement: each pooled connection parses and plans it once, then
 * sends only its parameters (measured on the benchmark: the 1.4 KB statement was parsed and planned
 * by PostgreSQL on every paid draw, on the cores the service shares with it). The name carries a
 * version: a connection caches a prepared statement by name, so changed SQL needs a new name.
 */
export const DEBIT_STATEMENT = 'lds_debit_draw_v2';

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

// ---- errors ----

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

function isUniqueViolation(err: unknown): boolean {
  return sqlState(err) === '23505';
}

/**
 * Whether an error means "the database cannot be used right now" (answer 503, retry later): no
 * SQLSTATE at all (a socket error, a connection timeout, a connection terminated mid-query), or a
 * SQLSTATE of class 08 (connection), 53 (resources), 57 (operator intervention: shutdown, statement
 * timeout) or 58 (system error). Anything else is a bug or a constraint and is thrown as is.
 */
function unavailableOr(err: unknown): unknown {
  if (err instanceof LedgerUnavailableError) return err;
  const code = sqlState(err);
  const cls = code?.slice(0, 2);
  if (code === undefined || cls === '08' || cls === '53' || cls === '57' || cls === '58') {
    return new LedgerUnavailableError(`database: ${(err as Error)?.message ?? String(err)}${code ? ` (SQLSTATE ${code})` : ''}`, { cause: err });
  }
  return err;
}

// ---- rows to records (BIGINT arrives as a string; NULL means the optional field is absent) ----

type Row = Record<string, unknown>;

function int(x: unknown): number {
  const n = typeof x === 'number' ? x : Number(x);
  if (!Number.isSafeInteger(n)) throw new Error(`ledger: ${String(x)} is not a safe integer`);
  return n;
}

function balanceOf(r: Row): BalanceRecord {
  return { token_hash: r.token_hash as string, currency: r.currency as string, cents: int(r.cents), created_at: r.created_at as string };
}

function topupOf(r: Row): TopupRecord {
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

function drawOf(r: Row): DrawRecord {
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

function entryOf(r: Row): EntryRecord {
  return { seq: int(r.seq), txn: r.txn as string, account: r.account as string, cents: int(r.cents), currency: r.currency as string, at: r.at as string };
}

function correctionOf(r: Row): CorrectionRecord {
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

function correctionRow(v: CorrectionRecord | Record<string, unknown>): unknown[] {
  const c = v as Record<string, unknown>;
  return [c.correction_id, c.kind, c.idempotency_key, c.request_sha256, c.token_hash, c.amount_cents, c.currency, c.reason, c.balance_after_cents, c.at, c.draw_id ?? null, c.topup_id ?? null, c.processor ?? null];
}

function tokenOf(r: Row): TokenRecord {
  return {
    token_hash: r.token_hash as string,
    balance: r.balance as string,
    created_at: r.created_at as string,
    ...(r.revoked_at != null ? { revoked_at: r.revoked_at as string } : {}),
    ...(r.revoked_reason != null ? { revoked_reason: r.revoked_reason as 'rotated' | 'revoked' } : {}),
  };
}

function statementRow(hash: string, seq: number, v: StatementRecord | Record<string, unknown>): unknown[] {
  const s = v as Record<string, unknown>;
  return [hash, seq, s.kind, s.id, s.amount_cents, s.currency, s.balance_after_cents, s.at, s.quote_id ?? null, s.product_id ?? null, s.reason ?? null, s.draw_id ?? null, s.topup_id ?? null];
}

function statementOf(r: Row): StatementRecord {
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
async function* snapshotRecords(client: pg.PoolClient): AsyncGenerator<[string, unknown]> {
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
class ImportBatches {
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

const COLUMNS: Record<string, string> = {
  lds_balances: 'token_hash, currency, cents, created_at',
  lds_draws: 'draw_id, quote_id, token_hash, amount_cents, currency, product_id, balance_after_cents, at, draw',
  lds_topups: 'topup_id, token_hash, amount_cents, currency, processor, challenge_id, payment_ref, created_balance, balance_after_cents, at, credential_sha256',
  lds_entries: 'seq, txn, account, cents, currency, at',
  lds_statement: 'token_hash, seq, kind, id, amount_cents, currency, balance_after_cents, at, quote_id, product_id, reason, draw_id, topup_id',
  lds_corrections: 'correction_id, kind, idempotency_key, request_sha256, token_hash, amount_cents, currency, reason, balance_after_cents, at, draw_id, topup_id, processor',
  lds_tokens: 'token_hash, balance, created_at, revoked_at, revoked_reason',
};
