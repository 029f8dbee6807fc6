// The admin API (operator token, payments/http/operator.ts), under {base}/lds/admin/:
//   POST refunds        {draw_id, amount?, reason}                       refund a draw, in full or in part
//   POST topup-refunds  {topup_id, amount?, reason}                      refund a top-up through the processor
//   POST adjustments    {balance_id | draw_id | topup_id, direction, amount, reason}  credit or debit a balance
//   POST tokens/revoke  {token_hash}                                     revoke a balance token
// Every money change needs an `Idempotency-Key` header: the ledger applies a key at most once
// (201 the first time, 200 with the same answer after; another request under the same key is a
// 409). Each is one double-entry transaction with the reason, in the buyer's statement, checked
// by `ledger verify` and carried by `ledger export`.
//
// A top-up refund debits the balance FIRST (never below zero: at most the unspent remainder of
// the top-up; money already spent on draws is not refunded), then asks the processor to refund
// exactly that amount with the idempotency key `lds_refund_<correction id>`. If the processor call
// fails the answer is a 502 naming the correction; resending the same request (same key) replays
// the ledger part and retries the processor with the same key, so the payer is refunded once
// (within Stripe's 24-hour idempotency window; a later resend could refund again while the
// PaymentIntent has unrefunded money, so the CLI and docs say to resend promptly).
import type Router from '@koa/router';
import type { Context } from 'koa';
import { formatCents, parseAmountCents } from '../../contract/money.ts';
import type { CorrectionInput, CorrectionRecord, CorrectionResult, Ledger, LoggerLike } from '../ledger/ledger.ts';
import type { PaymentProcessor } from '../processors/types.ts';
import { Problem } from '../problem.ts';
import { hashToken, isTokenHash, isWellFormedToken, tokenHint } from '../tokens.ts';
import { readJsonBody } from './body.ts';
import { requireOperator } from './operator.ts';
import { problems } from '../draw/problems.ts';

export interface AdminOptions {
  ledger: Ledger;
  /** The processor, loaded on first use (the Stripe SDK is not on the start-up path). */
  processor: () => Promise<PaymentProcessor>;
  operatorToken: string;
  maxBodyBytes: number;
  logger?: LoggerLike;
  /** Largest single adjustment (credit or debit), in cents: LDS_MAX_ADJUSTMENT. */
  maxAdjustmentCents: number;
}

const malformed = problems.malformed;

/** The JSON a correction is answered with (also what `lds ledger refund/adjust` print). */
export function correctionJson(c: CorrectionRecord, replayed: boolean): Record<string, unknown> {
  return {
    correction_id: c.correction_id,
    kind: c.kind,
    amount: formatCents(c.amount_cents),
    currency: c.currency,
    balance_id: c.token_hash,
    balance_after: formatCents(c.balance_after_cents),
    reason: c.reason,
    idempotency_key: c.idempotency_key,
    at: c.at,
    ...(c.draw_id ? { draw_id: c.draw_id } : {}),
    ...(c.topup_id ? { topup_id: c.topup_id } : {}),
    replayed,
  };
}

function idempotencyKey(ctx: Context): string {
  const key = ctx.get('idempotency-key');
  if (!key) throw malformed('Idempotency-Key', 'send an Idempotency-Key header (any unique string of 1 to 200 characters): the change is applied at most once per key');
  if (key.length > 200 || !/^[\x21-\x7e]+$/.test(key)) throw malformed('Idempotency-Key', 'Idempotency-Key must be 1 to 200 visible ASCII characters');
  return key;
}

function objectBody(body: unknown): Record<string, unknown> {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw malformed('(body)', 'the body must be a JSON object');
  return body as Record<string, unknown>;
}

/** A control character other than tab and the line breaks (NUL among them: PostgreSQL cannot store it). */
const CONTROL = /[\0-\x08\x0B\x0C\x0E-\x1F\x7F]/;

function reasonOf(b: Record<string, unknown>): string {
  if (typeof b.reason !== 'string' || b.reason.trim() === '' || b.reason.length > 500) throw malformed('reason', 'reason is required: 1 to 500 characters saying why (shown in the buyer\'s statement)');
  const control = CONTROL.exec(b.reason);
  if (control)
    throw malformed('reason', `reason holds the control character U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} at character ${control.index + 1}: write it as text (tab and line breaks are fine)`);
  return b.reason;
}

function amountOf(b: Record<string, unknown>, required: boolean): number | undefined {
  if (b.amount === undefined && !required) return undefined;
  const cents = parseAmountCents(b.amount);
  if (cents === null || cents <= 0) throw malformed('amount', 'amount must be a positive decimal string with at most two decimals, e.g. "1.50"');
  return cents;
}

function idOf(b: Record<string, unknown>, field: string): string {
  const v = b[field];
  if (typeof v !== 'string' || v === '' || v.length > 200) throw malformed(field, `${field} is required`);
  return v;
}

/** The answer for each ledger outcome: 201 applied, 200 replayed, problems otherwise. */
function answer(ctx: Context, r: CorrectionResult): CorrectionRecord {
  switch (r.kind) {
    case 'ok':
      ctx.status = 201;
      return r.correction;
    case 'replay':
      ctx.status = 200;
      return r.correction;
    case 'key_reused':
      throw new Problem(409, 'idempotency-key-reused', 'Idempotency key already used', `This Idempotency-Key was already used for another request (correction ${r.correction.correction_id}); use a new key for a new change.`, { field: 'Idempotency-Key', correction_id: r.correction.correction_id });
    case 'not_found':
      throw new Problem(404, `unknown-${r.what}`, `Unknown ${r.what}`, `No such ${r.what === 'topup' ? 'top-up' : r.what}.`, { field: r.what === 'balance' ? 'balance_id' : `${r.what}_id` });
    case 'exceeds':
      throw new Problem(422, 'refund-exceeds-payment', 'Refund over the amount paid', `At most ${formatCents(r.availableCents)} EUR of this payment is left to refund.`, { field: 'amount', available: formatCents(r.availableCents) });
    case 'insufficient':
      throw new Problem(422, 'adjustment-below-zero', 'Balance would go below zero', `The balance holds ${formatCents(r.balanceCents)} EUR; a debit may not take it below zero.`, { field: 'amount', balance: formatCents(r.balanceCents) });
    case 'nothing_to_refund':
      throw new Problem(422, 'nothing-to-refund', 'Nothing left to refund', 'The top-up was already refunded, or its money has been spent (a top-up refund returns at most the unspent balance).', { field: 'topup_id' });
  }
}

export function mountAdmin(router: Router, o: AdminOptions): void {
  const guard = requireOperator(o.operatorToken);
  const log = (c: CorrectionRecord, replayed: boolean) =>
    o.logger?.info({ correction: c.correction_id, kind: c.kind, amount_cents: c.amount_cents, balance: tokenHint(c.token_hash), replayed }, 'ledger correction');
  const apply = async (ctx: Context, input: CorrectionInput) => {
    const r = await o.ledger.correct(input);
    const c = answer(ctx, r);
    log(c, r.kind === 'replay');
    return { c, replayed: r.kind === 'replay' };
  };
  const send = (ctx: Context, body: Record<string, unknown>) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.body = body;
  };

  router.post('/lds/admin/refunds', guard, async (ctx) => {
    const key = idempotencyKey(ctx);
    const b = objectBody(await readJsonBody(ctx, o.maxBodyBytes));
    const { c, replayed } = await apply(ctx, { kind: 'refund', idempotencyKey: key, drawId: idOf(b, 'draw_id'), amountCents: amountOf(b, false), reason: reasonOf(b) });
    send(ctx, correctionJson(c, replayed));
  });

  router.post('/lds/admin/adjustments', guard, async (ctx) => {
    const key = idempotencyKey(ctx);
    const b = objectBody(await readJsonBody(ctx, o.maxBodyBytes));
    if (b.direction !== 'credit' && b.direction !== 'debit') throw malformed('direction', 'direction must be "credit" (add to the balance) or "debit" (take from it)');
    const amount = amountOf(b, true)!;
    // A ceiling per correction, like the top-up maximum: a slip of the keyboard (10000000.00 for
    // 100.00) or a stolen operator token cannot mint an unbounded balance in one request.
    if (amount > o.maxAdjustmentCents) {
      throw new Problem(422, 'adjustment-above-maximum', 'Adjustment above the maximum', `One adjustment may move at most ${formatCents(o.maxAdjustmentCents)} EUR (LDS_MAX_ADJUSTMENT); ${formatCents(amount)} EUR was asked. Split a larger correction into several, each with its own Idempotency-Key, or raise LDS_MAX_ADJUSTMENT.`, {
        field: 'amount',
        maximum: formatCents(o.maxAdjustmentCents),
      });
    }
    const reason = reasonOf(b);
    // Which balance: its id, or the balance that made a draw or a top-up.
    let balance: string;
    if (b.balance_id !== undefined) {
      if (!isTokenHash(b.balance_id)) throw malformed('balance_id', 'balance_id is the 64 hex characters shown as balance_id in an earlier answer');
      balance = b.balance_id;
    } else if (b.draw_id !== undefined) {
      const d = await o.ledger.findDraw(idOf(b, 'draw_id'));
      if (!d) throw new Problem(404, 'unknown-draw', 'Unknown draw', 'No such draw.', { field: 'draw_id' });
      balance = d.token_hash;
    } else if (b.topup_id !== undefined) {
      const t = await o.ledger.findTopup(idOf(b, 'topup_id'));
      if (!t) throw new Problem(404, 'unknown-topup', 'Unknown topup', 'No such top-up.', { field: 'topup_id' });
      balance = t.token_hash;
    } else throw malformed('balance_id', 'name the balance: balance_id, or the draw_id or topup_id of something it paid');
    const { c, replayed } = await apply(ctx, { kind: b.direction, idempotencyKey: key, balance, amountCents: amount, reason });
    send(ctx, correctionJson(c, replayed));
  });

  router.post('/lds/admin/topup-refunds', guard, async (ctx) => {
    const key = idempotencyKey(ctx);
    const b = objectBody(await readJsonBody(ctx, o.maxBodyBytes));
    const topupId = idOf(b, 'topup_id');
    const t = await o.ledger.findTopup(topupId);
    if (!t) throw new Problem(404, 'unknown-topup', 'Unknown topup', 'No such top-up.', { field: 'topup_id' });
    const processor = await o.processor();
    if (t.processor !== processor.name) throw new Problem(409, 'processor-mismatch', 'Paid through another processor', `This top-up was paid through ${t.processor}; this service runs ${processor.name}.`, { field: 'topup_id' });
    const { c, replayed } = await apply(ctx, { kind: 'topup_refund', idempotencyKey: key, topupId, amountCents: amountOf(b, false), reason: reasonOf(b) });
    const status = ctx.status;
    let refund;
    try {
      refund = await processor.refunds.create({ payment_intent: t.payment_ref, amount: c.amount_cents, metadata: { lds_correction: c.correction_id } }, { idempotencyKey: `lds_refund_${c.correction_id}` });
    } catch (err) {
      o.logger?.error({ correction: c.correction_id, payment: t.payment_ref, err: (err as Error).message }, 'top-up refund: the ledger was debited but the processor refund failed');
      throw new Problem(502, 'payment-processor-unavailable', 'Processor refund failed', `The balance was debited ${formatCents(c.amount_cents)} EUR (correction ${c.correction_id}) but the processor did not confirm the refund. Resend this request with the same Idempotency-Key: the debit is not repeated and the refund is retried once.`, { correction_id: c.correction_id });
    }
    ctx.status = status;
    send(ctx, { ...correctionJson(c, replayed), processor_refund: { id: refund.id, status: refund.status, amount: formatCents(refund.amount) } });
  });

  router.post('/lds/admin/tokens/revoke', guard, async (ctx) => {
    const b = objectBody(await readJsonBody(ctx, o.maxBodyBytes));
    // The token itself (a buyer reporting a leak) or its SHA-256; only the hash is kept or logged.
    let hash: string;
    if (typeof b.token === 'string') {
      if (!isWellFormedToken(b.token)) throw malformed('token', 'token is not a balance token (lds_bal_…)');
      hash = hashToken(b.token);
    } else if (isTokenHash(b.token_hash)) hash = b.token_hash;
    else throw malformed('token_hash', 'give token_hash (hex SHA-256 of the balance token) or token');
    const r = await o.ledger.revokeToken(hash);
    if (r.kind === 'unknown') throw new Problem(404, 'unknown-balance-token', 'Unknown balance token', 'No balance has this token.', { field: 'token_hash' });
    o.logger?.info({ token_hint: tokenHint(hash), outcome: r.kind }, 'balance token revoked');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { token_hash: hash, revoked: true, already_revoked: r.kind === 'revoked' };
  });
}
