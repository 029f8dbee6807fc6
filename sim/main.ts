// `npm run sim -- --seed N --steps K --backend level|postgres`: the seeded simulation of the money
// path (see sim/driver.ts). Exits 1 when a history violates the model or an invariant, after
// printing the seed, the step and the shortest failing history it found.
import { readFileSync } from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { runSim } from './run.ts';
import type { Op } from './model.ts';
import { PgStartError } from '../test/helpers/pg-start.ts';

const int = (min: number) => (v: string) => {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`an integer >= ${min}`);
  return n;
};

const program = new Command('sim')
  .description('Seeded simulation of the money path: random histories of top-ups, quotes, paid draws, reads and faults against real service instances, checked step by step against a model and the ledger invariants.')
  .addOption(new Option('--backend <backend>', 'ledger backend').choices(['level', 'postgres']).default('level'))
  .option('--seed <n>', 'first seed', int(0), 1)
  .option('--seeds <n>', 'how many seeds, from --seed on', int(1), 1)
  .option('--steps <k>', 'operations per history', int(1), 200)
  .option('--instances <n>', 'service instances on PostgreSQL (LevelDB: always 1)', int(1), 2)
  .option('--no-faults', 'no crashes, processor timeouts, PostgreSQL restarts or failovers')
  .option('--max-restarts <n>', 'instance crashes per history at most (each restart costs about a second)', int(0), 3)
  .option('--max-pg-restarts <n>', 'PostgreSQL restarts per history at most', int(0), 1)
  .option('--max-failovers <n>', "PostgreSQL failovers per history at most: the primary killed mid-draw, its synchronous standby promoted, the instances follow (needs Debian's PostgreSQL server, apt-get install postgresql; 0: one embedded server, no standby)", int(0), 1)
  .option('--verify-every <n>', 'run `ledger verify` every n steps (and after restarts and at the end); 0: only then', int(0), 25)
  .option('--pg-url <url>', "PostgreSQL admin URL to use (default: LDS_TEST_PG_URL, else servers of the simulator's own: a primary with a synchronous standby of Debian's PostgreSQL when installed, else an embedded server; restarts and failovers need its own)")
  .option('--pooler <host:port>', 'with --pg-url: the instances and `ledger verify` connect through this pooler (PgBouncer, session or transaction pooling) in front of that server; databases are still made on the server')
  .option('--break-ledger', "self-test: run the instances with a ledger whose debit skips the balance check")
  .option('--no-shrink', 'do not look for a shorter failing history')
  .option('--shrink-runs <n>', 'replays the shrinker may spend', int(0), 60)
  .option('--shrink-seconds <n>', 'time the shrinker may spend', int(0), 180)
  .option('--replay <file>', 'replay the operations in this JSON file (written by --history-out) instead of generating them')
  .option('--history-out <file>', 'write the (shrunk) failing history here as JSON')
  .addHelpText('after', '\nExample: npm run sim -- --seed 7 --steps 300 --backend postgres\nThe same seed and options replay the same history.');

program.parse();
const opts = program.opts();
const replay = opts.replay ? (JSON.parse(readFileSync(opts.replay, 'utf8')) as Op[]) : undefined;
const summary = await runSim({
  backend: opts.backend,
  seeds: Array.from({ length: opts.seeds }, (_, i) => opts.seed + i),
  steps: replay ? replay.length : opts.steps,
  instances: opts.instances,
  faults: opts.faults,
  maxRestarts: opts.maxRestarts,
  maxPgRestarts: opts.maxPgRestarts,
  maxFailovers: opts.maxFailovers,
  verifyEvery: opts.verifyEvery,
  breakLedger: Boolean(opts.breakLedger),
  shrink: opts.shrink,
  shrinkRuns: opts.shrinkRuns,
  shrinkSeconds: opts.shrinkSeconds,
  ...(replay ? { replay } : {}),
  ...(opts.historyOut ? { historyOut: opts.historyOut } : {}),
  ...(opts.pgUrl ? { pgUrl: opts.pgUrl } : {}),
  ...(opts.pooler ? { pooler: opts.pooler } : {}),
  ownPg: opts.backend === 'postgres' && !opts.pgUrl && !process.env.LDS_TEST_PG_URL ? true : undefined,
  print: (line) => console.log(line),
}).catch((err: unknown) => {
  // A PostgreSQL that cannot start is one line saying why and what to do, not a stack trace.
  if (!(err instanceof PgStartError)) throw err;
  console.error(`error: ${err.message} (--pg-url names one too)`);
  process.exit(1);
});
process.exit(summary.failures.length ? 1 : 0);
