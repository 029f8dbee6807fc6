// `lds ledger reconcile RECEIPTS…`: the operator's check that every acknowledgment the service
// signed is still in the ledger (payments/ledger/reconcile.ts compares; this reads and prints).
//
// A RECEIPTS file may be, in any mix:
//   - a buyer's receipts journal as `lds buy` and the client library write it (NDJSON; its `draw` and
//     `topup` lines carry the receipts, its `jwks` lines the keys they were checked against);
//   - saved receipts: one receipt, a whole paid-draw or top-up answer (`{ receipt }`), a JSON array
//     of either, or one per line.
// Every receipt is verified against the service's keys (--jwks: its /.well-known/jwks.json or a
// saved copy; without it, the keys a journal recorded) before the ledger is asked about it.
// Exit status: 0 every receipt is in the ledger as signed; 1 one is missing, differs or does not
// verify; 2 could not run (an unreadable file, no receipt at all, no keys).
import { readFile } from 'node:fs/promises';
import { verifyReceipt, type Jwks, type PublicJwk } from '../contract/receipts.ts';
import { indexLedger, reconcile, type HeldReceipt, type ReconcileReport } from '../payments/ledger/reconcile.ts';
import { describeLedger, readPaymentsAt } from '../payments/ledger/ops.ts';
import type { LedgerSettings } from '../payments/ledger/open.ts';
import { loadJwks } from './admin.ts';

export class ReconcileCliError extends Error {}

interface Io {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

/** The receipts of one file and the keys it recorded (a journal's `jwks` lines). */
export function receiptsOf(text: string, file: string): { receipts: { receipt: Record<string, unknown>; source: string }[]; keys: PublicJwk[] } {
  const receipts: { receipt: Record<string, unknown>; source: string }[] = [];
  const keys: PublicJwk[] = [];
  const take = (v: unknown, source: string): void => {
    if (Array.isArray(v)) return v.forEach((x) => take(x, source));
    if (!v || typeof v !== 'object') return;
    const o = v as Record<string, unknown>;
    if (o.kind === 'jwks') keys.push(...(((o.jwks as Jwks | undefined)?.keys ?? []) as PublicJwk[]));
    // A journal's failure lines hold receipts the client refused when served: not acknowledgments.
    if (o.kind !== undefined && o.kind !== 'draw' && o.kind !== 'topup') return;
    if ((o.type === 'draw' || o.type === 'topup') && 'signature' in o) receipts.push({ receipt: o, source });
    else if (o.receipt && typeof o.receipt === 'object') take(o.receipt, source);
  };
  let whole: unknown;
  try {
    whole = JSON.parse(text);
  } catch {
    whole = undefined;
  }
  if (whole !== undefined) take(whole, file);
  else
    text.split('\n').forEach((line, i) => {
      if (!line.trim()) return;
      try {
        take(JSON.parse(line), `${file}:${i + 1}`);
      } catch {
        throw new ReconcileCliError(`${file}:${i + 1}: not JSON (a receipts file holds JSON receipts, or one JSON object per line)`);
      }
    });
  return { receipts, keys };
}

export async function runReconcile(files: string[], o: { jwks?: string; json?: boolean; all?: boolean }, at: LedgerSettings, io: Io): Promise<number> {
  const held: { receipt: Record<string, unknown>; source: string }[] = [];
  const recorded = new Map<string, PublicJwk>();
  for (const file of files) {
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch (err) {
      throw new ReconcileCliError(`cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
    }
    const got = receiptsOf(text, file);
    held.push(...got.receipts);
    for (const k of got.keys) if (k && typeof k.kid === 'string') recorded.set(k.kid, k);
  }
  if (!held.length) throw new ReconcileCliError(`no draw or top-up receipt in ${files.join(', ')}`);
  let jwks: unknown;
  if (o.jwks) jwks = await loadJwks(o.jwks);
  else if (recorded.size) jwks = { keys: [...recorded.values()] };
  else throw new ReconcileCliError("no keys to verify the receipts with: give --jwks (the service's https://<host>/.well-known/jwks.json, or a saved copy)");
  const checked: HeldReceipt[] = held.map((h) => {
    const v = verifyReceipt(h.receipt, jwks);
    return { ...h, invalid: v.ok ? null : v.reason };
  });
  const { draws, topups } = await readPaymentsAt(at);
  const report = reconcile(checked, indexLedger(draws, topups));
  print(report, describeLedger(at), o, io);
  return report.counts.missing + report.counts.different + report.counts['not-genuine'] > 0 ? 1 : 0;
}

function print(report: ReconcileReport, ledger: string, o: { json?: boolean; all?: boolean }, io: Io): void {
  if (o.json) {
    io.stdout(JSON.stringify({ ledger, counts: report.counts, findings: report.findings }, null, 2));
    return;
  }
  for (const f of report.findings) if (o.all || f.kind !== 'match') io.stdout(`${f.kind === 'match' ? 'ok' : f.kind}: ${f.message} [${f.source}]`);
  const c = report.counts;
  const total = report.findings.length;
  io.stdout(`${total} receipt${total === 1 ? '' : 's'} against the ledger ${ledger}: ${c.match} in the ledger, ${c.missing} missing, ${c.different} different, ${c['not-genuine']} not verified`);
  if (c.missing + c.different) io.stderr('A missing or different record is an acknowledgment the ledger lost or changed (after a failover to a standby that had not received it, a restore from an older backup, …): see docs/operations.md, "High availability", for what to do.');
}
