// What the service answers, as the client hands it to the caller (the OpenAPI document at
// {base_url}/specification is the full description).
import type { Currency, TopupReceipt } from '../contract/wire.ts';

export type { DrawReceipt, PaidDraw, Quote, StatementLine, TopupReceipt } from '../contract/wire.ts';
export type { CatalogueDoc, CatalogueProduct } from '../contract/catalogue.ts';
/** The body of a draw request (contract/wire.ts DrawRequest). */
export type { DrawRequest as DrawRequestBody } from '../contract/wire.ts';

/** A top-up's answer without the token (a new balance's token goes to onNewToken only). */
export interface TopupResult {
  balance: string;
  currency: Currency;
  receipt: TopupReceipt;
  new_balance: boolean;
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
