// A real PostgreSQL for the tests. LDS_TEST_PG_URL (an admin URL, e.g.
// postgres://postgres:pw@127.0.0.1:5432/postgres) uses an existing server; otherwise a throwaway
// server is started from the npm package's binaries (test/helpers/pg-start.ts: as root it runs as
// the `postgres` system user, from a reachable copy of the binaries when the clone is private).
// test/run.ts starts one for the whole run and hands its URL to every test file; a test file run
// on its own starts its own.
//
// Every test gets a database of its own, cloned (CREATE DATABASE … TEMPLATE) from a template that
// holds the ledger schema already migrated: a clone is a file copy on the server, where migrating a
// new database is a dozen DDL transactions. The template's name carries a hash of the migrations'
// source, so a changed schema makes a new template and an old one is never trusted; it is made once
// per server by whichever test asks first, under an advisory lock, and left on the server for the
// next run. `freshDatabase({ empty: true })` gives a database with no schema at all.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
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

/** The migrated template's name: changes whenever the migrations' source does (read on first use). */
let templateName: string | undefined;
const template = () =>
  (templateName ??= `lds_tmpl_${createHash('sha256')
    .update(readFileSync(new URL('../../payments/ledger/postgres/migrations.ts', import.meta.url)))
    .digest('hex')
    .slice(0, 12)}`);
/** Per server URL: the template exists (this process checked or made it). */
const templates = new Map<string, Promise<void>>();

function withDatabase(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

/**
 * Makes the template on this server unless it is there: created under another name, migrated by the
 * service's own migrations, marked as a template, then renamed into place, so no test ever clones a
 * half-migrated template (a process killed half-way leaves only a `…_wip` database, dropped by the next).
 */
async function ensureTemplate(adminUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    const name = template();
    await admin.query('SELECT pg_advisory_lock(hashtext($1))', [name]);
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (exists.rowCount) return;
    const wip = `${name}_wip`;
    await admin.query(`DROP DATABASE IF EXISTS ${wip}`);
    await admin.query(`CREATE DATABASE ${wip}`);
    const { migrate } = await import('../../payments/ledger/postgres/migrations.ts');
    const pool = new pg.Pool({ connectionString: withDatabase(adminUrl, wip), max: 1 });
    try {
      await migrate(pool);
    } finally {
      await pool.end();
    }
    await admin.query(`ALTER DATABASE ${wip} RENAME TO ${name}`);
    await admin.query(`ALTER DATABASE ${name} WITH is_template true`);
  } finally {
    await admin.end(); // releases the advisory lock too
  }
}

/**
 * A new database on the test server; its URL. It holds the ledger schema at the current version
 * and no records (what the service would make of an empty database at start), unless `empty`.
 */
export async function freshDatabase(server?: PgServer, opts: { empty?: boolean } = {}): Promise<string> {
  const srv = server ?? (await testPgServer());
  if (!opts.empty) {
    let made = templates.get(srv.url);
    if (!made) {
      made = ensureTemplate(srv.url);
      templates.set(srv.url, made);
      made.catch(() => templates.delete(srv.url));
    }
    await made;
  }
  const name = `lds_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: srv.url });
  await admin.connect();
  try {
    await admin.query(opts.empty ? `CREATE DATABASE ${name}` : `CREATE DATABASE ${name} TEMPLATE ${template()}`);
  } finally {
    await admin.end();
  }
  return withDatabase(srv.url, name);
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
