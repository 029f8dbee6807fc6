// Processor selection from the environment.
import { createSandboxProcessor } from './sandbox.ts';
import { stripeProcessorFromEnv } from './stripe.ts';
import type { PaymentProcessor } from './types.ts';

export type { PaymentProcessor, ProcessorName, StripeLikeClient } from './types.ts';
export { createStripeProcessor, stripeProcessorFromEnv, type StripeProcessorOptions } from './stripe.ts';
export { createSandboxProcessor, SANDBOX_DECLINE_TOKEN, SANDBOX_REQUIRES_ACTION_TOKEN } from './sandbox.ts';

/**
 * PAYMENT_PROCESSOR = `sandbox` | `stripe`. Unset means `sandbox` for a local start and `stripe`
 * under NODE_ENV=production (where the sandbox refuses to be built), so a production deployment
 * can never silently accept fake payments.
 */
export function processorFromEnv(env: NodeJS.ProcessEnv = process.env): PaymentProcessor {
  const chosen = env.PAYMENT_PROCESSOR || (env.NODE_ENV === 'production' ? 'stripe' : 'sandbox');
  if (chosen === 'sandbox') return createSandboxProcessor({ env });
  if (chosen === 'stripe') return stripeProcessorFromEnv(env);
  throw new Error(`PAYMENT_PROCESSOR must be "stripe" or "sandbox", got "${chosen}"`);
}
