// The buyer's spending policy, checked locally before any money moves. Pure: given the amounts, it
// says yes or names the rule that says no. Amounts are EUR decimal strings ("0.50") as the service
// writes them, compared as integer cents (contract/money.ts).
//
//   maxPerDraw    the most one paid draw may cost
//   maxPerTopup   the most one top-up may charge (an automatic top-up included)
//   maxPerDay     the most the paid draws of any rolling 24 hours may cost together. The client
//                 counts the draws it paid in the receipts journal (client/journal.ts), so the
//                 budget holds across runs and concurrent processes that share a journal (checked
//                 again in the locked turn that records the payment); without a journal file it
//                 counts only this process's draws. A draw whose answer was lost counts (it may be paid).
//   approveAbove  draws costing more than this are paid only when `approve(quote)` says yes
//                 (without a callback they are refused); with a callback and no threshold, every
//                 draw is put to it.
import { formatCents, parseAmountCents } from '../contract/money.ts';
import { PolicyRefusal } from './errors.ts';

export interface SpendingPolicy<Q = unknown> {
  maxPerDraw?: string;
  maxPerTopup?: string;
  maxPerDay?: string;
  approveAbove?: string;
  approve?: (quote: Q) => boolean | Promise<boolean>;
}

/** The policy with its amounts in cents, checked once when the client is made. */
export interface CentsPolicy<Q = unknown> {
  maxPerDraw?: number;
  maxPerTopup?: number;
  maxPerDay?: number;
  approveAbove?: number;
  approve?: (quote: Q) => boolean | Promise<boolean>;
}

export const DAY_MS = 24 * 60 * 60 * 1000;

export function parsePolicy<Q>(p: SpendingPolicy<Q> = {}): CentsPolicy<Q> {
  const cents = (name: keyof SpendingPolicy, v: string | undefined): number | undefined => {
    if (v === undefined) return undefined;
    const c = parseAmountCents(v);
    if (c === null) throw new TypeError(`policy.${name} must be an amount in EUR with at most two decimals, e.g. "0.50"; got ${JSON.stringify(v)}`);
    return c;
  };
  return {
    maxPerDraw: cents('maxPerDraw', p.maxPerDraw),
    maxPerTopup: cents('maxPerTopup', p.maxPerTopup),
    maxPerDay: cents('maxPerDay', p.maxPerDay),
    approveAbove: cents('approveAbove', p.approveAbove),
    ...(p.approve ? { approve: p.approve } : {}),
  };
}

/** Checks a draw of `amount` cents, with `spentToday` cents paid in the last 24 hours. Throws PolicyRefusal. */
export async function checkDraw<Q>(p: CentsPolicy<Q>, quote: Q & { quote_id: string; amount: string }, amount: number, spentToday: number): Promise<void> {
  const asked = formatCents(amount);
  if (p.maxPerDraw !== undefined && amount > p.maxPerDraw)
    throw new PolicyRefusal('max_per_draw', formatCents(p.maxPerDraw), asked, 'draw', `the draw costs ${asked} EUR, more than the per-draw limit of ${formatCents(p.maxPerDraw)} EUR`, quote.quote_id);
  checkDayBudget(p, quote, amount, spentToday);
  const threshold = p.approveAbove ?? (p.approve ? -1 : undefined);
  if (threshold !== undefined && amount > threshold) {
    const approved = p.approve ? await p.approve(quote) : false;
    if (!approved)
      throw new PolicyRefusal('approval', formatCents(Math.max(0, threshold)), asked, 'draw', p.approve ? `the draw costs ${asked} EUR and approve() declined it` : `the draw costs ${asked} EUR, above the approval threshold, and no approve() callback was given`, quote.quote_id);
  }
}

/** The day budget alone (the client checks it again in the turn that records the payment). Throws PolicyRefusal. */
export function checkDayBudget<Q>(p: CentsPolicy<Q>, quote: Q & { quote_id: string }, amount: number, spentToday: number): void {
  const asked = formatCents(amount);
  if (p.maxPerDay !== undefined && spentToday + amount > p.maxPerDay)
    throw new PolicyRefusal(
      'max_per_day',
      formatCents(p.maxPerDay),
      asked,
      'draw',
      `the draw costs ${asked} EUR and ${formatCents(spentToday)} EUR was spent in the last 24 hours: together more than the daily limit of ${formatCents(p.maxPerDay)} EUR`,
      quote.quote_id,
    );
}

/** Checks a top-up of `amount` cents. Throws PolicyRefusal. */
export function checkTopup<Q>(p: CentsPolicy<Q>, amount: number): void {
  const asked = formatCents(amount);
  if (p.maxPerTopup !== undefined && amount > p.maxPerTopup)
    throw new PolicyRefusal('max_per_topup', formatCents(p.maxPerTopup), asked, 'topup', `the top-up is ${asked} EUR, more than the per-top-up limit of ${formatCents(p.maxPerTopup)} EUR`);
}
