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
import { access } from 'node:fs/promises';
import { privateDir } from '../../../contract/private-dir.ts';
import { Level } from 'level';
import { GroupCommitter, KeyedMutex, type BatchOp } from './commit.ts';
import { assertChange } from '../invariants.ts';
import {
  ACCOUNT,
  K,
  PREFIX,
  correctionCredits,
  correctionEntries,
  correctionStatementLine,
  seqKey,
  statementLine,
  txnOf,
  type BalanceRecord,
  type ClaimRecord,
  type CorrectionRecord,
  type SealRecord,
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
  type LedgerHooks,
  type LedgerRecords,
  type LoggerLike,
  toStatementEntry,
  type StatementEntry,
  tokenResolution,
} from '../ledger.ts';
import { importWrites } from '../transfer.ts';
import { verifyRecords, type Violation } from '../verify.ts';
import { hashesEqual, isTokenHash, tokenHint } from '../../tokens.ts';
import type { FaultHooks, FaultOp } from '../../faults.ts';

export interface LevelLedgerOptions {
  logger?: LoggerLike;
  hooks?: LedgerHooks;
  /** Simulator only (payments/faults.ts); production never passes it. */
  faults?: FaultHooks;
  /** Token records kept in memory before the read cache is cleared (default 100,000; tests lower it). */
  maxCachedTokens?: number;
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
export async function openLevelDb(dir: string, options: { createIfMissing: boolean; logger?: LoggerLike }): Promise<Level<string, unknown>> {
  if (options.createIfMissing) {
    // Owner-only: balances and draws are nobody else's to read (contract/private-dir.ts).
    const loose = await privateDir(dir);
    if (loose !== null) options.logger?.warn({ dir, was: loose.toString(8) }, 'the ledger folder could be read by others: made it owner-only (0700)');
  } else await access(dir); // a missing directory is an operator error, not an empty ledger
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
  /** Token records read so far (null: none, the token is a balance's own). This process is the only writer. */
  private readonly tokens = new Map<string, TokenRecord | null>();
  /** Token records written by a rotation or revocation and not yet durable: what the database will say. */
  private readonly pendingTokens = new Map<string, Pending<TokenRecord>>();
  /** Token changes made since open: a read that saw this move while it was out reads again. */
  private tokenChanges = 0;
  private seq: number;
  private closed = false;

  private constructor(
    private readonly db: Level<string, unknown>,
    readonly location: string,
    lastSeq: number,
    private readonly logger?: LoggerLike,
    hooks: LedgerHooks = {},
    private readonly faults?: FaultHooks,
    private readonly maxCachedTokens = 100_000,
  ) {
    this.seq = lastSeq;
    this.committer = new GroupCommitter(
      observedWriter(directWriter(db), hooks, () => this.takeQueuedChanges()),
      (e) => {
        this.logger?.error({ err: e.message }, 'ledger stopped after a failed write');
        hooks.onFatal?.(e);
      },
      faults,
    );
  }

  static async open(dir: string, options: LevelLedgerOptions = {}): Promise<LevelLedger> {
    const db = await openLevelDb(dir, { createIfMissing: true, logger: options.logger });
    return new LevelLedger(db, dir, await lastSeqOf(db), options.logger, options.hooks, options.faults, options.maxCachedTokens);
  }

  /** Ready while open and no write has failed (a failed write stops the ledger until restart). */
  async ready(): Promise<string | null> {
    if (this.closed) return 'ledger is closed';
    const failed = this.committer.failed;
    return failed ? failed.message : null;
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
      // The presented token names a balance (resolveToken; its record is cached once read), or
      // none: a rotated-away or revoked token is refused before anything else, as on PostgreSQL.
      const token = tokenResolution(tokenHash, await this.loadToken(tokenHash));
      if (token.kind === 'revoked') return { kind: 'revoked' };
      const balanceId = token.balance;
      const prior = await this.findDrawByQuote(input.quoteId);
      if (prior) {
        return hashesEqual(prior.token_hash, balanceId) ? { kind: 'replay', draw: prior } : { kind: 'other_balance' };
      }
      return this.locks.run(`b:${balanceId}`, async (): Promise<DebitDrawResult> => {
        const bal = await this.loadBalance(balanceId);
        if (!bal) return { kind: 'unknown_balance' };
        if (bal.currency !== input.currency) return { kind: 'currency_mismatch', balanceCurrency: bal.currency };
        if (bal.cents < input.amountCents) return { kind: 'insufficient', balanceCents: bal.cents, currency: bal.currency };

        this.assertUsable();
        const at = new Date().toISOString();
        const after = bal.cents - input.amountCents;
        const debitSeq = ++this.seq;
        const creditSeq = ++this.seq;
        const draw = drawRecord(input, drawId, balanceId, after, at);
        const newBal: BalanceRecord = { ...bal, cents: after, last_seq: creditSeq };
        const ops: BatchOp[] = [
          put(K.draw(drawId), draw),
          put(K.quote(input.quoteId), { draw_id: drawId, token_hash: balanceId } satisfies ClaimRecord),
          ...drawEntries(draw, debitSeq, creditSeq).map((e) => put(K.entry(e.seq), e)),
          put(K.balance(balanceId), newBal),
          put(K.statement(balanceId, debitSeq), statementLine({ kind: 'draw', ...draw })),
        ];
        this.faults?.commit('before-commit', 'debit');
        commit.durable = this.enqueue(ops, 'debit');
        this.balances.set(balanceId, newBal);
        this.trackPending(this.pendingDraws, input.quoteId, draw, commit.durable);
        return { kind: 'ok', draw, balanceAfterCents: after };
      });
    });
    if (commit.durable) {
      await durably(commit.durable);
      this.faults?.commit('after-commit', 'debit');
    }
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
          const topup = topupRecord(input, topupId, after, at);
          const newBal: BalanceRecord = { ...bal, cents: after, last_seq: creditSeq };
          const ops: BatchOp[] = [
            put(K.topup(topupId), topup),
            put(K.challenge(input.challengeId), { topup_id: topupId } satisfies ClaimRecord),
            put(K.payment(input.processor, input.paymentRef), { topup_id: topupId } satisfies ClaimRecord),
            ...topupEntries(topup, clearingSeq, creditSeq).map((e) => put(K.entry(e.seq), e)),
            put(K.balance(tokenHash), newBal),
            put(K.statement(tokenHash, creditSeq), statementLine({ kind: 'topup', ...topup })),
          ];
          if (input.tokenSeal) {
            const seal: SealRecord = { challenge_id: input.challengeId, sealed: input.tokenSeal.sealed, expires_at: input.tokenSeal.expiresAt };
            ops.push(put(K.seal(seal.expires_at, seal.challenge_id), seal));
          }
          // Sealed tokens whose replay window has closed go in the same batch (one key range).
          for await (const key of this.db.keys({ gte: PREFIX.seal, lt: K.seal(Date.now(), '') })) ops.push({ type: 'del', key });
          this.faults?.commit('before-commit', 'credit');
          commit.durable = this.enqueue(ops, 'credit');
          this.balances.set(tokenHash, newBal);
          this.trackPending(this.pendingByChallenge, input.challengeId, topup, commit.durable);
          this.trackPending(this.pendingByPayment, paymentKey, topup, commit.durable);
          return { kind: 'ok', topup, balanceAfterCents: after };
        }),
      ),
    );
    if (commit.durable) {
      await durably(commit.durable);
      const r = result as Extract<CreditTopupResult, { kind: 'ok' }>;
      this.logger?.info({ topup: r.topup.topup_id, balance: tokenHint(tokenHash), amount_cents: input.amountCents, processor: input.processor }, 'ledger credited top-up');
      this.faults?.commit('after-commit', 'credit');
    }
    return result;
  }

  async findTokenSeal(challengeId: string, expiresAt: number): Promise<string | null> {
    this.assertUsable();
    if (!(expiresAt > Date.now()) || !Number.isSafeInteger(expiresAt)) return null;
    const seal = (await this.db.get(K.seal(expiresAt, challengeId))) as SealRecord | undefined;
    return seal && seal.challenge_id === challengeId && seal.expires_at > Date.now() ? seal.sealed : null;
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

  async statement(tokenHash: string, limit?: number, beforeSeq?: number): Promise<StatementEntry[]> {
    this.assertUsable();
    if (!isTokenHash(tokenHash)) return [];
    await this.committer.flush();
    const n = statementLimit(limit);
    const out: StatementEntry[] = [];
    const prefix = `${PREFIX.statement}${tokenHash}:`;
    const lt = beforeSeq !== undefined ? `${prefix}${seqKey(Math.max(0, beforeSeq))}` : `${prefix}~`;
    for await (const [key, value] of this.db.iterator({ gt: prefix, lt, reverse: true, limit: n })) out.push(toStatementEntry(value as StatementRecord, Number(key.slice(prefix.length))));
    return out;
  }

  // ---------------------------------------------------------------- tokens

  async resolveToken(tokenHash: string): Promise<TokenResolution> {
    this.assertUsable();
    return tokenResolution(tokenHash, await this.loadToken(tokenHash));
  }

  /** Two local reads (no round trip to save here); the PostgreSQL ledger makes them one statement. */
  async tokenBalance(tokenHash: string): Promise<TokenBalance> {
    const who = await this.resolveToken(tokenHash);
    return who.kind === 'revoked' ? who : { ...who, info: await this.getBalance(who.balance) };
  }

  async rotateToken(oldHash: string, newHash: string): Promise<TokenChangeResult> {
    return this.changeToken(oldHash, 'rotated', newHash);
  }

  async revokeToken(tokenHash: string): Promise<TokenChangeResult> {
    return this.changeToken(tokenHash, 'revoked');
  }

  /** Under the token's lock: mark it revoked and (rotation) add the new token, in one batch. */
  private async changeToken(hash: string, why: 'rotated' | 'revoked', newHash?: string): Promise<TokenChangeResult> {
    this.assertUsable();
    if (!isTokenHash(hash) || (newHash !== undefined && !isTokenHash(newHash))) return { kind: 'unknown' };
    const commit: { durable?: Promise<void> } = {};
    const result = await this.locks.run(`k:${hash}`, async (): Promise<TokenChangeResult> => {
      const prior = await this.loadToken(hash);
      if (prior?.revoked_at) return { kind: 'revoked' };
      const balance = prior ? prior.balance : hash;
      if (!(await this.db.get(K.balance(balance)))) return { kind: 'unknown' };
      this.assertUsable();
      const at = new Date().toISOString();
      const records: TokenRecord[] = [{ token_hash: hash, balance, created_at: prior?.created_at ?? at, revoked_at: at, revoked_reason: why }];
      if (newHash) records.push({ token_hash: newHash, balance, created_at: at });
      commit.durable = this.enqueue(records.map((r) => put(K.token(r.token_hash), r)));
      // Readers see the change from now on: through the read cache, and through the pending map
      // until the batch is durable (the cache may be cleared before then; the pending map is not).
      this.tokenChanges++;
      for (const r of records) {
        this.tokens.set(r.token_hash, r);
        this.trackPending(this.pendingTokens, r.token_hash, r, commit.durable);
      }
      return { kind: 'ok', balance };
    });
    if (commit.durable) await commit.durable;
    return result;
  }

  /** Token records are few (one per rotation or revocation): kept in memory once read. */
  private async loadToken(hash: string): Promise<TokenRecord | null> {
    if (!isTokenHash(hash)) return null;
    const cached = this.pendingTokens.get(hash)?.record ?? this.tokens.get(hash);
    if (cached !== undefined) return cached;
    const seen = this.tokenChanges;
    const rec = ((await this.db.get(K.token(hash))) as TokenRecord | undefined) ?? null;
    // A rotation or revocation may have set the record while this read was on the thread pool (it
    // sets it before its batch is written): that record is newer than what was read.
    const changed = this.pendingTokens.get(hash)?.record ?? this.tokens.get(hash);
    if (changed !== undefined) return changed;
    // A change landed meanwhile and is no longer in memory (durable, then the cache cleared): the
    // read may predate it (LevelDB reads as of their start), so read again rather than cache it.
    if (this.tokenChanges !== seen) return this.loadToken(hash);
    // Bounded: unknown hashes are remembered too (null). Clearing is safe because a change that
    // is not yet on disk is still in pendingTokens.
    if (this.tokens.size >= this.maxCachedTokens) this.tokens.clear();
    this.tokens.set(hash, rec);
    return rec;
  }

  // ---------------------------------------------------------------- corrections

  async findDraw(drawId: string): Promise<DrawRecord | null> {
    this.assertUsable();
    await this.committer.flush();
    return ((await this.db.get(K.draw(drawId))) as DrawRecord | undefined) ?? null;
  }

  async findTopup(topupId: string): Promise<TopupRecord | null> {
    this.assertUsable();
    await this.committer.flush();
    return ((await this.db.get(K.topup(topupId))) as TopupRecord | undefined) ?? null;
  }

  async correct(input: CorrectionInput): Promise<CorrectionResult> {
    this.assertUsable();
    checkCorrectionInput(input);
    const fp = correctionFingerprint(input);
    const commit: { durable?: Promise<void> } = {};
    // Lock order: idempotency key, then the refunded record, then the balance.
    const result = await this.locks.run(`i:${input.idempotencyKey}`, async (): Promise<CorrectionResult> => {
      const replay = await this.priorCorrection(input.idempotencyKey, fp);
      if (replay) return replay;
      const target = input.drawId ? `d:${input.drawId}` : input.topupId ? `t:${input.topupId}` : `-`;
      return this.locks.run(target, async (): Promise<CorrectionResult> => {
        let hash: string;
        let counter: { total: number; processor?: string } | null = null;
        if (input.kind === 'refund') {
          const d = await this.findDraw(input.drawId!);
          if (!d) return { kind: 'not_found', what: 'draw' };
          hash = d.token_hash;
          counter = { total: d.amount_cents };
        } else if (input.kind === 'topup_refund') {
          const t = await this.findTopup(input.topupId!);
          if (!t) return { kind: 'not_found', what: 'topup' };
          hash = t.token_hash;
          counter = { total: t.amount_cents, processor: t.processor };
        } else hash = input.balance!;
        if (!isTokenHash(hash)) return { kind: 'not_found', what: 'balance' };
        // What earlier corrections already refunded of this record (durable: flushed by findDraw/findTopup).
        const refunded = counter ? await this.refundedOf(input.drawId ? { draw_id: input.drawId } : { topup_id: input.topupId! }) : 0;
        return this.locks.run(`b:${hash}`, async (): Promise<CorrectionResult> => {
          const bal = await this.loadBalance(hash);
          if (!bal) return { kind: 'not_found', what: 'balance' };
          let amount = input.amountCents ?? 0;
          if (input.kind === 'refund') {
            const available = counter!.total - refunded;
            amount = input.amountCents ?? available;
            if (amount <= 0 || amount > available) return { kind: 'exceeds', availableCents: Math.max(0, available) };
          } else if (input.kind === 'topup_refund') {
            const available = counter!.total - refunded;
            if (input.amountCents !== undefined && input.amountCents > available) return { kind: 'exceeds', availableCents: Math.max(0, available) };
            amount = Math.min(input.amountCents ?? available, available, bal.cents); // never below zero: only the unspent remainder
            if (amount <= 0) return { kind: 'nothing_to_refund' };
          } else if (input.kind === 'debit' && amount > bal.cents) return { kind: 'insufficient', balanceCents: bal.cents };
          this.assertUsable();
          const after = correctionCredits(input.kind) ? bal.cents + amount : bal.cents - amount;
          if (!Number.isSafeInteger(after) || after < 0) return { kind: 'insufficient', balanceCents: bal.cents };
          const first = ++this.seq;
          const second = ++this.seq;
          const c: CorrectionRecord = {
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
            ...(input.drawId && input.kind === 'refund' ? { draw_id: input.drawId } : {}),
            ...(input.topupId && input.kind === 'topup_refund' ? { topup_id: input.topupId, processor: counter!.processor } : {}),
          };
          const entries = correctionEntries(c, first, second);
          const balanceSeq = entries.find((e) => e.account === ACCOUNT.balance(hash))!.seq;
          const newBal: BalanceRecord = { ...bal, cents: after, last_seq: second };
          const ops: BatchOp[] = [
            put(K.correction(c.correction_id), c),
            put(K.idempotency(c.idempotency_key), { correction_id: c.correction_id }),
            ...entries.map((e) => put(K.entry(e.seq), e)),
            put(K.balance(hash), newBal),
            put(K.statement(hash, balanceSeq), correctionStatementLine(c)),
          ];
          commit.durable = this.enqueue(ops);
          this.balances.set(hash, newBal);
          return { kind: 'ok', correction: c };
        });
      });
    });
    if (commit.durable) await commit.durable;
    return result;
  }

  private async priorCorrection(key: string, fp: string): Promise<CorrectionResult | null> {
    await this.committer.flush();
    const claim = (await this.db.get(K.idempotency(key))) as { correction_id?: string } | undefined;
    if (!claim?.correction_id) return null;
    const c = (await this.db.get(K.correction(claim.correction_id))) as CorrectionRecord | undefined;
    if (!c) throw new Error(`ledger corrupt: idempotency key names missing correction ${claim.correction_id}`);
    return c.request_sha256 === fp ? { kind: 'replay', correction: c } : { kind: 'key_reused', correction: c };
  }

  /** Sum of the corrections that refunded this draw or top-up (operator commands are rare: a scan is fine). */
  private async refundedOf(of: { draw_id?: string; topup_id?: string }): Promise<number> {
    let sum = 0;
    for await (const v of this.db.values({ gte: PREFIX.correction, lt: 'x;' })) {
      const c = v as CorrectionRecord;
      if ((of.draw_id && c.draw_id === of.draw_id) || (of.topup_id && c.topup_id === of.topup_id)) sum += c.amount_cents;
    }
    return sum;
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
    // Straight to the committer, in chunks: an import is a copy of records that were each checked
    // when they were first written, a chunk may split a transaction, and `ledger import` verifies
    // the whole ledger afterwards.
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
    this.tokens.clear();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (!this.committer.failed) await this.committer.flush().catch(() => {});
    await this.db.close();
  }

  // ---------------------------------------------------------------- internals

  /** State changes queued since the committer last took its queue (for the batch-size metric). */
  private queuedChanges = 0;

  /** One state change to the group committer, once it is checked against the ledger's invariants (invariants.ts). */
  private enqueue(ops: BatchOp[], tag?: FaultOp): Promise<void> {
    assertChange(ops.filter((op) => op.type === 'put'));
    this.queuedChanges++;
    return this.committer.enqueue(ops, tag);
  }

  /**
   * The committer takes its whole queue and calls batch() in the same tick, so the changes queued
   * since the last batch are exactly the ones in this batch.
   */
  private takeQueuedChanges(): number {
    const n = this.queuedChanges;
    this.queuedChanges = 0;
    return n;
  }

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

/** A change that did not become durable because the write failed: the ledger has stopped (503). */
async function durably(p: Promise<void>): Promise<void> {
  try {
    await p;
  } catch (err) {
    throw err instanceof LedgerUnavailableError ? err : new LedgerUnavailableError((err as Error).message, { cause: err });
  }
}

type BatchWriter = { batch(ops: BatchOp[], options: { sync: boolean }): Promise<void> };

/**
 * The group commit's writes, straight to the storage binding: abstract-level's public batch()
 * copies, re-validates and re-encodes every operation on the event loop (measured on a loop of
 * groups of 6-op draws: ~60 µs of main-thread CPU per draw, against ~10 µs for the binding
 * itself), and a paid draw is six operations. The ledger's operations are already valid
 * (string keys, JSON values it made itself), so they are encoded here exactly as the database's
 * 'json' value encoding does (JSON.stringify; utf8 string keys) and handed to `_batch`, the
 * implementation's own write (abstract-level's contract for implementations; classic-level writes
 * one LevelDB WriteBatch, synced when asked). test/ledger-level-batch checks the bytes are the
 * same as through batch(). While the database is not open, batch() answers (with its error).
 */
export function directWriter(db: Level<string, unknown>): BatchWriter {
  const write = (db as unknown as { _batch?: (ops: unknown[], options: { sync: boolean }) => Promise<void> })._batch;
  if (typeof write !== 'function') return db;
  return {
    batch(ops, options) {
      if (db.status !== 'open') return db.batch(ops, options);
      const encoded = new Array<unknown>(ops.length);
      for (let i = 0; i < ops.length; i++) {
        const op = ops[i];
        // Never the case for the ledger's own records; batch() refuses such a value with its own error.
        if (op.type === 'put' && (op.value === undefined || op.value === null)) return db.batch(ops, options);
        encoded[i] = op.type === 'put' ? { type: 'put', key: op.key, value: JSON.stringify(op.value) } : { type: 'del', key: op.key };
      }
      return write.call(db, encoded, options);
    },
  };
}

/**
 * The database as the group committer sees it: each synced batch is timed for the metrics
 * (hooks.onBatch), and a test may inject a write failure (hooks.failWrite) to exercise fail-stop.
 */
function observedWriter(db: BatchWriter, hooks: LedgerHooks, changes: () => number): BatchWriter {
  if (!hooks.onBatch && !hooks.failWrite && !hooks.holdWrite) return db;
  return {
    async batch(ops, options) {
      const n = changes(); // read before any await: the next batch's changes are queued meanwhile
      const fault = hooks.failWrite?.();
      if (fault) throw fault;
      const hold = hooks.holdWrite?.();
      if (hold) await hold;
      const started = performance.now();
      await db.batch(ops, options);
      hooks.onBatch?.(ops.length, (performance.now() - started) / 1000, n);
    },
  };
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
