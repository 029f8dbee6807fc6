// The receipts journal: one JSON object per line (NDJSON), appended and fsynced one line at a time,
// created with mode 0600 (an existing journal others can read or write is refused, naming the fix).
// Several processes may share one journal: every append happens under a lock file beside it
// (client/lock.ts), after reading what the others appended, so the day budget is checked against
// every payment already recorded and the payment recorded in the same turn (appendChecked). It records every payment decision and its outcome, with the receipt as the
// service served it, so a buyer can prove what was paid and re-verify it offline
// (`lds receipts verify JOURNAL`, verifyJournal below). Never a balance token.
//
// Kinds (every line also has v, at, base_url; lines made with a balance token also token_hint,
// `bal#` + 8 hex of the token's SHA-256, the hint the service's logs use, never the token):
//   jwks     {jwks}: the key set the receipts are verified against, each time it is fetched
//   pay      {quote_id, product_id, amount, unit_count}: a paid draw is about to be sent
//   draw     {quote_id, draw_id, amount, receipt, kid}: paid, receipt verified
//   topup    {amount, topup_id, new_balance, receipt, kid}: topped up, receipt verified
//   refused  {action, limit, limit_amount, asked, quote_id?}: the spending policy said no
//   rotate   {new_token_hint}: the token was replaced; the new hint names the same balance
//   quote    {quote}: a quote `lds mcp` showed an agent, so that any `lds mcp` process sharing the
//            journal can pay it by its quote_id (a restarted server included); nothing was paid
//   failure  {action, reason, charged, quote_id?, receipt?, status?, type?}: a payment that did not
//            complete, or an answer whose receipt did not verify (charged: whether money may
//            have moved; a draw that certainly was not paid stops counting toward the day budget)
import { chmod, mkdir, open, stat, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { formatCents, parseAmountCents } from '../contract/money.ts';
import { verifyReceipt, type Jwks, type PublicJwk } from '../contract/receipts.ts';
import { LdsError } from './errors.ts';
import { withLock } from './lock.ts';

export type JournalEntry = { v: 1; at: string; kind: string; base_url?: string; [k: string]: unknown };

/** A journal that cannot be used as it is (others can read or write it, or it is not a file). */
export class JournalError extends LdsError {
  override name = 'JournalError';
}

export class Journal {
  /** bytes of the file already read into `entries` */
  private offset = 0;

  private constructor(
    readonly path: string | null,
    private readonly handle: FileHandle | null,
    readonly entries: JournalEntry[],
  ) {}

  /** A journal kept only in memory (the day budget then counts this process only). */
  static memory(): Journal {
    return new Journal(null, null, []);
  }

  /**
   * Opens (creating, mode 0600, in a folder created 0700) the journal file and reads what it holds.
   * An existing file that others may read or write is refused: it lists what was bought, and a
   * journal others can write is one they can rewrite.
   */
  static async open(path: string): Promise<Journal> {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const existing = await stat(path).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return null;
      throw new JournalError(`the receipts journal ${path}: ${err.message}`);
    });
    if (existing && !existing.isFile()) throw new JournalError(`the receipts journal ${path} is not a file`);
    if (existing && existing.mode & 0o077)
      throw new JournalError(`the receipts journal ${path} can be ${existing.mode & 0o022 ? 'written' : 'read'} by others (mode ${(existing.mode & 0o777).toString(8)}): run chmod 600 ${path}. It lists what you bought${existing.mode & 0o022 ? ', and others could rewrite it' : ''}; nothing was sent`);
    const handle = await open(path, 'a+', 0o600);
    // The mode argument applies only when the file is created; a umask cannot loosen it further, but
    // make sure of 0600 on a file this call created.
    if (!existing) await chmod(path, 0o600);
    const journal = new Journal(path, handle, []);
    await journal.locked(async () => undefined);
    return journal;
  }

  /** Runs `turn` holding the journal's lock, after reading what other processes appended. */
  private async locked<T>(turn: () => Promise<T>): Promise<T> {
    if (!this.handle) return turn();
    return withLock(`${this.path}.lock`, async () => {
      await this.catchUp();
      return turn();
    });
  }

  /** Reads the lines appended since the last read (by this or another process). Under the lock. */
  private async catchUp(): Promise<void> {
    const handle = this.handle!;
    const { size } = await handle.stat();
    if (size <= this.offset) return;
    const buffer = Buffer.alloc(size - this.offset);
    await handle.read(buffer, 0, buffer.length, this.offset);
    const text = buffer.toString('utf8');
    const complete = text.lastIndexOf('\n') + 1;
    this.entries.push(...parseJournal(text.slice(0, complete)).entries);
    this.offset += Buffer.byteLength(text.slice(0, complete));
    // Every writer writes whole lines under the lock, so a line without its end is what a writer
    // that crashed mid-line left: end it, so the next entry starts on its own line.
    if (complete < text.length) {
      await handle.write('\n');
      await handle.sync();
      this.offset = size + 1;
    }
  }

  /** Reads what other processes appended since this one last looked (under the lock). */
  async refresh(): Promise<void> {
    await this.locked(async () => undefined);
  }

  async append(entry: Omit<JournalEntry, 'v' | 'at'> & { at?: string }): Promise<JournalEntry> {
    return this.appendChecked(entry, () => undefined);
  }

  /**
   * Appends `entry` in the same turn as `check` (which throws to refuse it), holding the lock: the
   * check sees every line every process appended before, and no other line can come between.
   */
  async appendChecked(entry: Omit<JournalEntry, 'v' | 'at'> & { at?: string }, check: (journal: Journal) => void | Promise<void>): Promise<JournalEntry> {
    return this.locked(async () => {
      await check(this);
      const full = { v: 1, at: new Date().toISOString(), ...entry } as JournalEntry;
      if (this.handle) {
        const line = `${JSON.stringify(full)}\n`;
        await this.handle.write(line);
        await this.handle.sync();
        this.offset += Buffer.byteLength(line);
      }
      this.entries.push(full);
      return full;
    });
  }

  /**
   * Cents of paid draws since `since` (ms): each quote's latest `pay` line, unless a later failure
   * says the service certainly did not charge it (a quote refused, then paid after a top-up, counts).
   */
  spentSince(since: number): number {
    const open = new Map<unknown, JournalEntry>();
    for (const e of this.entries) {
      if (e.kind === 'pay') open.set(e.quote_id, e);
      else if (e.kind === 'failure' && e.action === 'draw' && e.charged === false) open.delete(e.quote_id);
    }
    let cents = 0;
    for (const e of open.values()) if (Date.parse(e.at) >= since) cents += parseAmountCents(e.amount) ?? 0;
    return cents;
  }

  /** Every key the journal's JWKS lines hold (union, by kid). */
  keys(): PublicJwk[] {
    return keysOf(this.entries);
  }

  async close(): Promise<void> {
    await this.handle?.close();
  }
}

function keysOf(entries: JournalEntry[]): PublicJwk[] {
  const byKid = new Map<string, PublicJwk>();
  for (const e of entries) if (e.kind === 'jwks') for (const k of (e.jwks as Jwks | undefined)?.keys ?? []) if (k && typeof k.kid === 'string') byKid.set(k.kid, k);
  return [...byKid.values()];
}

/**
 * The entries of a journal's text with the line number of each (`lines[i]` is entries[i]'s, from 1),
 * and the line numbers of lines that are not JSON objects with a kind.
 */
export function parseJournal(text: string): { entries: JournalEntry[]; lines: number[]; bad: number[] } {
  const entries: JournalEntry[] = [];
  const lines: number[] = [];
  const bad: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      const e = JSON.parse(line);
      if (e && typeof e === 'object' && typeof e.kind === 'string') {
        entries.push(e);
        lines.push(i + 1);
      } else bad.push(i + 1);
    } catch {
      bad.push(i + 1);
    }
  });
  return { entries, lines, bad };
}

export interface JournalReport {
  /** where the keys came from: the caller's (the service's live JWKS, a saved copy), the journal's own
   *  key sets narrowed to pinned key ids, or the journal's own key sets alone (a journal rewritten
   *  with a key of its own passes that check: only the service's keys or a pin can tell) */
  keys: 'given' | 'pinned' | 'journal';
  /** receipts of draw and top-up lines that verify */
  verified: number;
  /** lines that do not: a receipt that does not verify, or an unsigned field that disagrees with it */
  invalid: { line: number; kind: string; id: string; reason: string }[];
  /** failure lines with a receipt the client refused when it was served (still refused now, as they should be) */
  recordedFailures: number;
  /** lines that are not JSON */
  unreadable: number[];
  /** distinct draws paid (a quote paid twice is one draw: the same draw_id, one debit) */
  drawsPaid: number;
  spent: string;
  /** the origins the journal's draw and top-up lines name (more than one: see checkJournal's warning) */
  origins: string[];
}

export interface VerifyJournalOptions {
  /** the keys to check a line's receipt with (e.g. the live JWKS of the line's base_url); undefined: the journal's own */
  keysFor?: (entry: JournalEntry) => Jwks | undefined;
  /** key ids (RFC 7638 thumbprints) the buyer pinned: only the journal's keys with these ids are trusted */
  pinned?: string[];
}

/**
 * Re-verifies every receipt of a journal offline. A draw line must verify and match its quote,
 * amount and draw id, and follow the `pay` line of its quote with the same amount; a top-up line
 * must verify and match its amount and id. The unsigned fields of a line (its amount, ids) are the
 * journal's: each is compared with the signed receipt, so an edit outside the receipt is named too.
 */
export function verifyJournal(text: string, o: VerifyJournalOptions = {}): JournalReport {
  const { entries, lines, bad: unreadable } = parseJournal(text);
  const own = keysOf(entries);
  const pinnedKeys = o.pinned ? { keys: own.filter((k) => o.pinned!.includes(k.kid)) } : null;
  const keysFor = (e: JournalEntry) => o.keysFor?.(e) ?? pinnedKeys ?? { keys: own };
  const report: JournalReport = { keys: o.keysFor ? 'given' : o.pinned ? 'pinned' : 'journal', verified: 0, invalid: [], recordedFailures: 0, unreadable, drawsPaid: 0, spent: '0.00', origins: [] };
  const paying = new Map<unknown, { line: number; amount: unknown }>();
  const draws = new Set<unknown>();
  const origins = new Set<string>();
  // The key ids each origin's jwks lines recorded so far: the client records the key set before it
  // accepts a receipt signed with it, so a receipt whose key the journal learns only later (or never)
  // was not accepted by the client that wrote the journal.
  const recorded = new Map<string, Set<string>>();
  let spent = 0;
  for (const [i, e] of entries.entries()) {
    const origin = originOf(e.base_url);
    if (e.kind === 'jwks')
      for (const k of (e.jwks as Jwks | undefined)?.keys ?? [])
        if (k && typeof k.kid === 'string') {
          if (!recorded.has(origin)) recorded.set(origin, new Set());
          recorded.get(origin)!.add(k.kid);
        }
    if (e.kind === 'pay') paying.set(e.quote_id, { line: lines[i]!, amount: e.amount });
    if (e.kind === 'failure' && e.receipt) report.recordedFailures++;
    if (e.kind !== 'draw' && e.kind !== 'topup') continue;
    const receipt = e.receipt as Record<string, unknown> | undefined;
    const id = String(e.draw_id ?? e.topup_id ?? '');
    origins.add(origin);
    const r = verifyReceipt(receipt, keysFor(e));
    let reason = r.ok ? '' : r.reason;
    if (r.ok && !recorded.get(origin)?.has(r.kid)) {
      const later = keyLineAfter(entries, lines, i, origin, r.kid);
      reason = `its key ${r.kid} ${later ? `first appears in the journal at line ${later}, after the receipt it signs` : `is in no key set the journal recorded for ${origin || 'its service'}`}: the client records a key before it accepts a receipt signed with it, so this line was not written by the client`;
    }
    if (r.ok && e.kind === 'draw') {
      const pay = paying.get(e.quote_id);
      if (receipt!.quote_id !== e.quote_id || receipt!.amount !== e.amount || receipt!.draw_id !== e.draw_id)
        reason = `the line says draw ${e.draw_id} of quote ${e.quote_id} for ${e.amount} EUR, its signed receipt draw ${receipt!.draw_id} of quote ${receipt!.quote_id} for ${receipt!.amount} EUR`;
      else if (!pay) reason = `no pay line for quote ${e.quote_id} before it (a line was deleted or moved)`;
      else if (pay.amount !== receipt!.amount) reason = `the pay line of quote ${e.quote_id} (line ${pay.line}) says ${pay.amount} EUR, the signed receipt ${receipt!.amount} EUR`;
    }
    if (r.ok && e.kind === 'topup' && (receipt!.amount !== e.amount || receipt!.topup_id !== e.topup_id))
      reason = `the line says top-up ${e.topup_id} of ${e.amount} EUR, its signed receipt top-up ${receipt!.topup_id} of ${receipt!.amount} EUR`;
    if (reason) report.invalid.push({ line: lines[i]!, kind: e.kind, id, reason });
    else report.verified++;
    // One draw, one debit: paying a quote again returns the same draw, journaled again.
    if (e.kind === 'draw' && !reason && !draws.has(`${origin} ${e.draw_id}`)) {
      draws.add(`${origin} ${e.draw_id}`);
      report.drawsPaid++;
      spent += parseAmountCents(e.amount) ?? 0;
    }
  }
  report.spent = formatCents(spent);
  report.origins = [...origins];
  return report;
}

/** The origin of a journal line's base_url ('' when it names none or an unreadable one). */
function originOf(baseUrl: unknown): string {
  if (typeof baseUrl !== 'string') return '';
  try {
    return new URL(baseUrl).origin;
  } catch {
    return '';
  }
}

/** The line of the first jwks line after entry `i` of `origin` that holds `kid`, if any. */
function keyLineAfter(entries: JournalEntry[], lines: number[], i: number, origin: string, kid: string): number | undefined {
  for (let j = i + 1; j < entries.length; j++) {
    const e = entries[j]!;
    if (e.kind === 'jwks' && originOf(e.base_url) === origin && ((e.jwks as Jwks | undefined)?.keys ?? []).some((k) => k?.kid === kid)) return lines[j];
  }
  return undefined;
}
