// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// The seeded simulator (sim/): a fixed budget of generated histories against real service
// processes must find no violation, and with a deliberately broken ledger (a debit that skips the
// balance check, injected only here through sim/instance.ts) it must find one, print a replayable
// seed and a shrunk history that fails again on its own and passes on the unbroken ledger.
// Budget: LDS_SIM_SEEDS x LDS_SIM_STEPS per backend (defaults below; seeds are printed).
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { prepareEnv, type SimEnv } from '../sim/driver.ts';
import { runSim, type SimConfig } from '../sim/run.ts';
import type { Op } from '../sim/model.ts';
import { BACKEND } from './helpers/ledgers.ts';
import { CATALOG_SRC, REPO } from './helpers/build.ts';
import { locate, POSTGRES_SERVER, REQUIRE_PROGRAMS } from './helpers/programs.ts';

const SEEDS = Number(process.env.LDS_SIM_SEEDS ?? (BACKEND === 'level' ? 4 : 3));
const STEPS = Number(process.env.LDS_SIM_STEPS ?? 50);
const FIRST_SEED = Number(process.env.LDS_SIM_FIRST_SEED ?? 1);
/** A seed whose history (80 steps, no faults) spends a balance down early: the broken ledger shows there. */
const BREAK_SEED = 3;

let env: SimEnv;
const lines: string[] = [];
const print = (line: string) => {
  lines.push(line);
  console.log(`# ${line}`);
};

const base = (): SimConfig => ({
  backend: BACKEND,
  seeds: [],
  steps: STEPS,
  instances: 2,
  faults: true,
  maxRestarts: 1,
  maxPgRestarts: 1,
  maxFailovers: 1,
  verifyEvery: 25,
  breakLedger: false,
  shrink: true,
  shrinkRuns: 8,
  shrinkSeconds: 60,
  print,
});

/** PostgreSQL failovers need Debian's PostgreSQL (a primary with a synchronous standby). */
const failovers = BACKEND === 'postgres' && ('path' in locate(POSTGRES_SERVER) || process.env[REQUIRE_PROGRAMS] === '1');

test.before(async () => {
  // PostgreSQL: servers of the simulator's own, so that it can restart them and fail over.
  env = await prepareEnv(BACKEND, { instances: 2, ownPg: true, cluster: failovers, srcDir: CATALOG_SRC });
});
test.after(async () => {
  await env?.close();
});

test(`${SEEDS} seeded histories of ${STEPS} steps find no violation on ${BACKEND}`, async () => {
  const seeds = Array.from({ length: SEEDS }, (_, i) => FIRST_SEED + i);
  const t0 = Date.now();
  const s = await runSim({ ...base(), seeds }, env);
  console.log(`# sim budget on ${BACKEND}: seeds ${seeds.join(',')}: ${s.histories} histories, ${s.steps} steps, ${s.restarts} instance restarts, ${s.pgRestarts} PostgreSQL restarts in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  assert.is(s.histories, SEEDS);
  assert.is(s.failures.length, 0, s.failures.map((f) => `seed ${f.seed}: ${f.result.violation?.message}`).join('\n'));
  assert.is(s.steps, SEEDS * STEPS);
});

test('a ledger whose debit skips the balance check is caught, with a replayable seed and a shrunk history', async () => {
  lines.length = 0;
  const broken: SimConfig = { ...base(), seeds: [BREAK_SEED], steps: 80, faults: false, breakLedger: true, shrinkRuns: 6 };
  const s = await runSim(broken, env);
  assert.is(s.failures.length, 1, 'the simulator must find the broken balance check');
  const f = s.failures[0]!;
  const text = lines.join('\n');
  assert.match(text, `seed ${BREAK_SEED}, step ${f.result.violation!.step}`);
  assert.match(text, `npm run sim -- --backend ${BACKEND} --seed ${BREAK_SEED} --steps 80 `);
  // The level ledger answers 200 to a draw it must refuse; PostgreSQL's CHECK constraint turns the
  // bad debit into an error instead - a wrong answer either way.
  assert.match(f.result.violation!.message, /expected 402 insufficient-balance/);
  const shrunk = f.shrunk!;
  assert.ok(shrunk.ops.length <= f.result.steps, 'the shrunk history is no longer');
  assert.ok(shrunk.result.violation, 'the shrunk history fails');
  // The shrunk history replays on its own: it fails again with the break and passes without it.
  const again = await runSim({ ...broken, replay: shrunk.ops, steps: shrunk.ops.length, shrink: false }, env);
  assert.is(again.failures.length, 1);
  const clean = await runSim({ ...broken, replay: shrunk.ops, steps: shrunk.ops.length, shrink: false, breakLedger: false }, env);
  assert.is(clean.failures.length, 0, clean.failures.map((x) => x.result.violation?.message).join('\n'));
});

test('the histories of defects the simulator found replay clean (sim/histories/)', async () => {
  const dir = join(REPO, 'sim', 'histories');
  const files = readdirSync(dir).filter((f) => f.endsWith('.json'));
  assert.ok(files.length >= 1);
  for (const f of files) {
    const ops = JSON.parse(readFileSync(join(dir, f), 'utf8')) as Op[];
    const s = await runSim({ ...base(), seeds: [1], replay: ops, steps: ops.length, shrink: false }, env);
    assert.is(s.failures.length, 0, `${f}: ${s.failures.map((x) => x.result.violation?.message).join('\n')}`);
  }
});

if (BACKEND === 'postgres') {
  if (!failovers) console.log(`SKIP sim failover: ${POSTGRES_SERVER.name} is missing; install it with \`${POSTGRES_SERVER.install}\``);
  (failovers ? test : test.skip)('a failover under synchronous replication: nothing acknowledged lost, the instances follow, every quote paid once', async () => {
    // A balance with paid draws; the primary killed while a paid draw is in flight, the standby
    // promoted; then the buyer's retry, more draws, reads and top-ups at both instances.
    const ops: Op[] = [
      { t: 'topup', target: 0, amount: 'above', extra: 900, inst: 0 },
      { t: 'quote', product: 0, mode: 'units', start: 1, size: 2, limit: 5, target: 0, withToken: true, inst: 1 },
      { t: 'pay', q: 0, same: true, target: 0, inst: 0 },
      { t: 'failover', target: 0, product: 1, pick: 5, inst: 1, inst2: 0, delayMs: 1 },
      { t: 'quote', product: 2, mode: 'units', start: 3, size: 3, limit: 5, target: 0, withToken: true, inst: 0 },
      { t: 'pay', q: 0, same: true, target: 0, inst: 1 },
      { t: 'topup', target: 0, amount: 'min', extra: 1, inst: 1 },
      { t: 'read', target: 0, inst: 0 },
    ];
    const s = await runSim({ ...base(), seeds: [1], replay: ops, steps: ops.length, shrink: false }, env);
    assert.is(s.failures.length, 0, s.failures.map((x) => `step ${x.result.violation?.step}: ${x.result.violation?.message}`).join('\n'));
    assert.is(s.failovers, 1, 'the failover ran (not skipped)');
  });
}

test('production never reaches the fault hooks or the simulated clock', () => {
  const read = (f: string) => readFileSync(join(REPO, f), 'utf8');
  const serve = read('payments/serve.ts');
  // `lds serve` (serveFromCli) starts the service without them: its own options name neither, and
  // what its caller may add (`extra`) is typed as a Pick of StartOptions that leaves both out ...
  const cli = serve.split('export async function serveFromCli')[1]!.split('\n}\n')[0]!;
  const at = cli.indexOf('startServer(');
  assert.ok(at >= 0, 'serveFromCli calls startServer');
  const call = cli.slice(at, cli.indexOf('\n  });', at)); // its options object
  assert.match(call, /logger/);
  assert.not.match(call, /\bfaults\b|(^|[^.\w])now\b/, 'serveFromCli passes no faults and no clock');
  const extra = /^\(config: ServiceConfig, extra: Pick<StartOptions, ([^>]*)>/.exec(cli.trimStart());
  assert.ok(extra, 'serveFromCli(config, extra: Pick<StartOptions, ...>)');
  const picked = extra![1]!.split('|').map((k) => k.trim().replace(/^'|'$/g, ''));
  assert.not.ok(picked.includes('faults') || picked.includes('now'), `serveFromCli's extra options (${picked.join(', ')}) leave out faults and now`);
  assert.is((serve.match(/await startServer\(/g) ?? []).length, 1, 'payments/serve.ts calls startServer only in serveFromCli');
  assert.match(cli, /await startServer\(/);
  // ... the CLI calls it with the configuration alone ...
  assert.match(read('cli.ts'), /serveFromCli\(config\)/);
  assert.not.match(read('cli.ts'), /faults|startServer/);
  // ... and outside tests and the simulator nothing else starts the service (the hooks reach the
  // ledger and the processor only through startServer's options).
  const starters: string[] = [];
  for (const dir of ['payments', 'generator', 'cli', 'contract', 'bench', 'scripts']) {
    let entries;
    try {
      entries = readdirSync(join(REPO, dir), { recursive: true, withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      if (!e.isFile() || !e.name.endsWith('.ts')) continue;
      const file = join(e.parentPath, e.name);
      const text = readFileSync(file, 'utf8');
      if (/\bstartServer\(/.test(text)) starters.push(file.slice(REPO.length + 1));
    }
  }
  assert.equal(starters, ['payments/serve.ts']);
  // No code of the service reads anything of the simulator's.
  const payments = readdirSync(join(REPO, 'payments'), { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith('.ts'));
  for (const e of payments) {
    const text = readFileSync(join(e.parentPath, e.name), 'utf8');
    assert.not.match(text, /SIM_|from '\.\.?\/.*sim\//, `${e.name} reads nothing of the simulator`);
  }
});

test.run();
