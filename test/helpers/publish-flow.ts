// The publish of a second catalogue version through `lds publish`, seen by a real web server and a
// client that cached the first: shared by the nginx, Apache and Caddy suites. Two real builds
// (--no-store, differing only in their build clock, so every document with a date differs) are
// published to a web root whose `current` release the server includes; a loop of GETs runs during
// the publish and checks every answer against the release its ETag names: never a failure, never
// one release's bytes under another's tag.
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { build } from '../../generator/build.ts';
import { CATALOG_SRC, LDS_ARGS, runAsync, tempDir, type RunResult } from './build.ts';
import { fileFor, rawGet } from './hosting-checks.ts';

export interface Built {
  dir: string;
  version: string;
}

/** Two builds of catalog-src for `origin`, one day apart on the build clock. */
export async function twoBuilds(origin: string): Promise<[Built, Built]> {
  const out: Built[] = [];
  for (const epoch of [1_700_000_000, 1_700_086_400]) {
    const dir = join(await tempDir('build'), 'dist');
    const r = await build({ srcDir: CATALOG_SRC, outDir: dir, storeRoot: join(dir, '..', 'store'), noStore: true, localOrigin: origin, sourceDateEpoch: epoch });
    out.push({ dir, version: r.version });
  }
  assert.is.not(out[0]!.version, out[1]!.version, 'two builds, two versions');
  return out as [Built, Built];
}

/** `lds publish …` as an operator runs it (its own process; this one keeps serving requests). */
export function publishCli(args: string[]): Promise<RunResult> {
  return runAsync(process.execPath, [...LDS_ARGS, 'publish', ...args]);
}

const TAG = /^"(catalogue-[0-9a-f]{12})(gzip|br)?"$/;
const LOOP_PATHS = ['/v1/lds/_catalog', '/', '/llms.txt', '/docs/', '/index.html'];
const CODINGS = ['identity', 'gzip', 'br'];

/** What a client gets for the catalogue now: its tag's version and the body's. */
export async function servedVersion(origin: string): Promise<{ tag: string; version: string; body: Buffer }> {
  const res = await rawGet(`${origin}/v1/lds/_catalog`, { 'Accept-Encoding': 'identity' });
  assert.is(res.status, 200);
  const version = JSON.parse(res.body.toString()).version as string;
  return { tag: String(res.headers.etag), version, body: res.body };
}

/**
 * Until the server answers `version` on five new connections in a row. One answer is not enough:
 * during a graceful reload (nginx, Apache, Caddy) a worker of the old configuration may still
 * accept a connection or two after a new worker answered, and it answers, consistently, the old
 * release with its own tag.
 */
async function waitForVersion(origin: string, version: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (let inARow = 0; inARow < 5; ) {
    const now = await servedVersion(origin);
    inARow = now.tag === `"${version}"` ? inARow + 1 : 0;
    if (inARow === 0 && Date.now() > deadline) throw new Error(`the server still answers ${now.tag} 30 s after the publish of ${version}`);
    if (inARow === 0) await new Promise((r) => setTimeout(r, 50));
  }
}

/** GETs in a loop until stopped (at most 90 s): every answer checked against the release its tag names. */
function getLoop(origin: string, web: string) {
  const failures: string[] = [];
  const resets: string[] = [];
  const seen = new Set<string>();
  let requests = 0;
  let stopped = false;
  const started = Date.now();
  const worker = async (n: number) => {
    for (let i = n; !stopped && Date.now() - started < 90_000; i++) {
      const path = LOOP_PATHS[i % LOOP_PATHS.length]!;
      const coding = CODINGS[Math.floor(i / LOOP_PATHS.length) % CODINGS.length]!;
      requests++;
      let res;
      try {
        res = await rawGet(origin + path, { 'Accept-Encoding': coding });
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        (e.code === 'ECONNRESET' ? resets : failures).push(`${path} (${coding}): ${e.message}`);
        continue;
      }
      const m = TAG.exec(String(res.headers.etag));
      if (res.status !== 200 || !m) {
        failures.push(`${path} (${coding}): ${res.status}, ETag ${res.headers.etag}`);
        continue;
      }
      const [, version, tagCoding] = m;
      seen.add(version!);
      if ((res.headers['content-encoding'] ?? undefined) !== tagCoding) failures.push(`${path}: Content-Encoding ${res.headers['content-encoding']} under the tag ${res.headers.etag}`);
      const file = await fileFor(join(web, 'releases', version!), path);
      const expected = await readFile(tagCoding ? `${file}.${tagCoding === 'gzip' ? 'gz' : 'br'}` : file).catch(() => null);
      if (!expected || !res.body.equals(expected)) failures.push(`${path} (${coding}): the bytes are not those of ${version} that its tag ${res.headers.etag} names`);
    }
  };
  const workers = [worker(0), worker(7)];
  return {
    async stop() {
      stopped = true;
      await Promise.all(workers);
      return { failures, resets, seen, requests };
    },
  };
}

export interface Host {
  origin: string;
  reloadCommand: string;
  /**
   * Why this server may reset a connection that arrives during its reload (a reset is never a wrong
   * answer: the client retries). Unset: a reset is a failure like any other.
   */
  resetsDuringReload?: string;
}

/** Connection resets tolerated per reload when the server's reload is known to cause them. */
const MAX_RESETS_PER_RELOAD = 2;

/**
 * The whole publish, on a server that is already serving v1 from `web` (published with
 * publishCli before it started): a client caches v1; v2 is published through `lds publish` with
 * the server's reload hook while GETs run; the client's v1 tag then gets v2's bytes and tag;
 * publishing v2 again is a no-op; --rollback brings v1 back.
 */
export async function publishFlow(web: string, host: Host, [v1, v2]: [Built, Built]): Promise<void> {
  // A client caches v1.
  const cached = await servedVersion(host.origin);
  assert.is(cached.tag, `"${v1.version}"`, 'v1 is served first');
  assert.ok(cached.body.equals(await readFile(join(v1.dir, 'v1/lds/_catalog'))), "v1's bytes");

  const loop = getLoop(host.origin, web);
  await new Promise((r) => setTimeout(r, 300)); // the loop is running before the publish starts
  const published = await publishCli(['--from', v2.dir, '--to', web, '--reload', host.reloadCommand]);
  assert.is(published.code, 0, `lds publish v2: ${published.stderr}`);
  assert.match(published.stdout, `published ${v2.version}`);
  assert.match(published.stderr, /\[publish\] reloading the web server/, 'progress on stderr');
  await waitForVersion(host.origin, v2.version);
  await new Promise((r) => setTimeout(r, 300)); // and still running after the switch
  const report = await loop.stop();
  const failures = host.resetsDuringReload ? report.failures : [...report.failures, ...report.resets];
  assert.equal(failures, [], `${failures.length} of ${report.requests} requests during the switch failed:\n${failures.slice(0, 10).join('\n')}`);
  if (host.resetsDuringReload && report.resets.length) {
    console.log(`  note: ${report.resets.length} of ${report.requests} connections reset during the reload (${host.resetsDuringReload})`);
    assert.ok(report.resets.length <= MAX_RESETS_PER_RELOAD, `connections reset during one reload: ${report.resets.length}:\n${report.resets.join('\n')}`);
  }
  assert.ok(report.requests >= 20, `requests during the switch: ${report.requests}`);
  assert.ok(report.seen.has(v1.version) && report.seen.has(v2.version), `the loop saw both versions: ${[...report.seen].join(', ')}`);

  // The client's v1 tag: v2's bytes and tag.
  const revalidated = await rawGet(`${host.origin}/v1/lds/_catalog`, { 'If-None-Match': cached.tag, 'Accept-Encoding': 'identity' });
  assert.is(revalidated.status, 200, 'If-None-Match: v1 after the publish of v2');
  assert.is(revalidated.headers.etag, `"${v2.version}"`);
  assert.ok(revalidated.body.equals(await readFile(join(v2.dir, 'v1/lds/_catalog'))), "v2's bytes");
  assert.is(JSON.parse(revalidated.body.toString()).version, v2.version);
  const current = await rawGet(`${host.origin}/v1/lds/_catalog`, { 'If-None-Match': `"${v2.version}"` });
  assert.is(current.status, 304, "v2's tag is current");

  // Publishing the same version again changes nothing.
  const again = await publishCli(['--from', v2.dir, '--to', web, '--reload', host.reloadCommand]);
  assert.is(again.code, 0, again.stderr);
  assert.match(again.stdout, `${v2.version} is already the current release`);
  assert.match(again.stdout, 'nothing to do');

  // --rollback brings v1 back.
  const back = await publishCli(['--to', web, '--rollback', '--reload', host.reloadCommand]);
  assert.is(back.code, 0, `lds publish --rollback: ${back.stderr}`);
  assert.match(back.stdout, `rolled ${web} back to ${v1.version}`);
  await waitForVersion(host.origin, v1.version);
  const old = await rawGet(`${host.origin}/v1/lds/_catalog`, { 'If-None-Match': `"${v2.version}"`, 'Accept-Encoding': 'identity' });
  assert.is(old.status, 200, "v2's tag after the rollback");
  assert.is(old.headers.etag, `"${v1.version}"`);
  assert.ok(old.body.equals(await readFile(join(v1.dir, 'v1/lds/_catalog'))), "v1's bytes again");
}
