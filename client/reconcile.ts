// The receipts journal against the service's statement of the same balance (`lds receipts
// reconcile`): what the buyer recorded and what the service booked must be the same money. Pure:
// given the journal's text and the statement's lines, it names every difference.
//
//   - every draw and top-up line of the balance in the journal has its statement line, with the
//     same id and amount (and quote, for a draw); a draw the journal holds only as a failure (the
//     answer was lost, or its receipt did not verify) is named as such;
//   - every draw and top-up of the statement within the period has its journal line;
//   - the operator's corrections (refunds, adjustments, top-up refunds) are listed apart: the
//     buyer's client never makes them, so no journal holds them, and they are not differences.
//
// Which lines are the balance's: those whose token_hint is the hint of the token reconciled, or of a
// token it replaced (the journal's `rotate` lines chain them), at the same base URL. Lines without a
// token_hint (journals written before hints) are taken as the balance's. The period starts at the
// earliest such line (or its receipt's paid_at, the service's clock) unless `since` says otherwise,
// and runs to the statement's newest line.
import { formatCents, parseAmountCents } from '../contract/money.ts';
import type { StatementLine } from '../contract/wire.ts';
import { parseJournal, type JournalEntry } from './journal.ts';

export interface ReconcileOptions {
  /** the API base the statement was read from (journal lines of other services are left out) */
  baseUrl: string;
  /** the hint of the balance token the statement was read with (tokenHintOf) */
  tokenHint: string;
  /** ms: compare only from this instant (default: the balance's first journal line) */
  since?: number;
}

export interface Difference {
  /** the journal line it is about, when there is one */
  line?: number;
  /** the statement line's id, when there is one */
  id?: string;
  what: string;
}

export interface Reconciliation {
  /** ISO instants of the period compared (from is absent when neither journal nor option gave one) */
  from?: string;
  matched: number;
  differences: Difference[];
  /** statement lines the operator made (refunds, adjustments): shown, not differences */
  corrections: StatementLine[];
  /** draw and top-up lines of the journal left out: another balance or another service */
  otherBalances: number;
  /** the base URLs of other services the journal's draw and top-up lines name (not compared here) */
  otherServices: string[];
}

const CORRECTIONS = new Set(['refund', 'credit', 'debit', 'topup_refund']);

/** Cents of a signed statement amount ("-0.03" -> 3), or null. */
const magnitude = (amount: unknown): number | null => (typeof amount === 'string' ? parseAmountCents(amount.replace(/^[+-]/, '')) : null);

/** The token hints of one balance: `hint` and every hint the journal's rotate lines chain to it. */
function hintsOf(entries: JournalEntry[], hint: string): Set<string> {
  const hints = new Set([hint]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const e of entries)
      if (e.kind === 'rotate' && typeof e.token_hint === 'string' && typeof e.new_token_hint === 'string' && hints.has(e.new_token_hint) !== hints.has(e.token_hint)) {
        hints.add(e.token_hint);
        hints.add(e.new_token_hint);
        grew = true;
      }
  }
  return hints;
}

export function reconcileJournal(text: string, statement: StatementLine[], o: ReconcileOptions): Reconciliation {
  const { entries, lines } = parseJournal(text);
  const hints = hintsOf(entries, o.tokenHint);
  const mine = (e: JournalEntry) => e.base_url === o.baseUrl && (e.token_hint === undefined || hints.has(e.token_hint as string));
  const result: Reconciliation = { matched: 0, differences: [], corrections: [], otherBalances: 0, otherServices: [] };
  const others = new Set<string>();

  // The journal's money lines of this balance, by draw or top-up id; failures of draws by quote.
  const byId = new Map<string, { line: number; e: JournalEntry }>();
  const failedQuotes = new Map<string, number>();
  let from = o.since;
  for (const [i, e] of entries.entries()) {
    const money = e.kind === 'draw' || e.kind === 'topup';
    if (!mine(e)) {
      if (money) result.otherBalances++;
      if (money && e.base_url !== o.baseUrl) others.add(String(e.base_url));
      continue;
    }
    const paidAt = Date.parse(String((e.receipt as { paid_at?: unknown } | undefined)?.paid_at ?? e.at));
    if (o.since !== undefined && paidAt < o.since) continue;
    if (o.since === undefined && (money || e.kind === 'pay'))
      for (const t of [Date.parse(e.at), paidAt]) if (Number.isFinite(t) && (from === undefined || t < from)) from = t;
    if (e.kind === 'failure' && e.action === 'draw' && e.charged !== false && typeof e.quote_id === 'string') failedQuotes.set(e.quote_id, lines[i]!);
    if (!money) continue;
    const id = String(e.kind === 'draw' ? e.draw_id : e.topup_id);
    const seen = byId.get(id);
    // Paying a quote again returns the same draw: a repeated line with the same amount is that replay.
    if (seen && seen.e.amount === e.amount) continue;
    if (seen) result.differences.push({ line: lines[i], id, what: `${e.kind} ${id} is in the journal twice with different amounts (line ${seen.line}: ${seen.e.amount} EUR, this line: ${e.amount} EUR)` });
    else byId.set(id, { line: lines[i]!, e });
  }
  result.otherServices = [...others];
  if (from !== undefined) result.from = new Date(from).toISOString();

  const inStatement = new Set<string>();
  for (const s of statement) {
    const at = Date.parse(s.at);
    if (from !== undefined && at < from) continue;
    if (CORRECTIONS.has(s.kind)) {
      result.corrections.push(s);
      continue;
    }
    if (s.kind !== 'draw' && s.kind !== 'topup') continue;
    inStatement.add(s.id);
    const j = byId.get(s.id);
    const amount = formatCents(magnitude(s.amount) ?? 0);
    if (!j) {
      const failed = s.kind === 'draw' && s.quote_id ? failedQuotes.get(s.quote_id) : undefined;
      result.differences.push({
        id: s.id,
        ...(failed ? { line: failed } : {}),
        what: failed
          ? `the statement's draw ${s.id} (${s.amount} EUR at ${s.at}, quote ${s.quote_id}) is in the journal only as a failure (line ${failed}): its answer was lost or its receipt did not verify`
          : `the statement's ${s.kind} ${s.id} (${s.amount} EUR at ${s.at}) is not in the journal`,
      });
      continue;
    }
    const problems: string[] = [];
    if (j.e.kind !== s.kind) problems.push(`it is a ${s.kind} in the statement, a ${j.e.kind} in the journal`);
    if (magnitude(j.e.amount) !== magnitude(s.amount)) problems.push(`the statement says ${s.amount} EUR, the journal ${j.e.amount} EUR`);
    if (s.kind === 'draw' && s.quote_id && j.e.quote_id !== s.quote_id) problems.push(`the statement names quote ${s.quote_id}, the journal ${String(j.e.quote_id)}`);
    if (problems.length) result.differences.push({ line: j.line, id: s.id, what: `${s.kind} ${s.id} (${amount} EUR): ${problems.join('; ')}` });
    else result.matched++;
  }
  for (const [id, j] of byId)
    if (!inStatement.has(id)) result.differences.push({ line: j.line, id, what: `${j.e.kind} ${id} of ${String(j.e.amount)} EUR is in the journal but not in the service's statement of this balance` });
  result.differences.sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
  return result;
}
