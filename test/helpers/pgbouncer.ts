// Debian's PgBouncer in front of a test PostgreSQL, as an operator runs it: the configuration is
// Debian's own /etc/pgbouncer/pgbouncer.ini, with only the database entry added (its pool_mode
// there: session or transaction). What a process of our own cannot use as packaged is moved, not
// changed: the port (a free one on loopback, not 6432), the log, pid and Unix socket (a folder of
// the test's, not /var/...) and the auth_file (ours, holding the test server's user; Debian ships
// an empty one). Every setting about behaviour (auth_type md5, default pool sizes,
// ignore_startup_parameters unset, no max_prepared_statements in 1.18, ...) is Debian's default.
// PgBouncer refuses to run as root: as root it runs as the `postgres` system user.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { freePort } from './http.ts';
import { runAs } from './pg-start.ts';
import { reachableDir } from './pg-cluster.ts';
import type { Program } from './programs.ts';

export const PGBOUNCER: Program = { name: 'PgBouncer', names: ['pgbouncer'], dirs: ['/usr/sbin'], install: 'apt-get update && apt-get install -y pgbouncer' };
export const DEBIAN_INI = '/etc/pgbouncer/pgbouncer.ini';

export type PoolMode = 'session' | 'transaction';

export interface PgBouncer {
  port: number;
  mode: PoolMode;
  /** The database entry added to Debian's file (what docs/operations.md tells an operator to add). */
  databaseEntry: string;
  /** `url` (a postgres:// URL of the server behind it) with its host and port replaced by the pooler's. */
  via(url: string): string;
  /** PgBouncer's own log (its errors name what it refused). */
  log(): string;
  stop(): Promise<void>;
}

/** The entry docs/operations.md ("Through PgBouncer") tells an operator to add; the test reads it from there. */
export const DOCUMENTED_ENTRY = 'lds = host=db1.internal port=5432 pool_mode=transaction';

/**
 * The documented entry with this test's names: every database (`*`, the tests make one per test)
 * on the test server, in `mode`. Throws when the entry is not of the documented shape.
 */
export function entryFor(documented: string, o: { host: string; port: string; mode: PoolMode }): string {
  const m = /^(\w+) = host=\S+ port=\d+ pool_mode=(session|transaction)$/.exec(documented.trim());
  if (!m) throw new Error(`not a PgBouncer database entry of the documented shape: ${documented}`);
  return `* = host=${o.host} port=${o.port} pool_mode=${o.mode}`;
}

/** Debian's file with the database entry added and the paths moved (see the file comment). */
export function bouncerIni(debianIni: string, o: { databaseEntry: string; port: number; dir: string }): string {
  const moved: Record<string, string> = {
    listen_port: String(o.port),
    logfile: join(o.dir, 'pgbouncer.log'),
    pidfile: join(o.dir, 'pgbouncer.pid'),
    unix_socket_dir: o.dir,
    auth_file: join(o.dir, 'userlist.txt'),
  };
  const lines = debianIni.split('\n').map((line) => {
    const m = /^(\w+)\s*=/.exec(line);
    return m && m[1]! in moved ? `${m[1]} = ${moved[m[1]!]}` : line;
  });
  const at = lines.findIndex((l) => l.trim() === '[databases]');
  if (at < 0) throw new Error(`${DEBIAN_INI} has no [databases] section`);
  lines.splice(at + 1, 0, o.databaseEntry);
  return lines.join('\n');
}

/**
 * Starts PgBouncer in `mode` in front of the server of `serverUrl` (its user and password go to the
 * auth_file). Every database name is passed through (`*`), as one `lds = ...` line would pass one.
 */
export async function startPgBouncer(serverUrl: string, mode: PoolMode, documented = DOCUMENTED_ENTRY): Promise<PgBouncer> {
  const server = new URL(serverUrl);
  const dir = reachableDir('pgbouncer-'); // the postgres user (as root) must reach it
  const who = runAs();
  const port = await freePort();
  const databaseEntry = entryFor(documented, { host: server.hostname, port: server.port || '5432', mode });
  writeFileSync(join(dir, 'pgbouncer.ini'), bouncerIni(readFileSync(DEBIAN_INI, 'utf8'), { databaseEntry, port, dir }));
  writeFileSync(join(dir, 'userlist.txt'), `"${decodeURIComponent(server.username)}" "${decodeURIComponent(server.password)}"\n`, { mode: 0o600 });
  if (who.uid !== undefined) for (const f of ['', 'pgbouncer.ini', 'userlist.txt']) chownSync(join(dir, f), who.uid, who.gid ?? who.uid);
  const exe = spawnSync('sh', ['-c', 'command -v pgbouncer || ls /usr/sbin/pgbouncer'], { encoding: 'utf8' }).stdout.trim().split('\n')[0]!;
  const child: ChildProcess = spawn(exe, [join(dir, 'pgbouncer.ini')], { ...who, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const log = () => {
    try {
      return readFileSync(join(dir, 'pgbouncer.log'), 'utf8');
    } catch {
      return '';
    }
  };
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  process.once('exit', () => child.kill('SIGKILL'));
  // Ready when the port accepts connections.
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`pgbouncer exited ${child.exitCode}: ${stderr.trim() || log().trim().split('\n').slice(-3).join(' / ')}`);
    if (await accepts(port)) break;
    if (Date.now() > deadline) throw new Error(`pgbouncer did not listen on ${port} within 20 s: ${log().trim().split('\n').slice(-3).join(' / ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    port,
    mode,
    databaseEntry,
    via(url) {
      const u = new URL(url);
      u.hostname = '127.0.0.1';
      u.port = String(port);
      return u.toString();
    },
    log,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGINT');
        await exited;
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
}
