// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// Issue 23, item 5: a leaked MPP_SECRET_KEY must not yield balance tokens. The token of a balance
// a top-up opens is random; what the replay rule needs (the very credential resent within its
// challenge window gets the same token) is the token sealed under that credential in the ledger,
// dropped once the window has closed. Over real HTTP with the official mppx client and the sandbox
// processor; the ledger checked with the real `lds ledger verify`, `export` and `import`, and a
// PostgreSQL ledger at schema 2 (before this change) migrated with `lds ledger migrate`, its
// earlier tokens still working.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHmac } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import pg from 'pg';
import { Credential } from 'mppx';
import { Mppx, stripe } from 'mppx/client';
import { createSandboxProcessor } from '../payments/processors/sandbox.ts';
import { hashToken, newBalanceToken, openBalanceToken, sealBalanceToken } from '../payments/tokens.ts';
import { openLedger, type LedgerSettings } from '../payments/ledger/open.ts';
import { cli } from './helpers/build.ts';
import { BACKEND, newLedgerSettings, openTestLedger } from './helpers/ledgers.ts';
import { postJson, startTopupApp, TEST_SECRET, type TopupApp } from './helpers/topup-app.ts';

const processor = createSandboxProcessor({ env: {} });
const at = (s: LedgerSettings) => (s.ledgerUrl ? ['--url', s.ledgerUrl] : ['--dir', s.ledgerDir]);
const client = (spt: string) => Mppx.create({ polyfill: false, methods: [stripe.charge({ paymentMethod: 'pm_card_visa', createToken: async () => spt })] });

/** The token the service used to mint: an HMAC of the public challenge id under MPP_SECRET_KEY. */
const legacyToken = (secret: string, challengeId: string) => 'lds_bal_' + createHmac('sha256', secret).update(`lds balance token\0${challengeId}`).digest('base64url');

/** Every record of a ledger by key, as `verify` and `export` read them, plus PostgreSQL's sealed-token rows. */
async function rawRecords(app: TopupApp): Promise<string> {
  const records = await app.ledger.readSnapshot(async (rs) => {
    const out: [string, unknown][] = [];
    for await (const r of rs) out.push(r);
    return out;
  });
  let seals: unknown[] = [];
  if (app.settings.ledgerUrl) seals = (await sql(app.settings.ledgerUrl, 'SELECT * FROM lds_token_seals')).rows;
  return JSON.stringify({ records, seals });
}

async function sql(url: string, text: string, params: unknown[] = []): Promise<pg.QueryResult> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await c.query(text, params);
  } finally {
    await c.end();
  }
}

/** One top-up that opens a balance: the credential, its challenge and the 200 answer's token. */
async function openBalance(app: TopupApp, amount: string, spt: string) {
  const first = await postJson(app.url, { amount, currency: 'EUR' });
  assert.is(first.status, 402);
  const credential = await client(spt).createCredential(first);
  const challenge = Credential.deserialize(Credential.extractPaymentScheme(credential)!).challenge;
  const ok = await postJson(app.url, { amount, currency: 'EUR' }, { Authorization: credential });
  const body = (await ok.json()) as any;
  assert.is(ok.status, 200, JSON.stringify(body));
  return { first, credential, challenge, token: body.balance_token as string };
}

test('a new balance token is random: not derivable from MPP_SECRET_KEY and the challenge id, and never stored in the clear', async () => {
  const app = await startTopupApp(processor);
  try {
    const a = await openBalance(app, '5.00', 'spt_test_seal_a');
    const b = await openBalance(app, '5.00', 'spt_test_seal_b');
    for (const x of [a, b]) {
      assert.match(x.token, /^lds_bal_[A-Za-z0-9_-]{43}$/);
      // The leaked secret plus the public challenge id give nothing: not the token, not its hash.
      assert.is.not(x.token, legacyToken(TEST_SECRET, x.challenge.id));
      assert.ok(await app.ledger.getBalance(hashToken(x.token)));
      assert.not.ok(await app.ledger.getBalance(hashToken(legacyToken(TEST_SECRET, x.challenge.id))));
    }
    assert.is.not(a.token, b.token);
    // The ledger holds no token in the clear (its SHA-256 is the balance id; the seal is ciphertext).
    const raw = await rawRecords(app);
    for (const x of [a, b]) assert.not.ok(raw.includes(x.token.slice('lds_bal_'.length)), 'a token in the ledger in the clear');
    // The seal opens with the paying credential only: not with another credential for the same challenge.
    const until = Date.parse(a.challenge.expires!);
    const sealed = await app.ledger.findTokenSeal(a.challenge.id, until);
    assert.ok(sealed, 'the replay window keeps the sealed token');
    assert.is(openBalanceToken(sealed!, a.credential, a.challenge.id), a.token);
    const forged = await client('spt_test_seal_forged').createCredential(a.first);
    assert.is(openBalanceToken(sealed!, forged, a.challenge.id), null);
    assert.is(openBalanceToken(sealed!, a.credential, b.challenge.id), null);
    // The replay rule holds: the very credential resent in its window gets the same token again.
    const again = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: a.credential });
    assert.is(again.status, 200);
    assert.is(((await again.json()) as any).balance_token, a.token);
    const other = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: forged });
    assert.is(other.status, 409);
    assert.not.ok((await other.text()).includes(a.token));
    assert.equal(await app.ledger.verify(), []);
  } finally {
    await app.close();
  }
});

test('seal and open: the key comes from the credential, so no other credential and no other challenge opens it', () => {
  const { token } = newBalanceToken();
  const sealed = sealBalanceToken(token, 'Payment cred-one', 'ch_1');
  assert.not.ok(sealed.includes(token.slice(8)));
  assert.is(openBalanceToken(sealed, 'Payment cred-one', 'ch_1'), token);
  assert.is(openBalanceToken(sealed, 'Payment cred-two', 'ch_1'), null);
  assert.is(openBalanceToken(sealed, 'Payment cred-one', 'ch_2'), null);
  assert.is(openBalanceToken(sealed.slice(0, -2) + (sealed.endsWith('AA') ? 'BB' : 'AA'), 'Payment cred-one', 'ch_1'), null);
  assert.is.not(sealBalanceToken(token, 'Payment cred-one', 'ch_1'), sealed, 'a fresh IV each time');
});

test('the sealed token lives only for its challenge window: after it the resend is 409 and the next credit drops it', async () => {
  // The handler's clock runs 5 minutes minus 3 s behind: challenges it issues expire 3 s from now.
  const app = await startTopupApp(processor, { now: () => Date.now() - 5 * 60_000 + 3_000 });
  try {
    const a = await openBalance(app, '5.00', 'spt_test_seal_window');
    const until = Date.parse(a.challenge.expires!);
    assert.ok(await app.ledger.findTokenSeal(a.challenge.id, until));
    await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now()) + 300));
    // The window has closed: the ledger no longer gives the seal, and the resend gets no token
    // (the handler's own clock still thinks the challenge valid: the ledger decides).
    assert.is(await app.ledger.findTokenSeal(a.challenge.id, until), null);
    const again = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: a.credential });
    assert.is(again.status, 409);
    assert.not.ok((await again.text()).includes(a.token));
    // The next credit deletes expired seals in its own atomic change.
    const before = await rawRecords(app);
    assert.ok(before.includes(a.challenge.id.slice(0, 20)));
    const b = await openBalance(app, '6.00', 'spt_test_seal_window_2');
    const raw = JSON.parse(await rawRecords(app)) as { records: [string, any][]; seals: any[] };
    const seals = [...raw.records.filter(([k]) => k.startsWith('z:')).map(([, v]) => v), ...raw.seals];
    assert.equal(
      seals.map((s) => s.challenge_id),
      [b.challenge.id],
      'only the seal of the credit still in its window is left',
    );
    assert.equal(await app.ledger.verify(), []);
  } finally {
    await app.close();
  }
});

test('`ledger verify`, `export` and `import` with sealed tokens in the ledger: clean, and sealed tokens are not exported', async () => {
  const app = await startTopupApp(processor);
  let settings: LedgerSettings;
  let token: string;
  try {
    const a = await openBalance(app, '7.00', 'spt_test_seal_export');
    token = a.token;
    settings = app.settings;
    assert.ok(await app.ledger.findTokenSeal(a.challenge.id, Date.parse(a.challenge.expires!)));
    if (app.settings.ledgerUrl) assert.is((await sql(app.settings.ledgerUrl, 'SELECT count(*)::int AS n FROM lds_token_seals')).rows[0].n, 1);
  } finally {
    // LevelDB: one process at a time; the CLI opens it once the app has let go.
    await app.close().catch(() => {});
  }
  // (app.close removed its temp dir, not the ledger's own.)
  const verify = cli(['ledger', 'verify', ...at(settings!)]);
  assert.is(verify.code, 0, verify.stderr + verify.stdout);
  assert.match(verify.stdout + verify.stderr, /: clean$/m);
  const dir = join(settings!.ledgerDir, '..');
  const file = join(dir, 'export.ndjson');
  const ex = cli(['ledger', 'export', ...at(settings!), '--out', file]);
  assert.is(ex.code, 0, ex.stderr);
  const text = await readFile(file, 'utf8');
  assert.not.ok(/seal/.test(text), 'a sealed token in the export');
  assert.not.ok(text.includes(token!.slice(8)));
  const target = await newLedgerSettings();
  const im = cli(['ledger', 'import', file, ...at(target)]);
  assert.is(im.code, 0, im.stderr);
  const again = join(dir, 'again.ndjson');
  assert.is(cli(['ledger', 'export', ...at(target), '--out', again]).code, 0);
  assert.is(await readFile(again, 'utf8'), text, 'export → import → export gives the same bytes');
  assert.is(cli(['ledger', 'verify', ...at(target)]).code, 0);
});

test('tokens issued before the change keep working; the migration leaves `ledger verify` clean', async () => {
  // A ledger as the earlier service left it: a balance opened by a top-up whose token was the
  // HMAC of its challenge id (no seal kept), and - on PostgreSQL - the schema at version 2.
  const t = await openTestLedger();
  const old = legacyToken(TEST_SECRET, 'ch_before_the_change');
  const credited = await t.ledger.creditTopup({ tokenHash: hashToken(old), createBalance: true, amountCents: 900, currency: 'EUR', processor: 'sandbox', challengeId: 'ch_before_the_change', paymentRef: 'pi_before_the_change' });
  assert.is(credited.kind, 'ok');
  await t.ledger.close();
  if (BACKEND === 'postgres') {
    await sql(t.settings.ledgerUrl!, 'DROP TABLE lds_token_seals');
    await sql(t.settings.ledgerUrl!, 'DELETE FROM lds_schema_migrations WHERE version = 3');
    const m = cli(['ledger', 'migrate', ...at(t.settings)]);
    assert.is(m.code, 0, m.stderr);
    assert.match(m.stdout, /schema at version 3/);
    const versions = (await sql(t.settings.ledgerUrl!, 'SELECT version FROM lds_schema_migrations ORDER BY version')).rows.map((r) => r.version);
    assert.equal(versions, [1, 2, 3]);
  }
  const v = cli(['ledger', 'verify', ...at(t.settings)]);
  assert.is(v.code, 0, v.stderr + v.stdout);
  assert.match(v.stdout + v.stderr, /: clean$/m);
  // The earlier token still names its balance and pays (stored as SHA-256, whatever made it).
  const ledger = await openLedger(t.settings);
  try {
    assert.equal(await ledger.resolveToken(hashToken(old)), { kind: 'balance', balance: hashToken(old) });
    const d = await ledger.debitDraw(hashToken(old), { quoteId: 'q_after_the_change', amountCents: 100, currency: 'EUR', productId: 'p', draw: { units: [] } });
    assert.is(d.kind, 'ok');
    assert.equal((await ledger.getBalance(hashToken(old)))?.cents, 800);
    assert.equal(await ledger.verify(), []);
  } finally {
    await ledger.close();
  }
});

test.run();
