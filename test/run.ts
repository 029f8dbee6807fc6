// Runs every test/*.test.ts in its own Node process (servers, ports and LevelDB handles stay
// isolated), LDS_TEST_JOBS files at a time, prints each file's output whole when it ends, and adds
// up uvu's per-file totals into the closing line CI reads: "N passed, N failed" (", N skipped"
// after it when a suite skipped tests). Just above it: the ten slowest files of this run. A suite
// skips only when a program it drives is missing (test/helpers/programs.ts); its "SKIP <suite>:
// <reason>" line is repeated above the closing line. A file that runs no test and skips none
// counts as a failure. Each file's wall time and CPU (its process's and its children's, CPU_REPORT)
// follow its name.
//
// Tiers: `npm test` runs every file. `npm run test:quick` (this runner with --quick) runs only the
// files whose first lines say `// @tier: quick`: the in-process tier for the edit-test loop (no
// real web servers, no PostgreSQL, no long simulator runs, no crash tests), on the LevelDB ledger.
//
// Ledger backends: a file whose first lines say `// @ledger-backends: level postgres` runs once per
// backend, with LDS_TEST_BACKEND set (test/helpers/ledgers.ts); `@ledger-backends: postgres` runs
// on PostgreSQL only. One PostgreSQL serves the whole run: LDS_TEST_PG_URL when given, else a
// throwaway embedded server started here (test/helpers/pg.ts); each test gets its own database,
// cloned from a template holding the migrated schema. When that server cannot start, one line says
// why and what to do, the LevelDB runs still run and every PostgreSQL run counts as failed (the
// closing line is always printed). LDS_TEST_BACKEND=level|postgres restricts the run to that backend.
//
// Made once and shared by the files (each still gets a private copy to change):
//   - the compiled build/ that `npm start` runs, compiled here before any suite (two suites never
//     compile at once); the suites then run `lds` from it (LDS_TEST_CLI_JS, test/helpers/build.ts)
//     instead of compiling cli.ts again in every process they spawn;
//   - the suites themselves, compiled to JavaScript (tsconfig.test.json) into build/test-js/<hash>/
//     beside links to their sources, then each bundled with what it imports over its compiled file
//     (test/helpers/bundle-suites.ts), and run with plain `node`: through tsx's loader hooks each
//     test process spent two to four seconds more CPU loading the service's modules, and file by
//     file two more than bundled. Stack traces name the TypeScript lines (source maps). The compile
//     (~9 s, and ~5 s to bundle: most of a quick run's overhead) is kept and reused while its
//     inputs are unchanged: <hash> covers every source file's path, every TypeScript, JSON and
//     bundler file's bytes, the tsconfigs, the compiler's and esbuild's versions. LDS_TEST_BUNDLE=0
//     runs the compiled files unbundled; LDS_TEST_TSX=1 runs them through tsx instead;
//   - the service fixture build (test/helpers/service-harness.ts buildFixture), in a cache in the
//     temp folder keyed by a hash of everything it is built from (test/helpers/fixture-cache.ts),
//     so a second run on the machine reuses it and a changed input makes a new one.
// Files start longest first, by the durations the last run on this machine recorded (else those of
// the development machine, test/durations.json, else by file size), so the run does not end waiting
// on one long suite.
//
// Concurrency: LDS_TEST_JOBS files at a time; the default is measured (below, and
// docs/development.md, "Running the tests"): most suites wait on fsync, servers and child
// processes rather than the CPU, so the whole suite runs two files per core; the quick tier, in
// process, one per core.
// Usage: npm test [-- [--quick] [name-filter ...]]
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, statfsSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fixtureCacheRoot, pruneFixtureCache } from './helpers/fixture-cache.ts';
import { failureDir, writeFailureLog, type FailedRun } from './helpers/failure-log.ts';
import { testCatalogSrc } from './helpers/test-catalog.ts';

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, '..');
const args = process.argv.slice(2);
const quick = args.includes('--quick');
const filters = args.filter((a) => a !== '--quick');
/**
 * Where the suites are: test/, or LDS_TEST_SUITES_DIR (the runner's own test runs it over a folder of
 * fixture suites, test/runner.test.ts); such a folder's suites run through tsx, uncompiled.
 */
const suitesDir = process.env.LDS_TEST_SUITES_DIR ? resolve(process.env.LDS_TEST_SUITES_DIR) : here;

type Backend = 'level' | 'postgres';
/** Quick runs stay in-process and off PostgreSQL: a file on both ledgers runs on LevelDB only. */
const only = (quick ? 'level' : process.env.LDS_TEST_BACKEND) as Backend | undefined;

/** The header of a test file: the comment lines that declare how the runner treats it. */
const headerOf = (file: string) => readFileSync(join(suitesDir, file), 'utf8').slice(0, 2000);
const files = readdirSync(suitesDir)
  .filter((f) => f.endsWith('.test.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .filter((f) => !quick || /^\/\/ @tier: quick\b/m.test(headerOf(f)))
  .sort();

/** The backends a file asks for (none: it does not touch a ledger, or only the default). */
function backendsOf(file: string): (Backend | null)[] {
  const m = /^\/\/ @ledger-backends:((?: (?:level|postgres))+)/m.exec(headerOf(file));
  if (!m) return [null];
  const wanted = m[1].trim().split(' ') as Backend[];
  return only ? wanted.filter((b) => b === only) : wanted;
}

/**
 * Files at a time, measured on the 2-core machine from a fresh clone (2026-11-27): the whole suite
 * 859 s at 4, 910 s at 3 (its suites wait on fsync, servers and child processes); the quick tier,
 * all CPU in process, 54 s at 2, 55 s at 3, 66 s at 4.
 */
const JOBS = Math.max(1, Math.floor(Number(process.env.LDS_TEST_JOBS ?? availableParallelism() * (quick ? 1 : 2))) || 1);
const runName = (file: string, backend: Backend | null) => (backend ? `${file} [${backend}]` : file);
/** Seconds each run took last time on this machine (kept in the temp folder; the runner never writes the repository). */
const DURATIONS = join(tmpdir(), 'lds-test-durations.json');
const readDurations = (path: string): Record<string, number> => {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    return {};
  }
};
const lastDurations = readDurations(DURATIONS);
/**
 * Seconds each run took on the 2-core development machine (test/durations.json, a warm run's record
 * copied from the temp folder), for a machine with no record of its own: a fresh clone, CI. Ordered
 * by file size instead, the long files of a first run (build, build-crash, hosting-caddy: one
 * minute each, but short files) started last and the run ended on them, ~20 s of one core idle.
 * Only an order: a stale or missing entry costs time, never a test.
 */
const knownDurations = readDurations(join(here, 'durations.json'));
/** Expected seconds: this machine's last run's, else the development machine's, else a guess from the file's size (about 1 s per KB). */
const expected = (file: string, backend: Backend | null) => lastDurations[runName(file, backend)] ?? knownDurations[runName(file, backend)] ?? statSync(join(suitesDir, file)).size / 1000;
const runs = files
  .flatMap((file) => backendsOf(file).map((backend) => ({ file, backend })))
  .sort((a, b) => expected(b.file, b.backend) - expected(a.file, a.backend));
let pgStop = null as (() => Promise<void>) | null; // set by startRunPostgres
/** Why the PostgreSQL runs cannot run (the server did not start): each counts as a failure. */
let pgMissing: string | null = null;
/** The OS temp folder, before this runner points TMPDIR at the run's folder. */
const osTmp = tmpdir();

/** Linux's magic number of a tmpfs (statfs f_type). */
const TMPFS = 0x01021994;
/** Free space a tmpfs needs to hold a run's files (~3.5 GB at once at most, each file's removed as it ends). */
const TMPFS_MIN_FREE = 8 * 1024 ** 3;

/**
 * Where the run's folder goes: LDS_TEST_TMP when set, else a tmpfs (/dev/shm) with room for it,
 * else the OS temp folder. The suites write ~3.5 GB and remove it again (stores, builds, ledgers,
 * PostgreSQL clusters); on this project's 2-core machines the disk is mounted with online discard,
 * and removing those files cost ~100 s of a 450 s run (run on disk without removing anything: 348 s).
 * In memory a removal and an fsync are free; what the suites check does not change: their crash
 * tests kill processes, whose written data the kernel keeps either way, and none cuts the power.
 */
function chooseRunRoot(): { dir: string; why: string } {
  if (process.env.LDS_TEST_TMP) return { dir: process.env.LDS_TEST_TMP, why: 'LDS_TEST_TMP' };
  try {
    const s = statfsSync('/dev/shm');
    if (s.type === TMPFS && s.bavail * s.bsize >= TMPFS_MIN_FREE) return { dir: '/dev/shm', why: 'a tmpfs: in memory' };
  } catch {
    // no /dev/shm (not Linux): the temp folder
  }
  return { dir: osTmp, why: 'the temp folder' };
}
const runRoot = chooseRunRoot();

/** The run's PostgreSQL, when a run needs one and LDS_TEST_PG_URL names none (started while the code compiles). */
async function startRunPostgres(): Promise<void> {
  if (!runs.some((r) => r.backend === 'postgres') || process.env.LDS_TEST_PG_URL) return;
  const { startEmbeddedPostgres, PgStartError } = await import('./helpers/pg.ts');
  try {
    // Its data and the copy of its binaries in the OS temp folder, as a server started outside a run.
    // Its data beside the run's folder (in memory when the run's files are), the copy of its
    // binaries (made once, kept) in the OS temp folder.
    const pg = await startEmbeddedPostgres({ binCacheRoot: osTmp, dataRoot: runRoot.dir });
    process.env.LDS_TEST_PG_URL = pg.url;
    // Its data is removed once it stops: an immediate shutdown skips the checkpoint that would write
    // out a whole run's databases first (~8 s at the end of a run).
    pgStop = () => pg.stop('immediate');
    console.log(`# PostgreSQL for this run: embedded server on 127.0.0.1:${pg.port}`);
  } catch (err) {
    if (!(err instanceof PgStartError)) throw err;
    // One line that says why and what to do; the LevelDB runs still run, the PostgreSQL ones fail.
    pgMissing = err.message;
    console.error(`error: ${pgMissing} (or LDS_TEST_BACKEND=level to run the LevelDB suites only)`);
  }
}

interface Tally { passed: number; failed: number; skipped: number; crashed: boolean; empty: boolean; skips: string[] }

interface Finished extends Tally { output: string; seconds: number; /** null: not known (killed, or not Linux) */ cpuSeconds: number | null }

/**
 * Loaded first in every test process (a data: URL, so it needs no compile): at exit it writes the
 * CPU the file cost to LDS_TEST_CPU_OUT - its own user and system time and that of every child it
 * waited for (/proc/self/stat utime, stime, cutime, cstime, in clock ticks of 1/100 s), which is
 * what /usr/bin/time would report for it. The suite is CPU-bound on 2 cores, so a file's CPU, not
 * its wall time (four files share the cores), says what it costs the run.
 */
const CPU_REPORT = `data:text/javascript,${encodeURIComponent(`import { readFileSync, writeFileSync } from 'node:fs';
process.on('exit', () => {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    writeFileSync(process.env.LDS_TEST_CPU_OUT, String((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100));
  } catch {}
});`)}`;

/**
 * Longest a file may run (LDS_TEST_FILE_TIMEOUT_S, default 20 minutes, several times the slowest
 * file on a loaded machine): a file that hangs - a hook that failed and left a server listening, so
 * its process never ends - is killed and counted as failed, and the run goes on to its closing line.
 */
const FILE_TIMEOUT_MS = Math.max(1, Number(process.env.LDS_TEST_FILE_TIMEOUT_S ?? 1200)) * 1000;

/** LDS_TEST_BUNDLE=0: the suites run file by file as tsc compiled them (to compare, or to rule the bundle out). */
const BUNDLE = process.env.LDS_TEST_BUNDLE !== '0';

/**
 * Compiles the suites (and everything they import) to JavaScript in `out`, beside links to every
 * other file of those folders (the .ts sources, JSON, data), so a path a module finds from its own
 * location still exists. node_modules and package.json (ESM, module resolution) are links too;
 * everything else the suites read they find through REPO, the repository itself (test/helpers/build.ts).
 * Type errors do not stop the run (`npx tsc --noEmit` reports them); a compile that emitted
 * nothing does: the suites then run through tsx.
 */
async function compileSuites(out: string, sources: string[], buildDone: Promise<unknown>): Promise<boolean> {
  rmSync(out, { recursive: true, force: true });
  // Emit only: `npx tsc --noEmit` is the type check (CI runs it), and types do not change the emitted code.
  const tsc = await runProgram(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(repo, 'tsconfig.test.json'), '--noCheck', '--outDir', out]);
  if (!existsSync(join(out, 'test', 'run.js'))) {
    console.error(`error: the suites did not compile (${tsc.output.split('\n')[0]}); running them through tsx`);
    return false;
  }
  const link = (rel: string) => {
    if (existsSync(join(out, rel))) return;
    mkdirSync(dirname(join(out, rel)), { recursive: true });
    symlinkSync(realpathSync(join(repo, rel)), join(out, rel));
  };
  for (const rel of [...sources, 'node_modules']) link(rel);
  // Then each suite bundled over its compiled file (test/helpers/bundle-suites.ts); the per-file
  // compile stays beside it for what the suites start by path. LDS_TEST_BUNDLE=0: file by file.
  if (BUNDLE) {
    // The bundles take the client package from its dist/, which the compile of build/ makes first.
    await buildDone;
    // Imported here, not at the top: a runner that compiles nothing (no tsconfig.test.json) needs no bundler.
    const { bundleSuites } = await import('./helpers/bundle-suites.ts');
    const notBundled = await bundleSuites(repo, out, readdirSync(here).filter((f) => f.endsWith('.test.ts')));
    if (notBundled) console.error(`note: the suites run file by file, not bundled: ${notBundled}`);
  }
  return true;
}

/** The folders the suites are compiled from (tsconfig.test.json's include) and mirrored beside them. */
const SUITE_DIRS = ['cli', 'client', 'contract', 'generator', 'payments', 'sim', 'test'];

/**
 * Every file of SUITE_DIRS, in a fixed order, and cli.ts and package.json: what is compiled or
 * linked beside the compiled suites. node_modules folders and client/dist are taken whole (linked,
 * not walked): they are not sources.
 */
function suiteSources(): string[] {
  const out: string[] = [];
  const walk = (rel: string): void => {
    for (const e of readdirSync(join(repo, rel), { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const path = join(rel, e.name);
      if (e.isDirectory() && e.name !== 'node_modules' && path !== join('client', 'dist')) walk(path);
      else out.push(path);
    }
  };
  for (const dir of SUITE_DIRS) walk(dir);
  return [...out, 'cli.ts', 'package.json'];
}

/**
 * What the compiled suites depend on: the repository's place, the path of every source (each is
 * compiled or linked), the bytes of every TypeScript and JSON file, the tsconfigs, the bundler
 * (scripts/bundle.mjs), and the compiler's and esbuild's versions (their package.json files). A new
 * or removed file, an edit, a new compiler or bundler makes a new compile (scripts/build-state.mjs: a
 * suite imports it).
 */
function suitesHash(sources: string[]): string {
  const h = createHash('sha256').update(`${realpathSync(repo)}\n`);
  h.update(BUNDLE ? 'bundled\n' : 'file by file\n');
  for (const rel of [...sources, 'scripts/bundle.mjs', 'scripts/build-state.mjs', 'tsconfig.json', 'tsconfig.test.json', 'tsconfig.build.json', join('node_modules', 'typescript', 'package.json'), join('node_modules', 'esbuild', 'package.json')]) {
    h.update(`${rel}\n`);
    if (/\.(ts|json|mjs)$/.test(rel) && statSync(join(repo, rel)).isFile()) h.update(readFileSync(join(repo, rel)));
  }
  return h.digest('hex').slice(0, 16);
}

/**
 * The compiled suites for the sources as they are: reused from build/test-js/<hash>/ when an
 * earlier run compiled the same inputs, else compiled into a folder of this run and renamed into
 * place (two runs at once never see a half-written one). Other compiles no run used for an hour
 * are removed (~6 MB each); null when the compile failed (the suites then run through tsx).
 */
async function compiledSuites(buildDone: Promise<unknown>): Promise<string | null> {
  const root = join(repo, 'build', 'test-js');
  const sources = suiteSources();
  const hash = suitesHash(sources);
  const dir = join(root, hash);
  mkdirSync(root, { recursive: true });
  for (const e of readdirSync(root)) {
    // other compiles (and folders of interrupted ones), unless a run used them in the last hour: a
    // run of another version of the sources may still be going
    const path = join(root, e);
    if (e !== hash && Date.now() - statSync(path).mtimeMs > 3_600_000) rmSync(path, { recursive: true, force: true });
  }
  if (existsSync(join(dir, COMPILED))) {
    const now = new Date();
    utimesSync(dir, now, now); // used now: kept from the pruning above for an hour
    return dir;
  }
  const tmp = `${dir}.${process.pid}`;
  if (!(await compileSuites(tmp, sources, buildDone))) return null;
  writeFileSync(join(tmp, COMPILED), `${new Date().toISOString()}\n`);
  try {
    renameSync(tmp, dir);
  } catch {
    rmSync(tmp, { recursive: true, force: true }); // another run put the same compile in place first
  }
  return dir;
}
const COMPILED = '.compiled';
let cpuReports = 0;

function runFile(file: string, backend: Backend | null, slot: number): Promise<Finished> {
  return new Promise((resolve) => {
    const started = performance.now();
    const program = compiled ? ['--enable-source-maps', join(compiled, 'test', file.replace(/\.ts$/, '.js'))] : ['--import', 'tsx', join(suitesDir, file)];
    const n = cpuReports++;
    const cpuOut = join(runTmp, `cpu-${n}`);
    // The file's own temporary folder, removed as soon as it ends (while the other files run) rather
    // than with the whole run at its end, when nothing else is left to do (~15 s of a run's end).
    // Named after the run (LDS_TEST_KEEP_TMP=1 leaves it to look at): <file>-<backend>-<n>.
    const fileTmp = join(runTmp, `${file.replace(/\.test\.ts$/, '')}${backend ? `-${backend}` : ''}-${n}`);
    mkdirSync(fileTmp, { mode: 0o755 });
    chmodSync(fileTmp, 0o755); // whatever the umask: the postgres and web-server users enter it
    const child = spawn(process.execPath, ['--import', CPU_REPORT, ...program], {
      stdio: ['ignore', 'pipe', 'pipe'],
      // LDS_TEST_SLOT: which of the JOBS slots runs the file (one file at a time in each), for the
      // ports whose builds are the same in every file of a slot (test/helpers/http.ts slotPort).
      env: { ...process.env, TMPDIR: fileTmp, FORCE_COLOR: '0', LDS_TEST_CPU_OUT: cpuOut, LDS_TEST_SLOT: String(slot), ...(backend ? { LDS_TEST_BACKEND: backend } : {}) },
    });
    // Both streams in the order they arrived, printed whole when the file ends (several files run at once).
    let out = '';
    let output = '';
    child.stdout.on('data', (d) => { out += d; output += d; });
    child.stderr.on('data', (d) => { output += d; });
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, FILE_TIMEOUT_MS);
    child.on('close', (code) => {
      clearTimeout(timer);
      if (!KEEP_TMP) removals.push(rm(fileTmp, { recursive: true, force: true }).catch(() => {}));
      if (timedOut) output += `\nkilled: still running after ${FILE_TIMEOUT_MS / 1000} s (LDS_TEST_FILE_TIMEOUT_S)\n`;
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
      const crashed = (code !== 0 || timedOut) && failed === 0;
      const empty = total === 0 && skipped === 0;
      if (crashed || empty) failed = Math.max(failed, 1);
      const skips = [...out.matchAll(/^SKIP (.*)$/gm)].map((m) => m[1]!);
      // uvu prints nothing when a `before` hook throws: the file's tests count as failed, silently.
      if (total > 0 && passed === 0 && !/\bFAIL\b/.test(out)) output += `\nnote: none of this file's ${total} tests ran and nothing says why: a before hook threw, and uvu does not print its error (wrap the hook in failLoudly, test/helpers/nginx.ts, to see it)\n`;
      let cpuSeconds: number | null = null;
      try {
        cpuSeconds = Number(readFileSync(cpuOut, 'utf8'));
      } catch {
        // killed, or no /proc: not known
      }
      resolve({ passed, failed, skipped, crashed, empty, skips, output, seconds: (performance.now() - started) / 1000, cpuSeconds });
    });
  });
}

/** Runs a program of the runner's own (a compiler) to its end: its exit code and its output, both streams. */
function runProgram(cmd: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (err) => resolve({ code: null, output: `${cmd}: ${err.message}` }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

// `npm start` compiles build/ when it is older than the sources: do it once, before any suite runs,
// and let the suites run `lds` from it.
async function ensureBuild(): Promise<void> {
  const script = join(repo, 'scripts', 'ensure-build.mjs');
  if (!existsSync(script)) return;
  const compiled = await runProgram(process.execPath, [script]);
  process.stdout.write(compiled.output);
  if (compiled.code === 0) process.env.LDS_TEST_CLI_JS = join(repo, 'build', 'cli.js');
  else console.error('error: build/ did not compile (see above); the suites that run `npm start` will fail, the others run cli.ts through tsx');
}

process.env.LDS_TEST_FIXTURE_CACHE = fixtureCacheRoot();
// The build's compression cache (generator/compress-cache.ts) beside the fixtures, not in the home folder.
process.env.LDS_BUILD_CACHE ??= join(process.env.LDS_TEST_FIXTURE_CACHE, 'compress');
// Node 22.1 and later keep V8's compiled code of the modules a process loads in this folder, checked
// against each module's source (Node 20 ignores it). Compiling the bundles shows in every suite's
// process and CLI command; the whole suite on Node 24.22.3, warm: 728 CPU-s with it, 743 without
// (392 s and 396 s). NODE_DISABLE_COMPILE_CACHE=1 turns it off.
process.env.NODE_COMPILE_CACHE ??= join(process.env.LDS_TEST_FIXTURE_CACHE, 'node-compile');
pruneFixtureCache();
// The catalog-src the suites build: the shipped one with a small real subset of its 1,504 EUR-Lex
// acts (test/helpers/test-catalog.ts), made once per machine; LDS_TEST_CATALOG_SRC=shipped builds the real one.
if (process.env.LDS_TEST_CATALOG_SRC === 'shipped') delete process.env.LDS_TEST_CATALOG_SRC;
else process.env.LDS_TEST_CATALOG_SRC ??= await testCatalogSrc();
// The suites' temporary folders (stores, ledgers, builds, web roots, PostgreSQL clusters: ~3 GB a
// run) go into one folder of this run, a folder per file in it (its TMPDIR), each removed when its
// file ends: left in the temp folder they filled a 50 GB disk in a few runs. What the files of a
// run share (the PostgreSQL template cluster and binaries, test/helpers/pg-cluster.ts and
// pg-start.ts) is in the run's folder itself (LDS_TEST_RUN_DIR); caches that outlive a run
// (fixtures, the file durations) stay in the temp folder. 0755: the postgres and web-server users
// enter it. LDS_TEST_KEEP_TMP=1 keeps it all, to look at what a failing suite left.
const KEEP_TMP = process.env.LDS_TEST_KEEP_TMP === '1';
const runTmp = mkdtempSync(join(runRoot.dir, 'lds-test-run-'));
chmodSync(runTmp, 0o755);
process.env.TMPDIR = runTmp;
process.env.LDS_TEST_RUN_DIR = runTmp;
/** The removals of finished files' folders, still going. */
const removals: Promise<void>[] = [];
// Before any suite: build/, the suites' own compile and the run's PostgreSQL, all at once (each
// waits on its own programs: two compilers, a server's start). The suites' bundles wait for build/.
const setupStarted = performance.now();
const buildDone = ensureBuild();
const [compiled] = await Promise.all([!process.env.LDS_TEST_TSX && suitesDir === here && existsSync(join(repo, 'tsconfig.test.json')) ? compiledSuites(buildDone) : null, buildDone, startRunPostgres()]);
console.log(`# ready to run the suites after ${((performance.now() - setupStarted) / 1000).toFixed(1)} s (build/, the suites' compile${pgStop ? ', PostgreSQL' : ''})`);
// Where the suites find the programs they start by path, compiled too (test/helpers/own-programs.ts).
if (compiled) process.env.LDS_TEST_COMPILED = compiled;

const sum = { passed: 0, failed: 0, skipped: 0 };
const failedFiles: string[] = [];
/** Each failed file's whole output, kept in a file named at the end (test/helpers/failure-log.ts). */
const failures: FailedRun[] = [];
const runStartedAt = new Date();
const skipReasons: string[] = [];
const took: Record<string, number> = { ...lastDurations };
const thisRun: [string, number, number | null][] = [];
const wallStarted = performance.now();
console.log(`# ${runs.length} runs of ${files.length} files${quick ? ' (quick tier)' : ''}, ${JOBS} at a time; their files in ${runTmp} (${runRoot.why})`);
let next = 0;
async function worker(slot: number): Promise<void> {
  while (next < runs.length) {
    const { file: name, backend } = runs[next++]!;
    const file = runName(name, backend);
    if (backend === 'postgres' && pgMissing) {
      console.log(`\n# ${file}\nnot run: no PostgreSQL (see the error above)`);
      sum.failed++;
      failedFiles.push(`${file} (no PostgreSQL)`);
      failures.push({ name: file, file: name, backend, why: 'not run: no PostgreSQL', seconds: 0, output: `${pgMissing}\n` });
      continue;
    }
    const t = await runFile(name, backend, slot);
    process.stdout.write(`\n# ${file} (${t.seconds.toFixed(1)} s${t.cpuSeconds === null ? '' : `, ${t.cpuSeconds.toFixed(1)} CPU-s`})\n${t.output}`);
    took[file] = Math.round(t.seconds * 10) / 10;
    thisRun.push([file, t.seconds, t.cpuSeconds]);
    sum.passed += t.passed;
    sum.failed += t.failed;
    sum.skipped += t.skipped;
    if (t.failed > 0) {
      const why = t.crashed ? 'exited non-zero' : t.empty ? 'ran no tests' : `${t.failed} test${t.failed === 1 ? '' : 's'} failed`;
      failedFiles.push(file + (t.crashed || t.empty ? ` (${why})` : ''));
      failures.push({ name: file, file: name, backend, why, seconds: t.seconds, output: t.output });
    }
    skipReasons.push(...t.skips);
  }
}
await Promise.all(Array.from({ length: Math.min(JOBS, runs.length) }, (_, slot) => worker(slot)));
await pgStop?.();
if (KEEP_TMP) console.log(`\n# temporary files of this run kept in ${runTmp}`);
else {
  await Promise.all(removals);
  rmSync(runTmp, { recursive: true, force: true });
}
try {
  writeFileSync(DURATIONS, JSON.stringify(took, null, 1));
} catch {
  // only an ordering hint for the next run
}
const slowest = thisRun.sort((a, b) => b[1] - a[1]).slice(0, 10);
const fileSeconds = thisRun.reduce((s, [, t]) => s + t, 0);
const fileCpu = thisRun.reduce((s, [, , c]) => s + (c ?? 0), 0);
console.log(`\nslowest files (of ${thisRun.length} runs: ${fileSeconds.toFixed(0)} s of file time and ${fileCpu.toFixed(0)} CPU-s in ${((performance.now() - wallStarted) / 1000).toFixed(0)} s wall, ${JOBS} at a time):`);
for (const [file, seconds, cpu] of slowest) console.log(`  ${seconds.toFixed(1).padStart(6)} s ${cpu === null ? '' : `${cpu.toFixed(1).padStart(6)} CPU-s`}  ${file}`);
if (skipReasons.length) console.log(`\nskipped:\n${skipReasons.map((r) => `  ${r}`).join('\n')}`);
if (failedFiles.length) console.log(`\nfailing files: ${failedFiles.join(', ')}`);
// Never in the way of the closing line: a log that cannot be written is said, and the run still ends with it.
try {
  const log = writeFailureLog(failureDir(osTmp), failures, { startedAt: runStartedAt, repo, command: `npm test${args.length ? ` -- ${args.join(' ')}` : ''}` });
  if (log) console.log(`the whole output of each failing file, its seeds and how to run it again: ${log}`);
} catch (err) {
  console.log(`the failing files' output could not be kept: ${(err as Error).message}`);
}
console.log(`\n${sum.passed} passed, ${sum.failed} failed${sum.skipped ? `, ${sum.skipped} skipped` : ''}`);
// Exit explicitly: whatever a helper left running, the status is what the tests said.
process.exit(sum.failed > 0 || runs.length === 0 ? 1 : 0);
