// The sandbox processor: an in-process stand-in for the Stripe API, and nothing more.
//
// It replaces only the network call at the very bottom of mppx's stripe charge method
// (`client.paymentIntents.create`), so a sandbox top-up exercises exactly the same challenge,
// credential, HMAC, expiry, amount binding, idempotency-key and receipt code as production.
// Behaviour follows the Stripe API closely enough for the handler's decisions:
//   - any `spt_…` token succeeds, except
//   - `spt_sandbox_decline` → a card_error (StripeCardError, card_declined), and
//   - `spt_sandbox_requires_action` → a PaymentIntent left in `requires_action`;
//   - anything else as a token → invalid_request_error (no such token);
//   - the same Idempotency-Key replays the first outcome with `Idempotent-Replayed: true`,
//     and a reused key with different parameters is refused, as Stripe does;
//   - `refunds.create` refunds a succeeded PaymentIntent of this sandbox, at most its amount in
//     total, once per Idempotency-Key (Stripe's charge_already_refunded / amount_too_large errors).
// It is the default for a local start and refuses to exist when NODE_ENV=production.
import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import type { FaultHooks } from '../faults.ts';
import type { PaymentIntentCreateParams, PaymentIntentLike, PaymentIntentRequestOptions, PaymentProcessor, RefundLike } from './types.ts';

export const SANDBOX_DECLINE_TOKEN = 'spt_sandbox_decline';
export const SANDBOX_REQUIRES_ACTION_TOKEN = 'spt_sandbox_requires_action';
const MAX_REMEMBERED_KEYS = 10_000;

export interface SandboxProcessorOptions {
  env?: NodeJS.ProcessEnv;
  networkId?: string;
  /** Simulator only (payments/faults.ts): a charge that succeeds and then times out. */
  faults?: FaultHooks;
}

type Outcome = { ok: true; pi: PaymentIntentLike } | { ok: false; error: Error };

export function createSandboxProcessor(options: SandboxProcessorOptions = {}): PaymentProcessor {
  const env = options.env ?? process.env;
  if (env.NODE_ENV === 'production') throw new Error('the sandbox payment processor is refused when NODE_ENV=production; configure PAYMENT_PROCESSOR=stripe');
  // Idempotency memory, bounded (insertion order = age) so a long-running local server stays small.
  const seen = new Map<string, { fingerprint: string; outcome: Outcome }>();
  // Succeeded PaymentIntents and what was refunded of each (for refunds.create).
  const intents = new Map<string, { amount: number; refunded: number }>();
  const refundKeys = new Map<string, RefundLike>();

  async function refund(params: { payment_intent: string; amount: number }, requestOptions?: { idempotencyKey?: string }): Promise<RefundLike> {
    const key = requestOptions?.idempotencyKey;
    if (key && refundKeys.has(key)) return refundKeys.get(key)!;
    const pi = intents.get(params.payment_intent);
    if (!pi) throw new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', code: 'resource_missing', param: 'payment_intent', message: `No such payment_intent: '${params.payment_intent}'` });
    if (!Number.isSafeInteger(params.amount) || params.amount <= 0 || pi.refunded + params.amount > pi.amount) {
      throw new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', code: 'amount_too_large', param: 'amount', message: 'Refund amount is greater than the unrefunded amount of the charge.' });
    }
    pi.refunded += params.amount;
    const r: RefundLike = { id: `re_sandbox_${randomBytes(12).toString('hex')}`, status: 'succeeded', amount: params.amount, payment_intent: params.payment_intent };
    if (key) refundKeys.set(key, r);
    return r;
  }

  async function create(params: PaymentIntentCreateParams, requestOptions?: PaymentIntentRequestOptions): Promise<PaymentIntentLike> {
    const key = requestOptions?.idempotencyKey;
    const fingerprint = JSON.stringify([params.amount, params.currency, params.shared_payment_granted_token, params.confirm]);
    if (key) {
      const prior = seen.get(key);
      if (prior) {
        if (prior.fingerprint !== fingerprint) {
          throw new Stripe.errors.StripeIdempotencyError({ type: 'idempotency_error', message: 'Keys for idempotent requests can only be used with the same parameters they were first used with.' });
        }
        if (!prior.outcome.ok) throw prior.outcome.error;
        return { ...prior.outcome.pi, lastResponse: { headers: { 'idempotent-replayed': 'true' } } };
      }
    }
    const outcome = decide(params);
    if (outcome.ok && outcome.pi.status === 'succeeded') intents.set(outcome.pi.id, { amount: outcome.pi.amount ?? 0, refunded: 0 });
    if (key) {
      seen.set(key, { fingerprint, outcome });
      if (seen.size > MAX_REMEMBERED_KEYS) seen.delete(seen.keys().next().value as string);
    }
    if (!outcome.ok) throw outcome.error;
    if (options.faults?.processorAfterCharge()) {
      // Charged (and remembered under the idempotency key), but the answer never arrives.
      throw new Stripe.errors.StripeConnectionError({ type: 'api_error', message: 'Request timed out after the charge (simulated).' });
    }
    return { ...outcome.pi, lastResponse: { headers: {} } };
  }

  return {
    name: 'sandbox',
    networkId: options.networkId ?? 'sandbox',
    paymentMethodTypes: ['card'],
    client: { paymentIntents: { create } },
    refunds: { create: refund },
  };
}

function decide(params: PaymentIntentCreateParams): Outcome {
  const spt = params.shared_payment_granted_token;
  if (!Number.isSafeInteger(params.amount) || params.amount <= 0 || !/^[a-z]{3}$/.test(String(params.currency))) {
    return { ok: false, error: new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', code: 'parameter_invalid', message: 'Invalid amount or currency.' }) };
  }
  if (typeof spt !== 'string' || !/^spt_[A-Za-z0-9_]+$/.test(spt)) {
    return { ok: false, error: new Stripe.errors.StripeInvalidRequestError({ type: 'invalid_request_error', code: 'resource_missing', param: 'shared_payment_granted_token', message: 'No such shared payment granted token.' }) };
  }
  if (spt === SANDBOX_DECLINE_TOKEN) {
    return { ok: false, error: new Stripe.errors.StripeCardError({ type: 'card_error', code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' }) };
  }
  const pi = { id: `pi_sandbox_${randomBytes(12).toString('hex')}`, amount: params.amount, currency: params.currency };
  if (spt === SANDBOX_REQUIRES_ACTION_TOKEN) return { ok: true, pi: { ...pi, status: 'requires_action' } };
  return { ok: true, pi: { ...pi, status: 'succeeded' } };
}
