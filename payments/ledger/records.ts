// The ledger's records, the same for every backend: the writers (level/, postgres/), the auditor
// (verify.ts) and the export format (transfer.ts) all use these shapes, so they can never disagree.
// `K` names where each record lives: the LevelDB key, and the name under which verify and export
// report a PostgreSQL row (one table per record kind; claims are its UNIQUE constraints).
//
// Money is integer cents everywhere. Every state change writes, in one atomic transaction:
//   - the business record (top-up `t:` or draw `d:`),
//   - its uniqueness claims (`c:` challenge, `p:` payment reference, `q:` quote),
//   - two double-entry lines (`e:`) that sum to zero,
//   - the new balance (`b:`) and a statement line (`s:`) for the buyer's history.
// Accounts: `clearing:<processor>` (money the processor owes us; goes negative as buyers pay),
// `balance:<token hash>` (prepaid money we owe the buyer) and `revenue` (money earned by draws).

/** Every record of one consistent snapshot as (logical key, value) pairs, in key order (Ledger.readSnapshot). */
export type LedgerRecords = AsyncIterable<[string, unknown]>;

export const K = {
  balance: (hash: string) => `b:${hash}`,
  topup: (id: string) => `t:${id}`,
  draw: (id: string) => `d:${id}`,
  challenge: (challengeId: string) => `c:${challengeId}`,
  payment: (processor: string, reference: string) => `p:${processor}:${reference}`,
  quote: (quoteId: string) => `q:${quoteId}`,
  entry: (seq: number) => `e:${seqKey(seq)}`,
  statement: (hash: string, seq: number) => `s:${hash}:${seqKey(seq)}`,
  /** an operator's refund or adjustment */
  correction: (id: string) => `x:${id}`,
  /** the client-supplied idempotency key of a correction: applied at most once */
  idempotency: (key: string) => `i:${key}`,
  /** a balance token that was rotated in, or rotated out / revoked */
  token: (hash: string) => `k:${hash}`,
  /**
   * The sealed token of a balance a top-up opened, until its challenge expires (LevelDB; the
   * PostgreSQL table is lds_token_seals). Keyed by expiry first, so expired seals are one range.
   * Not money and not exported: the replay window it serves lasts minutes.
   */
  seal: (expiresAt: number, challengeId: string) => `z:${seqKey(expiresAt)}:${challengeId}`,
} as const;

export const PREFIX = { balance: 'b:', topup: 't:', draw: 'd:', challenge: 'c:', payment: 'p:', quote: 'q:', entry: 'e:', statement: 's:', correction: 'x:', idempotency: 'i:', token: 'k:', seal: 'z:' } as const;

export interface SealRecord {
  challenge_id: string;
  sealed: string;
  expires_at: number;
}

/** Fixed-width so that key order is numeric order. */
export function seqKey(seq: number): string {
  return String(seq).padStart(16, '0');
}

export const ACCOUNT = {
  balance: (hash: string) => `balance:${hash}`,
  clearing: (processor: string) => `clearing:${processor}`,
  revenue: 'revenue',
  /** the other side of an operator's goodwill credit or debit of a balance */
  adjustments: 'adjustments',
} as const;

export interface BalanceRecord {
  token_hash: string;
  currency: string;
  cents: number;
  created_at: string;
  /** seq of the last entry that changed this balance (LevelDB only; not part of the export) */
  last_seq?: number;
}

export interface TopupRecord {
  topup_id: string;
  token_hash: string;
  amount_cents: number;
  currency: string;
  processor: string;
  /** MPP challenge id: credits at most once */
  challenge_id: string;
  /** processor payment reference (Stripe PaymentIntent id): credits at most once */
  payment_ref: string;
  created_balance: boolean;
  balance_after_cents: number;
  at: string;
  /** SHA-256 of the exact MPP credential that paid: only that credential may ask for the answer again */
  credential_sha256?: string;
}

export interface DrawRecord {
  draw_id: string;
  quote_id: string;
  token_hash: string;
  amount_cents: number;
  currency: string;
  product_id?: string;
  balance_after_cents: number;
  at: string;
  /** the service's own record of what was delivered (units hash etc.), stored verbatim */
  draw: unknown;
}

/**
 * An operator's correction of a balance, one double-entry transaction (`correction:<id>`):
 *   refund        revenue pays back (part of) a draw to the balance;
 *   credit/debit  `adjustments` credits or debits the balance (never below zero);
 *   topup_refund  the balance pays back (part of) a top-up to the processor's clearing account,
 *                 refunded through the processor; at most the unspent remainder.
 */
export type CorrectionKind = 'refund' | 'credit' | 'debit' | 'topup_refund';

export interface CorrectionRecord {
  correction_id: string;
  kind: CorrectionKind;
  /** client-supplied: the same key applies the correction at most once */
  idempotency_key: string;
  /** SHA-256 of what was asked (kind, target, amount, reason): the same key with another request is refused */
  request_sha256: string;
  token_hash: string;
  amount_cents: number;
  currency: string;
  reason: string;
  balance_after_cents: number;
  at: string;
  draw_id?: string;
  topup_id?: string;
  processor?: string;
}

/**
 * A balance token other than the one that opened the balance, or one that no longer works. The
 * balance id is the SHA-256 of the token that opened it; a rotation adds the new token's record
 * (active, naming the balance) and marks the old one revoked.
 */
export interface TokenRecord {
  token_hash: string;
  /** the balance id (token hash of the balance's first token) */
  balance: string;
  created_at: string;
  revoked_at?: string;
  /** 'rotated' (by the buyer) or 'revoked' (by an operator) */
  revoked_reason?: 'rotated' | 'revoked';
}

export interface EntryRecord {
  seq: number;
  /** `topup:<id>`, `draw:<id>` or `correction:<id>` */
  txn: string;
  account: string;
  /** signed: + credit to the account, - debit */
  cents: number;
  currency: string;
  at: string;
}

export interface StatementRecord {
  kind: 'topup' | 'draw' | CorrectionKind;
  id: string;
  amount_cents: number;
  currency: string;
  balance_after_cents: number;
  at: string;
  quote_id?: string;
  product_id?: string;
  reason?: string;
  draw_id?: string;
  topup_id?: string;
}

export interface ClaimRecord {
  topup_id?: string;
  draw_id?: string;
  token_hash?: string;
}

export const txnOf = {
  topup: (id: string) => `topup:${id}`,
  draw: (id: string) => `draw:${id}`,
  correction: (id: string) => `correction:${id}`,
};

/** Whether a correction kind adds to the balance (refund, credit) or takes from it. */
export function correctionCredits(kind: CorrectionKind): boolean {
  return kind === 'refund' || kind === 'credit';
}

/** The other account of a correction's two entries (the balance is always one side). */
export function correctionCounterAccount(c: Pick<CorrectionRecord, 'kind' | 'processor'>): string {
  if (c.kind === 'refund') return ACCOUNT.revenue;
  if (c.kind === 'topup_refund') return ACCOUNT.clearing(c.processor ?? '');
  return ACCOUNT.adjustments;
}

/** The two entries of a correction: the first seq goes to the side that pays, the second to the side paid. */
export function correctionEntries(c: CorrectionRecord, firstSeq: number, secondSeq: number): EntryRecord[] {
  const txn = txnOf.correction(c.correction_id);
  const balance = ACCOUNT.balance(c.token_hash);
  const other = correctionCounterAccount(c);
  const [from, to] = correctionCredits(c.kind) ? [other, balance] : [balance, other];
  return [
    { seq: firstSeq, txn, account: from, cents: -c.amount_cents, currency: c.currency, at: c.at },
    { seq: secondSeq, txn, account: to, cents: c.amount_cents, currency: c.currency, at: c.at },
  ];
}

/** A record that moved money: what a statement line is made from. */
export type MoneyRecord = ({ kind: 'topup' } & TopupRecord) | ({ kind: 'draw' } & DrawRecord);

/**
 * The buyer's statement line for a change of their balance, derived from the business record and
 * the seq of its balance entry. Written beside the entries (so a statement is one range read), and
 * rebuilt the same way on import, so verify can demand that it equals what the entries say.
 */
/** The statement line of a correction (see statementLine). */
export function correctionStatementLine(r: CorrectionRecord): StatementRecord {
  return {
      kind: r.kind,
      id: r.correction_id,
      amount_cents: r.amount_cents,
      currency: r.currency,
      balance_after_cents: r.balance_after_cents,
      at: r.at,
      reason: r.reason,
      ...(r.draw_id !== undefined ? { draw_id: r.draw_id } : {}),
      ...(r.topup_id !== undefined ? { topup_id: r.topup_id } : {}),
  };
}

export function statementLine(r: MoneyRecord): StatementRecord {
  if (r.kind === 'topup') return { kind: 'topup', id: r.topup_id, amount_cents: r.amount_cents, currency: r.currency, balance_after_cents: r.balance_after_cents, at: r.at };
  return {
    kind: 'draw',
    id: r.draw_id,
    amount_cents: r.amount_cents,
    currency: r.currency,
    balance_after_cents: r.balance_after_cents,
    at: r.at,
    quote_id: r.quote_id,
    ...(r.product_id !== undefined ? { product_id: r.product_id } : {}),
  };
}
