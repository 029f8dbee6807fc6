// Which ledger backend a payments test runs on: LDS_TEST_BACKEND=level (default) or postgres.
// test/run.ts runs every payments suite (service-, topup-, ledger-, agents- files) once per backend,
// so the same assertions hold for the embedded LevelDB ledger and for PostgreSQL.
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DebitDrawResult, Ledger } from '../../payments/ledger/ledger.ts';
import { newBalanceToken } from '../../payments/tokens.ts';
import { openLedger, type LedgerSettings } from '../../payments/ledger/open.ts';
import { verifyLedgerAt } from '../../payments/ledger/ops.ts';
import type { Violation } from '../../payments/ledger/verify.ts';
import { freshDatabase } from './pg.ts';

export type Backend = 'level' | 'postgres';

export const BACKEND: Backend = process.env.LDS_TEST_BACKEND === 'postgres' ? 'postgres' : 'level';

/**
 * A new, empty ledger location of the given backend: a temp directory, or a fresh database (with
 * the schema already migrated, unless `emptyDatabase`: then the service migrates it at start).
 */
export async function newLedgerSettings(backend: Backend = BACKEND, opts: { emptyDatabase?: boolean } = {}): Promise<LedgerSettings> {
  const ledgerDir = join(await mkdtemp(join(tmpdir(), 'lds-ledger-')), 'ledger');
  if (backend === 'level') return { ledgerDir };
  return { ledgerDir, ledgerUrl: await freshDatabase(undefined, { empty: opts.emptyDatabase }) };
}

/** Environment that points a service (or the CLI) at these settings. */
export function ledgerEnv(s: LedgerSettings): Record<string, string> {
  return s.ledgerUrl ? { LDS_LEDGER_URL: s.ledgerUrl } : { LDS_LEDGER_DIR: s.ledgerDir };
}

export interface TestLedger {
  ledger: Ledger;
  settings: LedgerSettings;
  /** Close and open again on the same data. */
  reopen(): Promise<Ledger>;
  /** Verify with the ledger closed, as `ledger verify` would. */
  verifyClosed(): Promise<Violation[]>;
}

export async function openTestLedger(backend: Backend = BACKEND): Promise<TestLedger> {
  const settings = await newLedgerSettings(backend);
  const t: TestLedger = {
    ledger: await openLedger(settings),
    settings,
    async reopen() {
      await t.ledger.close();
      t.ledger = await openLedger(settings);
      return t.ledger;
    },
    verifyClosed: () => verifyLedgerAt(settings),
  };
  return t;
}

/**
 * Every record of a ledger nobody else holds (any PostgreSQL ledger; a LevelDB ledger whose service
 * has stopped), by logical key (records.ts K): to check that what clients were told is in the ledger.
 */
export async function ledgerRecords(s: LedgerSettings): Promise<Map<string, any>> {
  const ledger = await openLedger(s, { migrate: false });
  try {
    return await ledger.readSnapshot(async (records) => {
      const out = new Map<string, any>();
      for await (const [k, v] of records) out.set(k, v);
      return out;
    });
  } finally {
    await ledger.close();
  }
}

let challengeSeq = 0;
/** Credits a new balance (or, given its hash, an existing one) with a unique sandbox top-up; returns the balance's hash. */
export async function fund(ledger: Ledger, cents: number, hash?: string): Promise<string> {
  const h = hash ?? newBalanceToken().hash;
  const n = ++challengeSeq;
  const r = await ledger.creditTopup({ tokenHash: h, createBalance: !hash, amountCents: cents, currency: 'EUR', processor: 'sandbox', challengeId: `ch_${n}`, paymentRef: `pi_${n}` });
  if (r.kind !== 'ok') throw new Error(`funding failed: ${r.kind}`);
  return h;
}

/** A draw debit at the ledger interface for `quoteId` (a stand-in draw record naming the quote). */
export function debit(ledger: Ledger, hash: string, quoteId: string, cents: number): Promise<DebitDrawResult> {
  return ledger.debitDraw(hash, { quoteId, amountCents: cents, currency: 'EUR', productId: 'svc-language-eu', draw: { units_sha256: 'ab'.repeat(32), quote: quoteId } });
}
