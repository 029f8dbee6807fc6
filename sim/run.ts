// Runs seeds: generates each seed's history (sim/model.ts), runs it (sim/driver.ts), and on a
// violation prints the seed, the step, the operation, and the shortest failing history shrinking
// finds. Used by `npm run sim` (sim/main.ts) and by the test suite (test/sim.test.ts).
import { writeFileSync } from 'node:fs';
import { generateHistory, type Op } from './model.ts';
import { prepareEnv, runHistory, shrink, type Backend, type RunOptions, type RunResult, type SimEnv } from './driver.ts';

/** What every history of a run shares (RunOptions without the per-seed parts), and the run's own settings. */
export interface SimConfig extends Omit<RunOptions, 'seed' | 'log'> {
  backend: Backend;
  seeds: number[];
  steps: number;
  shrink: boolean;
  shrinkRuns: number;
  shrinkSeconds: number;
  /** a JSON file of operations to replay instead of generating (from --history-out) */
  replay?: Op[];
  historyOut?: string;
  pgUrl?: string;
  /** host:port of a pooler in front of pgUrl's server (PgBouncer): the instances connect through it */
  pooler?: string;
  ownPg?: boolean;
  /** the catalog-src to build (default: the repository's own; the tests give their smaller copy) */
  srcDir?: string;
  print: (line: string) => void;
}

export interface SeedOutcome {
  seed: number;
  result: RunResult;
  shrunk?: { ops: Op[]; result: RunResult; runs: number };
  history: Op[];
}

export interface SimSummary {
  backend: Backend;
  histories: number;
  steps: number;
  restarts: number;
  pgRestarts: number;
  failovers: number;
  ms: number;
  failures: SeedOutcome[];
  outcomes: SeedOutcome[];
}

/** The command line that replays one seed exactly. */
export function replayCommand(c: SimConfig, seed: number): string {
  return `npm run sim -- --backend ${c.backend} --seed ${seed} --steps ${c.steps}${c.backend === 'postgres' ? ` --instances ${c.instances} --max-failovers ${c.maxFailovers}` : ''}${c.faults ? '' : ' --no-faults'}${c.breakLedger ? ' --break-ledger' : ''} --max-restarts ${c.maxRestarts}`;
}

export async function runSim(c: SimConfig, givenEnv?: SimEnv): Promise<SimSummary> {
  const t0 = Date.now();
  const env = givenEnv ?? (await prepareEnv(c.backend, { instances: c.instances, ...(c.pgUrl ? { pgUrl: c.pgUrl } : {}), ...(c.pooler ? { pooler: c.pooler } : {}), ...(c.ownPg !== undefined ? { ownPg: c.ownPg } : {}), ...(c.srcDir ? { srcDir: c.srcDir } : {}), ...(c.maxFailovers === 0 ? { cluster: false } : {}) }));
  if (env.pg) c.print(`sim ${c.backend}: PostgreSQL is ${env.pg.describe}`);
  const summary: SimSummary = { backend: c.backend, histories: 0, steps: 0, restarts: 0, pgRestarts: 0, failovers: 0, ms: 0, failures: [], outcomes: [] };
  try {
    for (const seed of c.seeds) {
      const history = c.replay ?? generateHistory(seed, c.steps, { faults: c.faults, pg: c.backend === 'postgres' });
      const o: RunOptions = { seed, instances: c.instances, faults: c.faults, maxRestarts: c.maxRestarts, maxPgRestarts: c.maxPgRestarts, maxFailovers: c.maxFailovers, verifyEvery: c.verifyEvery, breakLedger: c.breakLedger, log: c.print };
      const result = await runHistory(env, history, o);
      summary.histories++;
      summary.steps += result.steps;
      summary.restarts += result.restarts;
      summary.pgRestarts += result.pgRestarts;
      summary.failovers += result.failovers;
      const outcome: SeedOutcome = { seed, result, history };
      summary.outcomes.push(outcome);
      const ops = Object.entries(result.counts).map(([k, v]) => `${k} ${v}`).join(', ');
      c.print(`sim ${c.backend} seed ${seed}: ${result.ok ? 'ok' : 'VIOLATION'} — ${result.steps} steps in ${(result.ms / 1000).toFixed(1)} s (${ops}; ${result.skipped} skipped; ${result.restarts} instance restarts, ${result.pgRestarts} PostgreSQL restarts, ${result.failovers} failovers)`);
      if (process.env.SIM_TIMING) c.print(`  timing (ms): ${JSON.stringify(result.timing)}`);
      if (result.ok) continue;
      summary.failures.push(outcome);
      const v = result.violation!;
      c.print(`  seed ${seed}, step ${v.step} [${v.check}]: ${v.message}`);
      c.print(`  operation: ${JSON.stringify(history[v.step])}`);
      c.print(`  replay: ${c.replay ? `the same operations again (--replay with --history-out's file)` : replayCommand(c, seed)}`);
      if (c.shrink) {
        const s = await shrink(env, history, v.step, o, { runs: c.shrinkRuns, ms: c.shrinkSeconds * 1000 });
        outcome.shrunk = s;
        c.print(`  shortest failing history found (${s.ops.length} of ${v.step + 1} steps, ${s.runs} replays): ${s.result.violation ? `step ${s.result.violation.step} [${s.result.violation.check}] ${s.result.violation.message}` : 'did not fail again (nondeterministic?)'}`);
        s.ops.forEach((op, i) => c.print(`    ${i}: ${JSON.stringify(op)}`));
        if (c.historyOut) {
          writeFileSync(c.historyOut, JSON.stringify(s.ops, null, 1) + '\n');
          c.print(`  written to ${c.historyOut} (replay: npm run sim -- --backend ${c.backend} --replay ${c.historyOut}${c.breakLedger ? ' --break-ledger' : ''})`);
        }
      }
      if (c.historyOut && !c.shrink) writeFileSync(c.historyOut, JSON.stringify(history.slice(0, v.step + 1), null, 1) + '\n');
    }
  } finally {
    if (!givenEnv) await env.close();
  }
  summary.ms = Date.now() - t0;
  c.print(`sim ${c.backend}: ${summary.histories} histories, ${summary.steps} steps, ${summary.restarts} instance restarts, ${summary.pgRestarts} PostgreSQL restarts, ${summary.failovers} failovers, ${summary.failures.length} failing, ${(summary.ms / 1000).toFixed(1)} s`);
  return summary;
}
