// Issue 32: the content-addressed cache of the .br/.gz variants (generator/compress-cache.ts).
// A build that takes every variant from the cache writes the same dist/ as one without a cache; a
// damaged entry is never published; a cache that cannot be used or written costs one warning and
// never the build; pruning keeps it bounded. Builds are in-process, without a store, at a fixed clock.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { chmod, mkdir, readdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { build } from '../generator/build.ts';
import { compressCacheDir, openCompressCache, pruneCompressCache } from '../generator/compress-cache.ts';
import { CODECS, compressedVariants } from '../generator/emit/compress.ts';
import { CATALOG_SRC, tempDir, treeDigest } from './helpers/build.ts';

const EPOCH = 1767225600;

/** A build without a store into a new folder; its dist/ digest and the progress lines about the cache. */
async function buildWith(compressCache: string | null) {
  const root = await tempDir('cc');
  const lines: string[] = [];
  const out = join(root, 'dist');
  await build({ srcDir: CATALOG_SRC, outDir: out, storeRoot: join(root, 'store'), noStore: true, localOrigin: 'http://127.0.0.1:8080', sourceDateEpoch: EPOCH, compressCache, progress: (m) => lines.push(m) });
  // The lines about the cache start so ("compressed variants: …", "compression cache … cannot be used"); the
  // folders' names may say compress too.
  return { digest: await treeDigest(out), cacheLines: lines.filter((l) => /^compress/.test(l)) };
}

const sorted = (m: Map<string, string>) => [...m.entries()].sort();

let reference: Map<string, string>;
let cache: string;

test('no cache, a cold cache and a warm one write byte-identical dist/; the warm build compresses nothing', async () => {
  const none = await buildWith(null);
  reference = none.digest;
  assert.ok([...reference.keys()].filter((p) => p.endsWith('.br')).length > 50, 'the build writes brotli variants');
  assert.equal(none.cacheLines, [], 'no cache: nothing said about one');
  cache = join(await tempDir('cc-cache'), 'compress');
  const cold = await buildWith(cache);
  const counts = (lines: string[]) => /: (\d+) from the cache .*, (\d+) made$/.exec(lines.join('\n'))!.slice(1).map(Number);
  const [coldHits, coldMade] = counts(cold.cacheLines); // a document whose bytes repeat another's is a hit even here
  assert.ok(coldMade! > 100 && coldHits! < 10, cold.cacheLines.join('\n'));
  const warm = await buildWith(cache);
  assert.equal(counts(warm.cacheLines), [coldHits! + coldMade!, 0], 'the warm build takes every variant from the cache');
  assert.equal(sorted(cold.digest), sorted(reference));
  assert.equal(sorted(warm.digest), sorted(reference));
  assert.is((await stat(cache)).mode & 0o777, 0o700, 'the cache folder is owner-only');
});

test('damaged cache entries are compressed again and rewritten, never published', async () => {
  const entries = (await readdir(cache)).filter((n) => /^[0-9a-f]{64}\.(br|gz)$/.test(n)).sort();
  const gz = entries.filter((n) => n.endsWith('.gz'));
  const br = entries.filter((n) => n.endsWith('.br'));
  const victims = [br[0]!, br[1]!, gz[0]!, gz[1]!];
  const before = await Promise.all(victims.map((n) => readFile(join(cache, n))));
  await writeFile(join(cache, victims[0]!), before[0]!.subarray(0, before[0]!.length >> 1)); // truncated
  const flipped = Buffer.from(before[1]!);
  flipped[flipped.length >> 1]! ^= 0xff;
  await writeFile(join(cache, victims[1]!), flipped); // one byte changed
  await writeFile(join(cache, victims[2]!), gzipSync('some other document, well formed')); // valid gzip of other bytes
  await writeFile(join(cache, victims[3]!), gzipSync(Buffer.alloc(1 << 24))); // a valid bomb: 16 MiB of zeros
  const r = await buildWith(cache);
  assert.match(r.cacheLines.join('\n'), /, 4 made, 4 damaged cache entries replaced$/); // a flipped byte may escape brotli's own checks, never the comparison
  assert.equal(sorted(r.digest), sorted(reference));
  for (const [i, n] of victims.entries()) assert.ok((await readFile(join(cache, n))).equals(before[i]!), `${n} was rewritten with the right bytes`);
});

test('a cache folder that cannot be made or written: one warning, and the same dist/', async () => {
  const blocker = join(await tempDir('cc-file'), 'not-a-folder');
  await writeFile(blocker, '');
  const r = await buildWith(join(blocker, 'compress'));
  const warnings = r.cacheLines.filter((l) => /cannot be/.test(l));
  assert.is(warnings.length, 1, r.cacheLines.join('\n'));
  assert.match(warnings[0]!, /not-a-folder\/compress cannot be used .*LDS_BUILD_CACHE/);
  assert.equal(sorted(r.digest), sorted(reference));
});

test('a cache folder others can write to is not used; a write that fails warns once and compresses on', async () => {
  const shared = join(await tempDir('cc-shared'), 'compress');
  await mkdir(shared);
  await chmod(shared, 0o777);
  const warned: string[] = [];
  const c = openCompressCache(shared, (m) => warned.push(m));
  const f = { path: 'docs/x.md', contentType: 'text/markdown', body: 'a document worth compressing. '.repeat(40), cache: 'static' as const };
  assert.equal(compressedVariants(f, c.compress), compressedVariants(f));
  assert.is(warned.length, 1);
  assert.match(warned[0]!, /only this user can write to, mode 777/);
  assert.equal(await readdir(shared), [], 'nothing written into it');

  // A folder of ours whose writes fail (the first entry's name is taken by a folder, which works as
  // root too): the first failure warns, the later documents are compressed without a word, and no
  // temporary file is left behind.
  const dir = join(await tempDir('cc-ro'), 'compress');
  const docs = ['one', 'two', 'three'].map((w) => ({ ...f, body: `${w} `.repeat(400) }));
  const raw = Buffer.from(docs[0]!.body);
  const first = createHash('sha256').update(CODECS[0]!.id).update('\0').update(raw).digest('hex') + CODECS[0]!.suffix;
  await mkdir(join(dir, first), { recursive: true, mode: 0o700 });
  await chmod(dir, 0o700);
  await writeFile(join(dir, first, 'in-the-way'), '');
  const warnedWrite: string[] = [];
  const w = openCompressCache(dir, (m) => warnedWrite.push(m));
  assert.equal(docs.map((d) => compressedVariants(d, w.compress)), docs.map((d) => compressedVariants(d)));
  assert.is(warnedWrite.length, 1, warnedWrite.join('\n'));
  assert.match(warnedWrite[0]!, /compress cannot be written .*LDS_BUILD_CACHE/);
  assert.equal(await readdir(dir), [first], 'no entry and no temporary file written');
  assert.is(w.stats.made, 6);
});

test('LDS_BUILD_CACHE names the folder, off or empty turns it off; else XDG_CACHE_HOME, else ~/.cache', () => {
  assert.is(compressCacheDir({ LDS_BUILD_CACHE: '/srv/cache', HOME: '/home/p' }), '/srv/cache');
  assert.is(compressCacheDir({ LDS_BUILD_CACHE: 'off', HOME: '/home/p' }), null);
  assert.is(compressCacheDir({ LDS_BUILD_CACHE: '', HOME: '/home/p' }), null);
  assert.is(compressCacheDir({ XDG_CACHE_HOME: '/x/cache', HOME: '/home/p' }), '/x/cache/lds/compress');
  assert.is(compressCacheDir({ XDG_CACHE_HOME: 'relative', HOME: '/home/p' }), '/home/p/.cache/lds/compress');
  assert.is(compressCacheDir({ HOME: '/home/p' }), '/home/p/.cache/lds/compress');
});

test('pruning removes entries unused for the age limit, then the least recently used beyond the size cap, at most hourly', async () => {
  const dir = join(await tempDir('cc-prune'), 'compress');
  await mkdir(dir, { mode: 0o700 });
  const now = Date.now();
  const day = 24 * 3600 * 1000;
  const put = async (name: string, bytes: number, usedDaysAgo: number) => {
    await writeFile(join(dir, name), Buffer.alloc(bytes));
    const t = new Date(now - usedDaysAgo * day);
    await utimes(join(dir, name), t, t);
  };
  await put('a.br', 100, 0);
  await put('b.br', 100, 1);
  await put('c.gz', 100, 2);
  await put('old.gz', 10, 31);
  await put('.tmp-2147483646-entry-dead', 10, 0); // a process that does not exist
  const limits = { ageDays: 30, maxBytes: 250 };
  assert.is(await pruneCompressCache(dir, now, limits), 3);
  assert.equal((await readdir(dir)).sort(), ['.pruned', 'a.br', 'b.br']);
  await put('d.br', 1000, 40);
  assert.is(await pruneCompressCache(dir, now + 60_000, limits), 0, 'not again within the hour');
  assert.is(await pruneCompressCache(dir, now + 2 * 3600 * 1000, limits), 1);
  assert.ok(CODECS.every((c) => c.id.includes(c.coding === 'br' ? process.versions.brotli! : process.versions.zlib!)), 'entries name the library version');
});

test.run();
