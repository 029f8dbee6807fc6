// The invariants every ledger change keeps, asserted on the change itself just before it is
// committed (the LevelDB backend; PostgreSQL keeps the same ones with CHECK and UNIQUE constraints
// and a debit statement that writes both entry lines from one amount). A violation is a bug in the
// code that built the change, never bad input: it throws, nothing of the change is written, and the
// request fails loudly instead of storing money that does not add up.
//
// Invariants (of one change, which is one atomic batch):
//   - every balance it writes is a safe integer number of cents, >= 0;
//   - every entry is a safe integer, and the entries of each transaction sum to zero per currency;
//   - a draw record is written together with the claim of its quote, naming that draw: the quote
//     claim is what makes a second debit of the same quote impossible (one debit per quote).
import { PREFIX, type BalanceRecord, type ClaimRecord, type DrawRecord, type EntryRecord } from './records.ts';

export class LedgerInvariantError extends Error {
  constructor(message: string) {
    super(`ledger invariant broken (a bug; nothing was written): ${message}`);
    this.name = 'LedgerInvariantError';
  }
}

/** Throws LedgerInvariantError when the change (the puts of one batch, by logical key) breaks an invariant. */
export function assertChange(puts: Iterable<{ key: string; value: unknown }>): void {
  const sums = new Map<string, number>();
  const draws: DrawRecord[] = [];
  const quoteClaims = new Map<string, ClaimRecord>();
  for (const { key, value } of puts) {
    if (key.startsWith(PREFIX.balance)) {
      const cents = (value as BalanceRecord).cents;
      if (!Number.isSafeInteger(cents) || cents < 0) throw new LedgerInvariantError(`balance ${key} would hold ${cents} cents`);
    } else if (key.startsWith(PREFIX.entry)) {
      const e = value as EntryRecord;
      if (!Number.isSafeInteger(e.cents)) throw new LedgerInvariantError(`entry ${key} of ${e.txn} has ${e.cents} cents`);
      const k = `${e.txn} ${e.currency}`;
      sums.set(k, (sums.get(k) ?? 0) + e.cents);
    } else if (key.startsWith(PREFIX.draw)) draws.push(value as DrawRecord);
    else if (key.startsWith(PREFIX.quote)) quoteClaims.set(key.slice(PREFIX.quote.length), value as ClaimRecord);
  }
  for (const [txn, sum] of sums) if (sum !== 0) throw new LedgerInvariantError(`the entries of ${txn} sum to ${sum} cents, not 0`);
  for (const d of draws) {
    if (quoteClaims.get(d.quote_id)?.draw_id !== d.draw_id) throw new LedgerInvariantError(`draw ${d.draw_id} is written without the claim of its quote`);
  }
}
