// Service instances as separate processes (`lds serve`, as an operator runs them): for tests that
// kill one with SIGKILL, restart it, or run several side by side on one PostgreSQL ledger. Each
// instance has its own port and var dir; instances of one deployment share the secrets (env), the
// built dist/ and unit store, and the ledger.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { cp, mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { LDS_ARGS, REPO } from './build.ts';
import { ownProgramArgs, type OwnProgram } from './own-programs.ts';
import { mainThreadStack } from './processes.ts';
import type { Fixture } from './service-harness.ts';

export interface Instance {
  proc: ChildProcess;
  /** http://127.0.0.1:<port>/v1 */
  base: string;
  varDir: string;
  /** Everything the process wrote so far: its JSON log lines (stdout) and messages (stderr). */
  log(): string;
}

/** Secrets every instance of one deployment shares, as production passes them: through env. */
export function sharedSecrets(): Record<string, string> {
  return { LDS_QUOTE_SECRET: randomBytes(32).toString('hex'), MPP_SECRET_KEY: randomBytes(32).toString('hex') };
}

/** Every child still running, killed when the test process exits so a failed start never leaves one behind. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
});

/** How long a start may take: generous, since a loaded CI machine starts several instances at once. */
const START_TIMEOUT_MS = 90_000;

/** `entry`: another program to run instead of `lds serve` (test/helpers/fault-serve.ts), with the same flags. */
export async function startInstance(fx: Fixture, env: Record<string, string>, varDir?: string, entry?: OwnProgram): Promise<Instance> {
  const dir = varDir ?? (await mkdtemp(join(fx.root, 'var-inst-')));
  // Its own copy of the unit store (a LevelDB opens in one process only), as each production
  // instance gets its own copy of the build output.
  // (Not when the caller names a store: copying a LevelDB another process is compacting can fail.)
  const store = env.LDS_STORE_DIR ?? join(dir, 'store');
  if (!env.LDS_STORE_DIR && !existsSync(store)) await cp(fx.store, store, { recursive: true });
  const program = entry ? ownProgramArgs(entry) : LDS_ARGS;
  const proc = spawn(process.execPath, [...program, 'serve', '--port', '0', '--host', '127.0.0.1'], {
    cwd: REPO,
    env: { ...process.env, LDS_DIST_DIR: fx.dist, LDS_STORE_DIR: store, LDS_VAR_DIR: dir, LDS_RATE_LIMIT_RPS: '0', LOG_LEVEL: 'warn', NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(proc);
  proc.once('exit', () => children.delete(proc));
  let err = '';
  let out = '';
  proc.stderr!.on('data', (d) => (err += d));
  proc.stdout!.on('data', (d) => (out += d));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      const where = proc.pid ? mainThreadStack(proc.pid) : '';
      proc.kill('SIGKILL'); // never leave a half-started server behind
      reject(new Error(`server did not start within ${START_TIMEOUT_MS / 1000} s: ${err}${out.slice(-2000)}${where ? `\nits main thread (gdb):\n${where}` : ''}`));
    }, START_TIMEOUT_MS);
    const onData = () => {
      const m = /serving (http:\/\/\S+)/.exec(err);
      if (m) {
        clearTimeout(timer);
        proc.stderr!.off('data', onData);
        resolve({ proc, base: `${m[1]}/v1`, varDir: dir, log: () => out + err });
      }
    };
    proc.stderr!.on('data', onData);
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`server exited (${code}): ${err}`));
    });
  });
}

/** `n` instances started side by side; if one fails to start, the others are stopped too (nothing keeps the test alive). */
export async function startInstances(fx: Fixture, env: Record<string, string>, n: number): Promise<Instance[]> {
  const settled = await Promise.allSettled(Array.from({ length: n }, () => startInstance(fx, env)));
  const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  const started = settled.flatMap((s) => (s.status === 'fulfilled' ? [s.value] : []));
  if (failed) {
    for (const i of started) i.proc.kill('SIGKILL');
    throw failed.reason;
  }
  return started;
}

export function exited(p: ChildProcess): Promise<number | null> {
  return new Promise((r) => (p.exitCode !== null || p.signalCode !== null ? r(p.exitCode) : p.once('exit', (c) => r(c))));
}

export async function stopInstance(i: Instance): Promise<number | null> {
  if (i.proc.exitCode === null && i.proc.signalCode === null) i.proc.kill('SIGTERM');
  return exited(i.proc);
}
