// The prepaid-balance ledger (LevelDB, double entry, exactly once).
//
// Invariants this module maintains (and ../verify.ts audits):
//   - every state change is one atomic, synced LevelDB batch (see GroupCommitter);
//   - each change writes two entries that sum to zero, so money is conserved to the cent;
//   - a balance never goes negative: debits are decided under the balance's lock;
//   - a quote is debited at most once (claim `q:`), a challenge or processor payment is credited
//     at most once (claims `c:` and `p:`), and each claim is written in the same batch as the money.
//
// Throughput: decisions are taken from an in-memory view of each touched balance, under a
// per-balance lock that is held only until the change is queued for commit - not until it is
// durable. The caller's promise resolves after durability. Because batches are written in order and
// the committer is fail-stop, a caller is never told "paid" for a change that did not reach disk,
// while many draws on one balance share an fsync.
import { mkdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { Level } from 'level';
import { Problem } from '../../problem.ts';
import { GroupCommitter, KeyedMutex, type BatchOp } from './commit.ts';
import {
  ACCOUNT,
  K,
  PREFIX,
  txnOf,
  type BalanceRecord,
  type ClaimRecord,
  type DrawRecord,
  type EntryRecord,
  type StatementRecord,
  type TopupRecord,
} from './schema.ts';
import { verifyLedgerDb, type Violation } from '../verify.ts';
import { hashesEqual, isTokenHash, tokenHint } from '../../tokens.ts';

export type { BalanceRecord, DrawRecord, TopupRecord, StatementRecord } from './schema.ts';

/** The subset of a pino logger the payments modules use. */
export interface LoggerLike {
  info(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  error(obj: object, msg?: string): void;
}

export interface DebitDrawInput {
  quoteId: string;
  amountCents: number;
  currency: string;
  /** Opaque JSON draw record (units, units hash, ...). Stored verbatim and returned on replay. */
  draw: unknown;
  /** Shown in the statement. */
  productId?: string;
  /** Supply your own id if the draw record must embed it; otherwise one is generated. */
  drawId?: string;
}

export type DebitDrawResult =
  | { kind: 'ok'; draw: DrawRecord; balanceAfterCents: number }
  /** the same balance already paid this quote: the original draw, nothing debited */
  | { kind: 'replay'; draw: DrawRecord }
  /** another balance already paid this quote (the service answers 409) */
  | { kind: 'other_balance' }
  | { kind: 'insufficient'; balanceCents: number; currency: string }
  | { kind: 'unknown_balance' }
  | { kind: 'currency_mismatch'; balanceCurrency: string };

export interface CreditTopupInput {
  tokenHash: string;
  /** true: `tokenHash` belongs to a freshly generated token and the balance is created; false: credit an existing balance */
  createBalance: boolean;
  amountCents: number;
  currency: string;
  processor: string;
  /** MPP challenge id (credits at most once) */
  challengeId: string;
  /** processor payment reference, e.g. the Stripe PaymentIntent id (credits at most once) */
  paymentRef: string;  /** SHA-256 of the MPP credential, kept so the same credential resent can be answered again */
  credentialSha256?: string;
}

export type CreditTopupResult =
  | { kind: 'ok'; topup: TopupRecord; balanceAfterCents: number }
  /** this challenge or payment reference was already credited: nothing credited now */
  | { kind: 'already_credited'; topup: TopupRecord }
  | { kind: 'unknown_balance' }
  | { kind: 'currency_mismatch'; balanceCurrency: string }
  /** createBalance with a hash that exists (cannot happen with random 256-bit tokens) */
  | { kind: 'balance_exists' };

export interface BalanceInfo {
  cents: number;
  currency: string;
  createdAt: string;
}

export interface StatementEntry {
  kind: 'topup' | 'draw';
  id: string;
  amountCents: number;
  currency: string;
  balanceAfterCents: number;
  at: string;
  quoteId?: string;
  productId?: string;
}

/** The ledger is closed or has stopped after a failed write; answer 503 and restart. */
/**
 * The ledger refuses work (closed, or stopped after a failed write). A Problem, so every transport
 * (draw, balance, top-up, MCP, A2A) answers the same 503 without a special case; the internal
 * reason is kept for the log, not sent.
 */
export class LedgerUnavailableError extends Problem {
  constructor(
    readonly reason: string,
    options?: { cause?: unknown },
  ) {
    super(503, 'ledger-unavailable', 'Ledger unavailable', 'The balance ledger is not accepting changes. Retry shortly: a paid draw is charged at most once per quote_id and a top-up credential is credited at most once.');
    this.name = 'LedgerUnavailableError';
    this.message = `ledger unavailable: ${reason}`; // for logs and stack traces; clients get `detail`
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

export interface LedgerOptions {
  logger?: LoggerLike;
}

interface Pending<T> {
  record: T;
  durable: Promise<void>;
}

export class Ledger {
  private readonly locks = new KeyedMutex();
  private readonly committer: GroupCommitter;
  /** Authoritative in-memory view of every balance touched since open (loaded under its lock). */
  private readonly balances = new Map<string, BalanceRecord>();
  /** Claims queued but not yet durable; after commit the database answers. */
  private readonly pendingDraws = new Map<string, Pending<DrawRecord>>();
  private readonly pendingByChallenge = new Map<string, Pending<TopupRecord>>();
  private readonly pendingByPayment = new Map<string, Pending<TopupRecord>>();
  private seq: number;
  private closed = false;

  private constructor(
    private readonly db: Level<string, unknown>,
    lastSeq: number,
    private readonly logger?: LoggerLike,
  ) {
    this.seq = lastSeq;
    this.committer = new GroupCommitter(db, (e) => this.logger?.error({ err: e.message }, 'ledger stopped after a failed write'));
  }

  static async open(dir: string, options: LedgerOptions = {}): Promise<Ledger> {
    await mkdir(dir, { recursive: true });
    const db = new Level<string, unknown>(dir, { valueEncoding: 'json' });
    await db.open();
    let lastSeq = 0;
    for await (const key of db.keys({ gte: PREFIX.entry, lt: 'e;', reverse: true, limit: 1 })) {
      lastSeq = Number(key.slice(PREFIX.entry.length));
    }
    return new Ledger(db, lastSeq, options.logger);
  }

  // ---------------------------------------------------------------- draws

  async debitDraw(tokenHash: string, input: DebitDrawInput): Promise<DebitDrawResult> {
    this.assertUsable();
    assertCents(input.amountCents);
    assertId(input.quoteId, 'quoteId');
    assertCurrency(input.currency);
    if (!isTokenHash(tokenHash)) return { kind: 'unknown_balance' };
    const drawId = input.drawId ?? newId('drw');
    assertId(drawId, 'drawId');

    // Set inside the locked section; awaited after the locks are released (see the file comment).
    const commit: { durable?: Promise<void> } = {};
    // Lock order: claim keys before balance keys, everywhere.
    const result = await this.locks.run(`q:${input.quoteId}`, () =>
      this.locks.run(`b:${tokenHash}`, async (): Promise<DebitDrawResult> => {
        const prior = await this.findDrawByQuote(input.quoteId);
        if (prior) {
          return hashesEqual(prior.token_hash, tokenHash) ? { kind: 'replay', draw: prior } : { kind: 'other_balance' };
        }
        const bal = await this.loadBalance(tokenHash);
        if (!bal) return { kind: 'unknown_balance' };
        if (bal.currency !== input.currency) return { kind: 'currency_mismatch', balanceCurrency: bal.currency };
        if (bal.cents < input.amountCents) return { kind: 'insufficient', balanceCents: bal.cents, currency: bal.currency };

        this.assertUsable();
        const at = new Date().toISOString();
        const after = bal.cents - input.amountCents;
        const debitSeq = ++this.seq;
        const creditSeq = ++this.seq;
        const draw: DrawRecord = {
          draw_id: drawId,
          quote_id: input.quoteId,
          token_hash: tokenHash,
          amount_cents: input.amountCents,
          currency: input.currency,
          ...(input.productId !== undefined ? { product_id: input.productId } : {}),
          balance_after_cents: after,
          at,
          draw: input.draw ?? null,
        };
        const txn = txnOf.draw(drawId);
        const newBal: BalanceRecord = { ...bal, cents: after, last_seq: creditSeq };
        const stmt: StatementRecord = {
          kind: 'draw',
          id: drawId,
          amount_cents: input.amountCents,
          currency: input.currency,
          balance_after_cents: after,
          at,
          quote_id: input.quoteId,
          ...(input.productId !== undefined ? { product_id: input.productId } : {}),
        };
        const ops: BatchOp[] = [
          put(K.draw(drawId), draw),
          put(K.quote(input.quoteId), { draw_id: drawId, token_hash: tokenHash } satisfies ClaimRecord),
          put(K.entry(debitSeq), entry(debitSeq, txn, ACCOUNT.balance(tokenHash), -input.amountCents, input.currency, at)),
          put(K.entry(creditSeq), entry(creditSeq, txn, ACCOUNT.revenue, input.amountCents, input.currency, at)),
          put(K.balance(tokenHash), newBal),
          put(K.statement(tokenHash, creditSeq), stmt),
        ];
        commit.durable = this.committer.enqueue(ops);
        this.balances.set(tokenHash, newBal);
        this.trackPending(this.pendingDraws, input.quoteId, draw, commit.durable);
        return { kind: 'ok', draw, balanceAfterCents: after };
      }),
    );
    if (commit.durable) await commit.durable;
    return result;
  }

  // ---------------------------------------------------------------- top-ups

  async creditTopup(input: CreditTopupInput): Promise<CreditTopupResult> {
    this.assertUsable();
    assertCents(input.amountCents);
    assertCurrency(input.currency);
    assertId(input.challengeId, 'challengeId');
    assertId(input.paymentRef, 'paymentRef');
    assertId(input.processor, 'processor');
    if (!isTokenHash(input.tokenHash)) return { kind: 'unknown_balance' };
    const { tokenHash } = input;
    const paymentKey = `${input.processor}:${input.paymentRef}`;

    const commit: { durable?: Promise<void> } = {};
    const result = await this.locks.run(`c:${input.challengeId}`, () =>
      this.locks.run(`p:${paymentKey}`, () =>
        this.locks.run(`b:${tokenHash}`, async (): Promise<CreditTopupResult> => {
          const prior = (await this.findTopupByChallenge(input.challengeId)) ?? (await this.findTopupByPayment(input.processor, input.paymentRef));
          if (prior) return { kind: 'already_credited', topup: prior };

          const existing = await this.loadBalance(tokenHash);
          if (input.createBalance && existing) return { kind: 'balance_exists' };
          if (!input.createBalance && !existing) return { kind: 'unknown_balance' };
          if (existing && existing.currency !== input.currency) return { kind: 'currency_mismatch', balanceCurrency: existing.currency };

          this.assertUsable();
          const at = new Date().toISOString();
          const bal: BalanceRecord = existing ?? { token_hash: tokenHash, currency: input.currency, cents: 0, created_at: at, last_seq: 0 };
          const after = bal.cents + input.amountCents;
          if (!Number.isSafeInteger(after)) throw new RangeError('balance would overflow');
          const topupId = newId('top');
          const clearingSeq = ++this.seq;
          const creditSeq = ++this.seq;
          const topup: TopupRecord = {
            topup_id: topupId,
            token_hash: tokenHash,
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
          const txn = txnOf.topup(topupId);
          const newBal: BalanceRecord = { ...bal, cents: after, last_seq: creditSeq };
          const stmt: StatementRecord = { kind: 'topup', id: topupId, amount_cents: input.amountCents, currency: input.currency, balance_after_cents: after, at };
          const ops: BatchOp[] = [
            put(K.topup(topupId), topup),
            put(K.challenge(input.challengeId), { topup_id: topupId } satisfies ClaimRecord),
            put(K.payment(input.processor, input.paymentRef), { topup_id: topupId } satisfies ClaimRecord),
            put(K.entry(clearingSeq), entry(clearingSeq, txn, ACCOUNT.clearing(input.processor), -input.amountCents, input.currency, at)),
            put(K.entry(creditSeq), entry(creditSeq, txn, ACCOUNT.balance(tokenHash), input.amountCents, input.currency, at)),
            put(K.balance(tokenHash), newBal),
            put(K.statement(tokenHash, creditSeq), stmt),
          ];
          commit.durable = this.committer.enqueue(ops);
          this.balances.set(tokenHash, newBal);
          this.trackPending(this.pendingByChallenge, input.challengeId, topup, commit.durable);
          this.trackPending(this.pendingByPayment, paymentKey, topup, commit.durable);
          return { kind: 'ok', topup, balanceAfterCents: after };
        }),
      ),
    );
    if (commit.durable) {
      await commit.durable;
      const r = result as Extract<CreditTopupResult, { kind: 'ok' }>;
      this.logger?.info({ topup: r.topup.topup_id, balance: tokenHint(tokenHash), amount_cents: input.amountCents, processor: input.processor }, 'ledger credited top-up');
    }
    return result;
  }

  /** The top-up that consumed this MPP challenge, if any (durable state only). */
  async findTopupByChallenge(challengeId: string): Promise<TopupRecord | null> {
    return this.findPendingOrClaimed(this.pendingByChallenge.get(challengeId), K.challenge(challengeId));
  }

  async findTopupByPayment(processor: string, paymentRef: string): Promise<TopupRecord | null> {
    return this.findPendingOrClaimed(this.pendingByPayment.get(`${processor}:${paymentRef}`), K.payment(processor, paymentRef));
  }

  // ---------------------------------------------------------------- reads

  /** Committed balance (waits for changes already queued), or null for an unknown token hash. */
  async getBalance(tokenHash: string): Promise<BalanceInfo | null> {
    this.assertUsable();
    if (!isTokenHash(tokenHash)) return null;
    await this.committer.flush();
    // Read what is on disk, not the in-memory view: a debit queued after the flush is already in
    // the view but not yet durable, and a balance shown to a buyer must be one the ledger holds.
    const rec = (await this.db.get(K.balance(tokenHash))) as BalanceRecord | undefined;
    if (!rec || !hashesEqual(rec.token_hash, tokenHash)) return null;
    return { cents: rec.cents, currency: rec.currency, createdAt: rec.created_at };
  }

  /** The most recent top-ups and draws of a balance, newest first. */
  async statement(tokenHash: string, limit = 20): Promise<StatementEntry[]> {
    this.assertUsable();
    if (!isTokenHash(tokenHash)) return [];
    await this.committer.flush();
    const n = Math.max(0, Math.min(1000, Math.floor(limit)));
    const out: StatementEntry[] = [];
    const prefix = `${PREFIX.statement}${tokenHash}:`;
    for await (const value of this.db.values({ gt: prefix, lt: `${prefix}~`, reverse: true, limit: n })) {
      const s = value as StatementRecord;
      out.push({
        kind: s.kind,
        id: s.id,
        amountCents: s.amount_cents,
        currency: s.currency,
        balanceAfterCents: s.balance_after_cents,
        at: s.at,
        ...(s.quote_id !== undefined ? { quoteId: s.quote_id } : {}),
        ...(s.product_id !== undefined ? { productId: s.product_id } : {}),
      });
    }
    return out;
  }

  /** Audits the live ledger (see ../verify.ts); one iterator, so one consistent snapshot. */
  async verify(): Promise<Violation[]> {
    this.assertUsable();
    await this.committer.flush();
    return verifyLedgerDb(this.db);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.committer.failed) await this.committer.flush().catch(() => {});
    await this.db.close();
  }

  // ---------------------------------------------------------------- internals

  private assertUsable(): void {
    if (this.closed) throw new LedgerUnavailableError('ledger is closed');
    const failed = this.committer.failed;
    if (failed) throw new LedgerUnavailableError(failed.message, { cause: failed });
  }

  /** Must be called under the balance's lock: the cache is only ever filled there. */
  private async loadBalance(tokenHash: string): Promise<BalanceRecord | null> {
    const cached = this.balances.get(tokenHash);
    if (cached) return cached;
    const rec = (await this.db.get(K.balance(tokenHash))) as BalanceRecord | undefined;
    if (!rec) return null;
    this.balances.set(tokenHash, rec);
    return rec;
  }

  /**
   * The draw that paid this quote, if any (waits for a pending debit to become durable). Read-only;
   * for deciding replay vs. "quote expired" before calling debitDraw. debitDraw itself re-checks
   * under the lock, so this is never needed for correctness.
   */
  async findDrawByQuote(quoteId: string): Promise<DrawRecord | null> {
    this.assertUsable();
    const pending = this.pendingDraws.get(quoteId);
    if (pending) {
      await pending.durable; // never report a replay of something not yet on disk
      return pending.record;
    }
    const claim = (await this.db.get(K.quote(quoteId))) as ClaimRecord | undefined;
    if (!claim?.draw_id) return null;
    const draw = (await this.db.get(K.draw(claim.draw_id))) as DrawRecord | undefined;
    if (!draw) throw new Error(`ledger corrupt: quote claim ${quoteId} names missing draw ${claim.draw_id}`);
    return draw;
  }

  private async findPendingOrClaimed(pending: Pending<TopupRecord> | undefined, claimKey: string): Promise<TopupRecord | null> {
    if (pending) {
      await pending.durable;
      return pending.record;
    }
    const claim = (await this.db.get(claimKey)) as ClaimRecord | undefined;
    if (!claim?.topup_id) return null;
    const topup = (await this.db.get(K.topup(claim.topup_id))) as TopupRecord | undefined;
    if (!topup) throw new Error(`ledger corrupt: claim ${claimKey} names missing top-up ${claim.topup_id}`);
    return topup;
  }

  private trackPending<T>(map: Map<string, Pending<T>>, key: string, record: T, durable: Promise<void>): void {
    map.set(key, { record, durable });
    // Once durable the database answers; on failure the ledger is stopped anyway.
    durable.then(
      () => {
        if (map.get(key)?.record === record) map.delete(key);
      },
      () => {},
    );
  }
}

function put(key: string, value: unknown): BatchOp {
  return { type: 'put', key, value };
}

function entry(seq: number, txn: string, account: string, cents: number, currency: string, at: string): EntryRecord {
  return { seq, txn, account, cents, currency, at };
}

function newId(prefix: string): string {
  return `${prefix}_${randomBytes(16).toString('base64url')}`;
}

function assertCents(n: number): void {
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`amount must be a positive integer number of cents, got ${n}`);
}

function assertCurrency(c: string): void {
  if (typeof c !== 'string' || !/^[A-Z]{3}$/.test(c)) throw new RangeError(`currency must be an ISO 4217 code, got ${String(c)}`);
}

function assertId(s: string, what: string): void {
  if (typeof s !== 'string' || s.length === 0 || s.length > 512) throw new RangeError(`${what} must be a non-empty string of at most 512 characters`);
}
