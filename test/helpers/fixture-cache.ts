// A cache of test fixtures that take long to make (a build of catalog-src, its unit store) in the
// temp folder, shared by the files of one run and by later runs on the same machine.
//
// An entry is trusted only for exactly the inputs it was made from: its name carries a SHA-256 of
// every file it is made from (their paths and bytes), the Node version and the caller's parameters,
// so any change to a source, the data, the lock file or the parameters names another entry. An
// entry is made under a temporary name and renamed into place when complete, so a reader never sees
// half of one; while one process makes an entry the others wait for it (a lock file naming the maker's pid).
// The cache folder is this user's alone (0700, owned by us): one anybody else could write to is
// not used, since its contents would be run as our fixtures. Entries unused for a day are removed.
import { createHash } from 'node:crypto';
import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeSync } from 'node:fs';
import { cp, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { REPO } from './build.ts';

const DAY_MS = 24 * 3600 * 1000;

/** The cache folder: LDS_TEST_FIXTURE_CACHE (set by test/run.ts), else <temp>/lds-test-cache-<uid>. */
export function fixtureCacheRoot(): string {
  const root = process.env.LDS_TEST_FIXTURE_CACHE ?? join(tmpdir(), `lds-test-cache-${process.getuid?.() ?? 'user'}`);
  mkdirSync(root, { recursive: true, mode: 0o700 });
  const s = lstatSync(root);
  const ours = s.isDirectory() && (process.getuid === undefined || s.uid === process.getuid()) && (s.mode & 0o077) === 0;
  if (!ours) throw new Error(`the test fixture cache ${root} is not a folder only this user can write to (mode ${(s.mode & 0o777).toString(8)}); remove it or set LDS_TEST_FIXTURE_CACHE`);
  return root;
}

/** Every regular file below `path` (a file or folder of the repository), sorted. */
function filesBelow(path: string): string[] {
  const s = statSync(path);
  if (!s.isDirectory()) return [path];
  return readdirSync(path)
    .sort()
    .flatMap((e) => filesBelow(join(path, e)));
}

/** SHA-256 (hex) of the named repository paths (their relative names and bytes), Node's version and `params`. */
export function inputsHash(paths: string[], params: string): string {
  const h = createHash('sha256');
  h.update(`${process.version}\0${params}\0`);
  for (const file of paths.flatMap((p) => filesBelow(join(REPO, p)))) {
    h.update(`${relative(REPO, file)}\0`);
    h.update(readFileSync(file));
    h.update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

/** Is the process that wrote this lock file still running? (No file: nobody holds it.) */
function holderAlive(lock: string): boolean {
  let pid: number;
  try {
    pid = Number(readFileSync(lock, 'utf8'));
  } catch {
    return false;
  }
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The folder of the cache entry `name` for these inputs, made by `make(dir)` (into an empty folder)
 * when it is not there yet. One process makes it (it holds `<entry>.lock`, holding its pid); the
 * others wait for it rather than make it again, and take over when its maker died. Callers copy
 * from the entry; they never change it.
 */
export async function cachedFixture(name: string, inputs: { paths: string[]; params: string }, make: (dir: string) => Promise<void>): Promise<string> {
  const root = fixtureCacheRoot();
  const entry = join(root, `${name}-${inputsHash(inputs.paths, inputs.params)}`);
  const lock = `${entry}.lock`;
  while (!existsSync(entry)) {
    let fd: number;
    try {
      fd = openSync(lock, 'wx', 0o600);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      if (holderAlive(lock)) await new Promise((r) => setTimeout(r, 100)); // another process is making it
      else rmSync(lock, { force: true }); // its maker died: take over (one of the waiters' 'wx' wins)
      continue;
    }
    writeSync(fd, String(process.pid));
    closeSync(fd);
    const mine = await mkdtemp(join(root, `.${name}.tmp-`));
    try {
      if (!existsSync(entry)) {
        await make(mine);
        await rename(mine, entry);
      }
    } finally {
      await rm(mine, { recursive: true, force: true });
      rmSync(lock, { force: true });
    }
  }
  const now = new Date();
  utimesSync(entry, now, now); // last used: pruning keeps it
  return entry;
}

/** What every cached build is made from: a change to any of these makes a new one. */
const BUILD_INPUTS = ['catalog-src', 'test/helpers/test-catalog.ts', 'generator', 'contract', 'package-lock.json'];

/**
 * `make(dir)`, a build of catalog-src as this version of the generator builds it, copied into `root`
 * (links kept as links: dist/ is one). Made once per machine until catalog-src, the generator, the
 * lock file or `extraInputs` (the files that say what `make` does, such as the helper or test file
 * that holds it) change.
 */
export async function cachedBuild(name: string, root: string, make: (dir: string) => Promise<void>, extraInputs: string[] = []): Promise<void> {
  // which catalog-src CATALOG_SRC is (the test copy or the shipped one) is part of what a build is made from
  const params = `${name}\0${process.env.LDS_TEST_CATALOG_SRC ? 'test-catalog-src' : 'shipped'}`;
  const built = await cachedFixture(name, { paths: [...BUILD_INPUTS, ...extraInputs], params }, make);
  await cp(built, root, { recursive: true, verbatimSymlinks: true });
}

/** Removes entries (and leftovers of interrupted makes) nobody used for a day. */
export function pruneFixtureCache(): void {
  const root = fixtureCacheRoot();
  for (const e of readdirSync(root)) {
    const path = join(root, e);
    try {
      if (Date.now() - statSync(path).mtimeMs > DAY_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // gone already (another run pruned it)
    }
  }
}
