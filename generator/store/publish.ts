// Making a finished store visible, atomically. A build writes into a hidden temporary directory;
// only a complete, closed and fsynced store is renamed to <root>/<store_version>, and only then
// is <root>/CURRENT replaced (temp file + fsync + rename + fsync of the directory). A build that
// dies at any point leaves CURRENT and the store it names untouched; its temporary directories
// are removed by the next build once their process is gone.
import { open, readdir, rename, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Level } from 'level';
import { CURRENT_FILE } from '../../contract/store-format.ts';
import { readCurrentVersion, STORE_VERSION } from '../../contract/store-current.ts';
import { fsyncPath, tmpName } from '../durable.ts';

async function exists(p: string): Promise<boolean> {
  return stat(p).then(() => true, () => false);
}

/** Writes CURRENT atomically: a reader sees the old name or the new one, never a torn file. */
export async function switchCurrent(root: string, version: string): Promise<void> {
  const tmp = join(root, `${tmpName('current')}`);
  const fh = await open(tmp, 'w');
  try {
    await fh.writeFile(version + '\n');
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, join(root, CURRENT_FILE));
  await fsyncPath(root);
}

/**
 * Publishes a complete store directory under its version and switches CURRENT to it. If a store
 * with the same version already exists (same inputs built again) it is kept: it was complete
 * when it was renamed, and a running service may have it open.
 */
export async function publishStore(root: string, builtDir: string, version: string): Promise<{ previous: string | null; reused: boolean }> {
  const previous = await readCurrentVersion(root);
  const target = join(root, version);
  let reused = false;
  if (await exists(target)) {
    await rm(builtDir, { recursive: true, force: true });
    reused = true;
  } else {
    await rename(builtDir, target);
    await fsyncPath(root);
  }
  if (previous !== version) await switchCurrent(root, version);
  return { previous: previous === version ? null : previous, reused };
}

/** True when another process (a running service) holds the LevelDB lock of a store. */
async function inUse(dir: string): Promise<boolean> {
  const db = new Level(dir, { createIfMissing: false });
  try {
    await db.open();
    await db.close();
    return false;
  } catch (err) {
    return (err as { code?: string; cause?: { code?: string } }).cause?.code === 'LEVEL_LOCKED' || (err as { code?: string }).code === 'LEVEL_LOCKED';
  }
}

/** Removes store directories other than the ones to keep, unless a process still has them open. */
export async function pruneStores(root: string, keep: (string | null)[]): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await readdir(root)) {
    if (!STORE_VERSION.test(name) || keep.includes(name)) continue;
    if (await inUse(join(root, name))) continue;
    await rm(join(root, name), { recursive: true, force: true });
    removed.push(name);
  }
  return removed;
}
