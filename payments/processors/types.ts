// What the top-up handler needs from a payment processor. Both processors hand mppx's own
// `stripe` charge method a Stripe-SDK-shaped client; the sandbox differs only in that its client is
// an in-process fake. Everything above the client (challenge, credential, HMAC, expiry, amount
// binding, PaymentIntent parameters, idempotency key, receipt) is the same mppx code path.

export type ProcessorName = 'stripe' | 'sandbox';

/** Parameters mppx passes to `paymentIntents.create` (see mppx/dist/stripe/server/Charge.js). */
export interface PaymentIntentCreateParams {
  amount: number;
  currency: string;
  confirm?: boolean;
  shared_payment_granted_token?: string;
  metadata?: Record<string, string>;
  [k: string]: unknown;
}

export interface PaymentIntentRequestOptions {
  idempotencyKey?: string;
  apiVersion?: string;
  [k: string]: unknown;
}

export interface PaymentIntentLike {
  id: string;
  status: string;
  amount?: number;
  currency?: string;
  lastResponse?: { headers?: Record<string, string> };
}

/** The duck-typed slice of the Stripe SDK that mppx's stripe charge method calls. */
export interface StripeLikeClient {
  paymentIntents: {
    create(params: PaymentIntentCreateParams, options?: PaymentIntentRequestOptions): Promise<PaymentIntentLike>;
  };
}

/** A refund of (part of) a PaymentIntent (Stripe `refunds.create`). */
export interface RefundLike {
  id: string;
  status: string;
  amount: number;
  payment_intent?: string | null;
}

export interface RefundClient {
  /** Stripe `refunds.create({ payment_intent, amount }, { idempotencyKey })`: the same key refunds once. */
  create(params: { payment_intent: string; amount: number; metadata?: Record<string, string> }, options?: { idempotencyKey?: string }): Promise<RefundLike>;
}

export interface PaymentProcessor {
  /** Refunds money of a PaymentIntent back to the payer (operator's top-up refund). */
  readonly refunds: RefundClient;
  readonly name: ProcessorName;
  readonly client: StripeLikeClient;
  /** Stripe business network / profile id advertised in the challenge (the client mints the SPT for it). */
  readonly networkId: string;
  readonly paymentMethodTypes: string[];
}
