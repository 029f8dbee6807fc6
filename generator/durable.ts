// Writing a build so that a crash at any moment leaves the previous one in use: fsync of what was
// written, then one rename as the switch (a symbolic link renamed over the old one, or a file
// renamed over the old one), then fsync of the folder that holds it. Temporary names carry the
// writer's pid, so a later run removes the leftovers of a process that died.
import { randomBytes } from 'node:crypto';
import { open, readdir, rename, rm, stat, symlink } from 'node:fs/promises';
import { join } from 'node:path';

/** fsyncs one file or folder. */
export async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

/** fsyncs every file under dir, then the folders: a switch after a crash never names lost bytes. */
export async function fsyncTree(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const path = join(e.parentPath, e.name);
    if (e.isFile()) {
      files++;
      bytes += (await stat(path)).size;
      await fsyncPath(path);
    } else if (e.isDirectory()) await fsyncPath(path);
  }
  await fsyncPath(dir);
  return { files, bytes };
}

/** Whether a process of that pid exists (EPERM: it does, owned by someone else). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A temporary name in a folder: `.tmp-<pid>-<what>-<random>`, removable by removeStaleTemp once its process is gone. */
export function tmpName(what: string): string {
  return `.tmp-${process.pid}-${what}-${randomBytes(4).toString('hex')}`;
}

/** Removes the temporary entries (tmpName) of processes that no longer exist; the names removed. */
export function removeStaleTemp(dir: string): Promise<string[]> {
  return removeLeftovers(dir, /^\.tmp-(\d+)-/);
}

/**
 * Removes the entries of `dir` named by `pattern` (whose first group is a pid) left by processes
 * that no longer exist; the names removed.
 */
async function removeLeftovers(dir: string, pattern: RegExp): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    const m = pattern.exec(name);
    if (!m || Number(m[1]) === process.pid || alive(Number(m[1]))) continue;
    await rm(join(dir, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}

/** Removes the temporary links switchLink(dir, name, …) left when its process died before the rename. */
export function removeLinkLeftovers(dir: string, name: string): Promise<string[]> {
  const escaped = name.replace(/[.*+?^$()|[\]{}\\]/g, '\\$&');
  return removeLeftovers(dir, new RegExp(`^\\.${escaped}\\.tmp-(\\d+)$`));
}

/**
 * Points dir/name at `target` (a path relative to dir): a new link under a temporary name, renamed
 * over the old one, which is atomic; then the folder is fsynced. `beforeSwitch` runs between the
 * two (the crash tests stop there).
 */
export async function switchLink(dir: string, name: string, target: string, beforeSwitch?: () => void): Promise<void> {
  const tmp = join(dir, `.${name}.tmp-${process.pid}`);
  await rm(tmp, { force: true });
  await symlink(target, tmp);
  beforeSwitch?.();
  await rename(tmp, join(dir, name));
  await fsyncPath(dir);
}
