// @ledger-backends: postgres  (test/run.ts provides the PostgreSQL server)
// The PostgreSQL ledger's connection layer (payments/ledger/postgres/connections.ts, issue 33)
// against a real server, one rule per test: the host list is walked in order, a name's every
// address tried, a server that is not what target_session_attrs asks for skipped and named; every
// call ends within its bound, a statement whose answer did not come has its outcome unknown and its
// connection destroyed; errors that are not the database's pass through untouched.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Connections, type ConnectionsOptions } from '../payments/ledger/postgres/connections.ts';
import { LedgerUnavailableError } from '../payments/ledger/ledger.ts';
import { freePort } from './helpers/http.ts';
import { freshDatabase } from './helpers/pg.ts';

let url: URL;
const open: Connections[] = [];

test.before(async () => {
  url = new URL(await freshDatabase());
});

test.after(async () => {
  await Promise.all(open.map((c) => c.close()));
});

/** The test database's URL with another host list. */
function withHosts(hosts: string, query = ''): string {
  return `postgres://${url.username}:${url.password}@${hosts}${url.pathname}${query}`;
}

function connections(o: Partial<ConnectionsOptions> & { url: string }): Connections {
  const c = new Connections({ defaultTarget: 'read-write', poolSize: 2, queryTimeoutMs: 3000, statementTimeoutMs: 2000, location: 'test', ...o });
  open.push(c);
  return c;
}

async function failure(p: Promise<unknown>): Promise<LedgerUnavailableError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof LedgerUnavailableError) return err;
    throw err;
  }
  throw new Error('expected a LedgerUnavailableError');
}

test('the host list is walked in order: a server that refuses connections is skipped', async () => {
  const dead = await freePort();
  const db = connections({ url: withHosts(`127.0.0.1:${dead},127.0.0.1:${url.port}`) });
  const r = await db.call((query) => query<{ one: number }>('SELECT 1 AS one'));
  assert.is(r.rows[0]!.one, 1);
  assert.equal(db.inUse(), { server: `127.0.0.1:${url.port}`, writable: true, standby: false });
});

test('a name with several addresses is tried address by address', async () => {
  // 127.0.0.2 is loopback too, but the server listens on 127.0.0.1 only: refused, then the next.
  const db = connections({ url: withHosts(`db.test:${url.port}`), resolve: async () => ['127.0.0.2', '127.0.0.1'] });
  await db.call((query) => query('SELECT 1'));
  assert.is(db.inUse()?.server, `db.test:${url.port} (127.0.0.1)`);
});

test('a server that is not what target_session_attrs asks for is skipped, and the refusal names why', async () => {
  const db = connections({ url: withHosts(`127.0.0.1:${url.port}`, '?target_session_attrs=standby') });
  const e = await failure(db.call((query) => query('SELECT 1')));
  assert.is(e.status, 503);
  assert.is(e.outcome, 'none');
  assert.match(e.reason, `no server is standby: 127.0.0.1:${url.port} is a writable primary, not standby`);
  assert.is(db.inUse(), null);
});

test('a statement that outlives the bound: 503 within it, outcome unknown for a change, the connection destroyed', async () => {
  const db = connections({ url: withHosts(`127.0.0.1:${url.port}`), queryTimeoutMs: 400, statementTimeoutMs: 5000 });
  await db.call((query) => query('SELECT 1')); // connected
  const t0 = Date.now();
  const e = await failure(db.call((query) => query('SELECT pg_sleep(3)', [], { commits: true })));
  const ms = Date.now() - t0;
  assert.ok(ms < 1400, `answered after ${ms} ms (bound 400 ms)`);
  assert.is(e.outcome, 'unknown');
  assert.match(e.detail ?? '', /may or may not have been made/);
  assert.is(db.stats.unknownOutcomes, 1);
  // A read that times out changed nothing.
  const read = await failure(db.call((query) => query('SELECT pg_sleep(3)')));
  assert.is(read.outcome, 'none');
  // The server was dropped and is found again: the next call works on a fresh connection.
  const r = await db.call((query) => query<{ pid: number }>('SELECT pg_backend_pid() AS pid'));
  assert.ok(r.rows[0]!.pid > 0);
});

test('the server ends a slow statement first (statement_timeout): a known outcome, nothing changed', async () => {
  const db = connections({ url: withHosts(`127.0.0.1:${url.port}`), queryTimeoutMs: 3000, statementTimeoutMs: 200 });
  const e = await failure(db.call((query) => query('SELECT pg_sleep(2)', [], { commits: true })));
  assert.is(e.outcome, 'none', 'the server answered: rolled back');
  assert.match(e.reason, /57014/);
});

test('a read-only server (25006) is a 503, never a bug: the server is dropped, the next call looks again', async () => {
  const db = connections({ url: withHosts(`127.0.0.1:${url.port}`) });
  await db.call((query) => query('CREATE TABLE IF NOT EXISTS conn_t (n int)'));
  const e = await failure(
    db.call((_query, transaction) =>
      transaction(async (query) => {
        await query('SET TRANSACTION READ ONLY'); // what a standby or default_transaction_read_only imposes
        await query('INSERT INTO conn_t VALUES (1)');
      }),
    ),
  );
  assert.is(e.status, 503);
  assert.is(e.outcome, 'none');
  assert.match(e.reason, /25006/);
  assert.is(db.inUse(), null, 'dropped');
  await db.call((query) => query('INSERT INTO conn_t VALUES (2)', [], { commits: true }));
});

test("errors that are not the database's pass through a transaction untouched", async () => {
  const db = connections({ url: withHosts(`127.0.0.1:${url.port}`) });
  class Mistake extends Error {}
  await db
    .call((_query, transaction) =>
      transaction(async (query) => {
        await query('SELECT 1');
        throw new Mistake('a bug in the body');
      }),
    )
    .then(
      () => assert.unreachable(),
      (e: Error) => assert.instance(e, Mistake),
    );
  assert.is(db.stats.unavailable, 0);
  assert.ok(db.inUse(), 'the server is still in use');
});

test.run();
