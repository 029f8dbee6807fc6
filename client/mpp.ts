// The buyer's side of a top-up, with the official mppx client: used by the client library
// (client/client.ts), the CLI, the tests and the benchmark. It shares no code with the handler
// beyond the wire constants in contract/, as a real buyer would.
import { Mppx as MppxClient, stripe as stripeClient } from 'mppx/client';
import { CURRENCY as TOPUP_CURRENCY } from '../contract/money.ts';

export interface TopupClientOptions {
  /** A Shared Payment Token, or a function that mints one for the challenge (amount, currency, networkId, expiresAt). */
  spt: string | ((p: { amount: string; currency: string; networkId: string; expiresAt: number }) => Promise<string>);
  /** Stripe payment method the SPT is minted from (passed to createToken); default 'pm_card_visa'. */
  paymentMethod?: string;
  fetch?: typeof globalThis.fetch;
}

/**
 * Pays a top-up with the official mppx client: POSTs the body, answers the 402 challenge with a
 * stripe credential, and returns the final response (200 with Payment-Receipt, or a problem).
 * With `balanceToken` the mppx client puts the credential in Payment-Authorization, as the
 * challenge asks.
 */
export async function payTopup(url: string, amount: string, options: TopupClientOptions & { balanceToken?: string }): Promise<Response> {
  const client = MppxClient.create({
    polyfill: false,
    ...(options.fetch ? { fetch: options.fetch } : {}),
    methods: [
      stripeClient.charge({
        paymentMethod: options.paymentMethod ?? 'pm_card_visa',
        createToken: async (p) => (typeof options.spt === 'string' ? options.spt : options.spt({ amount: p.amount, currency: p.currency, networkId: p.networkId ?? '', expiresAt: p.expiresAt })),
      }),
    ],
  });
  return client.fetch(url, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(options.balanceToken ? { Authorization: `Bearer ${options.balanceToken}` } : {}) },
    body: JSON.stringify({ amount, currency: TOPUP_CURRENCY }),
  });
}
