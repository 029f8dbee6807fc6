// One service process of the simulator: what `lds serve` runs (loadConfig + startServer, same
// environment, given by the driver in a 'serve' message), plus the two things only the simulator
// may have, driven over the IPC channel of its parent (sim/cluster.ts):
//   - a virtual clock for quote expiry (StartOptions.now), moved by the driver only;
//   - fault hooks (payments/faults.ts): SIGKILL of this process at a commit point of the next
//     debit or credit, or a sandbox charge that times out after charging.
// SIM_BREAK=skip-balance-check (the simulator's self-test only) breaks the ledger on purpose: a
// debit no longer checks the balance. Production never runs this file.
import { AsyncLocalStorage } from 'node:async_hooks';
import { loadConfig } from '../payments/config.ts';
import { createLogger, startServer, type RunningServer } from '../payments/serve.ts';
import type { CommitPoint, FaultHooks, FaultOp } from '../payments/faults.ts';

export type InstanceMessage =
  | { id: number; type: 'serve'; env: Record<string, string>; now: number }
  | { id: number; type: 'clock'; now: number }
  | { id: number; type: 'arm-commit'; point: CommitPoint; op: FaultOp; delayMs: number }
  | { id: number; type: 'arm-processor-timeout' }
  | { id: number; type: 'disarm' };

export interface InstanceReply {
  id: number;
  ok: boolean;
  url?: string;
  error?: string;
}

let now = 0;
let armedCommit: { point: CommitPoint; op: FaultOp; delayMs: number } | null = null;
let armedProcessor = false;
let running: RunningServer | null = null;
let broken = false;

const die = () => process.kill(process.pid, 'SIGKILL');

const faults: FaultHooks = {
  commit(point, op) {
    const a = armedCommit;
    if (!a || a.point !== point || a.op !== op) return;
    armedCommit = null;
    // during-commit: the write is on its way; die a moment later, so it may or may not land.
    if (point === 'during-commit' && a.delayMs > 0) setTimeout(die, a.delayMs);
    else die();
  },
  processorAfterCharge() {
    const fire = armedProcessor;
    armedProcessor = false;
    return fire;
  },
};

/**
 * (Re)starts the service on a configuration: what `lds serve` does with that environment. A warm
 * process serves one history after another (each on its own ledger), closing the previous server
 * first, so the simulator pays Node's start-up once per process, not once per history.
 */
async function serve(env: Record<string, string>, clock: number): Promise<string> {
  if (running) await running.close();
  running = null;
  armedCommit = null;
  armedProcessor = false;
  now = clock;
  const merged = { ...process.env, ...env };
  if (merged.SIM_BREAK === 'skip-balance-check' && !broken) {
    await breakBalanceCheck();
    broken = true;
  }
  const config = await loadConfig({ port: 0, host: '127.0.0.1' }, merged);
  running = await startServer(config, { logger: createLogger(config.logLevel), env: merged, now: () => now, faults });
  return running.url;
}

process.on('message', (m: InstanceMessage) => {
  const reply = (r: Omit<InstanceReply, 'id'>) => process.send?.({ id: m.id, ...r } satisfies InstanceReply);
  if (m.type === 'serve') {
    serve(m.env, m.now).then(
      (url) => reply({ ok: true, url }),
      (err) => reply({ ok: false, error: String((err as Error)?.stack ?? err) }),
    );
    return;
  }
  if (m.type === 'clock') now = m.now;
  else if (m.type === 'arm-commit') armedCommit = { point: m.point, op: m.op, delayMs: m.delayMs };
  else if (m.type === 'arm-processor-timeout') armedProcessor = true;
  else if (m.type === 'disarm') {
    armedCommit = null;
    armedProcessor = false;
  }
  reply({ ok: true });
});

const stop = () => (running ? running.close() : Promise.resolve()).then(() => process.exit(0), () => process.exit(1));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
process.on('disconnect', stop); // the driver went away: do not outlive it
process.send?.({ id: 0, ok: true } satisfies InstanceReply); // loaded, waiting for 'serve'

/**
 * The deliberately broken ledger of the simulator's self-test: a debit that skips the balance check.
 * LevelDB: inside debitDraw, the first read of the balance (the check) sees plenty of money.
 * PostgreSQL: the debit statement loses its `cents >= amount` condition (the table's CHECK
 * constraint still refuses a negative balance, so the service fails instead of answering 402).
 */
async function breakBalanceCheck(): Promise<void> {
  const { LevelLedger } = await import('../payments/ledger/level/ledger.ts');
  const { PgLedger } = await import('../payments/ledger/postgres/ledger.ts');
  const inDebit = new AsyncLocalStorage<boolean>();
  const L = LevelLedger.prototype as any;
  const debit = L.debitDraw;
  L.debitDraw = function (this: unknown, ...args: unknown[]) {
    return inDebit.run(true, () => debit.apply(this, args));
  };
  const load = L.loadBalance;
  L.loadBalance = async function (this: unknown, hash: string) {
    const rec = await load.call(this, hash);
    if (!rec || !inDebit.getStore()) return rec;
    let lie = true;
    return new Proxy(rec, { get: (t, p) => (p === 'cents' && lie ? ((lie = false), Number.MAX_SAFE_INTEGER) : t[p]) });
  };
  const P = PgLedger.prototype as any;
  const change = P.change; // every state-changing statement goes through it
  P.change = function (this: unknown, query: unknown, op: unknown, sql: string, ...rest: unknown[]) {
    return change.call(this, query, op, sql.replace('AND cents >= $3::bigint', ''), ...rest);
  };
}
