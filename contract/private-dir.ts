// Folders that hold what only the service's own user may read: the unit store root (sold data),
// the LevelDB ledger (balances, draws) and the secrets. Each is made owner-only (0700), and one
// found looser (made by an earlier version, or by hand) is tightened. The folder mode is what
// protects LevelDB's files, which LevelDB creates with the process umask (0644 as a rule): nobody
// else can open a file in a folder they cannot enter. Files this project writes itself (secrets,
// token files) are also created 0600. The generator and the service both use it.
import { statSync } from 'node:fs';
import { chmod, mkdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';

export const PRIVATE_DIR_MODE = 0o700;

/**
 * Makes `dir` (and any missing parent) an owner-only folder. Returns the mode it had when it
 * existed with group or other access (it is 0700 now), else null.
 */
export async function privateDir(dir: string): Promise<number | null> {
  await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  const mode = (await stat(dir)).mode & 0o777;
  if ((mode & 0o077) === 0) return null;
  try {
    await chmod(dir, PRIVATE_DIR_MODE);
  } catch (err) {
    throw new Error(`${dir} can be read by others (mode ${mode.toString(8)}) and cannot be made owner-only (${(err as Error).message}): run chmod 700 ${dir} as its owner, or choose another folder`);
  }
  return mode;
}

/**
 * The other side: the first folder from `path` up to / that other users cannot pass through (no
 * o+x), with its mode, or null when every one lets them. Servers that run as another user (Apache's
 * children, PostgreSQL as postgres) need every folder above their files open that far; a checkout
 * or a temp folder under a 0700 folder is the usual obstacle.
 */
export function closedToOthers(path: string): { dir: string; mode: number } | null {
  for (let dir = path; ; dir = dirname(dir)) {
    const mode = statSync(dir).mode & 0o777;
    if ((mode & 0o001) === 0) return { dir, mode };
    if (dir === dirname(dir)) return null;
  }
}
