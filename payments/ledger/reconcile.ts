// `lds ledger reconcile`: signed receipts held outside the ledger (a buyer's journal, saved
// receipts, the instances' receipt log) against the ledger's own records. Its use: an acknowledgment
// the ledger lost - a database that failed over to a standby that had not received the last
// commits (asynchronous replication) keeps a consistent ledger that `ledger verify` finds clean,
// while a buyer holds a signed receipt for a draw or top-up it no longer has. Only a record kept
// elsewhere shows that; this compares them.
//
// Pure: the receipts (already read and verified against the service's keys, cli/reconcile.ts) and
// the ledger's draws and top-ups (from one export snapshot) in, findings out. Per receipt:
//   match        the ledger has the record and every field the receipt states agrees;
//   missing      the ledger has no record with that id - for a draw, `also` names the draw that
//                paid the same quote since (a buyer who paid the quote again after the loss);
//   different    the record is there and some field disagrees (each one named, receipt vs ledger);
//   not-genuine  the signature does not verify: the ledger is not asked (and it counts as a problem).
import { formatCents } from '../../contract/money.ts';
import type { DrawRecord, TopupRecord } from './records.ts';

export interface HeldReceipt {
  receipt: Record<string, unknown>;
  /** where it was read: file:line */
  source: string;
  /** null when the signature verifies against the service's keys, else why not */
  invalid: string | null;
}

export interface LedgerIndex {
  draws: Map<string, DrawRecord>;
  drawsByQuote: Map<string, DrawRecord>;
  topups: Map<string, TopupRecord>;
  /** processor + ' ' + payment_ref */
  topupsByPayment: Map<string, TopupRecord>;
}

export type FindingKind = 'match' | 'missing' | 'different' | 'not-genuine';

export interface Finding {
  kind: FindingKind;
  type: 'draw' | 'topup';
  id: string;
  source: string;
  /** one line for a person */
  message: string;
  /** different: the fields that disagree */
  fields?: { field: string; receipt: unknown; ledger: unknown }[];
  /** missing draw: the draw that paid the same quote since; missing top-up: the one its payment credited */
  also?: string;
}

export interface ReconcileReport {
  findings: Finding[];
  counts: Record<FindingKind, number>;
}

/** Indexes the draws and top-ups of a ledger snapshot (export lines of type draw and topup). */
export function indexLedger(draws: Iterable<DrawRecord>, topups: Iterable<TopupRecord>): LedgerIndex {
  const index: LedgerIndex = { draws: new Map(), drawsByQuote: new Map(), topups: new Map(), topupsByPayment: new Map() };
  for (const d of draws) {
    index.draws.set(d.draw_id, d);
    index.drawsByQuote.set(d.quote_id, d);
  }
  for (const t of topups) {
    index.topups.set(t.topup_id, t);
    index.topupsByPayment.set(`${t.processor} ${t.payment_ref}`, t);
  }
  return index;
}

/** What a draw receipt states, as the ledger's draw record states it (payments/draw/delivery.ts signs these). */
function drawFields(d: DrawRecord): Record<string, unknown> {
  const stored = (d.draw ?? {}) as { refs?: unknown[]; units_sha256?: string; catalogue_version?: string };
  return {
    quote_id: d.quote_id,
    product_id: d.product_id,
    amount: formatCents(d.amount_cents),
    currency: d.currency,
    balance_after: formatCents(d.balance_after_cents),
    paid_at: d.at,
    unit_count: stored.refs?.length,
    units_sha256: stored.units_sha256,
    catalogue_version: stored.catalogue_version,
  };
}

/** What a top-up receipt states, from the ledger's top-up record (payments/topup/handler.ts topupReceipt). */
function topupFields(t: TopupRecord): Record<string, unknown> {
  return { amount: formatCents(t.amount_cents), currency: t.currency, balance_after: formatCents(t.balance_after_cents), processor: t.processor, payment_ref: t.payment_ref, paid_at: t.at };
}

/** A receipt whose record the ledger has: a match, or every field that disagrees. */
function compared(base: Pick<Finding, 'type' | 'id' | 'source'>, what: string, receipt: Record<string, unknown>, ledger: Record<string, unknown>): Finding {
  const fields = Object.entries(ledger)
    .filter(([field, value]) => value !== undefined && field in receipt && receipt[field] !== value)
    .map(([field, value]) => ({ field, receipt: receipt[field], ledger: value }));
  if (!fields.length) return { ...base, kind: 'match', message: `${what}: in the ledger` };
  return { ...base, kind: 'different', fields, message: `${what}: the ledger's record differs: ${fields.map((f) => `${f.field} ${JSON.stringify(f.receipt)} in the receipt, ${JSON.stringify(f.ledger)} in the ledger`).join('; ')}` };
}

const short = (s: unknown) => (typeof s === 'string' && s.length > 24 ? `${s.slice(0, 20)}…` : String(s));

export function reconcile(held: Iterable<HeldReceipt>, index: LedgerIndex): ReconcileReport {
  const findings: Finding[] = [];
  const seen = new Set<string>();
  for (const h of held) {
    const r = h.receipt;
    const type = r.type === 'draw' ? 'draw' : 'topup';
    const id = String((type === 'draw' ? r.draw_id : r.topup_id) ?? '');
    // The same receipt twice (a journal keeps replays too) is one finding.
    const key = `${type} ${id} ${JSON.stringify(r.signature ?? null)}`;
    if (seen.has(key)) continue;
    seen.add(key);
    const what = type === 'draw' ? `draw ${id} (quote ${short(r.quote_id)}, ${String(r.amount)} ${String(r.currency)}, paid ${String(r.paid_at)})` : `top-up ${id} (${String(r.amount)} ${String(r.currency)}, payment ${String(r.processor)} ${String(r.payment_ref)}, paid ${String(r.paid_at)})`;
    const base = { type, id, source: h.source } as const;
    if (h.invalid !== null) {
      findings.push({ ...base, kind: 'not-genuine', message: `${what}: the receipt does not verify against the service's keys (${h.invalid}); the ledger was not consulted` });
      continue;
    }
    if (type === 'draw') {
      const d = index.draws.get(id);
      if (!d) {
        const again = index.drawsByQuote.get(String(r.quote_id));
        findings.push({ ...base, kind: 'missing', message: `${what}: not in the ledger${again ? `; its quote was paid again since, as draw ${again.draw_id} (${formatCents(again.amount_cents)} ${again.currency}) - the buyer was charged twice for one quote` : ', nor any draw of its quote'}`, ...(again ? { also: again.draw_id } : {}) });
        continue;
      }
      findings.push(compared(base, what, r, drawFields(d)));
      continue;
    }
    const t = index.topups.get(id);
    if (!t) {
      const other = index.topupsByPayment.get(`${String(r.processor)} ${String(r.payment_ref)}`);
      findings.push({ ...base, kind: 'missing', message: `${what}: not in the ledger${other ? `; its payment was credited as top-up ${other.topup_id}` : ', nor any credit of its payment - the money was taken and is not on the balance'}`, ...(other ? { also: other.topup_id } : {}) });
      continue;
    }
    findings.push(compared(base, what, r, topupFields(t)));
  }
  const counts: Record<FindingKind, number> = { match: 0, missing: 0, different: 0, 'not-genuine': 0 };
  for (const f of findings) counts[f.kind]++;
  return { findings, counts };
}
