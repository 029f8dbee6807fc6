// A content-addressed cache of the compressed variants (generator/emit/compress.ts), so a build
// compresses only the documents whose bytes changed since an earlier build on this machine. Brotli
// at quality 11 and gzip at level 9 are most of a build's CPU time; reading a cached variant back
// and checking it costs about a tenth of making it. Publishers rebuilding after a small edit, and
// the test suites building the same catalogue again and again, gain the most. Builds that change
// their clock (SOURCE_DATE_EPOCH unset) change every document's version line and so miss, as they must.
//
// An entry is named by the SHA-256 of the codec's identity (coding, parameters, the library version
// that made it) and the raw bytes; it holds the compressed bytes. It is used only when it
// decompresses to exactly the raw bytes: a damaged or foreign entry is never published, but
// compressed again and rewritten. Entries are written to a temporary name and renamed, so a reader
// never sees half of one. The cache is a speed-up only: a folder that cannot be made or written
// costs one warning, never the build. It stays bounded: entries unused for PRUNE_AGE_DAYS are
// removed, then the least recently used beyond PRUNE_MAX_BYTES (checked at most hourly).
import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, readFileSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { removeStaleTemp, tmpName } from './durable.ts';
import type { Codec, Compressor } from './emit/compress.ts';

/** The environment setting naming the cache folder; `off` or empty: no cache. */
export const BUILD_CACHE_ENV = 'LDS_BUILD_CACHE';
const PRUNE_AGE_DAYS = 30;
const PRUNE_MAX_BYTES = 256 * 1024 * 1024;
const PRUNE_EVERY_MS = 3600 * 1000;
const PRUNED_MARK = '.pruned';

/** The cache folder: LDS_BUILD_CACHE, else $XDG_CACHE_HOME/lds/compress (~/.cache/lds/compress); null when turned off. */
export function compressCacheDir(env: NodeJS.ProcessEnv = process.env): string | null {
  const set = env[BUILD_CACHE_ENV];
  if (set !== undefined) return set === '' || set === 'off' ? null : resolve(set);
  // XDG: a relative XDG_CACHE_HOME is invalid and ignored.
  const base = env.XDG_CACHE_HOME?.startsWith('/') ? env.XDG_CACHE_HOME : join(env.HOME || homedir(), '.cache');
  return join(base, 'lds', 'compress');
}

export interface CompressCache {
  dir: string;
  compress: Compressor;
  /** Variants taken from the cache, made (missing or damaged entries) and found damaged. */
  stats: { hits: number; made: number; damaged: number };
  /** pruneCompressCache, for a cache that could be used. */
  prune(): Promise<unknown>;
}

/**
 * The cache in `dir` (made 0700 when missing). A folder that is not this user's alone is not used
 * (another user could plant entries: they would still have to decompress to the right bytes, but
 * not be the bytes this build would make). Problems are reported once through `warn`.
 */
export function openCompressCache(dir: string, warn: (msg: string) => void): CompressCache {
  const stats = { hits: 0, made: 0, damaged: 0 };
  let usable = true;
  let writable = true;
  const giveUp = (what: string, err: unknown) => {
    warn(`compression cache ${dir} ${what} (${err instanceof Error ? err.message : String(err)}): compressing without it (set ${BUILD_CACHE_ENV} to another folder, or to off)`);
  };
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const s = lstatSync(dir);
    const ours = s.isDirectory() && (process.getuid === undefined || s.uid === process.getuid()) && (s.mode & 0o022) === 0;
    if (!ours) throw new Error(`not a folder only this user can write to, mode ${(s.mode & 0o777).toString(8)}`);
  } catch (err) {
    usable = false;
    giveUp('cannot be used', err);
  }

  const compress: Compressor = (codec, raw) => {
    if (!usable) {
      stats.made++;
      return codec.compress(raw);
    }
    const file = join(dir, entryName(codec, raw));
    const cached = readEntry(file, codec, raw);
    if (cached === 'damaged') stats.damaged++;
    else if (cached) {
      stats.hits++;
      touch(file);
      return cached;
    }
    stats.made++;
    const body = codec.compress(raw);
    if (writable) {
      const tmp = join(dir, tmpName('entry'));
      try {
        writeFileSync(tmp, body, { mode: 0o600 });
        renameSync(tmp, file);
      } catch (err) {
        rmSync(tmp, { force: true });
        writable = false;
        giveUp('cannot be written', err);
      }
    }
    return body;
  };
  return { dir, compress, stats, prune: async () => usable && pruneCompressCache(dir) };
}

function entryName(codec: Codec, raw: Buffer): string {
  return createHash('sha256').update(codec.id).update('\0').update(raw).digest('hex') + codec.suffix;
}

/** The entry's bytes when they decompress to exactly `raw`; null when there is none; 'damaged' otherwise. */
function readEntry(file: string, codec: Codec, raw: Buffer): Buffer | null | 'damaged' {
  let body: Buffer;
  try {
    body = readFileSync(file);
  } catch {
    return null;
  }
  try {
    // One byte more than raw is enough to tell a longer output: never inflate a bomb.
    return codec.decompress(body, raw.length + 1).equals(raw) ? body : 'damaged';
  } catch {
    return 'damaged';
  }
}

/** Marks an entry as used now (pruning removes the least recently used). */
function touch(file: string): void {
  const now = new Date();
  try {
    utimesSync(file, now, now);
  } catch {
    // read-only cache: it still serves, it just ages
  }
}

/**
 * Removes entries unused for PRUNE_AGE_DAYS, then the least recently used until the cache holds at
 * most PRUNE_MAX_BYTES, and temporary files of processes that died. Runs at most once an hour (the
 * mtime of `.pruned`); never throws (the cache is only a speed-up).
 */
export async function pruneCompressCache(dir: string, now = Date.now(), limits = { ageDays: PRUNE_AGE_DAYS, maxBytes: PRUNE_MAX_BYTES }): Promise<number> {
  const mark = join(dir, PRUNED_MARK);
  try {
    const last = await stat(mark).catch(() => null);
    if (last && now - last.mtimeMs < PRUNE_EVERY_MS) return 0;
    await writeFile(mark, '');
    const t = new Date(now);
    await utimes(mark, t, t);
    let removed = (await removeStaleTemp(dir)).length;
    const entries: { path: string; used: number; size: number }[] = [];
    for (const name of await readdir(dir)) {
      if (name === PRUNED_MARK || name.startsWith('.tmp-')) continue;
      const path = join(dir, name);
      const s = await stat(path).catch(() => null);
      if (s?.isFile()) entries.push({ path, used: s.mtimeMs, size: s.size });
    }
    entries.sort((a, b) => b.used - a.used); // most recently used first
    let kept = 0;
    for (const e of entries) {
      const old = now - e.used > limits.ageDays * 24 * 3600 * 1000;
      if (old || kept + e.size > limits.maxBytes) await rm(e.path, { force: true }).then(() => removed++);
      else kept += e.size;
    }
    return removed;
  } catch {
    return 0;
  }
}
