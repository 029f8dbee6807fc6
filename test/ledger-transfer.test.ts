// @ledger-backends: postgres  (uses both backends itself; run.ts provides the PostgreSQL server)
// Backup, restore and migration: `ledger export` → `ledger import` → verify → `ledger export` gives
// identical bytes on both backends, a LevelDB ledger with real history (made by the real service)
// moves to PostgreSQL and back, a service on the migrated ledger still pays each quote once, and a
// damaged export or a non-empty target imports nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { openLedger, type LedgerSettings } from '../payments/ledger/open.ts';
import { cli } from './helpers/build.ts';
import { ledgerEnv, newLedgerSettings } from './helpers/ledgers.ts';
import { sharedSecrets } from './helpers/instances.ts';
import { balanceOf, bearer, buildFixture, postJson, refsByProduct, startTestServer, topUp, type Fixture } from './helpers/service-harness.ts';

const PRODUCT = 'svc-health-eu';
let fx: Fixture;
let refs: string[];
let levelSrc: LedgerSettings;
let exportA: string;
// One seller: the quote secret signs quotes that the migrated service must still accept.
const secrets = sharedSecrets();
const OPERATOR = 'operator-token-of-the-transfer-test-0123456789';
const paid: { units: string[]; quote_id: string; token: string; draw_id: string }[] = [];
const tokens: string[] = [];

const at = (s: LedgerSettings) => (s.ledgerUrl ? ['--url', s.ledgerUrl] : ['--dir', s.ledgerDir]);

function exportTo(s: LedgerSettings, file: string): string {
  const r = cli(['ledger', 'export', ...at(s), '--out', file]);
  assert.is(r.code, 0, r.stderr);
  return file;
}

function importFrom(s: LedgerSettings, file: string) {
  return cli(['ledger', 'import', file, ...at(s)]);
}

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  // Real history on the embedded ledger: three balances, top-ups, 30 paid draws, replays, refusals.
  levelSrc = await newLedgerSettings('level');
  const srv = await startTestServer(fx, { env: { ...secrets, ...ledgerEnv(levelSrc), LDS_OPERATOR_TOKEN: OPERATOR } });
  for (let i = 0; i < 3; i++) tokens.push(await topUp(srv.base, ['5.00', '12.34', '7.00'][i]));
  await topUp(srv.base, '5.00').catch(() => {}); // a balance with no draws
  for (let i = 0; i < 30; i++) {
    const units = refs.slice(i, i + 1 + (i % 4));
    const token = tokens[i % 3];
    const q = (await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units })).json()) as any;
    const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(token));
    if (res.status === 200) paid.push({ units, quote_id: q.quote_id, token, draw_id: ((await res.json()) as any).receipt.draw_id });
    else await res.body?.cancel();
  }
  assert.ok(paid.length >= 20);
  // An operator's refund and a buyer's token rotation: a correction and two token records.
  const refund = await postJson(`${srv.base}/lds/admin/refunds`, { draw_id: paid[1].draw_id, reason: 'transfer test' }, { ...bearer(OPERATOR), 'idempotency-key': 'transfer-refund' });
  assert.is(refund.status, 201, await refund.clone().text());
  const rotated = await fetch(`${srv.base}/lds/balance/token`, { method: 'POST', headers: bearer(tokens[2]) });
  assert.is(rotated.status, 200);
  await srv.close();
  exportA = exportTo(levelSrc, join(fx.root, 'a.ndjson'));
});

test('the export is canonical NDJSON: header, accounts, draws, entries, tokens, top-ups, corrections, footer with counts', async () => {
  const lines = (await readFile(exportA, 'utf8')).trimEnd().split('\n').map((l) => JSON.parse(l));
  assert.equal(lines[0], { format: 'lds-ledger', type: 'header', version: 2 });
  const footer = lines[lines.length - 1];
  assert.is(footer.type, 'footer');
  const types = lines.slice(1, -1).map((l) => l.type);
  assert.equal([...new Set(types)], ['account', 'draw', 'entry', 'token', 'topup', 'correction']);
  assert.is(footer.accounts, 4);
  assert.is(footer.draws, paid.length);
  assert.is(footer.topups, 4);
  assert.is(footer.corrections, 1);
  assert.is(footer.tokens, 2);
  assert.is(footer.entries, 2 * (paid.length + 4 + 1));
  assert.ok(!(await readFile(exportA, 'utf8')).includes('lds_bal_'), 'no balance token in an export, only hashes');
});

test('LevelDB → PostgreSQL: import verifies clean, and the PostgreSQL export is byte-identical', async () => {
  const pgLedger = await newLedgerSettings('postgres');
  const r = importFrom(pgLedger, exportA);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /verified clean/);
  const b = exportTo(pgLedger, join(fx.root, 'b.ndjson'));
  assert.is(await readFile(b, 'utf8'), await readFile(exportA, 'utf8'));

  // A service on the migrated ledger: the same balances; a paid quote replays (no second debit).
  const srv = await startTestServer(fx, { env: { ...secrets, ...ledgerEnv(pgLedger) } });
  try {
    const before = await balanceOf(srv.base, paid[0].token);
    const replay = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: paid[0].units, quote_id: paid[0].quote_id }, bearer(paid[0].token));
    assert.is(replay.status, 200, await replay.clone().text());
    assert.is(((await replay.json()) as any).receipt.draw_id, paid[0].draw_id);
    assert.is(await balanceOf(srv.base, paid[0].token), before);
    // and new money moves: entry numbers continue after the imported ones
    const units = refs.slice(50, 52);
    const q = (await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units })).json()) as any;
    const res = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units, quote_id: q.quote_id }, bearer(tokens[1]));
    assert.is(res.status, 200, await res.clone().text());
    assert.equal(await srv.ledger.verify(), []);
  } finally {
    await srv.close();
  }

  // … and back to LevelDB, with the new draw: identical bytes again.
  const c = exportTo(pgLedger, join(fx.root, 'c.ndjson'));
  assert.is.not(await readFile(c, 'utf8'), await readFile(exportA, 'utf8'));
  const levelBack = await newLedgerSettings('level');
  const r2 = importFrom(levelBack, c);
  assert.is(r2.code, 0, r2.stderr);
  const d = exportTo(levelBack, join(fx.root, 'd.ndjson'));
  assert.is(await readFile(d, 'utf8'), await readFile(c, 'utf8'));
});

test('LevelDB → LevelDB round trip gives identical bytes, and statements are rebuilt', async () => {
  const copy = await newLedgerSettings('level');
  assert.is(importFrom(copy, exportA).code, 0);
  assert.is(await readFile(exportTo(copy, join(fx.root, 'e.ndjson')), 'utf8'), await readFile(exportA, 'utf8'));
  const src = await openLedger(levelSrc);
  const dst = await openLedger(copy);
  try {
    for (const t of tokens) {
      const { hashToken } = await import('../payments/tokens.ts');
      assert.equal(await dst.statement(hashToken(t), 1000), await src.statement(hashToken(t), 1000));
    }
  } finally {
    await src.close();
    await dst.close();
  }
});

test('a truncated or edited export imports nothing; a ledger that holds money refuses an import', async () => {
  const text = await readFile(exportA, 'utf8');
  const lines = text.trimEnd().split('\n');
  const truncated = join(fx.root, 'truncated.ndjson');
  await writeFile(truncated, lines.slice(0, -3).join('\n') + '\n');
  const edited = join(fx.root, 'edited.ndjson');
  await writeFile(edited, lines.map((l, i) => (i === 2 ? l.replace(/"cents":(\d+)/, '"cents":"$1"') : l)).join('\n') + '\n');
  for (const backend of ['level', 'postgres'] as const) {
    for (const [file, why] of [[truncated, /truncated/], [edited, /line 3: account record: cents/]] as const) {
      const target = await newLedgerSettings(backend);
      const r = importFrom(target, file);
      assert.is(r.code, 1, r.stdout);
      assert.match(r.stderr, why);
      const l = await openLedger(target);
      const empty = await l.readSnapshot(async (records) => {
        for await (const _ of records) return false;
        return true;
      });
      await l.close();
      assert.ok(empty, `${backend}: nothing imported from ${file}`);
    }
    const full = await newLedgerSettings(backend);
    assert.is(importFrom(full, exportA).code, 0);
    const again = importFrom(full, exportA);
    assert.is(again.code, 1);
    assert.match(again.stderr, /not empty/);
  }
});

test.run();
