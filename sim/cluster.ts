// The system under simulation: service instances as real child processes (sim/instance.ts, which
// runs what `lds serve` runs) over one ledger - a LevelDB directory (one instance) or a PostgreSQL
// database shared by several instances - and, for PostgreSQL, the database servers themselves when
// the simulator started them (so they can be restarted, and a primary with a synchronous standby
// failed over: driver.ts simPostgres).
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, realpathSync } from 'node:fs';
import { cp, mkdtemp } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { InstanceMessage, InstanceReply } from './instance.ts';
import type { CommitPoint, FaultOp } from '../payments/faults.ts';
import { ownProgramArgs } from '../test/helpers/own-programs.ts';

const HERE = fileURLToPath(new URL('.', import.meta.url));
/** How an instance process starts: bundled with the compiled suites under npm test, else through tsx. */
const INSTANCE = ownProgramArgs('sim/instance.ts');
/** The repository (its real path: npm test runs the simulator compiled, from a folder of links beside it). */
const REPO = dirname(realpathSync(join(HERE, '..', 'package.json')));

export interface Built {
  root: string;
  dist: string;
  store: string;
}

type Outgoing = InstanceMessage extends infer M ? (M extends { id: number } ? Omit<M, 'id'> : never) : never;

/** A sim/instance.ts process: loaded and idle until told to serve. */
export class Proc {
  readonly proc: ChildProcess;
  log = '';
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  private nextId = 1;
  private waiting = new Map<number, (r: InstanceReply) => void>();

  constructor() {
    const proc = spawn(process.execPath, INSTANCE, { cwd: REPO, env: process.env, stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    this.proc = proc;
    this.exited = new Promise((r) => proc.once('exit', (code) => r(code)));
    proc.on('error', () => {}); // IPC to a killed child
    proc.stderr!.on('data', (d) => (this.log = (this.log + d).slice(-20_000)));
    proc.on('message', (m: InstanceReply) => {
      this.waiting.get(m.id)?.(m);
      this.waiting.delete(m.id);
    });
    this.ready = new Promise<void>((resolve, reject) => {
      this.waiting.set(0, () => resolve());
      void this.exited.then((code) => reject(new Error(`simulator instance exited (${code}) while loading: ${this.log}`)));
    });
    this.ready.catch(() => {});
  }

  get alive(): boolean {
    return this.proc.exitCode === null && this.proc.signalCode === null;
  }

  /** Sends a control message; resolves with the reply (or ok:false when the process is gone). */
  tell(msg: Outgoing): Promise<InstanceReply> {
    if (!this.alive || !this.proc.connected) return Promise.resolve({ id: -1, ok: false, error: 'process gone' });
    const id = this.nextId++;
    return new Promise((resolve) => {
      this.waiting.set(id, resolve);
      this.proc.send({ ...msg, id } as InstanceMessage, (err) => {
        if (err) {
          this.waiting.delete(id);
          resolve({ id, ok: false, error: String(err) });
        }
      });
      void this.exited.then(() => resolve({ id, ok: false, error: 'process gone' }));
    });
  }

  async stop(): Promise<void> {
    if (this.alive) this.proc.kill('SIGTERM');
    const t = setTimeout(() => this.alive && this.proc.kill('SIGKILL'), 10_000);
    await this.exited;
    clearTimeout(t);
  }
}

/**
 * Loaded processes waiting to serve: Node and the service's modules take seconds to load on a busy
 * machine, so a replacement for a killed instance is started ahead of time.
 */
export class ProcPool {
  private spares: Proc[] = [];
  constructor(private readonly size: number) {}

  fill(): void {
    while (this.spares.length < this.size) this.spares.push(new Proc());
  }

  async take(): Promise<Proc> {
    this.fill();
    const p = this.spares.shift()!;
    this.fill();
    await p.ready;
    return p;
  }

  async close(): Promise<void> {
    await Promise.all(this.spares.splice(0).map((p) => p.stop()));
  }
}

/** One service instance of a history: a process serving a configuration, replaced after a crash. */
export class Instance {
  proc: Proc | null = null;
  base = '';
  private broken = false;

  constructor(
    readonly index: number,
    private readonly pool: ProcPool,
  ) {}

  get alive(): boolean {
    return this.proc !== null && this.proc.alive;
  }

  get exited(): Promise<number | null> {
    return this.proc ? this.proc.exited : Promise.resolve(null);
  }

  get log(): string {
    return this.proc?.log ?? '';
  }

  /** Serves `env` (a new history, or a restart after a crash): in the current process if alive, else a fresh one. */
  async serve(env: Record<string, string>, clock: number): Promise<void> {
    // A process once broken on purpose (SIM_BREAK patches the ledger classes) never serves a clean history.
    const broken = Boolean(env.SIM_BREAK);
    if (this.alive && this.broken && !broken) await this.stop();
    if (!this.alive) this.proc = await this.pool.take();
    this.broken ||= broken;
    const r = await this.proc!.tell({ type: 'serve', env, now: clock });
    if (!r.ok || !r.url) throw new Error(`instance ${this.index} did not start: ${r.error ?? ''} ${this.proc!.log.slice(-2000)}`);
    this.base = `${r.url}/v1`;
  }

  async tell(msg: Outgoing): Promise<void> {
    if (this.alive) await this.proc!.tell(msg);
  }

  armCommit(point: CommitPoint, op: FaultOp, delayMs: number): Promise<void> {
    return this.tell({ type: 'arm-commit', point, op, delayMs });
  }

  async stop(): Promise<void> {
    await this.proc?.stop();
    this.proc = null;
    this.broken = false;
  }
}

/** A fresh var dir with its own copy of the unit store (a LevelDB opens in one process only). */
export async function instanceDir(built: Built, index: number): Promise<string> {
  const dir = await mkdtemp(join(built.root, `var-sim-${index}-`));
  const store = join(dir, 'store');
  if (!existsSync(store)) await cp(built.store, store, { recursive: true });
  return dir;
}

export { REPO };
