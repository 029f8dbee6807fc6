// `lds publish` on a web root, without a web server: the release layout and its pins, the atomic
// switch of current (and previous), publishing the same version again, a release published before
// reused, --keep (never the current or previous release), --rollback (and undoing it), a failing
// reload hook (exit 2, the message says what is served and how to go back), refusals that change
// nothing. Three real builds (--no-store) differing in their build clock.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { lstat, readdir, readFile, readlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from '../generator/build.ts';
import { CATALOG_SRC, tempDir } from './helpers/build.ts';
import { failLoudly } from './helpers/nginx.ts';
import { publishCli, type Built } from './helpers/publish-flow.ts';

let b: Built[] = [];
let web: string;

test.before(() =>
  failLoudly(async () => {
    for (const epoch of [1_700_000_000, 1_700_086_400, 1_700_172_800]) {
      const dir = join(await tempDir('build'), 'dist');
      const r = await build({ srcDir: CATALOG_SRC, outDir: dir, storeRoot: join(dir, '..', 'store'), noStore: true, sourceDateEpoch: epoch });
      b.push({ dir, version: r.version });
    }
    web = join(await tempDir('web'), 'root');
  }),
);

const link = async (name: string) => readlink(join(web, name)).catch(() => null);
const releases = async () => (await readdir(join(web, 'releases'))).sort();

test('--help names every option and the exit codes', async () => {
  const r = await publishCli(['--help']);
  assert.is(r.code, 0);
  for (const flag of ['--to', '--from', '--reload', '--keep', '--rollback', '--server-dir']) assert.ok(r.stdout.includes(flag), flag);
  assert.match(r.stdout, /Exit codes/);
});

test('refusals change nothing: no build, no web root given, a current that is not a link', async () => {
  const none = await publishCli(['--from', join(web, 'nowhere'), '--to', web]);
  assert.is(none.code, 1);
  assert.match(none.stderr, /holds no build .*run `lds build` first/);
  const noTo = await publishCli(['--from', b[0]!.dir]);
  assert.is(noTo.code, 1);
  assert.match(noTo.stderr, /--to/);
  const badKeep = await publishCli(['--from', b[0]!.dir, '--to', web, '--keep', '0']);
  assert.is(badKeep.code, 1);
  assert.match(badKeep.stderr, /--keep must be .* at least 1/);
  assert.is(await link('current'), null, 'nothing was switched');
});

test('the first publish writes releases/<version> with its pins and points current at it', async () => {
  const r = await publishCli(['--from', b[0]!.dir, '--to', web, '--reload', 'echo reload-ran']);
  assert.is(r.code, 0, r.stderr);
  assert.is(r.stdout.trim(), `published ${b[0]!.version} to ${web}`);
  assert.match(r.stderr, /\[publish\] copying/);
  assert.match(r.stderr, /reload-ran/, "the hook's output is shown");
  assert.is(await link('current'), `releases/${b[0]!.version}`);
  assert.ok((await lstat(join(web, 'current'))).isSymbolicLink());
  assert.is(await link('previous'), null);
  const rel = join(web, 'releases', b[0]!.version);
  // a complete copy of the build
  for (const f of ['v1/lds/_catalog', 'v1/lds/_catalog.br', '_headers', '_nginx/lds.conf', '_apache/lds.conf', '_caddy/lds.caddy'])
    assert.ok((await readFile(join(rel, f))).equals(await readFile(join(b[0]!.dir, f))), f);
  // the pins name the release folder by its absolute path
  assert.match(await readFile(join(rel, '_nginx/release.conf'), 'utf8'), `root "${rel}";\ninclude "${rel}/_nginx/lds.conf";`);
  assert.match(await readFile(join(rel, '_apache/release.conf'), 'utf8'), `DocumentRoot "${rel}"`);
  assert.match(await readFile(join(rel, '_caddy/release.caddy'), 'utf8'), `root * ${rel}\nimport ${rel}/_caddy/lds.caddy`);
  assert.equal(await releases(), [b[0]!.version], 'no temporary folder is left');
});

test('publishing the current version again is a no-op that says so (the hook is not run)', async () => {
  const r = await publishCli(['--from', b[0]!.dir, '--to', web, '--reload', 'echo reload-ran']);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, `${b[0]!.version} is already the current release of ${web}: nothing to do (the reload command was not run)`);
  assert.not.match(r.stderr, /reload-ran/);
});

test('a failing reload: exit 2, current is switched, the message says what is served and how to go back', async () => {
  const r = await publishCli(['--from', b[1]!.dir, '--to', web, '--reload', 'echo nginx: configuration test failed >&2; exit 3']);
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, 'nginx: configuration test failed');
  assert.match(r.stderr, 'the reload command exited with 3');
  assert.match(r.stderr, `now points at releases/${b[1]!.version} (before this switch: releases/${b[0]!.version})`);
  assert.match(r.stderr, 'most likely still serves the release it loaded last');
  assert.match(r.stderr, `lds publish --to ${web} --rollback`);
  assert.is(await link('current'), `releases/${b[1]!.version}`);
  assert.is(await link('previous'), `releases/${b[0]!.version}`);
});

test('--rollback switches back to the previous release; a second --rollback undoes it', async () => {
  const r = await publishCli(['--to', web, '--rollback']);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, `rolled ${web} back to ${b[0]!.version}`);
  // Issue 34: after the failed reload above no server ever loaded b[1]: the message without --reload
  // says what current names and claims nothing about what a server serves.
  assert.match(r.stderr, `no --reload command: ${join(web, 'current')} now points at releases/${b[0]!.version} (before this switch: releases/${b[1]!.version}); a running web server goes on serving the release it loaded last`);
  assert.not.match(r.stderr, /keeps serving catalogue-/);
  assert.is(await link('current'), `releases/${b[0]!.version}`);
  assert.is(await link('previous'), `releases/${b[1]!.version}`);
  const again = await publishCli(['--to', web, '--rollback']);
  assert.is(again.code, 0, again.stderr);
  assert.is(await link('current'), `releases/${b[1]!.version}`);
  assert.is(await link('previous'), `releases/${b[0]!.version}`);
});

test('a release published before is reused, not copied again', async () => {
  const marker = join(web, 'releases', b[0]!.version, 'marker-left-by-test');
  await writeFile(marker, 'x');
  const r = await publishCli(['--from', b[0]!.dir, '--to', web]);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stderr, 'already there (published before): switching back to it');
  assert.ok(await readFile(marker, 'utf8'), 'the same folder');
  assert.is(await link('current'), `releases/${b[0]!.version}`);
  assert.is(await link('previous'), `releases/${b[1]!.version}`);
});

test('--keep deletes the oldest releases but never the current or the previous one', async () => {
  // current b0, previous b1; publishing b2 with --keep 1: b2 current, b0 previous, b1 goes.
  const r = await publishCli(['--from', b[2]!.dir, '--to', web, '--keep', '1']);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stderr, `removed 1 old release (keeping 1): ${b[1]!.version}`);
  assert.equal(await releases(), [b[0]!.version, b[2]!.version].sort());
  assert.is(await link('current'), `releases/${b[2]!.version}`);
  assert.is(await link('previous'), `releases/${b[0]!.version}`);
  // With the default (5) nothing more goes.
  const back = await publishCli(['--from', b[1]!.dir, '--to', web]);
  assert.is(back.code, 0, back.stderr);
  assert.equal(await releases(), [b[0]!.version, b[1]!.version, b[2]!.version].sort());
});

test('a current that is not a symbolic link is refused, nothing changed', async () => {
  const other = join(await tempDir('web'), 'root');
  await publishCli(['--from', b[0]!.dir, '--to', other]);
  const dir = join(await tempDir('web'), 'plain');
  await (await import('node:fs/promises')).mkdir(join(dir, 'current'), { recursive: true });
  const r = await publishCli(['--from', b[0]!.dir, '--to', dir]);
  assert.is(r.code, 1);
  assert.match(r.stderr, /current is not a symbolic link \(it is a folder\)/);
  const none = await publishCli(['--to', other, '--rollback']);
  assert.is(none.code, 1);
  assert.match(none.stderr, /no previous release to roll back to/);
});

test.run();
