// What the service answers, as the client hands it to the caller (the OpenAPI document at
// {base_url}/specification is the full description).
import type { ReceiptSignature } from '../contract/receipts.ts';

export interface DrawRequestBody {
  product_id: string;
  /** unit references, or */
  units?: string[];
  /** a full-text query, with */
  query?: string;
  limit?: number;
}

export interface Quote {
  quote_id: string;
  product_id: string;
  units?: string[];
  query?: string;
  limit?: number;
  resolved_units: string[];
  unit_count: number;
  amount: string;
  currency: 'EUR';
  expires_at: string;
  breakdown: { source: string; unit_count: number; unit_price: string; amount: string }[];
  payable_from_balance: boolean;
  how_to_pay: string;
  pay_with?: Record<string, unknown>;
  [more: string]: unknown;
}

export interface DrawReceipt {
  type: 'draw';
  draw_id: string;
  quote_id: string;
  product_id: string;
  unit_count: number;
  units_sha256: string;
  amount: string;
  currency: 'EUR';
  balance_after: string;
  catalogue_version: string;
  paid_at: string;
  signature: ReceiptSignature;
}

export interface PaidDraw {
  units: { ref: string; [k: string]: unknown }[];
  attribution: { source: string; attribution: string; licence: string; licence_url: string; terms_url: string; conditions: string }[];
  receipt: DrawReceipt;
}

export interface TopupReceipt {
  type: 'topup';
  topup_id: string;
  amount: string;
  currency: 'EUR';
  balance_after: string;
  processor: string;
  payment_ref: string;
  paid_at: string;
  signature: ReceiptSignature;
  [k: string]: unknown;
}

/** A top-up's answer without the token (a new balance's token goes to onNewToken only). */
export interface TopupResult {
  balance: string;
  currency: 'EUR';
  receipt: TopupReceipt;
  new_balance: boolean;
}

export interface StatementLine {
  kind: 'topup' | 'draw' | 'refund' | 'credit' | 'debit' | 'topup_refund';
  id: string;
  amount: string;
  balance_after: string;
  at: string;
  quote_id?: string;
  product_id?: string;
  reason?: string;
  draw_id?: string;
  topup_id?: string;
}

/** The service's published addresses, from /.well-known/svc-catalog.json. */
export interface Discovery {
  index: string;
  api: string;
  catalogue?: string;
  openapi?: string;
  docs?: string;
  jwks?: string;
  agentCard?: string;
  mcp?: string;
  a2a?: string;
}
