// The receipts journal: one JSON object per line (NDJSON), appended and fsynced one line at a time,
// created with mode 0600. It records every payment decision and its outcome, with the receipt as the
// service served it, so a buyer can prove what was paid and re-verify it offline
// (`lds receipts verify JOURNAL`, verifyJournal below). Never a balance token.
//
// Kinds (every line also has v, at, base_url):
//   jwks     {jwks}: the key set the receipts are verified against, each time it is fetched
//   pay      {quote_id, product_id, amount, unit_count}: a paid draw is about to be sent
//   draw     {quote_id, draw_id, amount, receipt, kid}: paid, receipt verified
//   topup    {amount, topup_id, new_balance, receipt, kid}: topped up, receipt verified
//   refused  {action, limit, limit_amount, asked, quote_id?}: the spending policy said no
//   failure  {action, reason, charged, quote_id?, receipt?, status?, type?}: a payment that did not
//            complete, or an answer whose receipt did not verify (charged: whether money may
//            have moved; a draw that certainly was not paid stops counting toward the day budget)
import { open, readFile, mkdir, type FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { formatCents, parseAmountCents } from '../contract/money.ts';
import { verifyReceipt, type Jwks, type PublicJwk } from '../contract/receipts.ts';

export type JournalEntry = { v: 1; at: string; kind: string; base_url?: string; [k: string]: unknown };

export class Journal {
  private constructor(
    readonly path: string | null,
    private readonly handle: FileHandle | null,
    readonly entries: JournalEntry[],
  ) {}

  /** A journal kept only in memory (the day budget then counts this process only). */
  static memory(): Journal {
    return new Journal(null, null, []);
  }

  /** Opens (creating, mode 0600) the journal file and reads what it already holds. */
  static async open(path: string): Promise<Journal> {
    await mkdir(dirname(path), { recursive: true, mode: 0o700 });
    const handle = await open(path, 'a+', 0o600);
    const text = await readFile(path, 'utf8');
    const { entries } = parseJournal(text);
    // A crash mid-line leaves an unterminated line: end it, so the next entry starts on its own line.
    if (text.length && !text.endsWith('\n')) {
      await handle.write('\n');
      await handle.sync();
    }
    return new Journal(path, handle, entries);
  }

  async append(entry: Omit<JournalEntry, 'v' | 'at'> & { at?: string }): Promise<JournalEntry> {
    const full = { v: 1, at: new Date().toISOString(), ...entry } as JournalEntry;
    this.entries.push(full);
    if (this.handle) {
      await this.handle.write(`${JSON.stringify(full)}\n`);
      await this.handle.sync();
    }
    return full;
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

/** The entries of a journal's text, and the line numbers of lines that are not JSON objects. */
export function parseJournal(text: string): { entries: JournalEntry[]; bad: number[] } {
  const entries: JournalEntry[] = [];
  const bad: number[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    try {
      const e = JSON.parse(line);
      if (e && typeof e === 'object' && typeof e.kind === 'string') entries.push(e);
      else bad.push(i + 1);
    } catch {
      bad.push(i + 1);
    }
  });
  return { entries, bad };
}

export interface JournalReport {
  /** receipts of draw and top-up lines that verify */
  verified: number;
  /** receipts of draw and top-up lines that do not: line number and reason */
  invalid: { line: number; kind: string; id: string; reason: string }[];
  /** failure lines with a receipt the client refused when it was served (still refused now, as they should be) */
  recordedFailures: number;
  /** lines that are not JSON */
  unreadable: number[];
  drawsPaid: number;
  spent: string;
}

/**
 * Re-verifies every receipt of a journal offline, against `jwks` (default: the keys the journal
 * itself recorded). Draw lines must verify and match their quote; top-up lines must verify.
 */
export function verifyJournal(text: string, jwks?: Jwks): JournalReport {
  const lines = text.split('\n');
  const { entries, bad: unreadable } = parseJournal(text);
  const keys = jwks ?? { keys: keysOf(entries) };
  const report: JournalReport = { verified: 0, invalid: [], recordedFailures: 0, unreadable, drawsPaid: 0, spent: '0.00' };
  let spent = 0;
  let lineNo = 0;
  for (const line of lines) {
    lineNo++;
    let e: JournalEntry;
    try {
      e = JSON.parse(line);
    } catch {
      continue;
    }
    if (e?.kind === 'failure' && e.receipt) report.recordedFailures++;
    if (e?.kind !== 'draw' && e?.kind !== 'topup') continue;
    const receipt = e.receipt as Record<string, unknown> | undefined;
    const id = String(e.draw_id ?? e.topup_id ?? '');
    const r = verifyReceipt(receipt, keys);
    let reason = r.ok ? '' : r.reason;
    if (r.ok && e.kind === 'draw' && (receipt!.quote_id !== e.quote_id || receipt!.amount !== e.amount || receipt!.draw_id !== e.draw_id)) reason = 'the receipt names another draw, quote or amount than the journal line';
    if (r.ok && e.kind === 'topup' && (receipt!.amount !== e.amount || receipt!.topup_id !== e.topup_id)) reason = 'the receipt names another top-up or amount than the journal line';
    if (reason) report.invalid.push({ line: lineNo, kind: e.kind, id, reason });
    else report.verified++;
    if (e.kind === 'draw' && !reason) {
      report.drawsPaid++;
      spent += parseAmountCents(e.amount) ?? 0;
    }
  }
  report.spent = formatCents(spent);
  return report;
}
