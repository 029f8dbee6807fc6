// Issue 50, item 22: an intermittent failure left no trace: one of three fresh-clone runs failed and its
// output was gone with the run. The runner (test/run.ts) now keeps each failed file's whole output, the
// lines that name its seed and how to run it again in a log it names in its closing lines, above
// "N passed, N failed", which stays the last line. Run here over two fixture suites
// (test/fixtures/runner/: one fails on purpose after printing a seed, one passes).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readdir, readFile, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO, runAsync } from './helpers/build.ts';

test('a failed file\'s whole output and its seed are kept in a file the closing lines name; "N passed, N failed" stays the last line', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'lds-runner-'));
  const failures = join(dir, 'failures');
  const r = await runAsync(process.execPath, ['--import', 'tsx', join(REPO, 'test', 'run.ts')], {
    cwd: REPO,
    timeoutMs: 300_000,
    env: { LDS_TEST_SUITES_DIR: join(REPO, 'test', 'fixtures', 'runner'), LDS_TEST_FAILURE_DIR: failures, LDS_TEST_TMP: dir, LDS_TEST_JOBS: '2', LDS_TEST_BACKEND: '' },
  });
  assert.is(r.code, 1, r.stdout + r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.is(lines.at(-1), '1 passed, 1 failed', 'the closing line is still the last');
  const named = lines.find((l) => l.startsWith('the whole output of each failing file, its seeds and how to run it again: '));
  assert.ok(named, `the closing lines name the log:\n${lines.slice(-8).join('\n')}`);
  assert.ok(lines.indexOf(named!) > lines.indexOf('failing files: fails-with-seed.test.ts'), 'after the failing files, before the closing line');
  const path = named!.slice(named!.indexOf(': ') + 2);
  assert.ok(path.startsWith(failures), path);
  assert.equal(await readdir(failures), [path.slice(failures.length + 1)]);
  assert.is((await stat(path)).mode & 0o777, 0o600);

  const log = await readFile(path, 'utf8');
  assert.match(log, /^# npm test failures of the run started \d{4}-\d\d-\d\dT/);
  assert.match(log, /\n# commit ([0-9a-f]{40}|unknown)/);
  assert.match(log, /\n## fails-with-seed\.test\.ts: 1 test failed after \d+\.\d s\n/);
  assert.match(log, /\nrun it again: npm test -- fails-with-seed\n/);
  assert.match(log, /\nseeds named in its output:\n {2}# seeded history: seed 424242\n/);
  // The whole output, not a tail: every step line and uvu's report of the assertion.
  for (let i = 0; i < 200; i++) assert.ok(log.includes(`step ${i} of the history\n`), `step ${i} is kept`);
  assert.match(log, /the deliberate failure of the runner fixture/);
  assert.not.match(log, /output of the passing fixture/, 'a file that passed is not in the log');
});

test('a run without failures writes no log', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'lds-runner-'));
  const failures = join(dir, 'failures');
  const r = await runAsync(process.execPath, ['--import', 'tsx', join(REPO, 'test', 'run.ts'), 'passes'], {
    cwd: REPO,
    timeoutMs: 300_000,
    env: { LDS_TEST_SUITES_DIR: join(REPO, 'test', 'fixtures', 'runner'), LDS_TEST_FAILURE_DIR: failures, LDS_TEST_TMP: dir, LDS_TEST_BACKEND: '' },
  });
  assert.is(r.code, 0, r.stdout + r.stderr);
  assert.is(r.stdout.trimEnd().split('\n').at(-1), '1 passed, 0 failed');
  assert.not.match(r.stdout, /the whole output of each failing file/);
  assert.equal(await readdir(failures).catch(() => []), []);
});

test.run();
