// The real processor: the official stripe SDK, handed to mppx's stripe charge method.
//
// Retries are off (maxNetworkRetries 0): a retry after a timeout is the buyer's decision, made by
// resending the same credential, and mppx derives the idempotency key from the challenge id, so
// Stripe itself deduplicates that resend. The SDK can be pointed at another host (a loopback fake
// in tests) with `api`.
import Stripe from 'stripe';
import type { PaymentIntentLike, PaymentProcessor } from './types.ts';

export interface StripeProcessorOptions {
  /** STRIPE_SECRET_KEY (sk_… or restricted rk_…) */
  secretKey: string;
  /** Stripe profile / business network id put into the challenge (STRIPE_NETWORK_ID) */
  networkId: string;
  paymentMethodTypes?: string[];
  /** Where the SDK sends requests; default api.stripe.com over https. */
  api?: { host: string; port?: number; protocol?: 'http' | 'https' };
  /** Per-request timeout; the SDK default (80 s) is far longer than a buyer will wait. */
  timeoutMs?: number;
}

export function createStripeProcessor(options: StripeProcessorOptions): PaymentProcessor {
  if (!/^(sk|rk)_(test|live)_\S+$/.test(options.secretKey)) throw new Error('STRIPE_SECRET_KEY must be a Stripe secret or restricted key (sk_… / rk_…)');
  if (!options.networkId) throw new Error('the Stripe network / profile id (STRIPE_NETWORK_ID) is required');
  const sdk = new Stripe(options.secretKey, {
    maxNetworkRetries: 0,
    timeout: options.timeoutMs ?? 20_000,
    telemetry: false,
    ...(options.api ? { host: options.api.host, port: options.api.port, protocol: options.api.protocol ?? 'https' } : {}),
  });
  return {
    name: 'stripe',
    networkId: options.networkId,
    paymentMethodTypes: options.paymentMethodTypes ?? ['card'],
    refunds: {
      create: async (params, requestOptions) => {
        const r = await sdk.refunds.create(params, requestOptions);
        return { id: r.id, status: r.status ?? 'pending', amount: r.amount, payment_intent: typeof r.payment_intent === 'string' ? r.payment_intent : (r.payment_intent?.id ?? null) };
      },
    },
    client: {
      paymentIntents: {
        // `shared_payment_granted_token` is not in the SDK's types yet (SPTs are a preview
        // feature); mppx passes it and the SDK form-encodes whatever it is given.
        create: (params, requestOptions) =>
          sdk.paymentIntents.create(params as unknown as Stripe.PaymentIntentCreateParams, requestOptions as Stripe.RequestOptions) as Promise<PaymentIntentLike>,
      },
    },
  };
}

/**
 * Reads STRIPE_SECRET_KEY, STRIPE_NETWORK_ID (alias STRIPE_PROFILE_ID), optional
 * STRIPE_PAYMENT_METHOD_TYPES (comma list, default "card") and optional STRIPE_API_BASE
 * (e.g. http://127.0.0.1:12111, to use a fake or stripe-mock).
 */
export function stripeProcessorFromEnv(env: NodeJS.ProcessEnv = process.env): PaymentProcessor {
  const secretKey = env.STRIPE_SECRET_KEY;
  if (!secretKey) throw new Error('PAYMENT_PROCESSOR=stripe needs STRIPE_SECRET_KEY');
  const networkId = env.STRIPE_NETWORK_ID || env.STRIPE_PROFILE_ID;
  if (!networkId) throw new Error('PAYMENT_PROCESSOR=stripe needs STRIPE_NETWORK_ID (the Stripe profile / network id)');
  let api: StripeProcessorOptions['api'];
  if (env.STRIPE_API_BASE) {
    const u = new URL(env.STRIPE_API_BASE);
    const protocol = u.protocol === 'http:' ? 'http' : 'https';
    api = { host: u.hostname, protocol, ...(u.port ? { port: Number(u.port) } : {}) };
  }
  const types = env.STRIPE_PAYMENT_METHOD_TYPES?.split(',').map((s) => s.trim()).filter(Boolean);
  return createStripeProcessor({ secretKey, networkId, ...(api ? { api } : {}), ...(types?.length ? { paymentMethodTypes: types } : {}) });
}
