// What the `ledger` commands do, for either backend, while the service runs or not:
//   verify   audit one consistent snapshot;
//   export   write it as NDJSON (transfer.ts);
//   import   load an export into an empty ledger, then verify it;
//   migrate  bring a PostgreSQL ledger's schema up to date.
// LevelDB: the directory is opened directly when no process holds it; otherwise the running
// service answers over its ledger socket (level/admin.ts). PostgreSQL: a connection of our own, to
// the server the URL leads to (several hosts: verify and export take the first that answers unless
// target_session_attrs says otherwise, as libpq does; import and migrate the writable one).
import { createReadStream, createWriteStream, existsSync } from 'node:fs';
import { link, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import type { LedgerSettings } from './open.ts';
import { openLedger } from './open.ts';
import { redactUrl } from './location.ts';
import { readExport, writeExport } from './transfer.ts';
import type { Violation } from './verify.ts';
import type { DrawRecord, Ledger, TopupRecord } from './ledger.ts';

/** One wording for every `ledger` command that finds no LevelDB ledger where it was sent. */
function noLedgerAt(dir: string): string {
  return `no ledger at ${dir} (nothing has been paid there yet, or LDS_LEDGER_DIR / --dir points elsewhere)`;
}

export function describeLedger(s: LedgerSettings): string {
  return s.ledgerUrl ? `PostgreSQL ${redactUrl(s.ledgerUrl)}` : `LevelDB ${s.ledgerDir}`;
}

/** Runs `fn` on the ledger opened by this process, or returns null when a running service holds the LevelDB. */
async function withOwnLedger<T>(s: LedgerSettings, fn: (l: Ledger) => Promise<T>, o: { create?: boolean; migrate?: boolean } = {}): Promise<T | null> {
  let ledger: Ledger;
  // Reading only: any server will do, like psql with the same URL; a change needs the writable one.
  if (s.ledgerUrl) ledger = await openLedger(s, { migrate: o.migrate ?? false, target: o.create ? 'read-write' : 'any' });
  else {
    const { LevelLedger, LedgerLockedError, openLevelDb } = await import('./level/ledger.ts');
    // A folder without LevelDB's CURRENT file holds no ledger: said as for a missing folder, before
    // LevelDB opens it (opening writes LOCK and LOG into any folder, and then fails with no reason).
    if (!o.create && !existsSync(join(s.ledgerDir, 'CURRENT'))) throw new Error(noLedgerAt(s.ledgerDir));
    try {
      if (!o.create) await (await openLevelDb(s.ledgerDir, { createIfMissing: false })).close(); // exists, and free
      ledger = await LevelLedger.open(s.ledgerDir);
    } catch (err) {
      if (err instanceof LedgerLockedError) return null;
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(noLedgerAt(s.ledgerDir));
      throw err;
    }
  }
  try {
    return await fn(ledger);
  } finally {
    await ledger.close();
  }
}

export async function verifyLedgerAt(s: LedgerSettings): Promise<Violation[]> {
  const own = await withOwnLedger(s, (l) => l.verify());
  if (own) return own;
  const { adminSocketPath, askRunningService } = await import('./level/admin.ts');
  let body = '';
  await askRunningService(adminSocketPath(s.ledgerDir), '/verify', (c) => void (body += c));
  return JSON.parse(body) as Violation[];
}

export async function exportLedgerAt(s: LedgerSettings, write: (chunk: string) => void | Promise<void>): Promise<void> {
  const own = await withOwnLedger(s, (l) => l.readSnapshot((records) => writeExport(records, write)).then(() => true));
  if (own) return;
  const { adminSocketPath, askRunningService } = await import('./level/admin.ts');
  await askRunningService(adminSocketPath(s.ledgerDir), '/export', write);
}

/**
 * `ledger export --out <file>`: never over an existing file, and never a partial one. The export is
 * written to a temporary file beside `out` (owner-only) and linked to `out` once complete: link()
 * fails rather than replace a file made meanwhile, and a failed export leaves nothing behind.
 */
export async function exportLedgerToFile(s: LedgerSettings, out: string): Promise<void> {
  if (existsSync(out)) throw new Error(`--out ${out} already exists: name a new file (an export never replaces one); nothing was written`);
  const partial = join(dirname(out), `.${basename(out)}.partial-${process.pid}`);
  const stream = createWriteStream(partial, { flags: 'wx', mode: 0o600 });
  const opened = new Promise<void>((resolveOpen, reject) => {
    stream.once('open', () => resolveOpen());
    stream.once('error', reject);
  });
  try {
    await opened.catch((err: NodeJS.ErrnoException) => {
      throw new Error(`cannot write beside --out ${out} (${err.code ?? err.message}): name a file in a folder you can write to; nothing was written`);
    });
    let failed: Error | undefined;
    stream.on('error', (err) => (failed = err));
    await exportLedgerAt(s, (chunk) => {
      if (failed) throw failed;
      return stream.write(chunk) ? undefined : new Promise<void>((r) => stream.once('drain', () => r()));
    });
    await new Promise<void>((resolveEnd, reject) => stream.end((err?: Error | null) => (err ? reject(err) : resolveEnd())));
    if (failed) throw failed;
    await link(partial, out).catch((err: NodeJS.ErrnoException) => {
      throw err.code === 'EEXIST' ? new Error(`--out ${out} appeared while the export ran: name a new file; nothing was written`) : err;
    });
  } finally {
    stream.destroy();
    await unlink(partial).catch(() => {});
  }
}

/** The draws and top-ups of one consistent snapshot (`ledger reconcile`), on either backend, while the service runs or not. */
export async function readPaymentsAt(s: LedgerSettings): Promise<{ draws: DrawRecord[]; topups: TopupRecord[] }> {
  const draws: DrawRecord[] = [];
  const topups: TopupRecord[] = [];
  let rest = '';
  await exportLedgerAt(s, (chunk) => {
    const lines = (rest + chunk).split('\n');
    rest = lines.pop()!;
    for (const line of lines) {
      if (!line.includes('"type":"draw"') && !line.includes('"type":"topup"')) continue;
      const r = JSON.parse(line) as { type: string };
      if (r.type === 'draw') draws.push(r as unknown as DrawRecord);
      else if (r.type === 'topup') topups.push(r as unknown as TopupRecord);
    }
  });
  return { draws, topups };
}

/** Imports an export file into an empty ledger (created if needed; PostgreSQL is migrated first) and verifies it. */
/**
 * The lines of a file, read only once iteration starts: a readline interface created earlier would
 * emit lines (and 'close') before anyone listens, and they would be lost.
 */
async function* fileLines(file: string): AsyncGenerator<string> {
  yield* createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity });
}

export async function importLedgerAt(s: LedgerSettings, file: string): Promise<Violation[]> {
  const lines = fileLines(file);
  const result = await withOwnLedger(
    s,
    async (l) => {
      await l.importRecords(readExport(lines));
      return l.verify();
    },
    { create: true, migrate: true },
  );
  if (!result) throw new Error(`the ledger ${s.ledgerDir} is held by a running service: import into a ledger no process is using`);
  return result;
}

export async function migrateLedgerAt(s: LedgerSettings): Promise<string> {
  if (!s.ledgerUrl) return `LevelDB ${s.ledgerDir}: no schema to migrate`;
  const { PgLedger } = await import('./postgres/ledger.ts');
  const { SCHEMA_VERSION } = await import('./postgres/migrations.ts');
  const l = await PgLedger.open({ url: s.ledgerUrl, migrate: true });
  await l.close();
  return `${describeLedger(s)}: schema at version ${SCHEMA_VERSION}`;
}
