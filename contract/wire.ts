// What a buyer sends and receives, as JSON: one set of types for the service that answers
// (payments/) and the client that asks (client/). The OpenAPI document the build publishes
// (generator/emit/openapi.ts) is the full description; these are its shapes in TypeScript.
import type { CURRENCY } from './money.ts';
import type { ReceiptSignature } from './receipts.ts';
import type { Unit } from './unit.ts';

export type Currency = typeof CURRENCY;

/** A draw: the units to buy, named (`units`) or found by a `query` (with an optional `limit`). */
export interface DrawRequest {
  product_id: string;
  /** defaults to EUR; anything else is refused */
  currency?: string;
  /** unit references, or */
  units?: string[];
  /** a full-text query, with */
  query?: string;
  limit?: number;
}

/** The paying request: the quoted request repeated with its quote_id. */
export type PayRequest = DrawRequest & { quote_id: string };

/** The 402 answer to a draw without a quote_id (and the fresh quote of quote-expired). */
export interface Quote {
  quote_id: string;
  product_id: string;
  /** as requested */
  units?: string[];
  query?: string;
  limit?: number;
  /** the canonical unit list the quote is bound to */
  resolved_units: string[];
  unit_count: number;
  /** "0.10" */
  amount: string;
  currency: Currency;
  expires_at: string;
  breakdown: { source: string; unit_count: number; unit_price: string; amount: string }[];
  store_version: string;
  catalogue_version: string;
  /** true when the caller's balance token covers the amount */
  payable_from_balance: boolean;
  how_to_pay: string;
  /** the paying request, ready to send with the balance token */
  pay_with: PayRequest;
  topup_url: string;
}

/** A delivered unit: the stored unit plus a one-line citation. */
export interface DeliveredUnit extends Unit {
  citation_text?: string;
}

export interface Attribution {
  source: string;
  attribution: string;
  licence: string;
  licence_url: string;
  terms_url: string;
  conditions: string;
}

/** What a paid draw cost and delivered, signed by the service (contract/receipts.ts verifies it). */
export interface DrawReceipt {
  type: 'draw';
  draw_id: string;
  quote_id: string;
  product_id: string;
  unit_count: number;
  units_sha256: string;
  amount: string;
  currency: Currency;
  balance_after: string;
  catalogue_version: string;
  paid_at: string;
  signature: ReceiptSignature;
}

/** The 200 answer of a paid draw. */
export interface PaidDraw {
  units: DeliveredUnit[];
  attribution: Attribution[];
  receipt: DrawReceipt;
}

/** The signed receipt of a top-up, built from the stored top-up record only (a resent credential gets the same one). */
export interface TopupReceipt {
  type: 'topup';
  topup_id: string;
  amount: string;
  currency: Currency;
  balance_after: string;
  processor: string;
  payment_ref: string;
  paid_at: string;
  signature: ReceiptSignature;
}

export interface StatementLine {
  kind: 'topup' | 'draw' | 'refund' | 'credit' | 'debit' | 'topup_refund';
  id: string;
  /** signed: + added to the balance, - taken from it */
  amount: string;
  balance_after: string;
  at: string;
  quote_id?: string;
  product_id?: string;
  /** the operator's reason, for refunds and adjustments */
  reason?: string;
  /** the draw or top-up the line is about */
  draw_id?: string;
  topup_id?: string;
}

/** GET /v1/lds/balance: the balance and a page of its statement, newest first. */
export interface BalanceView {
  balance: string;
  currency: Currency;
  statement: StatementLine[];
  /** present when older lines exist: pass it as `after` to read the next page */
  next_after?: string;
}

/** POST /v1/lds/balance/token: the new token (shown once) of the same balance. */
export interface RotatedToken {
  balance_token: string;
  balance: string;
  currency: Currency;
}
