// A page of a balance's statement as the buyer reads it: the page bounds checked, and the ledger's
// lines written with signed amounts and the ids each line is about.
import { STATEMENT_PAGE } from '../../contract/limits.ts';
import { CURRENCY, formatCents } from '../../contract/money.ts';
import type { BalanceView, StatementLine } from '../../contract/wire.ts';
import type { StatementEntry } from '../ledger/ledger.ts';
import { problems } from './problems.ts';

/** A page of the statement: newest first; `after` is the `next_after` of the previous page. */
export interface StatementPage {
  after?: string;
  limit?: number;
}

/** The page's size and the ledger position it starts before (none: the newest lines). */
export function checkStatementPage(page: StatementPage): { limit: number; before?: number } {
  const limit = page.limit ?? STATEMENT_PAGE.defaultLines;
  if (!Number.isInteger(limit) || limit < 1 || limit > STATEMENT_PAGE.maxLines)
    throw problems.malformed('limit', `limit must be a whole number from 1 to ${STATEMENT_PAGE.maxLines} (got ${JSON.stringify(page.limit)})`);
  if (page.after === undefined) return { limit };
  if (!/^[1-9][0-9]{0,15}$/.test(page.after)) throw problems.malformed('after', 'after must be the next_after value of a previous page');
  return { limit, before: Number(page.after) };
}

/** The view of a page: `lines` is up to one line more than `limit`, which tells whether another page follows. */
export function statementView(balanceCents: number, lines: readonly StatementEntry[], limit: number): BalanceView {
  const more = lines.length > limit;
  const shown = lines.slice(0, limit);
  return {
    balance: formatCents(balanceCents),
    currency: CURRENCY,
    statement: shown.map(statementLine),
    ...(more ? { next_after: String(shown[shown.length - 1].seq) } : {}),
  };
}

function statementLine(s: StatementEntry): StatementLine {
  const taken = s.kind === 'draw' || s.kind === 'debit' || s.kind === 'topup_refund';
  return {
    kind: s.kind,
    id: s.id,
    amount: formatCents(taken ? -s.amountCents : s.amountCents),
    balance_after: formatCents(s.balanceAfterCents),
    at: s.at,
    ...(s.quoteId !== undefined ? { quote_id: s.quoteId } : {}),
    ...(s.productId !== undefined ? { product_id: s.productId } : {}),
    ...(s.reason !== undefined ? { reason: s.reason } : {}),
    // A draw line names its own draw in draw_id (and a top-up line its top-up in topup_id), as
    // a refund line names the draw it refunds: the column means "the draw this line is about".
    ...(s.drawId !== undefined ? { draw_id: s.drawId } : s.kind === 'draw' ? { draw_id: s.id } : {}),
    ...(s.topupId !== undefined ? { topup_id: s.topupId } : s.kind === 'topup' ? { topup_id: s.id } : {}),
  };
}
