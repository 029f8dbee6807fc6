// @tier: quick
// The ledger's statements as one simple-protocol message (payments/ledger/postgres/inline.ts): the
// parameters written as literals exactly as PostgreSQL reads an untyped bound parameter, nothing in
// quotes or comments touched, and what cannot be written safely refused rather than guessed.
// (test/pg-pgbouncer.test.ts runs them on a real server, through PgBouncer.)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { inlineParams, literal, localTimeouts, oneStatementText } from '../payments/ledger/postgres/inline.ts';

test('values become quoted literals of unknown type; NULL stays NULL', () => {
  assert.is(literal('drw_1'), "'drw_1'");
  assert.is(literal("it's"), "'it''s'");
  assert.is(literal('a\\b'), " E'a\\\\b'"); // node-postgres' escapeLiteral: a backslash only in E'' form
  assert.is(literal(42), "'42'");
  assert.is(literal(10n), "'10'");
  assert.is(literal(true), "'true'");
  assert.is(literal(null), 'NULL');
  assert.is(literal(undefined), 'NULL');
});

test('what a literal cannot carry is refused: NUL, non-finite numbers, objects', () => {
  assert.throws(() => literal('a\0b'), /NUL/);
  assert.throws(() => literal(Number.NaN), /NaN/);
  assert.throws(() => literal({}), /object/);
});

test('$n outside quotes and comments is replaced, $10 is not $1 followed by 0, quoted and commented text is left alone', () => {
  const params = ['a', "o'b", 3, 4, 5, 6, 7, 8, 9, null];
  assert.is(inlineParams("SELECT $1, '$2 it''s', $10 -- $3\n, $2::bigint", params), "SELECT 'a', '$2 it''s', NULL -- $3\n, 'o''b'::bigint");
  assert.is(inlineParams('SELECT "$1" FROM t WHERE a = $1', ['x']), `SELECT "$1" FROM t WHERE a = 'x'`);
  // the same statement again (from the cache) with other values
  assert.is(inlineParams('SELECT "$1" FROM t WHERE a = $1', ['y']), `SELECT "$1" FROM t WHERE a = 'y'`);
  assert.is(inlineParams('SELECT 1', []), 'SELECT 1');
});

test('a statement naming a parameter it was not given, or holding dollar-quoted text, is refused', () => {
  assert.throws(() => inlineParams('SELECT $3', [1]), /names \$3 but has 1/);
  assert.throws(() => inlineParams('SELECT $$x$$', [1]), /dollar-quoted/);
});

test('each transaction sets its own timeouts first, in the same message', () => {
  assert.is(localTimeouts(4000), 'SET LOCAL statement_timeout = 4000; ');
  assert.is(localTimeouts(4000, 5000), 'SET LOCAL statement_timeout = 4000; SET LOCAL idle_in_transaction_session_timeout = 5000; ');
  assert.is(localTimeouts(0), '');
  assert.is(oneStatementText('SELECT $1', ['a'], 800), "SET LOCAL statement_timeout = 800; SELECT 'a'");
});

test.run();
