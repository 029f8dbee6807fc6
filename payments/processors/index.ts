// The payment processors: what the service loads after it listens (serve.ts). Which one runs is
// chosen by loadConfig (config.ts, PAYMENT_PROCESSOR), the one place that decides it.
export type { PaymentProcessor, ProcessorName, StripeLikeClient } from './types.ts';
export { createStripeProcessor, stripeProcessorFromEnv, type StripeProcessorOptions } from './stripe.ts';
export { createSandboxProcessor, SANDBOX_DECLINE_TOKEN, SANDBOX_REQUIRES_ACTION_TOKEN } from './sandbox.ts';
