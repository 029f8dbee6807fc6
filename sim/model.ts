// The simulator's model of the money path, in plain TypeScript: what each buyer operation must do
// to the ledger and what the service must answer. It knows nothing of HTTP or processes; the driver
// (sim/driver.ts) asks it what to expect, compares, and then applies the outcome.
//
// Ids are not modelled: draw, top-up, PaymentIntent and challenge ids (and quote nonces) stay
// random in the service. The model refers to balances and quotes by their position in the history
// and learns the service's ids from its answers (a draw id from a receipt, a challenge id from the
// credential it built), so a seed reproduces the same history whatever the ids are.
import fc from 'fast-check';
import type { CommitPoint, FaultOp } from '../payments/faults.ts';

// ------------------------------------------------------------------------------------------ ops

/** One generated operation: data only, resolved against the state when it runs (indices wrap). */
export type Op =
  /** top-up: target wraps over balances + 1 (the last = a new balance); amount at/above/below the minimum */
  | { t: 'topup'; target: number; amount: 'min' | 'above' | 'below'; extra: number; inst: number }
  | { t: 'declined'; target: number; inst: number }
  /**
   * the credential of an earlier credited top-up, sent again: in the same form (answered again
   * while its challenge is valid, else 409), or - when floor(k / 100) % 4 is 3 - in the other form
   * (with/without the Bearer token it went with: always 409)
   */
  | { t: 'resend'; k: number; inst: number }
  /** one fresh credential sent `copies` times at once (to several instances on PostgreSQL) */
  | { t: 'topupDup'; target: number; copies: number; inst: number }
  /** the processor charges, then times out (502); the buyer resends the same credential */
  | { t: 'timeout'; target: number; inst: number; inst2: number }
  /**
   * units: `size` consecutive unit references of the product from `start` (wrapping), and when
   * `limit` (unused by a unit list) is above 14, the first few of them once more (duplicates count
   * once); query: a word of its units
   */
  | { t: 'quote'; product: number; mode: 'units' | 'query'; start: number; size: number; limit: number; target: number; withToken: boolean; inst: number }
  /** pay quote q (counted from the newest); same: from the balance that asked for it, else from target */
  | { t: 'pay'; q: number; same: boolean; target: number; inst: number }
  | { t: 'payDup'; q: number; same: boolean; target: number; copies: number; inst: number }
  | { t: 'tamper'; q: number; how: 'mac' | 'product' | 'units'; target: number; inst: number }
  /** spend a balance down with large draws until the service refuses one for insufficient funds (at most 25 draws) */
  | { t: 'drain'; target: number; product: number; start: number; inst: number }
  | { t: 'expire' }
  | { t: 'read'; target: number; inst: number }
  /** the buyer rotates a balance's token at one instance; at another, the old token is refused at once and the new one reads the balance */
  | { t: 'rotate'; target: number; inst: number; inst2: number }
  /** a rotated-away token pays a fresh quote (one unit of `product`): 401 balance-token-revoked, nothing debited */
  | { t: 'stale'; k: number; product: number; pick: number; inst: number }
  /**
   * the operator refunds a paid draw (q counted from the newest paid one): all that is left, a part,
   * or more than is left (422); then resends it with the same Idempotency-Key at inst2 (applied once)
   */
  | { t: 'refund'; q: number; how: 'all' | 'part' | 'over'; part: number; inst: number; inst2: number }
  /** SIGKILL of an instance at a commit point of a debit or credit, restart, the buyer retries */
  | { t: 'crash'; point: CommitPoint; op: FaultOp; target: number; product: number; pick: number; inst: number; delayMs: number }
  | { t: 'pgRestart'; inst: number }
  /**
   * PostgreSQL with a synchronous standby: the primary killed while a paid draw is in flight
   * (`delayMs` after it was sent), the standby promoted; the buyer retries at inst2, every instance
   * follows without a restart
   */
  | { t: 'failover'; target: number; product: number; pick: number; inst: number; inst2: number; delayMs: number };

const idx = fc.nat({ max: 1000 });
const inst = fc.nat({ max: 7 });

export function opArbitrary(o: { faults: boolean; pg: boolean }): fc.Arbitrary<Op> {
  const w = <T>(weight: number, arbitrary: fc.Arbitrary<T>) => ({ weight, arbitrary });
  const parts: { weight: number; arbitrary: fc.Arbitrary<Op> }[] = [
    w(10, fc.record({ t: fc.constant('topup' as const), target: idx, amount: fc.constantFrom('min' as const, 'above' as const, 'above' as const, 'below' as const), extra: fc.integer({ min: 1, max: 1500 }), inst })),
    w(2, fc.record({ t: fc.constant('declined' as const), target: idx, inst })),
    w(3, fc.record({ t: fc.constant('resend' as const), k: idx, inst })),
    w(2, fc.record({ t: fc.constant('topupDup' as const), target: idx, copies: fc.integer({ min: 2, max: 4 }), inst })),
    w(22, fc.record({ t: fc.constant('quote' as const), product: idx, mode: fc.constantFrom('units' as const, 'units' as const, 'query' as const), start: idx, size: fc.oneof(fc.integer({ min: 1, max: 10 }), fc.integer({ min: 60, max: 100 })), limit: fc.integer({ min: 1, max: 20 }), target: idx, withToken: fc.boolean(), inst })),
    w(26, fc.record({ t: fc.constant('pay' as const), q: fc.nat({ max: 6 }), same: fc.boolean(), target: idx, inst })),
    w(5, fc.record({ t: fc.constant('payDup' as const), q: fc.nat({ max: 3 }), same: fc.boolean(), target: idx, copies: fc.integer({ min: 2, max: 5 }), inst })),
    w(4, fc.record({ t: fc.constant('tamper' as const), q: fc.nat({ max: 6 }), how: fc.constantFrom('mac' as const, 'product' as const, 'units' as const), target: idx, inst })),
    w(2, fc.record({ t: fc.constant('expire' as const) })),
    w(3, fc.record({ t: fc.constant('drain' as const), target: idx, product: idx, start: idx, inst })),
    w(10, fc.record({ t: fc.constant('read' as const), target: idx, inst })),
    w(3, fc.record({ t: fc.constant('rotate' as const), target: idx, inst, inst2: inst })),
    w(2, fc.record({ t: fc.constant('stale' as const), k: idx, product: idx, pick: idx, inst })),
    w(3, fc.record({ t: fc.constant('refund' as const), q: fc.nat({ max: 6 }), how: fc.constantFrom('all' as const, 'part' as const, 'part' as const, 'over' as const), part: idx, inst, inst2: inst })),
  ];
  if (o.faults) {
    parts.push(w(2, fc.record({ t: fc.constant('timeout' as const), target: idx, inst, inst2: inst })));
    parts.push(
      w(2, fc.record({ t: fc.constant('crash' as const), point: fc.constantFrom('before-commit' as const, 'during-commit' as const, 'after-commit' as const), op: fc.constantFrom('debit' as const, 'credit' as const), target: idx, product: idx, pick: idx, inst, delayMs: fc.integer({ min: 0, max: 3 }) })),
    );
    if (o.pg) parts.push(w(1, fc.record({ t: fc.constant('pgRestart' as const), inst })));
    if (o.pg) parts.push(w(1, fc.record({ t: fc.constant('failover' as const), target: idx, product: idx, pick: idx, inst, inst2: inst, delayMs: fc.integer({ min: 0, max: 5 }) })));
  }
  return fc.oneof(...parts);
}

/** The history of a seed: `steps` operations, the same for the same seed and options. */
export function generateHistory(seed: number, steps: number, o: { faults: boolean; pg: boolean }): Op[] {
  if (steps <= 0) return [];
  return fc.sample(opArbitrary(o), { seed, numRuns: steps });
}

// ------------------------------------------------------------------------------------------ state

export interface MBalance {
  /** the token that works now (rotations replace it) */
  token: string;
  /** the token that opened the balance; its hash is the balance's id for good */
  opened: string;
  hash: string;
  cents: number;
  /** newest last: kind, cents; for draws the quote and draw ids, for refunds the correction and the refunded draw */
  lines: { kind: 'topup' | 'draw' | 'refund'; cents: number; quoteId?: string; drawId?: string; correctionId?: string }[];
}

export interface MQuote {
  id: string;
  productId: string;
  request: { units?: string[]; query?: string; limit?: number };
  cents: number;
  /** distinct units the quote prices (a unit list's duplicates count once) */
  unitCount?: number;
  expiresAt: number;
  /** balance index that asked for it (or -1) */
  askedBy: number;
  paidBy?: number;
  drawId?: string;
  balanceAfter?: number;
  /** the signed receipt of the draw, as first answered: a replay must answer the very same one */
  receipt?: string;
  /** refunded so far (operator draw refunds), never above cents */
  refunded?: number;
}

export interface MCredential {
  header: string;
  headerName: 'Authorization' | 'Payment-Authorization';
  bearer?: string;
  challengeId: string;
  cents: number;
  /** the balance it credited */
  balance: number;
  createdBalance: boolean;
  /** the challenge's `expires` (ms, by the simulated clock): resent in the same form before it, answered again; after, 409 */
  expiresAt: number;
  /** the signed receipt of the top-up, as first answered (or first seen): answered again = the same receipt */
  receipt?: string;
}

/** What a resent credential of a credited challenge must get (TOPUP_REPLAY_RULE in generator/emit/topup-docs.ts). */
export type ResendExpectation = { status: 200 } | { status: 409; type: 'topup-already-credited'; why: string } | { status: 401; type: 'balance-token-revoked'; why: string };

export type PayExpectation =
  | { status: 200; kind: 'fresh'; after: number }
  | { status: 200; kind: 'replay'; drawId: string; after: number }
  | { status: 409; type: 'quote-paid-by-another-balance' }
  | { status: 402; type: 'quote-expired' }
  | { status: 402; type: 'insufficient-balance' };

export class Model {
  balances: MBalance[] = [];
  quotes: MQuote[] = [];
  credentials: MCredential[] = [];
  /** challenge ids credited, and the draws paid, as the service must hold them */
  credited = new Map<string, number>();
  /** tokens rotated away: refused everywhere from the rotation on */
  retired = new Set<string>();
  draws = new Map<string, string>(); // quote id -> draw id
  revenue = 0;
  clearing = 0;

  constructor(public clock: number) {}

  total(): number {
    return this.balances.reduce((s, b) => s + b.cents, 0);
  }

  expectPay(q: MQuote, b: number): PayExpectation {
    if (q.paidBy !== undefined) {
      if (q.paidBy === b) return { status: 200, kind: 'replay', drawId: q.drawId!, after: q.balanceAfter! };
      return { status: 409, type: 'quote-paid-by-another-balance' };
    }
    if (q.expiresAt <= this.clock) return { status: 402, type: 'quote-expired' };
    if (this.balances[b].cents < q.cents) return { status: 402, type: 'insufficient-balance' };
    return { status: 200, kind: 'fresh', after: this.balances[b].cents - q.cents };
  }

  /**
   * The very credential, resent in the same form: answered again while its challenge is valid and
   * the token it opened still works; any other form, or later: 409. The Bearer token it went with,
   * rotated away since: 401, before anything else.
   */
  expectResend(c: MCredential, sameForm: boolean): ResendExpectation {
    if (sameForm && c.bearer && this.retired.has(c.bearer)) return { status: 401, type: 'balance-token-revoked', why: 'the Bearer token it went with was rotated' };
    if (!sameForm) return { status: 409, type: 'topup-already-credited', why: 'another form of the credential' };
    if (!(c.expiresAt > this.clock)) return { status: 409, type: 'topup-already-credited', why: 'its challenge expired' };
    if (c.createdBalance && this.retired.has(this.balances[c.balance]!.opened)) return { status: 409, type: 'topup-already-credited', why: 'the token it opened was rotated' };
    return { status: 200 };
  }

  rotate(b: number, token: string): void {
    this.retired.add(this.balances[b]!.token);
    this.balances[b]!.token = token;
  }

  applyDraw(q: MQuote, b: number, drawId: string): void {
    const bal = this.balances[b];
    bal.cents -= q.cents;
    if (bal.cents < 0) throw new Error('model: negative balance');
    bal.lines.push({ kind: 'draw', cents: q.cents, quoteId: q.id, drawId });
    q.paidBy = b;
    q.drawId = drawId;
    q.balanceAfter = bal.cents;
    this.draws.set(q.id, drawId);
    this.revenue += q.cents;
  }

  /** An operator's refund of a paid draw: back to the balance that paid it, out of revenue. */
  applyRefund(q: MQuote, cents: number, correctionId: string): void {
    const left = q.cents - (q.refunded ?? 0);
    if (q.paidBy === undefined || cents <= 0 || cents > left) throw new Error(`model: refund of ${cents} with ${left} left`);
    const bal = this.balances[q.paidBy]!;
    bal.cents += cents;
    bal.lines.push({ kind: 'refund', cents, drawId: q.drawId!, correctionId });
    q.refunded = (q.refunded ?? 0) + cents;
    this.revenue -= cents;
  }

  /** A credited top-up; returns the balance index. */
  applyCredit(c: { challengeId: string; cents: number; balance: number | 'new'; token?: string; hash?: string }): number {
    let i: number;
    if (c.balance === 'new') {
      this.balances.push({ token: c.token!, opened: c.token!, hash: c.hash!, cents: 0, lines: [] });
      i = this.balances.length - 1;
    } else i = c.balance;
    this.balances[i].cents += c.cents;
    this.balances[i].lines.push({ kind: 'topup', cents: c.cents });
    this.credited.set(c.challengeId, i);
    this.clearing -= c.cents;
    return i;
  }
}

/** "5.00" -> 500 without floating point; "-0.10" -> -10. */
export function cents(amount: string): number {
  const neg = amount.startsWith('-');
  const [e, c = '00'] = (neg ? amount.slice(1) : amount).split('.');
  const v = Number(e) * 100 + Number(c.padEnd(2, '0'));
  return neg ? -v : v;
}

export function money(c: number): string {
  return `${Math.floor(c / 100)}.${String(c % 100).padStart(2, '0')}`;
}
