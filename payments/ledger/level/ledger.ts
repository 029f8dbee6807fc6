// The embedded ledger: LevelDB, one process (the default for a local start; LDS_LEDGER_DIR).
//
// How it keeps the guarantees of ../ledger.ts:
//   - every state change is one atomic, synced LevelDB batch (see GroupCommitter in commit.ts);
//   - a balance never goes negative: debits are decided under the balance's lock;
//   - claims (`q:` quote, `c:` challenge, `p:` payment) are written in the same batch as the money.
//
// Throughput: decisions are taken from an in-memory view of each touched balance, under a
// per-balance lock that is held only until the change is queued for commit - not until it is
// durable. The caller's promise resolves after durability. Because batches are written in order and
// the committer is fail-stop, a caller is never told "paid" for a change that did not reach disk,
// while many draws on one balance share an fsync. LevelDB lets one process open the directory, so
// that in-memory view is the whole truth; several instances need the PostgreSQL backend.
import { mkdir, access } from 'node:fs/promises';
import { Level } from 'level';
import { GroupCommitter, KeyedMutex, type BatchOp } from './commit.ts';
import { ACCOUNT, K, PREFIX, statementLine, txnOf, type BalanceRecord, type ClaimRecord, type DrawRecord, type EntryRecord, type StatementRecord, type TopupRecord } from '../records.ts';
import {
  LedgerNotEmptyError,
  LedgerUnavailableError,
  checkCreditInput,
  checkDebitInput,
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
} from '../ledger.ts';
import { importWrites } from '../transfer.ts';
import { verifyRecords, type Violation } from '../verify.ts';
import { hashesEqual, isTokenHash, tokenHint } from '../../tokens.ts';

export interface LevelLedgerOptions {
  logger?: LoggerLike;
}

interface Pending<T> {
  record: T;
  durable: Promise<void>;
}

/** Opening failed because another process holds the LevelDB lock. */
export class LedgerLockedError extends Error {}

/**
 * Opens the LevelDB at `dir`, turning "database failed to open" into a message that says which
 * database, that another process holds it, and what to do instead.
 */
export async function openLevelDb(dir: string, options: { createIfMissing: boolean }): Promise<Level<string, unknown>> {
  if (options.createIfMissing) await mkdir(dir, { recursive: true });
  else await access(dir); // a missing directory is an operator error, not an empty ledger
  const db = new Level<string, unknown>(dir, { valueEncoding: 'json', createIfMissing: options.createIfMissing });
  try {
    await db.open();
  } catch (err) {
    const cause = (err as { cause?: { code?: string } }).cause;
    if (cause?.code === 'LEVEL_LOCKED') {
      throw new LedgerLockedError(
        `the ledger database ${dir} is held by another process (a running service?). One LevelDB ledger serves one process: stop the other process, ` +
          'or give this one its own LDS_LEDGER_DIR, or run several instances on the PostgreSQL ledger (LDS_LEDGER_URL=postgres://...).',
      );
    }
    throw err;
  }
  return db;
}

export class LevelLedger implements Ledger {
  readonly backend = 'level' as const;
  private readonly locks = new KeyedMutex();
  private readonly committer: GroupCommitter;
  /** Authoritative in-memory view of every balance touched since open (loaded under its lock). */
  private readonly balances = new Map<string, BalanceRecord>();
  /** Claims queued but not yet durable; after commit the database answers. */
  private readonly pendingDraws = new Map<string, Pending<DrawRecord>>();
  private readonly pendingByChallenge = new Map<string, Pending<TopupRecord>>();
  private readonly pendingByPayment = new Map<string, Pending<TopupRecord>>();
  /** Challenges being charged right now, with the time their claim lapses (this process is the only writer). */
  private readonly challengeClaims = new Map<string, number>();
  private seq: number;
  private closed = false;

  private constructor(
    private readonly db: Level<string, unknown>,
    readonly location: string,
    lastSeq: number,
    private readonly logger?: LoggerLike,
  ) {
    this.seq = lastSeq;
    this.committer = new GroupCommitter(db, (e) => this.logger?.error({ err: e.message }, 'ledger stopped after a failed write'));
  }

  static async open(dir: string, options: LevelLedgerOptions = {}): Promise<LevelLedger> {
    const db = await openLevelDb(dir, { createIfMissing: true });
    return new LevelLedger(db, dir, await lastSeqOf(db), options.logger);
  }

  // ---------------------------------------------------------------- draws

  async debitDraw(tokenHash: string, input: DebitDrawInput): Promise<DebitDrawResult> {
    this.assertUsable();
    checkDebitInput(input);
    if (!isTokenHash(tokenHash)) return { kind: 'unknown_balance' };
    const drawId = input.drawId ?? newId('drw');

    // Set inside the locked section; awaited after the locks are released (see the file comment).
    const commit: { durable?: Promise<void> } = {};
    // Lock order: claim keys before balance keys, everywhere. The claim is looked up under the
    // quote's lock only: every debit of this quote holds that lock, so nobody can claim it between
    // the look-up and the enqueue below, and the balance's lock - which every draw on this balance
    // waits for - is not held across a database read (the look-up of a fresh quote is a LevelDB
    // get on the thread pool; under the balance lock it capped draws per balance at 1/get latency).
    const result = await this.locks.run(`q:${input.quoteId}`, async (): Promise<DebitDrawResult> => {
      const prior = await this.findDrawByQuote(input.quoteId);
      if (prior) {
        return hashesEqual(prior.token_hash, tokenHash) ? { kind: 'replay', draw: prior } : { kind: 'other_balance' };
      }
      return this.locks.run(`b:${tokenHash}`, async (): Promise<DebitDrawResult> => {
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
        const newBal: BalanceRecord = { ...bal, cents: after, last_seq: creditSeq };
        const ops: BatchOp[] = [
          put(K.draw(drawId), draw),
          put(K.quote(input.quoteId), { draw_id: drawId, token_hash: tokenHash } satisfies ClaimRecord),
          ...drawEntries(draw, debitSeq, creditSeq).map((e) => put(K.entry(e.seq), e)),
          put(K.balance(tokenHash), newBal),
          put(K.statement(tokenHash, debitSeq), statementLine({ kind: 'draw', ...draw })),
        ];
        commit.durable = this.committer.enqueue(ops);
        this.balances.set(tokenHash, newBal);
        this.trackPending(this.pendingDraws, input.quoteId, draw, commit.durable);
        return { kind: 'ok', draw, balanceAfterCents: after };
      });
    });
    if (commit.durable) await commit.durable;
    return result;
  }

  // ---------------------------------------------------------------- top-ups

  async creditTopup(input: CreditTopupInput): Promise<CreditTopupResult> {
    this.assertUsable();
    checkCreditInput(input);
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
          const bal: BalanceRecord = existing ?? { token_hash: tokenHash, currency: input.currency, cents: 0, created_at: at };
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
          const newBal: BalanceRecord = { ...bal, cents: after, last_seq: creditSeq };
          const ops: BatchOp[] = [
            put(K.topup(topupId), topup),
            put(K.challenge(input.challengeId), { topup_id: topupId } satisfies ClaimRecord),
            put(K.payment(input.processor, input.paymentRef), { topup_id: topupId } satisfies ClaimRecord),
            ...topupEntries(topup, clearingSeq, creditSeq).map((e) => put(K.entry(e.seq), e)),
            put(K.balance(tokenHash), newBal),
            put(K.statement(tokenHash, creditSeq), statementLine({ kind: 'topup', ...topup })),
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

  async findTopupByChallenge(challengeId: string): Promise<TopupRecord | null> {
    return this.findPendingOrClaimed(this.pendingByChallenge.get(challengeId), K.challenge(challengeId));
  }

  async findTopupByPayment(processor: string, paymentRef: string): Promise<TopupRecord | null> {
    return this.findPendingOrClaimed(this.pendingByPayment.get(`${processor}:${paymentRef}`), K.payment(processor, paymentRef));
  }

  async claimChallenge(challengeId: string, leaseMs: number): Promise<ChallengeClaim | null> {
    this.assertUsable();
    const now = Date.now();
    const held = this.challengeClaims.get(challengeId);
    // check-and-set with no await in between: two concurrent uses cannot both pass
    if (held !== undefined && held > now) return null;
    const until = now + leaseMs;
    this.challengeClaims.set(challengeId, until);
    return {
      release: async () => {
        if (this.challengeClaims.get(challengeId) === until) this.challengeClaims.delete(challengeId);
      },
    };
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

  async statement(tokenHash: string, limit?: number): Promise<StatementEntry[]> {
    this.assertUsable();
    if (!isTokenHash(tokenHash)) return [];
    await this.committer.flush();
    const n = statementLimit(limit);
    const out: StatementEntry[] = [];
    const prefix = `${PREFIX.statement}${tokenHash}:`;
    for await (const value of this.db.values({ gt: prefix, lt: `${prefix}~`, reverse: true, limit: n })) out.push(toStatementEntry(value as StatementRecord));
    return out;
  }

  /** One iterator over the whole database is one LevelDB snapshot; queued changes are flushed first. */
  async readSnapshot<T>(read: (records: LedgerRecords) => Promise<T>): Promise<T> {
    this.assertUsable();
    await this.committer.flush();
    return read(this.db.iterator() as LedgerRecords);
  }

  async verify(): Promise<Violation[]> {
    return this.readSnapshot(verifyRecords);
  }

  async importRecords(records: AsyncIterable<ImportRecord>): Promise<void> {
    this.assertUsable();
    for await (const _key of this.db.keys({ limit: 1 })) throw new LedgerNotEmptyError(`the ledger ${this.location} is not empty: import into a new, empty ledger directory`);
    const ops: BatchOp[] = [];
    const flush = async () => {
      if (ops.length) await this.committer.enqueue(ops.splice(0));
    };
    for await (const [key, value] of importWrites(records)) {
      ops.push(put(key, value));
      if (ops.length >= 2000) await flush();
    }
    await flush();
    this.seq = await lastSeqOf(this.db);
    this.balances.clear();
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
    // getSync: a claim look-up is one LevelDB read of a small, hot key range (the block cache and
    // the page cache hold it); done inline it costs ~1 µs of this thread instead of a thread-pool
    // round trip (~15 µs of CPU, and a wait behind the group commit's fsync on the same pool).
    const claim = this.db.getSync(K.quote(quoteId)) as ClaimRecord | undefined;
    if (!claim?.draw_id) return null;
    const draw = (await this.db.get(K.draw(claim.draw_id))) as DrawRecord | undefined;
    if (!draw) throw new Error(`ledger corrupt: quote claim ${quoteId} names missing draw ${claim.draw_id}`);
    return draw;
  }

  private async findPendingOrClaimed(pending: Pending<TopupRecord> | undefined, claimKey: string): Promise<TopupRecord | null> {
    this.assertUsable();
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

/** The highest entry seq written so far (0 for an empty ledger). */
async function lastSeqOf(db: Level<string, unknown>): Promise<number> {
  for await (const key of db.keys({ gte: PREFIX.entry, lt: 'e;', reverse: true, limit: 1 })) return Number(key.slice(PREFIX.entry.length));
  return 0;
}

function put(key: string, value: unknown): BatchOp {
  return { type: 'put', key, value };
}

/** The two entries of a draw: the balance pays revenue. */
export function drawEntries(d: DrawRecord, debitSeq: number, creditSeq: number): EntryRecord[] {
  const txn = txnOf.draw(d.draw_id);
  return [
    { seq: debitSeq, txn, account: ACCOUNT.balance(d.token_hash), cents: -d.amount_cents, currency: d.currency, at: d.at },
    { seq: creditSeq, txn, account: ACCOUNT.revenue, cents: d.amount_cents, currency: d.currency, at: d.at },
  ];
}

/** The two entries of a top-up: the processor's clearing account pays the balance. */
export function topupEntries(t: TopupRecord, clearingSeq: number, creditSeq: number): EntryRecord[] {
  const txn = txnOf.topup(t.topup_id);
  return [
    { seq: clearingSeq, txn, account: ACCOUNT.clearing(t.processor), cents: -t.amount_cents, currency: t.currency, at: t.at },
    { seq: creditSeq, txn, account: ACCOUNT.balance(t.token_hash), cents: t.amount_cents, currency: t.currency, at: t.at },
  ];
}


/** Audits a ledger directory that no process has open (`ledger verify` with the service stopped). */
export async function verifyLevelDir(dir: string): Promise<Violation[]> {
  const db = await openLevelDb(dir, { createIfMissing: false });
  try {
    return await verifyRecords(db.iterator() as LedgerRecords);
  } finally {
    await db.close();
  }
}
