// The transport-neutral face of the service: what a buyer can do. HTTP routes, the MCP tools and
// the A2A skills are thin adapters over this one interface, so all three answer the same amounts,
// units and problems. Every method throws a Problem (payments/problem.ts) for a refusal.
import type { BalanceView, DrawRequest, PaidDraw, PayRequest, Quote } from '../../contract/wire.ts';

import type { StatementPage } from './statement.ts';

export type { StatementPage };
export type { Attribution, BalanceView, DeliveredUnit, DrawReceipt, DrawRequest, PaidDraw, PayRequest, Quote, RotatedToken, StatementLine } from '../../contract/wire.ts';

export interface DrawService {
  /** The catalogue snapshot as published in dist/. */
  catalogue(): unknown;
  /** 402-style quote. `balanceToken` is optional; it only decides payable_from_balance. */
  quote(req: DrawRequest, balanceToken?: string): Promise<Quote>;
  /** Pays a quote from the balance: exactly once per quote. */
  pay(req: PayRequest, balanceToken: string): Promise<PaidDraw>;
  balance(balanceToken: string, page?: StatementPage): Promise<BalanceView>;
}
