// Runs every test/*.test.ts in its own Node process (servers, ports and LevelDB handles stay
// isolated), streams its output, and adds up uvu's per-file totals into the closing line CI reads:
// "N passed, N failed" (", N skipped" after it when a suite skipped tests). A suite skips only when a
// program it drives is missing (test/helpers/programs.ts); its "SKIP <suite>: <reason>" line is
// repeated above the closing line. A file that runs no test and skips none counts as a failure.
//
// Ledger backends: a file whose first lines say `// @ledger-backends: level postgres` runs once per
// backend, with LDS_TEST_BACKEND set (test/helpers/ledgers.ts); `@ledger-backends: postgres` runs
// on PostgreSQL only. One PostgreSQL serves the whole run: LDS_TEST_PG_URL when given, else a
// throwaway embedded server started here (test/helpers/pg.ts); each test makes its own database.
// When that server cannot start, one line says why and what to do, the LevelDB runs still run and
// every PostgreSQL run counts as failed (the closing line is always printed).
// LDS_TEST_BACKEND=level|postgres in the environment restricts the run to that backend.
// Usage: npm test [-- name-filter ...]
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.test.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

type Backend = 'level' | 'postgres';
const only = process.env.LDS_TEST_BACKEND as Backend | undefined;

/** The backends a file asks for (none: it does not touch a ledger, or only the default). */
function backendsOf(file: string): (Backend | null)[] {
  const m = /^\/\/ @ledger-backends:((?: (?:level|postgres))+)/m.exec(readFileSync(join(here, file), 'utf8').slice(0, 2000));
  if (!m) return [null];
  const wanted = m[1].trim().split(' ') as Backend[];
  const chosen = only ? wanted.filter((b) => b === only) : wanted;
  return chosen;
}

const runs = files.flatMap((file) => backendsOf(file).map((backend) => ({ file, backend })));
let pgStop: (() => Promise<void>) | null = null;
/** Why the PostgreSQL runs cannot run (the server did not start): each counts as a failure. */
let pgMissing: string | null = null;
if (runs.some((r) => r.backend === 'postgres') && !process.env.LDS_TEST_PG_URL) {
  const { startEmbeddedPostgres, PgStartError } = await import('./helpers/pg.ts');
  try {
    const pg = await startEmbeddedPostgres();
    process.env.LDS_TEST_PG_URL = pg.url;
    pgStop = pg.stop;
    console.log(`# PostgreSQL for this run: embedded server on 127.0.0.1:${pg.port}`);
  } catch (err) {
    if (!(err instanceof PgStartError)) throw err;
    // One line that says why and what to do; the LevelDB runs still run, the PostgreSQL ones fail.
    pgMissing = err.message;
    console.error(`error: ${pgMissing} (or LDS_TEST_BACKEND=level to run the LevelDB suites only)`);
  }
}

interface Tally { passed: number; failed: number; skipped: number; crashed: boolean; empty: boolean; skips: string[] }

function runFile(file: string, backend: Backend | null): Promise<Tally> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, file)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0', ...(backend ? { LDS_TEST_BACKEND: backend } : {}) },
    });
    let out = '';
    child.stdout.on('data', (d) => { out += d; process.stdout.write(d); });
    child.stderr.on('data', (d) => process.stderr.write(d));
    child.on('close', (code) => {
      const num = (label: string) => {
        const all = [...out.matchAll(new RegExp(`${label}:\\s+(\\d+)`, 'g'))];
        return all.reduce((s, m) => s + Number(m[1]), 0);
      };
      // uvu's Total counts the tests that ran; skipped ones are only in Skipped.
      const total = num('Total');
      const passed = num('Passed');
      const skipped = num('Skipped');
      let failed = total - passed;
      // A file that exits non-zero without any failing uvu test (a crash, an unhandled
      // rejection, a hook that threw) still counts as one failure; so does one that checked nothing.
      const crashed = code !== 0 && failed === 0;
      const empty = total === 0 && skipped === 0;
      if (crashed || empty) failed = Math.max(failed, 1);
      const skips = [...out.matchAll(/^SKIP (.*)$/gm)].map((m) => m[1]!);
      resolve({ passed, failed, skipped, crashed, empty, skips });
    });
  });
}

const sum = { passed: 0, failed: 0, skipped: 0 };
const failedFiles: string[] = [];
const skipReasons: string[] = [];
for (const { file: name, backend } of runs) {
  const file = backend ? `${name} [${backend}]` : name;
  console.log(`\n# ${file}`);
  if (backend === 'postgres' && pgMissing) {
    console.log('not run: no PostgreSQL (see the error above)');
    sum.failed++;
    failedFiles.push(`${file} (no PostgreSQL)`);
    continue;
  }
  const t = await runFile(name, backend);
  sum.passed += t.passed;
  sum.failed += t.failed;
  sum.skipped += t.skipped;
  if (t.failed > 0) failedFiles.push(file + (t.crashed ? ' (exited non-zero)' : t.empty ? ' (ran no tests)' : ''));
  skipReasons.push(...t.skips);
}
await pgStop?.();
if (skipReasons.length) console.log(`\nskipped:\n${skipReasons.map((r) => `  ${r}`).join('\n')}`);
if (failedFiles.length) console.log(`\nfailing files: ${failedFiles.join(', ')}`);
console.log(`\n${sum.passed} passed, ${sum.failed} failed${sum.skipped ? `, ${sum.skipped} skipped` : ''}`);
// Exit explicitly: whatever a helper left running, the status is what the tests said.
process.exit(sum.failed > 0 || runs.length === 0 ? 1 : 0);
