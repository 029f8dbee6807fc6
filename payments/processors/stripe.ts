// The real processor: the official stripe SDK, handed to mppx's stripe charge method.
//
// Retries are off (maxNetworkRetries 0): a retry after a timeout is the buyer's decision, made by
// resending the same credential, and mppx derives the idempotency key from the challenge id, so
// Stripe itself deduplicates that resend. The SDK can be pointed at another host (a loopback fake
// in tests) with `api`.
import Stripe from 'stripe';
import { checkStripeOptions, stripeOptionsFromEnv, type StripeProcessorOptions } from './stripe-options.ts';
import type { PaymentIntentLike, PaymentProcessor } from './types.ts';

export { stripeOptionsFromEnv, type StripeProcessorOptions };

export function createStripeProcessor(options: StripeProcessorOptions): PaymentProcessor {
  checkStripeOptions(options);
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

/** The processor configured by the environment (stripe-options.ts says which variables). */
export function stripeProcessorFromEnv(env: NodeJS.ProcessEnv = process.env): PaymentProcessor {
  return createStripeProcessor(stripeOptionsFromEnv(env));
}
