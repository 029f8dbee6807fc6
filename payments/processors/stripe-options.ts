// The Stripe processor's settings, read and checked without loading the Stripe SDK: the service
// checks them at start and builds the processor (and loads the SDK) only after it listens.
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

/** Throws on settings the processor cannot work with. */
export function checkStripeOptions(options: StripeProcessorOptions): void {
  if (!/^(sk|rk)_(test|live)_\S+$/.test(options.secretKey)) throw new Error('STRIPE_SECRET_KEY must be a Stripe secret or restricted key (sk_… / rk_…)');
  if (!options.networkId) throw new Error('the Stripe network / profile id (STRIPE_NETWORK_ID) is required');
}

/**
 * Reads STRIPE_SECRET_KEY, STRIPE_NETWORK_ID (alias STRIPE_PROFILE_ID), optional
 * STRIPE_PAYMENT_METHOD_TYPES (comma list, default "card") and optional STRIPE_API_BASE
 * (e.g. http://127.0.0.1:12111, to use a fake or stripe-mock), and checks them.
 */
export function stripeOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): StripeProcessorOptions {
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
  const options: StripeProcessorOptions = { secretKey, networkId, ...(api ? { api } : {}), ...(types?.length ? { paymentMethodTypes: types } : {}) };
  checkStripeOptions(options);
  return options;
}
