// The ledger interface: the one place the payments service keeps money. Two backends implement it,
// with the same records (records.ts) and the same guarantees:
//   - level/     the embedded LevelDB default (one process; LDS_LEDGER_DIR);
//   - postgres/  PostgreSQL for any number of stateless service instances (LDS_LEDGER_URL).
// Invariants: every backend keeps these on every change and asserts them at commit (LevelDB:
// invariants.ts on each batch; PostgreSQL: CHECK and UNIQUE constraints and single-statement
// changes), and verify.ts audits them over a whole ledger:
//   - a balance is a whole number of cents and never below zero;
//   - the entries of each transaction sum to zero (per currency);
//   - one debit per quote (the quote's claim is written with the draw, UNIQUE in PostgreSQL).
// Guarantees every backend gives, and verify.ts audits:
//   - every state change is one atomic, durable transaction: the business record, its uniqueness
//     claims, two double-entry lines that sum to zero, the new balance and the statement line;
//   - a balance never goes negative;
//   - a quote is debited at most once, an MPP challenge and a processor payment credited at most once,
//     whatever the retries, duplicates or number of instances;
//   - a promise resolves only once its change is durable.
import { randomBytes } from 'node:crypto';
import { Problem } from '../problem.ts';
import { createHash } from 'node:crypto';
import canonicalizeModule from 'canonicalize';
import type { CorrectionKind, CorrectionRecord, DrawRecord, LedgerRecords, StatementRecord, TokenRecord, TopupRecord } from './records.ts';
import type { Violation } from './verify.ts';
import { STATEMENT_PAGE } from '../../contract/limits.ts';

export type { BalanceRecord, CorrectionKind, CorrectionRecord, DrawRecord, EntryRecord, StatementRecord, TokenRecord, TopupRecord } from './records.ts';

export type LedgerBackend = 'level' | 'postgres';

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
  | { kind: 'currency_mismatch'; balanceCurrency: string }
  /** the presented token was rotated or revoked: it names no balance (the service answers 401), nothing debited */
  | { kind: 'revoked' };

export interface CreditTopupInput {
  tokenHash: string;
  /** true: `tokenHash` belongs to a freshly minted token and the balance is created; false: credit an existing balance */
  createBalance: boolean;
  amountCents: number;
  currency: string;
  processor: string;
  /** MPP challenge id (credits at most once) */
  challengeId: string;
  /** processor payment reference, e.g. the Stripe PaymentIntent id (credits at most once) */
  paymentRef: string;
  /** SHA-256 of the MPP credential, kept so the same credential resent can be answered again */
  credentialSha256?: string;
  /**
   * A new balance's token sealed under the paying credential (tokens.ts sealBalanceToken), kept in
   * the same atomic change until `expiresAt` (ms, the challenge's expiry) so that credential, resent
   * in time, gets the same token again. Never exported; dropped once expired.
   */
  tokenSeal?: TokenSeal;
}

export interface TokenSeal {
  sealed: string;
  expiresAt: number;
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
  kind: 'topup' | 'draw' | CorrectionKind;
  /** position in the ledger: the paging cursor (newest first; `before` returns older lines) */
  seq: number;
  id: string;
  amountCents: number;
  currency: string;
  balanceAfterCents: number;
  at: string;
  quoteId?: string;
  productId?: string;
  reason?: string;
  drawId?: string;
  topupId?: string;
}

/** An operator's refund or adjustment (records.ts CorrectionRecord), applied at most once per idempotency key. */
export interface CorrectionInput {
  kind: CorrectionKind;
  idempotencyKey: string;
  reason: string;
  /** credit / debit: required. refund: default the unrefunded rest of the draw. topup_refund: default the whole top-up; always capped at the unspent balance. */
  amountCents?: number;
  /** credit / debit: the balance id */
  balance?: string;
  /** refund: the draw */
  drawId?: string;
  /** topup_refund: the top-up */
  topupId?: string;
}

export type CorrectionResult =
  | { kind: 'ok'; correction: CorrectionRecord }
  /** this idempotency key was applied before, to this same request: nothing changed now */
  | { kind: 'replay'; correction: CorrectionRecord }
  /** this idempotency key was applied before, to another request */
  | { kind: 'key_reused'; correction: CorrectionRecord }
  | { kind: 'not_found'; what: 'balance' | 'draw' | 'topup' }
  /** a refund over what the draw (less earlier refunds) or top-up paid */
  | { kind: 'exceeds'; availableCents: number }
  /** a debit below zero */
  | { kind: 'insufficient'; balanceCents: number }
  /** a top-up refund with nothing left to refund (balance spent, or refunded already) */
  | { kind: 'nothing_to_refund' };

export type TokenChangeResult = { kind: 'ok'; balance: string } | { kind: 'unknown' } | { kind: 'revoked' };

/** Which balance a token hash names: its own (the token that opened it), one it was rotated into, or none (revoked). */
export type TokenResolution = { kind: 'balance'; balance: string } | { kind: 'revoked' };

/** A token's resolution and the balance it names, read together (`info` null: no such balance). */
export type TokenBalance = { kind: 'balance'; balance: string; info: BalanceInfo | null } | { kind: 'revoked' };

/**
 * What a token hash names, from its token record: no record, the balance whose own hash it is; a
 * live record (a token rotated in), its balance; a revoked one (rotated away or revoked), none.
 * The one rule both backends apply (PostgreSQL's debit statement writes the same in SQL).
 */
export function tokenResolution(tokenHash: string, record: { balance: string; revoked_at?: string | null } | null | undefined): TokenResolution {
  if (!record) return { kind: 'balance', balance: tokenHash };
  return record.revoked_at != null ? { kind: 'revoked' } : { kind: 'balance', balance: record.balance };
}

/** SHA-256 of a correction's request, so a reused idempotency key with another request is told apart. */
export function correctionFingerprint(i: CorrectionInput): string {
  const c = (canonicalizeModule as unknown as (v: unknown) => string)({ kind: i.kind, amount: i.amountCents ?? null, balance: i.balance ?? null, draw: i.drawId ?? null, topup: i.topupId ?? null, reason: i.reason });
  return createHash('sha256').update(c, 'utf8').digest('hex');
}

export function checkCorrectionInput(i: CorrectionInput): void {
  if (!['refund', 'credit', 'debit', 'topup_refund'].includes(i.kind)) throw new RangeError(`unknown correction kind ${String(i.kind)}`);
  assertId(i.idempotencyKey, 'idempotencyKey');
  if (typeof i.reason !== 'string' || i.reason.trim() === '' || i.reason.length > 500) throw new RangeError('reason must be 1 to 500 characters');
  if (i.amountCents !== undefined) assertCents(i.amountCents);
  if (i.kind === 'credit' || i.kind === 'debit') {
    if (i.amountCents === undefined) throw new RangeError('a credit or debit needs an amount');
    assertId(i.balance ?? '', 'balance');
  }
  if (i.kind === 'refund') assertId(i.drawId ?? '', 'drawId');
  if (i.kind === 'topup_refund') assertId(i.topupId ?? '', 'topupId');
}

/** A held claim on an MPP challenge being processed (see Ledger.claimChallenge). */
export interface ChallengeClaim {
  release(): Promise<void>;
}

/** Every record of a ledger as [logical key, value], in key order (records.ts `K`). */
export type { LedgerRecords } from './records.ts';

export interface Ledger {
  readonly backend: LedgerBackend;
  /** Where the ledger lives, safe to log: a directory, or a database URL without its password. */
  readonly location: string;

  /**
   * Debits a balance for a quote, exactly once per quote id. `tokenHash` is the hash of the token
   * the buyer presented: the ledger resolves it as resolveToken does (its own balance, the balance
   * it was rotated into, or 'revoked') in the same transaction as the debit - on PostgreSQL inside
   * the one debit statement, so a paid draw is one round trip and a draw racing a rotation or
   * revocation is decided by one snapshot (ordered entirely before or after it). The draw record,
   * a replay's comparison and the statement line carry the BALANCE id, never the presented hash.
   * Answers, in this order: revoked; replay / other_balance (the quote is paid already);
   * unknown_balance, currency_mismatch, insufficient; ok.
   */
  debitDraw(tokenHash: string, input: DebitDrawInput): Promise<DebitDrawResult>;
  /** Credits (or creates) a balance for a processor payment, exactly once per challenge and payment. */
  creditTopup(input: CreditTopupInput): Promise<CreditTopupResult>;

  /**
   * The sealed token a top-up that opened a balance kept for challenge `challengeId`, while its
   * window (`expiresAt`, the challenge's expiry in ms) is open; null after, or when none was kept.
   */
  findTokenSeal(challengeId: string, expiresAt: number): Promise<string | null>;
  /** The draw that paid this quote, if any (durable state only). */
  findDrawByQuote(quoteId: string): Promise<DrawRecord | null>;
  /** The top-up that consumed this MPP challenge, if any (durable state only). */
  findTopupByChallenge(challengeId: string): Promise<TopupRecord | null>;
  findTopupByPayment(processor: string, paymentRef: string): Promise<TopupRecord | null>;
  /** Durable balance, or null for an unknown token hash. */
  getBalance(tokenHash: string): Promise<BalanceInfo | null>;
  /** The most recent lines of a balance's statement, newest first; `beforeSeq` pages to older lines. */
  statement(tokenHash: string, limit?: number, beforeSeq?: number): Promise<StatementEntry[]>;

  /** Which balance a token hash names now (rotated-in tokens name their balance; revoked ones none). */
  resolveToken(tokenHash: string): Promise<TokenResolution>;
  /**
   * resolveToken and the balance it names, as of one moment: on PostgreSQL one statement, so a quote
   * made with a Bearer token (its `Link` decision) and a balance read cost one ledger read, not two.
   */
  tokenBalance(tokenHash: string): Promise<TokenBalance>;
  /** Replaces the token `oldHash` with `newHash` for its balance: the old one stops working at once. */
  rotateToken(oldHash: string, newHash: string): Promise<TokenChangeResult>;
  /** Revokes a token (operator): it stops working at once; the balance stays. */
  revokeToken(tokenHash: string): Promise<TokenChangeResult>;
  /** An operator's refund or adjustment: one double-entry transaction, at most once per idempotency key. */
  correct(input: CorrectionInput): Promise<CorrectionResult>;
  findDraw(drawId: string): Promise<DrawRecord | null>;
  findTopup(topupId: string): Promise<TopupRecord | null>;

  /**
   * Claims an MPP challenge for the duration of one charge attempt, so that the same credential
   * sent to two instances at once reaches the processor once. Null when someone else holds it.
   * A claim lapses after `leaseMs` (an instance that died while holding it does not block a retry;
   * the processor's idempotency key and the ledger's unique claims still make the retry safe).
   */
  claimChallenge(challengeId: string, leaseMs: number): Promise<ChallengeClaim | null>;

  /** Reads every record within one consistent snapshot (for verify and export), while serving. */
  readSnapshot<T>(read: (records: LedgerRecords) => Promise<T>): Promise<T>;
  /** Audits the whole ledger (verify.ts) over one consistent snapshot. */
  verify(): Promise<Violation[]>;
  /** Loads exported records (transfer.ts) into this ledger, which must hold no money records yet. */
  importRecords(records: AsyncIterable<ImportRecord>): Promise<void>;

  /**
   * Readiness (GET /readyz): null when the ledger takes changes, else a short reason for the log.
   * Cheap and bounded in time: LevelDB checks its own state, PostgreSQL asks the server (with a
   * timeout) whether it is reachable and writable (not a read-only standby).
   */
  ready(): Promise<string | null>;

  close(): Promise<void>;
}

/** Hooks the service gives a ledger when it opens it (payments/serve.ts). */
export interface LedgerHooks {
  /** LevelDB: one synced batch written by the group committer (key writes, seconds, state changes in it). */
  onBatch?(ops: number, seconds: number, changes?: number): void;
  /**
   * LevelDB: a write failed and the ledger stopped taking changes (fail-stop, see commit.ts). The
   * service exits so a supervisor restarts it and the ledger reloads from disk.
   */
  onFatal?(err: Error): void;
  /** Tests only (fault injection): return an Error to fail the next LevelDB write. Never set by the CLI. */
  failWrite?(): Error | undefined;
  /** Tests only: a promise the next LevelDB write waits for before it starts (holds a change pending). Never set by the CLI. */
  holdWrite?(): Promise<void> | undefined;
}

/** One record of an export, validated (transfer.ts readExport). */
export type ImportRecord =
  | { type: 'account'; value: import('./records.ts').BalanceRecord }
  | { type: 'topup'; value: TopupRecord }
  | { type: 'draw'; value: DrawRecord }
  | { type: 'entry'; value: import('./records.ts').EntryRecord }
  | { type: 'token'; value: TokenRecord }
  | { type: 'correction'; value: CorrectionRecord };

/**
 * What a caller may assume about the change it asked for when the ledger failed: 'none', nothing
 * changed; 'unknown', the change was sent and no answer came (it may have been made). Either way the
 * same request is safe to repeat: every change is keyed (quote_id, MPP challenge, payment), so a
 * repeat replays what was made or makes it once. (PostgreSQL: postgres/connections.ts.)
 */
export type ChangeOutcome = 'none' | 'unknown';

/** Seconds a client is told to wait before retrying a ledger-unavailable answer (Retry-After). */
export const LEDGER_RETRY_AFTER_SECONDS = 2;

const UNAVAILABLE_DETAIL: Record<ChangeOutcome, string> = {
  none: 'The balance ledger is not accepting changes; nothing was changed by this request. Retry after Retry-After seconds: a paid draw is charged at most once per quote_id and a top-up credential is credited at most once.',
  unknown:
    'The balance ledger did not confirm this change in time: it may or may not have been made. Retrying the same request is safe: with the same quote_id a draw that was paid is answered again without a second charge, and one that was not is paid once; the same top-up credential is credited at most once.',
};

/**
 * The ledger refuses work (closed, stopped after a failed write, or its database unreachable). A
 * Problem, so every transport (draw, balance, top-up, MCP, A2A) answers the same 503 with
 * Retry-After without a special case; `outcome` says whether the change may have been made. The
 * internal reason is kept for the log, not sent.
 */
export class LedgerUnavailableError extends Problem {
  readonly outcome: ChangeOutcome;

  constructor(
    readonly reason: string,
    options?: { cause?: unknown; outcome?: ChangeOutcome },
  ) {
    const outcome = options?.outcome ?? 'none';
    super(503, 'ledger-unavailable', 'Ledger unavailable', UNAVAILABLE_DETAIL[outcome], { outcome, retry_after: LEDGER_RETRY_AFTER_SECONDS });
    this.outcome = outcome;
    this.name = 'LedgerUnavailableError';
    this.message = `ledger unavailable: ${reason}`; // for logs and stack traces; clients get `detail`
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

/** The ledger already holds money records: an import would mix two histories. */
export class LedgerNotEmptyError extends Error {}

// ---- input checks shared by the backends (a bug in a caller, never a buyer's input) ----

// Ids take 16 bytes each from a block of CSPRNG output drawn 4 KB at a time, each byte used once:
// as unpredictable and unique as a randomBytes(16) per id, without a call into the CSPRNG (and a
// Buffer) per draw; that call was ~3 % of a paid draw's event-loop time in the benchmark's profile.
let idBytes = Buffer.alloc(0);
let idOffset = 0;

export function newId(prefix: string): string {
  if (idOffset + 16 > idBytes.length) {
    idBytes = randomBytes(4096);
    idOffset = 0;
  }
  const id = idBytes.toString('base64url', idOffset, idOffset + 16);
  idOffset += 16;
  return `${prefix}_${id}`;
}

export function assertCents(n: number): void {
  if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`amount must be a positive integer number of cents, got ${n}`);
}

export function assertCurrency(c: string): void {
  if (typeof c !== 'string' || !/^[A-Z]{3}$/.test(c)) throw new RangeError(`currency must be an ISO 4217 code, got ${String(c)}`);
}

export function assertId(s: string, what: string): void {
  if (typeof s !== 'string' || s.length === 0 || s.length > 512) throw new RangeError(`${what} must be a non-empty string of at most 512 characters`);
}

/** Checks a debit's input; the backends call it first so both refuse the same things the same way. */
export function checkDebitInput(input: DebitDrawInput): void {
  assertCents(input.amountCents);
  assertId(input.quoteId, 'quoteId');
  assertCurrency(input.currency);
  if (input.drawId !== undefined) assertId(input.drawId, 'drawId');
}

/** The record of a draw paid for `input` from balance `balanceId` (both backends write this shape). */
export function drawRecord(input: DebitDrawInput, drawId: string, balanceId: string, balanceAfterCents: number, at: string): DrawRecord {
  return {
    draw_id: drawId,
    quote_id: input.quoteId,
    token_hash: balanceId,
    amount_cents: input.amountCents,
    currency: input.currency,
    ...(input.productId !== undefined ? { product_id: input.productId } : {}),
    balance_after_cents: balanceAfterCents,
    at,
    draw: input.draw ?? null,
  };
}

/** The record of a top-up credited for `input` (both backends write this shape). */
export function topupRecord(input: CreditTopupInput, topupId: string, balanceAfterCents: number, at: string): TopupRecord {
  return {
    topup_id: topupId,
    token_hash: input.tokenHash,
    amount_cents: input.amountCents,
    currency: input.currency,
    processor: input.processor,
    challenge_id: input.challengeId,
    payment_ref: input.paymentRef,
    created_balance: input.createBalance,
    balance_after_cents: balanceAfterCents,
    at,
    ...(input.credentialSha256 ? { credential_sha256: input.credentialSha256 } : {}),
  };
}

export function checkCreditInput(input: CreditTopupInput): void {
  assertCents(input.amountCents);
  assertCurrency(input.currency);
  assertId(input.challengeId, 'challengeId');
  assertId(input.paymentRef, 'paymentRef');
  assertId(input.processor, 'processor');
}

/** Statement length bounds, the same for both backends. */
export function statementLimit(limit: number | undefined): number {
  // One more than a page: the service asks for a line beyond the page to know whether another follows.
  return Math.max(0, Math.min(STATEMENT_PAGE.maxLines + 1, Math.floor(limit ?? STATEMENT_PAGE.defaultLines)));
}

/** A stored statement line as the service reads it. */
export function toStatementEntry(s: StatementRecord, seq: number): StatementEntry {
  return {
    kind: s.kind,
    seq,
    id: s.id,
    amountCents: s.amount_cents,
    currency: s.currency,
    balanceAfterCents: s.balance_after_cents,
    at: s.at,
    ...(s.quote_id !== undefined ? { quoteId: s.quote_id } : {}),
    ...(s.product_id !== undefined ? { productId: s.product_id } : {}),
    ...(s.reason !== undefined ? { reason: s.reason } : {}),
    ...(s.draw_id !== undefined ? { drawId: s.draw_id } : {}),
    ...(s.topup_id !== undefined ? { topupId: s.topup_id } : {}),
  };
}
