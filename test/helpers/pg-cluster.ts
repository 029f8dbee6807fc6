// A real PostgreSQL cluster with streaming replication, for the high-availability tests: a primary
// and standbys made by `pg_basebackup -R`, each server its own postmaster run as the `postgres` user
// (as root; otherwise as the invoking user) on a free port of 127.0.0.1, from Debian's PostgreSQL
// (/usr/lib/postgresql/<major>/bin, `apt-get install postgresql`; test/helpers/programs.ts).
// Never the system service, never its data.
//
// What a test can do to it:
//   node.kill9()            SIGKILL of the server's whole process group (the machine died)
//   node.promote()          `pg_ctl promote`, resolved once the node takes writes
//   node.stop() / start()   fast shutdown, start again on the same data and port
//   node.replication        the standby's link to the primary runs through a TCP proxy
//                           (test/helpers/tcp-proxy.ts): pause() stalls the standby (it receives and
//                           confirms nothing, so a synchronous commit waits), resume() lets it catch up
//   cluster.setSynchronous  synchronous_standby_names on a node (reloaded, no restart)
//   cluster.setReadOnly     default_transaction_read_only on a node (reloaded)
//   cluster.failover()      the runbook: the writer killed, a standby's synchronous_standby_names
//                           cleared, the standby promoted; cluster.writer() follows it
//   cluster.rebuildStandby  a dead node made a standby of the new writer (a fresh base backup)
//   cluster.streaming()     resolves once every running standby streams from the writer again
//   cluster.url(db)         the libpq multi-host URL of every node, as a deployment names them
// Synchronous clusters set synchronous_standby_names = 'ANY 1 (<the other nodes>)' on the primary
// before the base backups, so every standby inherits it (as from a shared postgresql.conf).
//
// Speed: initdb takes seconds on a busy machine; a copy of its output a fraction of one. The first
// cluster of a run makes one template data folder per PostgreSQL version (under the OS temp folder,
// atomically, reused by every test file of the run and removed by nobody: it is a cache); each
// primary starts from a copy of it. A standby is a real base backup of its primary.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { freePort } from './http.ts';
import { locate, POSTGRES_SERVER } from './programs.ts';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.ts';
import { keptAlive, runAs, runToEnd, type RunAs } from './pg-start.ts';

export const PG_PASSWORD = 'lds-test';

/** The folder of the PostgreSQL server programs (test/helpers/programs.ts POSTGRES_SERVER), or null. */
export function pgBinDir(): string | null {
  const found = locate(POSTGRES_SERVER);
  return 'path' in found ? dirname(found.path) : null;
}

/** Runs a server program as `who` (LC_MESSAGES=C: the messages the helpers read are English). */
const run = (cmd: string, args: string[], who: RunAs, env: NodeJS.ProcessEnv = {}) => runToEnd(cmd, args, who, { ...process.env, LC_MESSAGES: 'C', ...env });

/** A folder the server user can reach: 0755, under <root>/lds-pg (root: the temp folder). */
export function reachableDir(prefix: string, root = tmpdir()): string {
  const base = join(root, 'lds-pg');
  mkdirSync(base, { recursive: true });
  if (statSync(base).uid === process.getuid?.()) chmodSync(base, 0o755);
  const dir = mkdtempSync(join(base, prefix));
  chmodSync(dir, 0o755);
  return dir;
}

function own(path: string, who: RunAs): void {
  if (who.uid !== undefined) chownSync(path, who.uid, who.gid ?? who.uid);
}

/** The initdb output every primary of this PostgreSQL version starts from (made once, atomically). */
async function template(bin: string, who: RunAs): Promise<string> {
  const version = spawnSync(join(bin, 'postgres'), ['--version'], { encoding: 'utf8' }).stdout.trim().replace(/\W+/g, '_');
  // In the run's folder (test/run.ts), which every file of the run sees; each file's TMPDIR is its own.
  const root = process.env.LDS_TEST_RUN_DIR ?? tmpdir();
  const target = join(root, 'lds-pg', `template-${version}-${who.uid ?? process.getuid?.()}`);
  if (existsSync(join(target, 'PG_VERSION'))) return target;
  const dir = reachableDir('template-tmp-', root);
  const data = join(dir, 'data');
  mkdirSync(data, { mode: 0o700 });
  own(data, who);
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, `${PG_PASSWORD}\n`, { mode: 0o600 });
  own(pwfile, who);
  try {
    await run(join(bin, 'initdb'), [`--pgdata=${data}`, '--auth=password', '--username=postgres', `--pwfile=${pwfile}`, '--lc-messages=C', '--locale=C', '--encoding=UTF8'], who);
    try {
      renameSync(data, target);
    } catch (err) {
      if (!existsSync(join(target, 'PG_VERSION'))) throw err; // another test file made it at the same moment
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return target;
}

export interface PgNode {
  /** n1, n2, …: also the node's cluster_name, which its WAL receiver gives the primary as application_name */
  readonly name: string;
  readonly port: number;
  readonly dataDir: string;
  /** the admin URL of this node alone (database `postgres`) */
  readonly url: string;
  /** standbys: the TCP proxy their replication connection goes through */
  readonly replication: TcpProxy | null;
  running(): boolean;
  start(): Promise<void>;
  stop(): Promise<void>;
  kill9(): Promise<void>;
  promote(): Promise<void>;
  sql<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, params?: unknown[], database?: string): Promise<T[]>;
  /** Whether the server is a standby (in recovery). */
  inRecovery(): Promise<boolean>;
}

export interface PgCluster {
  /** the node that was primary at start */
  primary: PgNode;
  /** the nodes that were standbys at start */
  standbys: PgNode[];
  nodes: PgNode[];
  /** the node that takes writes now (after failover(), the promoted one) */
  writer(): PgNode;
  /** libpq multi-host URL of every node (in order), database `database`, with target_session_attrs */
  url(database: string, targetSessionAttrs?: string): string;
  /** A new, empty database on the writer (replicated to every standby); its name. */
  createDatabase(): Promise<string>;
  /** synchronous_standby_names on a node (default the writer; '' = asynchronous), reloaded. */
  setSynchronous(names: string, on?: PgNode): Promise<void>;
  /** default_transaction_read_only on a node (default the writer), reloaded. */
  setReadOnly(readOnly: boolean, on?: PgNode): Promise<void>;
  /** Resolves once every running standby has replayed everything the writer has written. */
  caughtUp(): Promise<void>;
  /** Resolves once every running standby streams from the writer (a synchronous commit can be confirmed). */
  streaming(): Promise<void>;
  /**
   * The runbook's failover (docs/operations.md): the writer killed (SIGKILL of its process group),
   * the first running standby's synchronous_standby_names cleared (it has no standby of its own
   * yet; left set, its commits would wait for one forever), then promoted. Resolves with it, writable.
   */
  failover(): Promise<PgNode>;
  /** A stopped node made a standby of the writer again: a fresh base backup, the same port; synchronous again when the cluster was. */
  rebuildStandby(node: PgNode): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterOptions {
  /** how many standbys (default 1) */
  standbys?: number;
  /** true: synchronous_standby_names 'ANY 1 (<every standby>)' on the writer; false: asynchronous */
  synchronous?: boolean;
  /** more server settings of every node (e.g. ssl, ssl_cert_file, ssl_key_file: test/pg-tls.test.ts) */
  settings?: Record<string, string>;
}

const WAIT_MS = 60_000;
// wal_retrieve_retry_interval: a standby whose primary restarted reconnects within 200 ms, not 5 s.
const SERVER_SETTINGS = ['-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=200', '-c', 'wal_keep_size=256MB', '-c', 'log_min_messages=warning', '-c', 'unix_socket_directories=', '-c', 'wal_retrieve_retry_interval=200ms'];

export async function startPgCluster(o: ClusterOptions = {}): Promise<PgCluster> {
  const bin = pgBinDir();
  if (!bin) throw new Error(`PostgreSQL server programs not found (${POSTGRES_SERVER.install})`);
  const who = runAs();
  const tpl = await template(bin, who);
  const root = reachableDir('cluster-');
  own(root, who); // pg_basebackup (run as the server user) creates the standbys' folders in it
  const nodes: Node[] = [];
  let writer: Node;
  const standbyNames = Array.from({ length: o.standbys ?? 1 }, (_, i) => `n${i + 2}`);
  const settings = [...SERVER_SETTINGS, ...Object.entries(o.settings ?? {}).flatMap(([k, v]) => ['-c', `${k}=${v}`])];
  /** Synchronous: any one of the other nodes confirms a commit. */
  const syncNames = () => `ANY 1 (${['n1', ...standbyNames].filter((n) => n !== writer.name).join(', ')})`;

  /** A base backup of the writer, taken through the proxy the standby's replication then runs through. */
  const baseBackup = async (name: string, data: string): Promise<TcpProxy> => {
    const link = await startTcpProxy(writer.port);
    await run(join(bin, 'pg_basebackup'), ['-h', '127.0.0.1', '-p', String(link.port), '-U', 'postgres', '-D', data, '-R', '-X', 'stream', '-c', 'fast'], who, { PGPASSWORD: PG_PASSWORD });
    return link;
  };

  // The primary: a copy of the template (cp -a keeps the owner, the server user, and initdb's modes).
  const primary = new Node('n1', await freePort(), join(root, 'n1'), bin, who, settings);
  await run('cp', ['-a', tpl, primary.dataDir], {});
  nodes.push(primary);
  writer = primary;
  // Never outlive this process, whatever happens from here on.
  process.once('exit', () => {
    for (const n of nodes) n.killNow();
    try {
      rmSync(root, { recursive: true, force: true });
    } catch {
      // best effort
    }
  });
  try {
    await primary.start();
    // Set before the base backups, so every standby inherits it, as from a postgresql.conf every
    // server shares: the promotion runbook has to deal with it (failover() below).
    if (o.synchronous) await setting(primary, 'synchronous_standby_names', syncNames());
    for (const name of standbyNames) {
      const standby = new Node(name, await freePort(), join(root, name), bin, who, settings);
      nodes.push(standby);
      standby.replication = await baseBackup(standby.name, standby.dataDir);
      await standby.start();
    }
  } catch (err) {
    // A cluster that did not come up leaves no server running.
    await Promise.all(nodes.map((n) => n.kill9()));
    await Promise.all(nodes.map((n) => n.replication?.close()));
    rmSync(root, { recursive: true, force: true });
    throw err;
  }

  const cluster: PgCluster = {
    primary,
    standbys: nodes.slice(1),
    nodes,
    writer: () => writer,
    url: (database, attrs = 'read-write') => `postgres://postgres:${PG_PASSWORD}@${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}/${database}${attrs ? `?target_session_attrs=${attrs}` : ''}`,
    async createDatabase() {
      const name = `lds_ha_${Math.random().toString(36).slice(2, 10)}`;
      await writer.sql(`CREATE DATABASE ${name}`);
      return name;
    },
    setSynchronous: (names, on = writer) => setting(on as Node, 'synchronous_standby_names', names),
    setReadOnly: (readOnly, on = writer) => setting(on as Node, 'default_transaction_read_only', readOnly ? 'on' : 'off'),
    async streaming() {
      const standbys = nodes.filter((n) => n !== writer && n.running()).length;
      await until(async () => Number((await writer.sql<{ n: string }>("SELECT count(*) AS n FROM pg_stat_replication WHERE state = 'streaming'"))[0]!.n) >= standbys, `${standbys} standby(s) to stream from ${writer.name}`);
    },
    async caughtUp() {
      const lsn = (await writer.sql<{ l: string }>('SELECT pg_current_wal_lsn()::text AS l'))[0]!.l;
      for (const n of nodes) {
        if (n === writer || !n.running()) continue;
        await until(async () => (await n.sql<{ ok: boolean }>('SELECT pg_last_wal_replay_lsn() >= $1::pg_lsn AS ok', [lsn]))[0]!.ok, `${n.name} to replay up to ${lsn}`);
      }
    },
    async failover() {
      const next = nodes.find((n) => n !== writer && n.running());
      if (!next) throw new Error('no running standby to promote');
      await writer.kill9();
      await cluster.setSynchronous('', next);
      await next.promote();
      writer = next;
      return next;
    },
    async rebuildStandby(node) {
      const n = node as Node;
      if (n.running()) await n.stop();
      await n.replication?.close();
      rmSync(n.dataDir, { recursive: true, force: true });
      n.replication = await baseBackup(n.name, n.dataDir);
      await n.start();
      if (o.synchronous) await cluster.setSynchronous(syncNames());
      await cluster.streaming();
    },
    async stop() {
      await Promise.all(nodes.map((n) => n.kill9()));
      await Promise.all(nodes.map((n) => n.replication?.close()));
      rmSync(root, { recursive: true, force: true });
    },
  };
  try {
    await cluster.streaming();
  } catch (err) {
    await cluster.stop();
    throw err;
  }
  return cluster;
}

/** ALTER SYSTEM SET on a node (a standby too), reloaded; resolves once new sessions see it. */
async function setting(node: Node, name: string, value: string): Promise<void> {
  await node.sql(`ALTER SYSTEM SET ${name} = '${value.replace(/'/g, "''")}'`);
  await node.sql('SELECT pg_reload_conf()');
  await until(async () => (await node.sql<{ s: string }>('SELECT current_setting($1) AS s', [name]))[0]!.s === value, `${name} to take effect on ${node.name}`);
}

/** Polls `check` every 25 ms until it is true (or throws after a minute, naming what it waited for). */
export async function until(check: () => Promise<boolean>, what: string, timeoutMs = WAIT_MS): Promise<void> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return;
    } catch {
      // not reachable yet: try again
    }
    if (Date.now() > end) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

class Node implements PgNode {
  private child: ChildProcess | undefined;
  private log = '';
  readonly url: string;

  /** standbys: the proxy their replication connection runs through */
  replication: TcpProxy | null = null;

  constructor(
    readonly name: string,
    readonly port: number,
    readonly dataDir: string,
    private readonly bin: string,
    private readonly who: RunAs,
    private readonly args: string[],
  ) {
    this.url = `postgres://postgres:${PG_PASSWORD}@127.0.0.1:${port}/postgres`;
  }

  running(): boolean {
    return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(): Promise<void> {
    if (this.running()) return Promise.resolve();
    return keptAlive(new Promise<void>((resolve, reject) => {
      // detached: its own process group, so kill9() takes every backend with the postmaster.
      const c = spawn(join(this.bin, 'postgres'), ['-D', this.dataDir, '-p', String(this.port), '-c', `cluster_name=${this.name}`, ...this.args], { ...this.who, detached: true, env: { ...process.env, LC_MESSAGES: 'C' }, stdio: ['ignore', 'ignore', 'pipe'] });
      this.child = c;
      let ready = false;
      c.stderr!.on('data', (d) => {
        this.log = (this.log + d).slice(-4000);
        if (!ready && /database system is ready to accept (read-only )?connections/.test(this.log)) {
          ready = true;
          resolve();
        }
      });
      c.on('error', reject);
      c.on('close', (code, signal) => {
        if (!ready) reject(new Error(`${this.name}: postgres exited (${code ?? signal}) before it was ready: ${this.log.trim().split('\n').slice(-3).join(' / ')}`));
      });
      c.unref();
      (c.stderr as unknown as { unref?: () => void }).unref?.();
    }));
  }

  /** Resolves when the postmaster has exited. */
  private exited(): Promise<void> {
    const c = this.child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return Promise.resolve();
    return new Promise((resolve) => c.once('close', () => resolve()));
  }

  async stop(): Promise<void> {
    const done = this.exited();
    this.child?.kill('SIGINT'); // fast shutdown
    await keptAlive(done);
  }

  killNow(): void {
    const pid = this.child?.pid;
    if (pid && this.running()) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }

  async kill9(): Promise<void> {
    const done = this.exited();
    this.killNow();
    await keptAlive(done);
    // Backends of a killed postmaster leave by themselves; wait until none holds the port.
    const pid = this.child?.pid;
    if (pid) await until(async () => !groupAlive(pid), `${this.name}'s processes to exit`);
  }

  async promote(): Promise<void> {
    await run(join(this.bin, 'pg_ctl'), ['promote', '-w', '-t', '60', '-D', this.dataDir], this.who);
    await until(async () => !(await this.inRecovery()), `${this.name} to leave recovery`);
  }

  async sql<T extends pg.QueryResultRow = Record<string, unknown>>(text: string, params: unknown[] = [], database = 'postgres'): Promise<T[]> {
    const c = new pg.Client({ host: '127.0.0.1', port: this.port, user: 'postgres', password: PG_PASSWORD, database, connectionTimeoutMillis: 10_000 });
    c.on('error', () => {});
    await c.connect();
    try {
      return (await c.query<T>(text, params)).rows;
    } finally {
      await c.end().catch(() => {});
    }
  }

  async inRecovery(): Promise<boolean> {
    return (await this.sql<{ r: boolean }>('SELECT pg_is_in_recovery() AS r'))[0]!.r;
  }
}

/** Whether any process of the process group `pgid` is still alive (Linux /proc). */
function groupAlive(pgid: number): boolean {
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const stat = readFileSync(`/proc/${e}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[2]) === pgid && f[0] !== 'Z') return true;
    } catch {
      // gone meanwhile
    }
  }
  return false;
}
