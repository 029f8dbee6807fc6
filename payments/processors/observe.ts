// Watches the processor call that mppx makes, without changing it.
//
// mppx turns every processor failure into a generic "verification failed" string. To answer with
// a precise problem (declined card vs. needs 3-D Secure vs. Stripe unreachable) and to recover an
// idempotent replay, the top-up handler needs the raw outcome. It wraps the processor's client once
// per top-up request (and builds that request's mppx server on it), so the wrapper records into that
// request's observation and returns or rethrows exactly what the real client produced. One wrapper
// per request instead of an AsyncLocalStorage scope: on Node 20 the first AsyncLocalStorage run
// turns on promise hooks for the whole process, which every later request (every draw) then pays.
// Nothing secret is kept: no token, no idempotency key (it embeds the SPT).
import type { StripeLikeClient } from './types.ts';

export type ChargeErrorKind = 'card_declined' | 'invalid_request' | 'idempotency' | 'unavailable' | 'other';

export interface ChargeObservation {
  /** how many PaymentIntent creations this request made (mppx makes at most one) */
  calls: number;
  request?: { amount: number; currency: string };
  result?: { id: string; status: string; amount?: number; currency?: string; replayed: boolean };
  error?: { kind: ChargeErrorKind; code?: string; declineCode?: string; param?: string; message: string };
}

export interface ObservedClient {
  /** The processor's client, recording into `observation`. */
  client: StripeLikeClient;
  /** What the calls made through `client` saw. */
  observation: ChargeObservation;
}

/** A client for one top-up request: each PaymentIntent creation through it is recorded. */
export function observeCharges(inner: StripeLikeClient): ObservedClient {
  const observation: ChargeObservation = { calls: 0 };
  const client: StripeLikeClient = {
    paymentIntents: {
      async create(params, options) {
        observation.calls += 1;
        observation.request = { amount: params.amount, currency: params.currency };
        try {
          const pi = await inner.paymentIntents.create(params, options);
          observation.result = {
            id: pi.id,
            status: pi.status,
            ...(pi.amount !== undefined ? { amount: pi.amount } : {}),
            ...(pi.currency !== undefined ? { currency: pi.currency } : {}),
            replayed: pi.lastResponse?.headers?.['idempotent-replayed'] === 'true',
          };
          return pi;
        } catch (e) {
          observation.error = classify(e);
          throw e;
        }
      },
    },
  };
  return { client, observation };
}

function classify(e: unknown): NonNullable<ChargeObservation['error']> {
  const err = (e ?? {}) as { type?: string; rawType?: string; code?: string; decline_code?: string; param?: string; message?: string };
  const message = redactTokens(typeof err.message === 'string' ? err.message : String(e));
  const base = {
    message,
    ...(err.code ? { code: err.code } : {}),
    ...(err.decline_code ? { declineCode: err.decline_code } : {}),
    ...(err.param ? { param: err.param } : {}),
  };
  switch (err.type) {
    case 'StripeCardError':
      return { kind: 'card_declined', ...base };
    case 'StripeInvalidRequestError':
      return { kind: 'invalid_request', ...base };
    case 'StripeIdempotencyError':
      return { kind: 'idempotency', ...base };
    case 'StripeConnectionError':
    case 'StripeAPIError':
    case 'StripeRateLimitError':
    case 'StripeAuthenticationError':
    case 'StripePermissionError':
      return { kind: 'unavailable', ...base };
    default:
      return { kind: 'other', ...base };
  }
}

/** Stripe echoes unknown token ids in its messages; keep them out of answers and logs. */
export function redactTokens(text: string): string {
  return text.replace(/\b(spt|lds_bal|sk|rk|pm)_[A-Za-z0-9_-]+/g, '$1_…');
}
