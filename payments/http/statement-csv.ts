// The statement as CSV (GET /v1/lds/balance?format=csv): RFC 4180, and safe to open in a
// spreadsheet (OWASP CSV injection: text that starts like a formula is shown as text).
import type { BalanceView } from '../../contract/wire.ts';

const CSV_COLUMNS = ['at', 'kind', 'id', 'amount', 'currency', 'balance_after', 'quote_id', 'product_id', 'draw_id', 'topup_id', 'reason'] as const;

/** A plain decimal number such as `-0.47` or `12.00`: a spreadsheet reads it as a number, never as a formula. */
const CSV_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;
/**
 * What never shows in a cell and could hide what it starts with: every format character (Unicode
 * Cf: the bidi embeddings, overrides and isolates, LRM, RLM, ALM, the BOM, zero-width characters)
 * and every control character but tab and the line breaks (Cc: NUL among them). Removed.
 */
const INVISIBLE = /[\p{Cf}\0-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]/gu;
/**
 * How a formula starts (OWASP CSV injection: = + - @). A spreadsheet skips white space before it
 * and may read a full-width ＝ as =, so the test is on the text without its leading white space, in
 * NFKC form.
 */
const FORMULA_START = /^[=+\-@]/;
/** A cell starting with a control character (tab, CR or LF: OWASP lists them as formula starts too). */
const CONTROL_START = /^\p{Cc}/u;

/**
 * One CSV field, safe to open in a spreadsheet: numbers as they are; any other text without
 * invisible characters and, when it could start a formula (its first visible character is one of
 * = + - @, or it starts with a control character), prefixed with `'` (shown as text, never
 * evaluated); then quoted per RFC 4180 when it holds a comma, quote or line break.
 */
export function csvCell(v: unknown): string {
  let t = v === undefined || v === null ? '' : String(v);
  if (!CSV_NUMBER.test(t)) {
    t = t.replace(INVISIBLE, '');
    if (CONTROL_START.test(t) || FORMULA_START.test(t.trimStart().normalize('NFKC'))) t = `'${t}`;
  }
  return /[",\r\n]/.test(t) ? `"${t.replaceAll('"', '""')}"` : t;
}

/** RFC 4180 CSV of a statement page: CRLF lines, fields quoted when they hold a comma, quote or line break, text cells neutralised (csvCell). */
export function statementCsv(view: BalanceView): string {
  const cell = csvCell;
  const rows = view.statement.map((l) => CSV_COLUMNS.map((c) => cell(c === 'currency' ? view.currency : (l as unknown as Record<string, unknown>)[c])).join(','));
  return [CSV_COLUMNS.join(','), ...rows].join('\r\n') + '\r\n';
}
