// Independent audit of a ledger (`ledger verify` in the CLI), the same for every backend: it reads
// the records of one consistent snapshot (Ledger.readSnapshot) under their logical keys (records.ts).
//
// It recomputes everything from the raw records instead of trusting any stored total:
//   - all entries sum to zero per currency, and each transaction's entries sum to zero;
//   - every entry belongs to an existing top-up or draw and matches its amount and accounts;
//   - every balance equals its credits minus its debits, and never went negative at any point;
//   - no quote debited twice; no challenge and no processor payment credited twice;
//   - every claim names the record that owns it and every record has its claim;
//   - each balance's statement lists exactly its top-ups and draws, in order, as the records say.
// Each violation carries the offending raw records (key and value) so an operator can act on it.
import {
  ACCOUNT,
  K,
  PREFIX,
  correctionEntries,
  correctionStatementLine,
  statementLine,
  type BalanceRecord,
  type ClaimRecord,
  type CorrectionRecord,
  type DrawRecord,
  type EntryRecord,
  type LedgerRecords,
  type StatementRecord,
  type SealRecord,
  type TokenRecord,
  type TopupRecord,
} from './records.ts';
import canonicalize from 'canonicalize';

export interface ViolationRecord {
  key: string;
  value: unknown;
}

export interface Violation {
  /** stable machine code, e.g. 'balance_mismatch' */
  code:
    | 'malformed_record'
    | 'unbalanced_total'
    | 'unbalanced_txn'
    | 'orphan_entry'
    | 'entry_mismatch'
    | 'unknown_account'
    | 'balance_mismatch'
    | 'negative_balance'
    | 'quote_debited_twice'
    | 'challenge_credited_twice'
    | 'payment_credited_twice'
    | 'claim_mismatch'
    | 'statement_mismatch'
    | 'refund_exceeds_payment'
    | 'idempotency_key_twice'
    | 'token_mismatch';
  message: string;
  records: ViolationRecord[];
}

interface Scan {
  balances: Map<string, { key: string; value: BalanceRecord }>;
  topups: Map<string, { key: string; value: TopupRecord }>;
  draws: Map<string, { key: string; value: DrawRecord }>;
  entries: { key: string; value: EntryRecord }[];
  claims: Map<string, { key: string; value: ClaimRecord }>; // by full key (c:, p:, q:)
  statements: Map<string, { key: string; value: StatementRecord }[]>; // by token hash, in key order
  corrections: Map<string, { key: string; value: CorrectionRecord }>;
  idempotency: Map<string, { key: string; value: { correction_id: string } }>; // by full key (i:)
  tokens: Map<string, { key: string; value: TokenRecord }>;
  seals: { key: string; value: SealRecord }[];
  malformed: ViolationRecord[];
}

/** Audits the records of one consistent snapshot (every record, in key order). */
export async function verifyRecords(records: LedgerRecords): Promise<Violation[]> {
  const scan = await readAll(records);
  const out: Violation[] = [];
  const add = (code: Violation['code'], message: string, records: ViolationRecord[]) => out.push({ code, message, records });

  for (const m of scan.malformed) add('malformed_record', `record ${m.key} does not have the expected shape`, [m]);

  // 1. Conservation: all entries sum to zero per currency.
  const totals = new Map<string, number>();
  for (const { value } of scan.entries) totals.set(value.currency, (totals.get(value.currency) ?? 0) + value.cents);
  for (const [currency, sum] of totals) {
    if (sum !== 0) add('unbalanced_total', `entries in ${currency} sum to ${sum} cents, not zero`, []);
  }

  // 2. Per transaction: entries sum to zero and match the owning record.
  const byTxn = new Map<string, { key: string; value: EntryRecord }[]>();
  for (const e of scan.entries) {
    const list = byTxn.get(e.value.txn) ?? [];
    list.push(e);
    byTxn.set(e.value.txn, list);
  }
  for (const [txn, list] of byTxn) {
    const sum = list.reduce((s, e) => s + e.value.cents, 0);
    if (sum !== 0) add('unbalanced_txn', `transaction ${txn} entries sum to ${sum} cents, not zero`, list);
    const [kind, id] = splitTxn(txn);
    if (kind === 'topup') {
      const t = scan.topups.get(id);
      if (!t) {
        add('orphan_entry', `entries of ${txn} have no top-up record`, list);
        continue;
      }
      const expected = [
        { account: ACCOUNT.clearing(t.value.processor), cents: -t.value.amount_cents },
        { account: ACCOUNT.balance(t.value.token_hash), cents: t.value.amount_cents },
      ];
      if (!entriesMatch(list, expected, t.value.currency)) add('entry_mismatch', `entries of ${txn} do not move ${t.value.amount_cents} cents from clearing to the balance`, [t, ...list]);
    } else if (kind === 'draw') {
      const d = scan.draws.get(id);
      if (!d) {
        add('orphan_entry', `entries of ${txn} have no draw record`, list);
        continue;
      }
      const expected = [
        { account: ACCOUNT.balance(d.value.token_hash), cents: -d.value.amount_cents },
        { account: ACCOUNT.revenue, cents: d.value.amount_cents },
      ];
      if (!entriesMatch(list, expected, d.value.currency)) add('entry_mismatch', `entries of ${txn} do not move ${d.value.amount_cents} cents from the balance to revenue`, [d, ...list]);
    } else if (kind === 'correction') {
      const c = scan.corrections.get(id);
      if (!c) {
        add('orphan_entry', `entries of ${txn} have no correction record`, list);
        continue;
      }
      const expected = correctionEntries(c.value, 0, 0).map((e) => ({ account: e.account, cents: e.cents }));
      if (!entriesMatch(list, expected, c.value.currency)) add('entry_mismatch', `entries of ${txn} do not move ${c.value.amount_cents} cents as a ${c.value.kind} does`, [c, ...list]);
    } else {
      add('orphan_entry', `entries name an unknown transaction kind: ${txn}`, list);
    }
  }
  for (const c of scan.corrections.values()) {
    if (!byTxn.has(`correction:${c.value.correction_id}`)) add('entry_mismatch', `correction ${c.value.correction_id} has no ledger entries`, [c]);
  }
  // Refunds never exceed what was paid: per draw (refund) and per top-up (topup_refund).
  const refunded = new Map<string, { total: number; recs: ViolationRecord[] }>();
  for (const c of scan.corrections.values()) {
    const of = c.value.kind === 'refund' ? `d:${c.value.draw_id}` : c.value.kind === 'topup_refund' ? `t:${c.value.topup_id}` : null;
    if (!of) continue;
    const r = refunded.get(of) ?? { total: 0, recs: [] };
    r.total += c.value.amount_cents;
    r.recs.push(c);
    refunded.set(of, r);
  }
  for (const [of, r] of refunded) {
    const paid = of.startsWith('d:') ? scan.draws.get(of.slice(2)) : scan.topups.get(of.slice(2));
    if (!paid) add('orphan_entry', `corrections refund ${of} which does not exist`, r.recs);
    else if (r.total > paid.value.amount_cents || paid.value.token_hash !== (r.recs[0].value as CorrectionRecord).token_hash)
      add('refund_exceeds_payment', `refunds of ${of} total ${r.total} cents of ${paid.value.amount_cents} paid (or name another balance)`, [paid, ...r.recs]);
  }
  // Each idempotency key applied once, and each claim names its correction.
  duplicates(scan.corrections.values(), (c) => c.idempotency_key, (id, recs) => add('idempotency_key_twice', `idempotency key ${id} was applied ${recs.length} times`, recs));
  for (const c of scan.corrections.values()) {
    const claim = scan.idempotency.get(K.idempotency(c.value.idempotency_key));
    if (!claim) add('claim_mismatch', `correction ${c.value.correction_id} has no claim for its idempotency key`, [c]);
  }
  for (const i of scan.idempotency.values()) {
    const c = scan.corrections.get(i.value.correction_id);
    if (!c || K.idempotency(c.value.idempotency_key) !== i.key) add('claim_mismatch', `idempotency claim ${i.key} does not name a matching correction`, c ? [i, c] : [i]);
  }
  // Tokens name existing balances, under their own key.
  for (const t of scan.tokens.values()) {
    if (t.key !== K.token(t.value.token_hash) || !scan.balances.has(t.value.balance)) add('token_mismatch', `token record ${t.key} does not name an existing balance under its own key`, [t]);
  }
  for (const z of scan.seals) {
    // A sealed token belongs to the top-up that opened a balance with that challenge.
    const claim = scan.claims.get(K.challenge(z.value.challenge_id));
    const t = claim ? scan.topups.get(claim.value.topup_id ?? '') : undefined;
    if (!t || !t.value.created_balance || z.key !== K.seal(z.value.expires_at, z.value.challenge_id)) add('claim_mismatch', `sealed token ${z.key} does not belong to a top-up that opened a balance`, t ? [z, t] : [z]);
  }
  for (const t of scan.topups.values()) {
    if (!byTxn.has(`topup:${t.value.topup_id}`)) add('entry_mismatch', `top-up ${t.value.topup_id} has no ledger entries`, [t]);
  }
  for (const d of scan.draws.values()) {
    if (!byTxn.has(`draw:${d.value.draw_id}`)) add('entry_mismatch', `draw ${d.value.draw_id} has no ledger entries`, [d]);
  }

  // 3. Balances: stored value equals credits minus debits, and the running value never dips below zero.
  const running = new Map<string, { cents: number; entries: { key: string; value: EntryRecord }[]; wentNegative: { key: string; value: EntryRecord } | null }>();
  for (const e of scan.entries) {
    // scan.entries is in key order, i.e. seq order: the order the changes were made.
    const account = e.value.account;
    if (!account.startsWith('balance:')) continue;
    const r = running.get(account) ?? { cents: 0, entries: [], wentNegative: null };
    r.cents += e.value.cents;
    r.entries.push(e);
    if (r.cents < 0 && !r.wentNegative) r.wentNegative = e;
    running.set(account, r);
  }
  for (const [account, r] of running) {
    const hash = account.slice('balance:'.length);
    const b = scan.balances.get(hash);
    if (!b) {
      add('unknown_account', `entries credit or debit ${account} but no balance record exists`, r.entries);
      continue;
    }
    if (r.wentNegative) add('negative_balance', `balance ${hash.slice(0, 8)}… went below zero`, [b, r.wentNegative]);
  }
  for (const b of scan.balances.values()) {
    const r = running.get(ACCOUNT.balance(b.value.token_hash));
    const computed = r?.cents ?? 0;
    if (b.key !== K.balance(b.value.token_hash)) add('malformed_record', `balance record ${b.key} names token hash ${b.value.token_hash}`, [b]);
    if (b.value.cents !== computed) add('balance_mismatch', `balance ${b.value.token_hash.slice(0, 8)}… is stored as ${b.value.cents} cents but its entries give ${computed}`, [b, ...(r?.entries ?? [])]);
    if (b.value.cents < 0) add('negative_balance', `balance ${b.value.token_hash.slice(0, 8)}… is negative`, [b]);
  }

  // 4. Exactly once: no quote debited twice, no challenge / payment credited twice.
  duplicates(scan.draws.values(), (d) => d.quote_id, (id, recs) => add('quote_debited_twice', `quote ${id} was debited ${recs.length} times`, recs));
  duplicates(scan.topups.values(), (t) => t.challenge_id, (id, recs) => add('challenge_credited_twice', `challenge ${id} was credited ${recs.length} times`, recs));
  duplicates(scan.topups.values(), (t) => `${t.processor}:${t.payment_ref}`, (id, recs) => add('payment_credited_twice', `payment ${id} was credited ${recs.length} times`, recs));

  // 5. Claims and records point at each other.
  for (const d of scan.draws.values()) {
    const c = scan.claims.get(K.quote(d.value.quote_id));
    if (!c || c.value.draw_id !== d.value.draw_id) {
      // a duplicate debit is already reported above; only report a missing or foreign claim once
      if (!c) add('claim_mismatch', `draw ${d.value.draw_id} has no claim for quote ${d.value.quote_id}`, [d]);
    }
  }
  for (const t of scan.topups.values()) {
    const c = scan.claims.get(K.challenge(t.value.challenge_id));
    if (!c) add('claim_mismatch', `top-up ${t.value.topup_id} has no claim for challenge ${t.value.challenge_id}`, [t]);
    const p = scan.claims.get(K.payment(t.value.processor, t.value.payment_ref));
    if (!p) add('claim_mismatch', `top-up ${t.value.topup_id} has no claim for payment ${t.value.payment_ref}`, [t]);
  }
  for (const c of scan.claims.values()) {
    if (c.key.startsWith(PREFIX.quote)) {
      const d = c.value.draw_id ? scan.draws.get(c.value.draw_id) : undefined;
      if (!d || K.quote(d.value.quote_id) !== c.key || d.value.token_hash !== c.value.token_hash) add('claim_mismatch', `quote claim ${c.key} does not name a matching draw`, d ? [c, d] : [c]);
    } else {
      const t = c.value.topup_id ? scan.topups.get(c.value.topup_id) : undefined;
      const owns = t && (K.challenge(t.value.challenge_id) === c.key || K.payment(t.value.processor, t.value.payment_ref) === c.key);
      if (!owns) add('claim_mismatch', `claim ${c.key} does not name a matching top-up`, t ? [c, t] : [c]);
    }
  }

  // 6. Statements: each balance's lines, in key order, are the lines its records give, in entry order.
  const expected = new Map<string, StatementRecord[]>();
  for (const [account, r] of running) {
    const hash = account.slice('balance:'.length);
    const lines: StatementRecord[] = [];
    for (const e of r.entries) {
      const [kind, id] = splitTxn(e.value.txn);
      if (kind === 'correction') {
        const c = scan.corrections.get(id);
        if (c) lines.push(correctionStatementLine(c.value));
        continue;
      }
      const rec = kind === 'draw' ? scan.draws.get(id) : kind === 'topup' ? scan.topups.get(id) : undefined;
      if (rec) lines.push(statementLine(kind === 'draw' ? { kind: 'draw', ...(rec.value as DrawRecord) } : { kind: 'topup', ...(rec.value as TopupRecord) }));
    }
    expected.set(hash, lines);
  }
  for (const hash of new Set([...expected.keys(), ...scan.statements.keys()])) {
    const want = expected.get(hash) ?? [];
    const got = scan.statements.get(hash) ?? [];
    const same = want.length === got.length && want.every((w, i) => sameJson(w, got[i].value));
    if (!same) add('statement_mismatch', `the statement of balance ${hash.slice(0, 8)}… does not list its ${want.length} top-ups and draws as the records do (it has ${got.length} lines)`, got);
  }
  return out;
}

/** Human-readable report for the CLI: one block per violation, records as JSON. */
export function formatViolations(violations: Violation[]): string {
  if (violations.length === 0) return 'ledger verified: no violations';
  const lines = [`ledger verification found ${violations.length} violation${violations.length === 1 ? '' : 's'}:`];
  violations.forEach((v, i) => {
    lines.push(`${i + 1}. [${v.code}] ${v.message}`);
    for (const r of v.records) lines.push(`     ${r.key} = ${JSON.stringify(r.value)}`);
  });
  return lines.join('\n');
}

// ------------------------------------------------------------------------------------------

async function readAll(records: LedgerRecords): Promise<Scan> {
  const scan: Scan = { balances: new Map(), topups: new Map(), draws: new Map(), entries: [], claims: new Map(), statements: new Map(), corrections: new Map(), idempotency: new Map(), tokens: new Map(), seals: [], malformed: [] };
  for await (const [key, value] of records) {
    const rec = { key, value };
    const v = value as Record<string, unknown> | null;
    const bad = () => scan.malformed.push(rec);
    if (!v || typeof v !== 'object') {
      bad();
      continue;
    }
    switch (key.slice(0, 2)) {
      case PREFIX.balance:
        if (isStr(v.token_hash) && isCents(v.cents, true) && isStr(v.currency)) scan.balances.set(v.token_hash, rec as { key: string; value: BalanceRecord });
        else bad();
        break;
      case PREFIX.topup:
        if (isStr(v.topup_id) && isStr(v.token_hash) && isCents(v.amount_cents) && isStr(v.currency) && isStr(v.processor) && isStr(v.challenge_id) && isStr(v.payment_ref))
          scan.topups.set(v.topup_id, rec as { key: string; value: TopupRecord });
        else bad();
        break;
      case PREFIX.draw:
        if (isStr(v.draw_id) && isStr(v.quote_id) && isStr(v.token_hash) && isCents(v.amount_cents) && isStr(v.currency)) scan.draws.set(v.draw_id, rec as { key: string; value: DrawRecord });
        else bad();
        break;
      case PREFIX.entry:
        if (isStr(v.txn) && isStr(v.account) && isCents(v.cents, true) && isStr(v.currency)) scan.entries.push(rec as { key: string; value: EntryRecord });
        else bad();
        break;
      case PREFIX.challenge:
      case PREFIX.payment:
        if (isStr(v.topup_id)) scan.claims.set(key, rec as { key: string; value: ClaimRecord });
        else bad();
        break;
      case PREFIX.quote:
        if (isStr(v.draw_id) && isStr(v.token_hash)) scan.claims.set(key, rec as { key: string; value: ClaimRecord });
        else bad();
        break;
      case PREFIX.correction:
        if (isStr(v.correction_id) && isStr(v.kind) && isStr(v.idempotency_key) && isStr(v.token_hash) && isCents(v.amount_cents) && isStr(v.currency) && isStr(v.reason))
          scan.corrections.set(v.correction_id, rec as { key: string; value: CorrectionRecord });
        else bad();
        break;
      case PREFIX.idempotency:
        if (isStr(v.correction_id)) scan.idempotency.set(key, rec as { key: string; value: { correction_id: string } });
        else bad();
        break;
      case PREFIX.token:
        if (isStr(v.token_hash) && isStr(v.balance)) scan.tokens.set(key, rec as { key: string; value: TokenRecord });
        else bad();
        break;
      case PREFIX.seal:
        // A sealed token for the replay window of a top-up (not money; see records.ts K.seal).
        if (isStr(v.challenge_id) && isStr(v.sealed) && isCents(v.expires_at)) scan.seals.push(rec as { key: string; value: SealRecord });
        else bad();
        break;
      case PREFIX.statement: {
        // s:<hash>:<seq>: derived history for display, checked against the records above
        const hash = key.slice(2, key.lastIndexOf(':'));
        if (isStr(v.kind) && isStr(v.id) && isCents(v.amount_cents) && isStr(v.currency)) {
          const list = scan.statements.get(hash) ?? [];
          list.push(rec as { key: string; value: StatementRecord });
          scan.statements.set(hash, list);
        } else bad();
        break;
      }
      default:
        bad();
    }
  }
  return scan;
}

function splitTxn(txn: string): [string, string] {
  const i = txn.indexOf(':');
  return i < 0 ? [txn, ''] : [txn.slice(0, i), txn.slice(i + 1)];
}

function entriesMatch(list: { value: EntryRecord }[], expected: { account: string; cents: number }[], currency: string): boolean {
  if (list.length !== expected.length) return false;
  const remaining = [...expected];
  for (const { value } of list) {
    if (value.currency !== currency) return false;
    const i = remaining.findIndex((x) => x.account === value.account && x.cents === value.cents);
    if (i < 0) return false;
    remaining.splice(i, 1);
  }
  return true;
}

function duplicates<T>(items: Iterable<{ key: string; value: T }>, keyOf: (t: T) => string, report: (id: string, recs: ViolationRecord[]) => void): void {
  const seen = new Map<string, ViolationRecord[]>();
  for (const r of items) {
    const k = keyOf(r.value);
    const list = seen.get(k) ?? [];
    list.push(r);
    seen.set(k, list);
  }
  for (const [k, list] of seen) if (list.length > 1) report(k, list);
}

/** Same JSON value regardless of key order (records may come back from a database reordered). */
function sameJson(a: unknown, b: unknown): boolean {
  return canonicalize(a) === canonicalize(b);
}

function isStr(x: unknown): x is string {
  return typeof x === 'string' && x.length > 0;
}

function isCents(x: unknown, allowZeroOrNegative = false): x is number {
  return Number.isSafeInteger(x) && (allowZeroOrNegative || (x as number) > 0);
}
