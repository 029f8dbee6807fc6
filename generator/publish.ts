// `lds publish`: put a build on a web root as a release of its own and switch to it atomically.
//
//   DIR/releases/<version>/   a complete copy of dist/ (never changed once written), plus the
//                             release pins _nginx/release.conf, _apache/release.conf,
//                             _caddy/release.caddy that name this folder by absolute path
//   DIR/current  -> releases/<version>   the release a web server loads at its next reload
//   DIR/previous -> releases/<version>   the one before: what --rollback switches back to
//
// Why a web server is pinned through `current` only at reload, never per request: every form of
// the hosting rules hard-codes its build's version (the ETag, the 304 rule), so rules and files
// must change together. A server configured with `include DIR/current/_nginx/release.conf` reads
// the link once, when it loads its configuration, and then serves that release's folder by its
// real path with that release's rules, bytes and tags together, until the next reload. Switching
// `current` changes nothing a running server does; the reload hook makes it take the new release
// (nginx and Apache let old workers finish on the old folder, which is kept: never deleted while
// it is current or previous).
//
// The switch is a rename() of a new symlink over `current` (atomic on POSIX file systems: a
// reader sees the old link or the new one). A release folder appears under its final name only
// once it is complete (written under a temporary name, synced, renamed), so `current` never points
// at half a copy, and a release already there is reused as it is.
//
// Nothing is written through a symbolic link: a build holding anything but regular files and
// folders is refused before anything is written (naming the entry), the copy makes every folder
// and creates every file anew, and releases/ and a release reused must be folders, not links.
// One publish or rollback runs at a time per web root (generator/publish-lock.ts).
import { spawn } from 'node:child_process';
import { constants, type Dirent } from 'node:fs';
import { copyFile, lstat, mkdir, readdir, readFile, readlink, realpath, rename, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { basename, join, resolve } from 'node:path';
import { apacheReleasePin } from './emit/apache.ts';
import { caddyReleasePin } from './emit/caddy.ts';
import { nginxReleasePin } from './emit/nginx.ts';
import { safeConfigPath } from './emit/hosting-paths.ts';
import { alive, fsyncPath, fsyncTree, switchLink } from './durable.ts';
import { LockRefused, withPublishLock } from './publish-lock.ts';

export const DEFAULT_KEEP = 5;
const VERSION = /^catalogue-[0-9a-f]{12}$/;

/** A refusal or failure with the exit code the command ends with (1: nothing changed; 2: switched, the reload failed). */
export class PublishError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

export interface PublishOptions {
  /** The web root (DIR). */
  to: string;
  /** DIR as the web server sees it, written into the release pins (default: DIR's absolute path). */
  serverDir?: string;
  /** A shell command that makes the web server load the release `current` names (e.g. `nginx -s reload`). */
  reload?: string;
  progress?: (msg: string) => void;
  /** Where the reload command's own output goes (default: this process's stderr). */
  output?: (chunk: string) => void;
}

export interface PublishResult {
  /** What the command says on stdout. */
  summary: string;
  current: string;
  previous: string | null;
  changed: boolean;
  removed: string[];
}

/** The catalogue version of a build (its v1/lds/_catalog), checking it is a complete build. */
export async function buildVersion(from: string): Promise<string> {
  let catalogue: { version?: unknown };
  try {
    catalogue = JSON.parse(await readFile(join(from, 'v1/lds/_catalog'), 'utf8'));
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new PublishError(code === 'ENOENT' ? `${from} holds no build (no v1/lds/_catalog): run \`lds build\` first, or name the build with --from` : `${from}/v1/lds/_catalog cannot be read: ${(err as Error).message}`);
  }
  const version = catalogue.version;
  if (typeof version !== 'string' || !VERSION.test(version)) throw new PublishError(`${from}/v1/lds/_catalog has no catalogue version (found ${JSON.stringify(version)})`);
  for (const f of ['_headers', '_nginx/lds.conf', '_apache/lds.conf', '_caddy/lds.caddy'])
    if (!(await exists(join(from, f)))) throw new PublishError(`${from} is not a complete build (no ${f}): rebuild it with \`lds build\``);
  return version;
}

async function exists(path: string): Promise<boolean> {
  return lstat(path).then(() => true, () => false);
}

/** The release a link (current / previous) names, or null when there is no link. */
async function linkTarget(dir: string, name: 'current' | 'previous'): Promise<string | null> {
  const path = join(dir, name);
  let info;
  try {
    info = await lstat(path);
  } catch {
    return null;
  }
  if (!info.isSymbolicLink()) throw new PublishError(`${path} is not a symbolic link (it is a ${info.isDirectory() ? 'folder' : 'file'}): lds publish manages ${name} as a link to releases/<version>. Move it away and publish again.`);
  const target = basename(await readlink(path));
  if (!VERSION.test(target)) throw new PublishError(`${path} points at ${await readlink(path)}, not at a release (releases/catalogue-…): fix or remove the link`);
  return target;
}

/**
 * Refuses a folder of lds publish's own under --to (releases/, a release) that is a symbolic link
 * or not a folder: writing there would write wherever the link points.
 */
async function ownFolder(path: string): Promise<void> {
  const info = await lstat(path);
  if (info.isSymbolicLink())
    throw new PublishError(`${path} is a symbolic link (to ${await readlink(path)}): lds publish writes only into folders of its own under --to, never through a link. Replace the link with a folder and publish again; nothing was changed.`);
  if (!info.isDirectory()) throw new PublishError(`${path} is a file, not a folder: lds publish keeps its releases there. Move it away and publish again; nothing was changed.`);
}

/** What a build entry that is neither a regular file nor a folder is, in words. */
async function kindOf(e: Dirent, path: string): Promise<string> {
  if (e.isSymbolicLink()) return `a symbolic link (to ${await readlink(path).catch(() => 'somewhere unreadable')})`;
  if (e.isFIFO()) return 'a named pipe';
  if (e.isSocket()) return 'a socket';
  return 'a device file';
}

/**
 * The folders and regular files under `dir` (each folder before what it holds), relative to it.
 * Anything else is refused, named as `shownAs/<path>`: above all a symbolic link, which the copy
 * (or the web server serving the release) would follow out of the release.
 */
async function regularTree(dir: string, shownAs: string): Promise<{ folders: string[]; files: string[] }> {
  const folders: string[] = [];
  const files: string[] = [];
  const walk = async (rel: string): Promise<void> => {
    for (const e of await readdir(join(dir, rel), { withFileTypes: true })) {
      const path = join(rel, e.name);
      if (e.isDirectory()) {
        folders.push(path);
        await walk(path);
      } else if (e.isFile()) files.push(path);
      else
        throw new PublishError(
          `${join(shownAs, path)} is ${await kindOf(e, join(dir, path))}: a build holds only regular files and folders, and lds publish refuses anything else. Remove it (or rebuild with lds build) and publish again; nothing was changed.`,
        );
    }
  };
  await walk('');
  return { folders, files };
}

/** Copies a checked tree into the new folder `to`: every folder made here, every file created anew (never through a link). */
async function copyTree(from: string, tree: { folders: string[]; files: string[] }, to: string): Promise<void> {
  await mkdir(to);
  for (const f of tree.folders) await mkdir(join(to, f));
  for (const f of tree.files) await copyFile(join(from, f), join(to, f), constants.COPYFILE_EXCL);
}

/** Writes the release pins into a release folder (each through a temporary file and a rename). */
async function writePins(releaseDir: string, version: string, servedAs: string): Promise<void> {
  const pins: [string, string][] = [
    ['_nginx/release.conf', nginxReleasePin(version, servedAs)],
    ['_apache/release.conf', apacheReleasePin(version, servedAs)],
    ['_caddy/release.caddy', caddyReleasePin(version, servedAs)],
  ];
  for (const [rel, body] of pins) {
    const path = join(releaseDir, rel);
    await mkdir(join(path, '..'), { recursive: true });
    await writeFile(`${path}.tmp`, body);
    await fsyncPath(`${path}.tmp`);
    await rename(`${path}.tmp`, path);
  }
}

/** One publish or rollback at a time per web root (generator/publish-lock.ts); a refusal changes nothing. */
async function withLock<T>(dir: string, work: () => Promise<T>): Promise<T> {
  try {
    return await withPublishLock(dir, work);
  } catch (err) {
    throw err instanceof LockRefused ? new PublishError(err.message) : err;
  }
}

/** Runs the reload command through the shell; resolves with its exit code (or the signal that ended it). */
function runReload(command: string, output: (chunk: string) => void): Promise<{ code: number | null; signal: string | null }> {
  return new Promise((resolvePromise) => {
    const child = spawn('sh', ['-c', command], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d) => output(String(d)));
    child.stderr.on('data', (d) => output(String(d)));
    child.on('error', (err) => resolvePromise({ code: 127, signal: String(err) }));
    child.on('close', (code, signal) => resolvePromise({ code, signal }));
  });
}

/**
 * Runs the reload command, or says what follows without one. What a web server serves is known only
 * from a reload that succeeded: after a failed one (or none) it serves the release it loaded last,
 * which need not be the one `current` named before this switch. So the messages name what current
 * named, and never claim which release a server serves.
 */
async function reloadOrExplain(dir: string, opts: PublishOptions, switchedTo: string, before: string | null, undo: string): Promise<void> {
  const progress = opts.progress ?? (() => {});
  const switched = `${join(dir, 'current')} now points at releases/${switchedTo}${before ? ` (before this switch: releases/${before})` : ''}`;
  if (!opts.reload) {
    progress(`no --reload command: ${switched}; a running web server goes on serving the release it loaded last until it reloads its configuration (e.g. nginx -s reload, apachectl graceful, caddy reload)`);
    return;
  }
  progress(`reloading the web server: ${opts.reload}`);
  const started = Date.now();
  const r = await runReload(opts.reload, opts.output ?? ((c) => process.stderr.write(c)));
  if (r.code === 0) {
    progress(`reload command done in ${Date.now() - started} ms`);
    return;
  }
  const how = r.code === null ? `was ended by ${r.signal}` : `exited with ${r.code}`;
  throw new PublishError(
    [
      `the reload command ${how}: ${opts.reload}`,
      `${switched}, but the web server did not confirm the reload, so it most likely still serves the release it loaded last (a server reads the release only when it reloads its configuration; a failed reload keeps the one it had).`,
      `Fix the cause (its output is above) and run the reload command again, or switch back with: ${undo}`,
    ].join('\n'),
    2,
  );
}

/** Deletes the oldest releases beyond `keep` (by when each was last made current); never current or previous. */
async function prune(dir: string, keep: number, current: string, previous: string | null): Promise<string[]> {
  const releases = join(dir, 'releases');
  const entries = await readdir(releases, { withFileTypes: true });
  const dated: { name: string; mtime: number }[] = [];
  for (const e of entries) {
    // A temporary folder is garbage here (the lock says no other publish is writing); one whose
    // process still runs is left alone all the same.
    const incoming = /^\.incoming-.*-(\d+)$/.exec(e.name);
    if (incoming) {
      if (Number(incoming[1]) === process.pid || !alive(Number(incoming[1]))) await rm(join(releases, e.name), { recursive: true, force: true });
      continue;
    }
    if (e.isDirectory() && VERSION.test(e.name)) dated.push({ name: e.name, mtime: (await stat(join(releases, e.name))).mtimeMs });
  }
  dated.sort((a, b) => b.mtime - a.mtime || b.name.localeCompare(a.name));
  const removed: string[] = [];
  dated.forEach((r, i) => {
    if (i >= keep && r.name !== current && r.name !== previous) removed.push(r.name);
  });
  for (const name of removed) await rm(join(releases, name), { recursive: true, force: true });
  return removed;
}

function servedAs(opts: PublishOptions, dir: string): string {
  try {
    return safeConfigPath(opts.serverDir ? opts.serverDir : dir);
  } catch (err) {
    throw new PublishError(`${(err as Error).message}${opts.serverDir ? '' : ' (or give the path the web server sees with --server-dir)'}`);
  }
}

/** Publishes the build in `from` to the web root `opts.to`. */
export async function publish(from: string, opts: PublishOptions & { keep?: number }): Promise<PublishResult> {
  const progress = opts.progress ?? (() => {});
  const keep = opts.keep ?? DEFAULT_KEEP;
  if (!Number.isInteger(keep) || keep < 1) throw new PublishError(`--keep must be a whole number of releases, at least 1 (got ${keep})`);
  const dir = resolve(opts.to);
  const version = await buildVersion(resolve(from));
  // dist/ is a link to the build it serves (generator/build.ts): copy that build, not the link.
  const source = await realpath(resolve(from));
  const tree = await regularTree(source, resolve(from));
  const server = servedAs(opts, dir);
  // Checked before it is made: mkdir would go through a link to a folder (or fail on a dangling one).
  if (await exists(join(dir, 'releases'))) await ownFolder(join(dir, 'releases'));
  else await mkdir(join(dir, 'releases'), { recursive: true });

  return withLock(dir, async () => {
    const current = await linkTarget(dir, 'current');
    const previous = await linkTarget(dir, 'previous');
    if (current === version) {
      const summary = `${version} is already the current release of ${dir}: nothing to do${opts.reload ? ' (the reload command was not run)' : ''}`;
      return { summary, current, previous, changed: false, removed: [] };
    }
    const release = join(dir, 'releases', version);
    if (await exists(release)) {
      await ownFolder(release);
      await regularTree(release, release);
      const there = await buildVersion(release).catch(() => null);
      if (there !== version) throw new PublishError(`${release} exists but does not hold ${version} (it holds ${there ?? 'no complete build'}): remove that folder and publish again`);
      progress(`releases/${version} is already there (published before): switching back to it`);
      await writePins(release, version, join(server, 'releases', version));
    } else {
      const incoming = join(dir, 'releases', `.incoming-${version}-${process.pid}`);
      await rm(incoming, { recursive: true, force: true });
      progress(`copying ${source} to ${release}`);
      try {
        await copyTree(source, tree, incoming);
        await writePins(incoming, version, join(server, 'releases', version));
        const { files, bytes } = await fsyncTree(incoming);
        await rename(incoming, release);
        await fsyncPath(join(dir, 'releases'));
        progress(`wrote releases/${version} (${files} files, ${(bytes / 1e6).toFixed(1)} MB)`);
      } catch (err) {
        await rm(incoming, { recursive: true, force: true });
        if (err instanceof PublishError) throw err;
        throw new PublishError(`could not write ${release}: ${(err as Error).message}; nothing was switched`);
      }
    }

    // previous first: a crash between the two leaves previous == current, never a lost release.
    if (current) await switchLink(dir, 'previous', join('releases', current));
    await switchLink(dir, 'current', join('releases', version));
    const now = new Date();
    await utimes(release, now, now); // the "last N" of --keep count from when a release was made current
    await fsyncPath(dir);
    progress(`switched ${join(dir, 'current')}: ${current ?? '(none)'} -> ${version}`);

    await reloadOrExplain(dir, opts, version, current, `lds publish --to ${opts.to} --rollback`);
    const removed = await prune(dir, keep, version, current ?? previous);
    if (removed.length) progress(`removed ${removed.length} old release${removed.length === 1 ? '' : 's'} (keeping ${keep}): ${removed.join(', ')}`);
    const summary = `published ${version} to ${dir}${current ? ` (previous: ${current})` : ''}`;
    return { summary, current: version, previous: current, changed: true, removed };
  });
}

/** Switches the web root back to the release before the last switch (a second rollback undoes the first). */
export async function rollback(opts: PublishOptions): Promise<PublishResult> {
  const progress = opts.progress ?? (() => {});
  const dir = resolve(opts.to);
  if (!(await exists(join(dir, 'releases')))) throw new PublishError(`${dir} has no releases: nothing was ever published there with lds publish`);
  return withLock(dir, async () => {
    const current = await linkTarget(dir, 'current');
    const previous = await linkTarget(dir, 'previous');
    if (!previous || previous === current) throw new PublishError(`${dir} has no previous release to roll back to (only ${current ?? 'nothing'} was published there)`);
    const release = join(dir, 'releases', previous);
    await ownFolder(join(dir, 'releases'));
    if (await exists(release)) await ownFolder(release);
    if ((await buildVersion(release).catch(() => null)) !== previous) throw new PublishError(`the previous release ${release} is missing or incomplete: cannot roll back to it`);
    if (current) await switchLink(dir, 'previous', join('releases', current));
    await switchLink(dir, 'current', join('releases', previous));
    const now = new Date();
    await utimes(release, now, now);
    await fsyncPath(dir);
    progress(`switched ${join(dir, 'current')}: ${current ?? '(none)'} -> ${previous}`);
    await reloadOrExplain(dir, opts, previous, current, `lds publish --to ${opts.to} --rollback`);
    const summary = `rolled ${dir} back to ${previous}${current ? ` (previous: ${current}; --rollback again undoes this)` : ''}`;
    return { summary, current: previous, previous: current, changed: true, removed: [] };
  });
}
