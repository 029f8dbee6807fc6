// One `lds publish` (or `--rollback`) at a time per web root: the lock file DIR/.lds-publish.lock
// holding "<pid> <nonce>" of its owner, removed by the owner when it is done.
//
// What must stay true: at most one process holds the lock at any moment, including when several
// find the lock of a process that died (killed mid-publish) and all want to take it over.
//   - A lock file appears whole or not at all: it is written under a temporary name and hard-linked
//     to its name (link() fails when the name exists), so no reader ever sees an empty lock and
//     mistakes it for a dead one.
//   - A dead owner's lock is removed only under the breaker (DIR/.lds-publish.lock.break, created
//     the same way and held for a moment): the taker checks, under it, that the lock still holds
//     exactly what it read (the nonce tells a new lock of a reused pid apart), removes it, removes
//     the breaker, and then competes for the lock like any other publish. So a taker never removes
//     a lock another taker has just created; of several takers exactly one creates the next lock
//     and the others find it held and refuse, naming its process.
//   - A breaker left by a process that died inside those few steps is never guessed away: the
//     refusal says which file to remove.
import { randomBytes } from 'node:crypto';
import { watch as watchNow } from 'node:fs';
import { link, readFile, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { alive, removeStaleTemp, tmpName } from './durable.ts';

export const PUBLISH_LOCK = '.lds-publish.lock';
const BREAKER = `${PUBLISH_LOCK}.break`;
/** Attempts before giving up on a lock that keeps changing hands (each a few file operations). */
const ATTEMPTS = 200;

/** Why the lock could not be taken (the caller reports it; nothing was changed). */
export class LockRefused extends Error {}

/** Creates `path` holding `content`, whole, unless it exists: true when created. */
async function createWhole(dir: string, path: string, content: string): Promise<boolean> {
  const tmp = join(dir, tmpName('lock'));
  await writeFile(tmp, content, { flag: 'wx' });
  try {
    await link(tmp, path);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    await unlink(tmp).catch(() => {});
  }
}

/** The file's text, or null when it is not there. */
async function readOrNull(path: string): Promise<string | null> {
  try {
    return await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

/** The owner's pid in a lock's text (earlier versions wrote the pid alone), or null. */
function ownerOf(text: string): number | null {
  const pid = Number(text.trim().split(/\s+/)[0]);
  return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
}

/**
 * Removes the lock if it still holds `seen` (a dead owner's), under the breaker. Returns without
 * removing anything when another taker holds the breaker (the caller tries again).
 */
async function breakDeadLock(dir: string, seen: string): Promise<void> {
  const lock = join(dir, PUBLISH_LOCK);
  const breaker = join(dir, BREAKER);
  if (!(await createWhole(dir, breaker, `${process.pid}\n`))) {
    const holder = await readOrNull(breaker);
    const pid = holder === null ? null : ownerOf(holder);
    if (holder !== null && (pid === null || !alive(pid)))
      throw new LockRefused(`a publish (process ${pid ?? 'unknown'}) died while taking over the lock of a publish that had died before it. If no lds publish is running on ${dir}, remove ${breaker} and ${lock}, then run this again.`);
    await new Promise((r) => setTimeout(r, 5)); // another taker is at it: a few file operations
    return;
  }
  try {
    if ((await readOrNull(lock)) === seen) await unlink(lock);
  } finally {
    await unlink(breaker);
  }
}

/**
 * Test hook: with `LDS_TEST_PUBLISH_LOCK_GATE=<folder>` a publish writes `ready-<pid>` there and
 * waits for a file `go` before it reaches for the lock, so several processes reach it at one
 * moment whatever their start-up took (test/publish-safety).
 */
async function startLine(): Promise<void> {
  const gate = process.env.LDS_TEST_PUBLISH_LOCK_GATE;
  if (!gate) return;
  // fs.watch with a listener watches from this call on and calls it for every change; the promise
  // API's watch() only starts when first iterated and keeps one event between reads, so a `go`
  // written between the check and the iteration was missed and the publish waited forever.
  await new Promise<void>((resolve, reject) => {
    const watcher = watchNow(gate, (_, name) => name === 'go' && done());
    const done = () => {
      watcher.close();
      resolve();
    };
    watcher.on('error', reject);
    writeFile(join(gate, `ready-${process.pid}`), '')
      .then(() => readOrNull(join(gate, 'go')))
      .then((go) => go !== null && done(), reject);
  });
}

/** Runs `work` holding the publish lock of the web root `dir`; refuses (LockRefused) while another publish holds it. */
export async function withPublishLock<T>(dir: string, work: () => Promise<T>): Promise<T> {
  await startLine();
  const lock = join(dir, PUBLISH_LOCK);
  const mine = `${process.pid} ${randomBytes(8).toString('hex')}\n`;
  let held = false;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    held = await createWhole(dir, lock, mine);
    if (held) break;
    const seen = await readOrNull(lock);
    if (seen === null) continue; // released since: try again
    const pid = ownerOf(seen);
    if (pid !== null && alive(pid))
      throw new LockRefused(`another lds publish (process ${pid}) is working on ${dir}; wait for it to finish and run this again (if there is no such process, remove ${lock})`);
    await breakDeadLock(dir, seen);
  }
  if (!held) throw new LockRefused(`could not take the lock ${lock}: it kept changing hands between other publishes; run this again`);
  try {
    await removeStaleTemp(dir); // temporary lock files of publishes that died
    return await work();
  } finally {
    if ((await readOrNull(lock)) === mine) await unlink(lock).catch(() => {});
  }
}
