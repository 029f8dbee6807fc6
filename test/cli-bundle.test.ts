// @tier: quick
// The bundled CLI (scripts/bundle.mjs): build/cli.js, which `npm start` and the suites run, is
// esbuild's bundle, and every address its modules find from their own place (import.meta.url,
// written in as their compiled copy's address relative to the bundle) names a file that exists;
// the search and ingest workers start from there. The other suites run the bundle for every `lds`
// command; the workers only start on large inputs, which they do not build, hence this check.
// bin/lds.mjs (`npx lds`) runs the same bundle while build/ is current, the TypeScript otherwise.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildStaleness } from '../scripts/build-state.mjs';
import { REPO, tempDir } from './helpers/build.ts';

/** build/ as test/run.ts compiled it for this run (LDS_TEST_CLI_JS), else the repository's. */
const cliJs = process.env.LDS_TEST_CLI_JS ?? join(REPO, 'build', 'cli.js');
const build = dirname(cliJs);
const bundleFiles = () => ['cli.js', ...readdirSync(build).filter((f) => f.startsWith('chunk-') && f.endsWith('.js'))];

/** Every `new URL("./…", import.meta.url)` the bundle holds: our modules' own addresses. */
function ownAddresses(): Set<string> {
  const found = new Set<string>();
  for (const f of bundleFiles()) {
    for (const m of readFileSync(join(build, f), 'utf8').matchAll(/new URL\("(\.\/[^"]+)", import\.meta\.url\)/g)) found.add(m[1]!);
  }
  return found;
}

test('build/cli.js is the bundle, with its chunks beside it', () => {
  assert.ok(existsSync(cliJs), `${cliJs} is missing: run the suites with npm test, which compiles build/ first`);
  const head = readFileSync(cliJs, 'utf8').slice(0, 2000);
  assert.match(head, '__ldsCreateRequire', 'build/cli.js is not the bundle (scripts/bundle.mjs did not run, or failed: see the runner\'s first lines)');
  assert.ok(bundleFiles().length > 10, `expected the chunks of the service and the generator beside cli.js, found ${bundleFiles().length - 1}`);
});

test('every module address in the bundle names its compiled copy, and the workers beside them exist', () => {
  const addresses = ownAddresses();
  for (const own of ['./cli.js', './payments/store/search-threads.js', './generator/store/parallel-lines.js']) assert.ok(addresses.has(own), `the bundle does not carry ${own}'s own address (found: ${[...addresses].join(', ')})`);
  for (const a of addresses) assert.ok(existsSync(join(build, a)), `the bundle names ${a}, which build/ does not hold`);
  for (const worker of ['./payments/store/search-worker.js', './generator/store/ingest-worker.js']) assert.ok(existsSync(join(build, worker)), `${worker} is missing beside the module that starts it`);
});

test('a search worker starts from the address the bundle gives its module, and answers', async () => {
  // As startWorker (contract/worker-thread.ts) does from search-threads.js's address. A job with no
  // lists makes the worker's handler answer with an error: an answer at all means it loaded.
  const searchThreads = new URL('./payments/store/search-threads.js', pathToFileURL(cliJs));
  const at = new URL('./search-worker.js', searchThreads);
  const worker = new Worker(at);
  const answer = await new Promise<unknown>((resolve) => {
    worker.once('message', resolve);
    worker.once('error', (err) => resolve(`did not start: ${err.message}`));
    worker.postMessage({ id: 7, lists: null });
  });
  await worker.terminate();
  assert.type((answer as { error?: unknown }).error, 'string', `the search worker at ${fileURLToPath(at)}: ${JSON.stringify(answer)}`);
  assert.is((answer as { id?: unknown }).id, 7);
});

/**
 * The first module bin/lds.mjs loads of the program, `build/cli.js` or `cli.ts`, as Node's ES module
 * loader logs it (NODE_DEBUG=esm, the same on Node 20 and 24), and what --help printed.
 */
function binRuns(env: Record<string, string> = {}): { loaded: string | undefined; help: string } {
  // maxBuffer: Node 24's loader log through tsx runs to megabytes (it prints every module's source map).
  const r = spawnSync(process.execPath, [join(REPO, 'bin', 'lds.mjs'), '--help'], { cwd: build, encoding: 'utf8', maxBuffer: 256 << 20, env: { ...process.env, NODE_DEBUG: 'esm', ...env } });
  assert.is(r.status, 0, r.stderr.slice(-2000));
  const loaded = /file:\/\/\S*?\/(build\/cli\.js|cli\.ts)\b/.exec(r.stderr)?.[1];
  return { loaded, help: r.stdout };
}

test('npx lds (bin/lds.mjs) runs the bundle while build/ is current, the TypeScript through tsx when told to, with the same help', () => {
  assert.is(buildStaleness(REPO), null, 'the runner compiled build/ before the suites (scripts/ensure-build.mjs)');
  const bundled = binRuns();
  assert.is(bundled.loaded, 'build/cli.js');
  const tsx = binRuns({ LDS_TSX: '1' });
  assert.is(tsx.loaded, 'cli.ts');
  assert.match(bundled.help, /^Usage: lds \[options\] \[command\]/m);
  assert.is(bundled.help, tsx.help);
});

test('build/ is current only with a stamp newer than every source and the client package built', async () => {
  const root = await tempDir('build-state');
  const file = (rel: string, mtimeS: number) => {
    mkdirSync(dirname(join(root, rel)), { recursive: true });
    writeFileSync(join(root, rel), '{}\n');
    utimesSync(join(root, rel), mtimeS, mtimeS);
  };
  const T = 1_767_225_600;
  file('payments/http/app.ts', T);
  file('client/src/index.ts', T);
  assert.is(buildStaleness(root), 'never built');
  file('build/.stamp', T + 10);
  assert.is(buildStaleness(root), 'client package not built');
  file('client/dist/client/index.js', T + 5);
  assert.is(buildStaleness(root), null);
  // a file the compile does not read (client/dist, node_modules, a README) may be newer
  file('client/dist/client/other.json', T + 20);
  file('node_modules/x/index.ts', T + 20);
  file('payments/README.txt', T + 20);
  assert.is(buildStaleness(root), null);
  file('payments/http/app.ts', T + 11); // an edit after the compile
  assert.is(buildStaleness(root), 'sources changed');
  file('payments/http/app.ts', T);
  file('scripts/bundle.mjs', T + 11); // the bundler too
  assert.is(buildStaleness(root), 'sources changed');
});

test.run();
