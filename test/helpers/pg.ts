// A real PostgreSQL for the tests. LDS_TEST_PG_URL (an admin URL, e.g.
// postgres://postgres:pw@127.0.0.1:5432/postgres) uses an existing server; otherwise a throwaway
// server is started from the npm package's binaries (test/helpers/pg-start.ts: as root it runs as
// the `postgres` system user, from a reachable copy of the binaries when the clone is private).
// test/run.ts starts one for the whole run and hands its URL to every test file; a test file run
// on its own starts its own. Every test gets a fresh database of its own.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { startEmbeddedPostgres, type PgServer } from './pg-start.ts';

export { PgStartError, startEmbeddedPostgres, type PgServer } from './pg-start.ts';

let shared: Promise<PgServer> | null = null;

/** The server the tests use: LDS_TEST_PG_URL, or one started (once per process) on first use. */
export function testPgServer(): Promise<PgServer> {
  const given = process.env.LDS_TEST_PG_URL;
  if (given) return Promise.resolve({ url: given, port: Number(new URL(given).port || 5432), stop: async () => {} });
  shared ??= startEmbeddedPostgres(); // stopped when this process exits
  return shared;
}

/** A new, empty database on the test server; its URL. */
export async function freshDatabase(server?: PgServer): Promise<string> {
  const srv = server ?? (await testPgServer());
  const name = `lds_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: srv.url });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(srv.url);
  u.pathname = `/${name}`;
  return u.toString();
}

/** Runs SQL against a database (tests that look at or tamper with the tables directly). */
export async function sql<T extends pg.QueryResultRow = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query<T>(text, params)).rows;
  } finally {
    await c.end();
  }
}
