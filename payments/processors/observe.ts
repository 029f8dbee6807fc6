// Watches the processor call that mppx makes, without changing it.
//
// mppx turns every processor failure into a generic "verification failed" string. To answer with
// a precise problem (declined card vs. needs 3-D Secure vs. Stripe unreachable) and to recover an
// idempotent replay, the top-up handler needs the raw outcome. This wrapper records it in an
// AsyncLocalStorage scope opened around each top-up request, then returns or rethrows exactly what
// the real client produced. Nothing secret is kept: no token, no idempotency key (it embeds the SPT).
import { AsyncLocalStorage } from 'node:async_hooks';
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
  client: StripeLikeClient;
  /** Runs `fn` with a fresh observation scope and returns what the processor saw. */
  observe<T>(fn: () => Promise<T>): Promise<{ value: T; observation: ChargeObservation }>;
}

export function observeCharges(inner: StripeLikeClient): ObservedClient {
  const als = new AsyncLocalStorage<ChargeObservation>();
  const client: StripeLikeClient = {
    paymentIntents: {
      async create(params, options) {
        const obs = als.getStore();
        if (obs) {
          obs.calls += 1;
          obs.request = { amount: params.amount, currency: params.currency };
        }
        try {
          const pi = await inner.paymentIntents.create(params, options);
          if (obs) {
            obs.result = {
              id: pi.id,
              status: pi.status,
              ...(pi.amount !== undefined ? { amount: pi.amount } : {}),
              ...(pi.currency !== undefined ? { currency: pi.currency } : {}),
              replayed: pi.lastResponse?.headers?.['idempotent-replayed'] === 'true',
            };
          }
          return pi;
        } catch (e) {
          if (obs) obs.error = classify(e);
          throw e;
        }
      },
    },
  };
  return {
    client,
    async observe(fn) {
      const observation: ChargeObservation = { calls: 0 };
      const value = await als.run(observation, fn);
      return { value, observation };
    },
  };
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
