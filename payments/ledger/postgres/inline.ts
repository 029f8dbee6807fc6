// The ledger's statements as PostgreSQL's simple query protocol sends them: parameters written into
// the text as literals, and the server-side timeouts set inside the transaction (SET LOCAL), in the
// same message. Pure: no I/O (connections.ts sends the text).
//
// WHY NOT BOUND PARAMETERS AND PREPARED STATEMENTS. A pooler in transaction mode (PgBouncer's
// `pool_mode = transaction`, the mode most operators run) gives each transaction whichever server
// connection is free. Settings sent at connection start (statement_timeout as a startup parameter)
// are refused by PgBouncer's default configuration ("unsupported startup parameter"), and a session
// SET would stay on a server connection another client gets next. Named prepared statements live on
// one server connection: through the pooler they are "already exists" on one and "does not exist"
// on the next (PgBouncer before 1.21 has no max_prepared_statements; Debian 12 ships 1.18). What
// holds in every mode is what one transaction carries itself: `SET LOCAL statement_timeout = …;
// <statement>` in one Query message is one implicit transaction (PostgreSQL runs the statements of
// one simple Query as one transaction), on one server connection, and the setting ends with it.
// It is still one round trip per paid draw. The literals are written as PostgreSQL reads an
// untyped bound parameter: a quoted literal of unknown type, typed by its context or its cast.
import pg from 'pg';

export type Param = string | number | bigint | boolean | null | undefined;

/** One value as a quoted literal of unknown type (what a bound text parameter is to the server). */
export function literal(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  switch (typeof v) {
    case 'string':
      if (v.includes('\0')) throw new TypeError('a statement parameter holds a NUL character, which PostgreSQL text cannot');
      return pg.escapeLiteral(v);
    case 'number':
      if (!Number.isFinite(v)) throw new TypeError(`a statement parameter is ${v}`);
      return `'${v}'`;
    case 'bigint':
      return `'${v}'`;
    case 'boolean':
      return v ? "'true'" : "'false'";
    default:
      throw new TypeError(`a statement parameter of type ${typeof v} cannot be written as a literal`);
  }
}

/**
 * `sql` with every `$n` outside quotes and comments replaced by the literal of params[n-1]. Only
 * the ledger's own statements come here; dollar-quoted text ($$…$$) is refused rather than parsed.
 */
export function inlineParams(sql: string, params: readonly unknown[] | undefined): string {
  if (!params || params.length === 0) return sql;
  const { texts, refs } = template(sql);
  let out = texts[0]!;
  for (let k = 0; k < refs.length; k++) {
    const n = refs[k]!;
    if (n > params.length) throw new Error(`a ledger statement names $${n} but has ${params.length} parameter(s)`);
    out += literal(params[n - 1]) + texts[k + 1]!;
  }
  return out;
}

/** A statement cut at its parameters: texts[0] $refs[0] texts[1] … (each statement scanned once). */
interface Template {
  texts: string[];
  refs: number[];
}
/** The ledger has a few dozen statements; a bound keeps a bug from growing this without end. */
const templates = new Map<string, Template>();
const MAX_TEMPLATES = 500;

function template(sql: string): Template {
  let t = templates.get(sql);
  if (t) return t;
  t = scan(sql);
  if (templates.size >= MAX_TEMPLATES) templates.clear();
  templates.set(sql, t);
  return t;
}

function scan(sql: string): Template {
  const texts: string[] = [];
  const refs: number[] = [];
  let from = 0;
  for (let i = 0; i < sql.length; i++) {
    const ch = sql.charCodeAt(i);
    if (ch === 39 /* ' */ || ch === 34 /* " */) {
      const end = sql.indexOf(sql[i]!, i + 1);
      if (end < 0) throw new Error('unterminated quote in a ledger statement');
      // '' inside a string is a quote written twice: the scan resumes after it either way.
      i = end;
    } else if (ch === 45 /* - */ && sql.charCodeAt(i + 1) === 45) {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl;
    } else if (ch === 36 /* $ */) {
      let j = i + 1;
      while (j < sql.length && sql.charCodeAt(j) >= 48 && sql.charCodeAt(j) <= 57) j++;
      if (j === i + 1) throw new Error('dollar-quoted text in a ledger statement');
      const n = Number(sql.slice(i + 1, j));
      if (n < 1) throw new Error(`a ledger statement names $${n}`);
      texts.push(sql.slice(from, i));
      refs.push(n);
      from = j;
      i = j - 1;
    }
  }
  texts.push(sql.slice(from));
  return { texts, refs };
}

/** The timeouts a transaction sets for itself (SET LOCAL: they end with it, on whichever server connection ran it). */
export function localTimeouts(statementTimeoutMs: number, idleInTransactionMs?: number): string {
  let s = statementTimeoutMs > 0 ? `SET LOCAL statement_timeout = ${Math.floor(statementTimeoutMs)}; ` : '';
  if (idleInTransactionMs && idleInTransactionMs > 0) s += `SET LOCAL idle_in_transaction_session_timeout = ${Math.floor(idleInTransactionMs)}; `;
  return s;
}

/** One statement as its own transaction: its statement timeout set inside it, one Query message. */
export function oneStatementText(sql: string, params: readonly unknown[] | undefined, statementTimeoutMs: number): string {
  return localTimeouts(statementTimeoutMs) + inlineParams(sql, params);
}

/** The answer of the last statement of a Query message (node-postgres answers a list when there were several). */
export function lastResult<R extends pg.QueryResultRow>(r: pg.QueryResult<R> | pg.QueryResult<R>[]): pg.QueryResult<R> {
  return Array.isArray(r) ? r[r.length - 1]! : r;
}
