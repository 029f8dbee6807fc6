// The transport-neutral face of the service: what a buyer can do. HTTP routes, the MCP tools and
// the A2A skills are thin adapters over this one interface, so all three answer the same amounts,
// units and problems. Every method throws a Problem (payments/problem.ts) for a refusal.
import type { Unit } from '../../contract/store-format.ts';
import type { ReceiptSignature } from '../receipts.ts';

export interface DrawRequest {
  product_id: string;
  currency?: string; // defaults to EUR; anything else is refused
  units?: string[]; // unit references, or
  query?: string; // full-text query with
  limit?: number;
}

export interface Quote {
  quote_id: string;
  product_id: string;
  units?: string[]; // as requested
  query?: string;
  limit?: number;
  resolved_units: string[]; // the canonical unit list the quote is bound to
  unit_count: number;
  amount: string; // "0.10"
  currency: 'EUR';
  expires_at: string;
  breakdown: { source: string; unit_count: number; unit_price: string; amount: string }[];
  store_version: string;
  catalogue_version: string;
  /** true when the caller's balance token covers the amount */
  payable_from_balance: boolean;
  how_to_pay: string;
}

export interface DeliveredUnit extends Unit {
  citation_text?: string;
}

export interface PaidDraw {
  units: DeliveredUnit[];
  attribution: { source: string; attribution: string; licence: string; licence_url: string; terms_url: string; conditions: string }[];
  receipt: DrawReceipt;
}

/** What a paid draw cost and delivered, signed by the service (payments/receipts.ts). */
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
  /** the refunded draw or top-up */
  draw_id?: string;
  topup_id?: string;
}

export interface BalanceView {
  balance: string;
  currency: 'EUR';
  statement: StatementLine[];
  /** present when older lines exist: pass it as `after` to read the next page */
  next_after?: string;
}

/** A page of the statement: newest first; `after` is the `next_after` of the previous page. */
export interface StatementPage {
  after?: string;
  limit?: number;
}

export interface DrawService {
  /** The catalogue snapshot as published in dist/. */
  catalogue(): unknown;
  /** 402-style quote. `balanceToken` is optional; it only decides payable_from_balance. */
  quote(req: DrawRequest, balanceToken?: string): Promise<Quote>;
  /** Pays a quote from the balance: exactly once per quote. */
  pay(req: DrawRequest & { quote_id: string }, balanceToken: string): Promise<PaidDraw>;
  balance(balanceToken: string, page?: StatementPage): Promise<BalanceView>;
}
