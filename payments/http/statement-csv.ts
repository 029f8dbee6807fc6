// The statement as CSV (GET /v1/lds/balance?format=csv): RFC 4180, and safe to open in a
// spreadsheet (OWASP CSV injection: text that starts like a formula is shown as text).
import type { BalanceView } from '../../contract/wire.ts';

const CSV_COLUMNS = ['at', 'kind', 'id', 'amount', 'currency', 'balance_after', 'quote_id', 'product_id', 'draw_id', 'topup_id', 'reason'] as const;

/** A plain decimal number such as `-0.47` or `12.00`: a spreadsheet reads it as a number, never as a formula. */
const CSV_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;
/** What a spreadsheet may take for the start of a formula (OWASP CSV injection). */
const CSV_FORMULA_START = /^[=+\-@\t\r]/;
/** Bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069): they can make a cell read as something else. */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

/**
 * One CSV field, safe to open in a spreadsheet: numbers as they are; any other text without bidi
 * controls and, when it starts like a formula, prefixed with `'` (shown as text, never evaluated);
 * then quoted per RFC 4180 when it holds a comma, quote or line break.
 */
export function csvCell(v: unknown): string {
  let t = v === undefined || v === null ? '' : String(v);
  if (!CSV_NUMBER.test(t)) {
    t = t.replace(BIDI_CONTROLS, '');
    if (CSV_FORMULA_START.test(t)) t = `'${t}`;
  }
  return /[",\r\n]/.test(t) ? `"${t.replaceAll('"', '""')}"` : t;
}

/** RFC 4180 CSV of a statement page: CRLF lines, fields quoted when they hold a comma, quote or line break, text cells neutralised (csvCell). */
export function statementCsv(view: BalanceView): string {
  const cell = csvCell;
  const rows = view.statement.map((l) => CSV_COLUMNS.map((c) => cell(c === 'currency' ? view.currency : (l as unknown as Record<string, unknown>)[c])).join(','));
  return [CSV_COLUMNS.join(','), ...rows].join('\r\n') + '\r\n';
}
