// A lock file beside the receipts journal, so that several processes sharing one journal (`lds buy`
// runs, `lds mcp`, a buyer's own program) take turns: the day budget is checked against every
// payment already recorded and the next one recorded in the same turn (client/journal.ts).
//
// What must stay true:
//   - at most one holder at a time: the lock is a file created with O_EXCL ('wx'), which exactly one
//     of several creators gets;
//   - a lock left by a process that died is taken over, never waited on for ever: on the same host
//     it is stale when its process no longer runs (signal 0 answers ESRCH), which is exact whatever
//     the turn's length; a lock of another host (a journal on a shared file system) is stale when
//     older than STALE_MS, as its process cannot be asked (a journal's turn lasts milliseconds:
//     read, check, append, fsync); a pid reused since is waited on until the timeout, which names it;
//   - taking over is itself exclusive: a second lock file (`<lock>.takeover`, also O_EXCL, held for
//     the few microseconds of the swap) lets one process re-read the stale lock, confirm it is the
//     very one it judged (its random nonce), remove it and retry; two processes that judged the same
//     stale lock cannot both remove it, and none can remove a fresh one;
//   - a wait is bounded (timeoutMs): past it the caller gets an error naming the lock file and its
//     holder, never a silent pass.
import { open, readFile, stat, unlink } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';

/** A lock of another host older than this is stale (a journal's turn takes milliseconds). */
export const STALE_MS = 30_000;

interface Holder {
  pid: number;
  host: string;
  nonce: string;
  since: number;
}

export class LockTimeout extends Error {
  override name = 'LockTimeout';
}

/** Waits for the lock at `path`, runs `turn`, releases the lock (also when `turn` throws). */
export async function withLock<T>(path: string, turn: () => Promise<T>, o: { timeoutMs?: number } = {}): Promise<T> {
  const release = await acquire(path, o.timeoutMs ?? 15_000);
  try {
    return await turn();
  } finally {
    await release();
  }
}

async function acquire(path: string, timeoutMs: number): Promise<() => Promise<void>> {
  const me = holderOfThisProcess();
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    if (await create(path, me)) return () => releaseIfMine(path, me.nonce);
    const held = await readHolder(path);
    if (held === 'gone') continue; // released between our attempt and the read: try again at once
    if (held !== 'young' && isStale(held) && (await takeOver(path, held))) continue;
    if (Date.now() >= deadline) {
      const who = typeof held === 'object' ? `process ${held.pid} on ${held.host} since ${new Date(held.since).toISOString()}` : 'an unreadable lock';
      throw new LockTimeout(`locked by ${who} (${path}); waited ${Math.round(timeoutMs / 1000)} s. If that process is not an lds client, delete ${path}`);
    }
    // Short, growing, jittered waits: a turn takes milliseconds.
    await new Promise((r) => setTimeout(r, Math.min(100, 2 + attempt * 5) * (0.5 + Math.random())));
  }
}

function holderOfThisProcess(): Holder {
  return { pid: process.pid, host: hostname(), nonce: randomBytes(12).toString('base64url'), since: Date.now() };
}

/** Creates the lock file if none exists; true when this process now holds it. */
async function create(path: string, holder: Holder): Promise<boolean> {
  let handle;
  try {
    handle = await open(path, 'wx', 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    await handle.writeFile(JSON.stringify(holder));
  } finally {
    await handle.close();
  }
  return true;
}

/** The holder as its lock file says; 'young' for a file being written (empty or partial, recent). */
async function readHolder(path: string): Promise<Holder | 'gone' | 'young' | 'unreadable'> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
  try {
    const h = JSON.parse(text) as Holder;
    if (typeof h.pid === 'number' && typeof h.nonce === 'string' && typeof h.since === 'number' && typeof h.host === 'string') return h;
  } catch {
    // a holder between creating the file and writing it, one that died there, or a foreign file
  }
  try {
    return Date.now() - (await stat(path)).mtimeMs > STALE_MS ? 'unreadable' : 'young';
  } catch {
    return 'gone';
  }
}

function isStale(h: Holder | 'young' | 'unreadable'): boolean {
  if (h === 'young') return false;
  if (h === 'unreadable') return true;
  if (h.host !== hostname()) return Date.now() - h.since > STALE_MS;
  try {
    process.kill(h.pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Removes the stale lock `judged` under the takeover guard; false when another process holds the guard. */
async function takeOver(path: string, judged: Holder | 'unreadable'): Promise<boolean> {
  const guard = `${path}.takeover`;
  if (!(await create(guard, holderOfThisProcess()))) {
    // A guard is held for microseconds; one left by a process that died mid-swap is stale.
    const g = await readHolder(guard);
    if (g !== 'gone' && isStale(g)) await unlink(guard).catch(() => undefined);
    return false;
  }
  try {
    const now = await readHolder(path);
    const same = now === 'unreadable' ? judged === 'unreadable' : typeof now === 'object' && typeof judged === 'object' && now.nonce === judged.nonce;
    if (same) await unlink(path).catch(() => undefined);
    return true;
  } finally {
    await unlink(guard).catch(() => undefined);
  }
}

async function releaseIfMine(path: string, nonce: string): Promise<void> {
  const h = await readHolder(path);
  if (typeof h === 'object' && h.nonce === nonce) await unlink(path).catch(() => undefined);
}
