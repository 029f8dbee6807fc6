// Issue 34, "Security" items 2 and 3: `lds publish` (the real CLI, each run its own process) never
// writes outside --to through a symbolic link, and takes over the lock of a publish that died
// with exactly one winner.
//   2. a build holding a link (a folder linked out, a file linked to /etc/passwd) or any other
//      entry that is not a regular file or folder is refused, naming it, before anything is
//      written; so are a releases/ folder or a release of the web root that is a link.
//   3. a dead pid in .lds-publish.lock and five publishes reaching for the lock at one moment: one
//      publishes, the others refuse naming the process that holds the lock (or find the work
//      done); no raw error, no temporary folder left, the release whole.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { cp, lstat, mkdir, readdir, readFile, readlink, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import { watch as watchNow } from 'node:fs';
import { join } from 'node:path';
import { build } from '../generator/build.ts';
import { CATALOG_SRC, LDS_ARGS, runAsync, tempDir, type RunResult } from './helpers/build.ts';
import { failLoudly } from './helpers/nginx.ts';

let built: { dir: string; version: string };

test.before(() =>
  failLoudly(async () => {
    const dir = join(await tempDir('build'), 'dist');
    const r = await build({ srcDir: CATALOG_SRC, outDir: dir, storeRoot: join(dir, '..', 'store'), noStore: true, sourceDateEpoch: 1_700_000_000 });
    built = { dir, version: r.version };
  }),
);

/** `lds publish …` in a process of its own (up to 5 minutes: four start at once on a loaded machine). */
const publish = (args: string[], env: Record<string, string> = {}): Promise<RunResult> =>
  runAsync(process.execPath, [...LDS_ARGS, 'publish', ...args], { env, timeoutMs: 300_000 });

/** A private copy of the build (real files, not the dist/ link) that a test may change. */
async function buildCopy(): Promise<string> {
  const dir = join(await tempDir('evil-build'), 'dist');
  await cp(built.dir, dir, { recursive: true, dereference: true });
  return dir;
}

/** A folder outside the web root, empty; the tests check nothing was written into it. */
async function outside(): Promise<string> {
  const dir = join(await tempDir('outside'), 'outside');
  await mkdir(dir);
  return dir;
}

const entries = async (dir: string) => (await readdir(dir).catch(() => [] as string[])).sort();

// ---------------------------------------------------------------- 2. links

test('2. a build whose _nginx folder links out of it is refused, naming the link; nothing written anywhere', async () => {
  const from = await buildCopy();
  const out = await outside();
  await cp(join(from, '_nginx'), out, { recursive: true });
  const before = await entries(out);
  await rm(join(from, '_nginx'), { recursive: true });
  await symlink(out, join(from, '_nginx'));
  const web = join(await tempDir('web'), 'root');
  const r = await publish(['--from', from, '--to', web]);
  assert.is(r.code, 1, r.stderr + r.stdout);
  assert.match(r.stderr, `${join(from, '_nginx')} is a symbolic link (to ${out})`);
  assert.match(r.stderr, /only regular files and folders/);
  assert.equal(await entries(out), before, 'nothing written through the link (no release.conf)');
  assert.not.ok(await lstat(join(web, 'current')).catch(() => null), 'nothing switched');
  assert.equal(await entries(join(web, 'releases')), [], 'no release or temporary folder');
});

test('2. a plain link to /etc/passwd and a named pipe in a build are refused, naming them', async () => {
  const from = await buildCopy();
  await symlink('/etc/passwd', join(from, 'evil'));
  const web = join(await tempDir('web'), 'root');
  const link = await publish(['--from', from, '--to', web]);
  assert.is(link.code, 1);
  assert.match(link.stderr, `${join(from, 'evil')} is a symbolic link (to /etc/passwd)`);
  await unlink(join(from, 'evil'));
  assert.is(spawnSync('mkfifo', [join(from, 'docs', 'pipe')]).status, 0, 'mkfifo');
  const pipe = await publish(['--from', from, '--to', web]);
  assert.is(pipe.code, 1);
  assert.match(pipe.stderr, `${join(from, 'docs', 'pipe')} is a named pipe`);
  assert.not.ok(await lstat(join(web, 'current')).catch(() => null), 'nothing switched');
});

test('2. --to whose releases/ is a link out, or whose release folder is one, is refused; nothing written through it', async () => {
  // releases/ itself a link
  const web = join(await tempDir('web'), 'root');
  const out = await outside();
  await mkdir(web);
  await symlink(out, join(web, 'releases'));
  const r = await publish(['--from', built.dir, '--to', web]);
  assert.is(r.code, 1, r.stderr);
  assert.match(r.stderr, `${join(web, 'releases')} is a symbolic link (to ${out})`);
  assert.equal(await entries(out), []);
  // a dangling one is named the same way, not a raw error
  await unlink(join(web, 'releases'));
  await symlink(join(out, 'gone'), join(web, 'releases'));
  const dangling = await publish(['--from', built.dir, '--to', web]);
  assert.is(dangling.code, 1, dangling.stderr);
  assert.match(dangling.stderr, `${join(web, 'releases')} is a symbolic link (to ${join(out, 'gone')})`);

  // releases/<version> a link to a copy of the build elsewhere (a publish would reuse it and write its pins there)
  const web2 = join(await tempDir('web'), 'root');
  const out2 = await outside();
  await cp(built.dir, join(out2, 'copy'), { recursive: true, dereference: true });
  await mkdir(join(web2, 'releases'), { recursive: true });
  await symlink(join(out2, 'copy'), join(web2, 'releases', built.version));
  const reuse = await publish(['--from', built.dir, '--to', web2]);
  assert.is(reuse.code, 1, reuse.stderr);
  assert.match(reuse.stderr, `${join(web2, 'releases', built.version)} is a symbolic link`);
  assert.not.ok(await lstat(join(out2, 'copy', '_nginx', 'release.conf')).catch(() => null), 'no pin written through the link');

  // a link inside a release that is reused
  const web3 = join(await tempDir('web'), 'root');
  assert.is((await publish(['--from', built.dir, '--to', web3])).code, 0);
  assert.is((await publish(['--from', await otherBuild(), '--to', web3])).code, 0);
  const out3 = await outside();
  const rel = join(web3, 'releases', built.version);
  await rm(join(rel, '_caddy'), { recursive: true });
  await symlink(out3, join(rel, '_caddy'));
  const back = await publish(['--from', built.dir, '--to', web3]);
  assert.is(back.code, 1, back.stderr);
  assert.match(back.stderr, `${join(rel, '_caddy')} is a symbolic link (to ${out3})`);
  assert.equal(await entries(out3), []);
});

let second: string | undefined;
/** A second build (another build clock, so another version). */
async function otherBuild(): Promise<string> {
  if (second) return second;
  const dir = join(await tempDir('build'), 'dist');
  await build({ srcDir: CATALOG_SRC, outDir: dir, storeRoot: join(dir, '..', 'store'), noStore: true, sourceDateEpoch: 1_700_086_400 });
  return (second = dir);
}

// ---------------------------------------------------------------- 3. the lock

/**
 * Until `n` processes have said they are ready in `gate` (watching the folder, not polling; the
 * listener form of fs.watch, which watches from the call on and sees every change).
 */
async function readyIn(gate: string, n: number): Promise<void> {
  const count = async () => (await entries(gate)).filter((x) => x.startsWith('ready-')).length;
  await new Promise<void>((resolve, reject) => {
    const check = () => count().then((c) => c >= n && (watcher.close(), resolve()), reject);
    const watcher = watchNow(gate, check);
    watcher.on('error', reject);
    check();
  });
}

/** The pid of a process that has exited. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

test('3. a dead pid in the lock and five publishes at one moment: exactly one publishes, the others refuse naming it', async () => {
  const web = join(await tempDir('web'), 'root');
  await mkdir(web);
  const dead = deadPid();
  await writeFile(join(web, '.lds-publish.lock'), `${dead}\n`);
  // All five reach for the lock at one moment: each says it is ready, and all go together once
  // all are (the test hook of generator/publish-lock.ts). The winner holds the lock a second
  // longer (its reload command), so the others find it held.
  const gate = await tempDir('gate');
  const running = Array.from({ length: 5 }, () => publish(['--from', built.dir, '--to', web, '--reload', 'sleep 1'], { LDS_TEST_PUBLISH_LOCK_GATE: gate }));
  const ended = Promise.all(running).then((r) => {
    throw new Error(`every publish ended before all were ready: ${r.map((x) => x.stderr).join('\n')}`);
  });
  await Promise.race([readyIn(gate, 5), ended]);
  ended.catch(() => {});
  await writeFile(join(gate, 'go'), '');
  const runs = await Promise.all(running);
  const published = runs.filter((r) => r.code === 0 && r.stdout.includes(`published ${built.version} to ${web}`));
  assert.is(published.length, 1, runs.map((r) => `${r.code}: ${r.stdout}${r.stderr}`).join('\n---\n'));
  for (const r of runs) {
    if (r === published[0]) continue;
    const refused = r.code === 1 && /another lds publish \(process \d+\) is working on/.test(r.stderr);
    const done = r.code === 0 && r.stdout.includes('is already the current release');
    assert.ok(refused || done, `neither refused clearly nor found it done: ${r.code} ${r.stdout}${r.stderr}`);
    assert.not.match(r.stderr, /EEXIST|ENOENT/);
  }
  assert.is(await readlink(join(web, 'current')), `releases/${built.version}`);
  assert.equal(await entries(join(web, 'releases')), [built.version], 'no temporary folder left');
  const rel = join(web, 'releases', built.version);
  for (const f of ['v1/lds/_catalog', '_nginx/release.conf', '_apache/release.conf', '_caddy/release.caddy']) assert.ok((await readFile(join(rel, f))).length > 0, f);
  assert.equal((await entries(web)).filter((n) => n.startsWith('.')), [], 'no lock or temporary lock file left');
});

test.run();
