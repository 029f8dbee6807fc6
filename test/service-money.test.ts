// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// Money you can prove and correct, over real HTTP on a real service: signed receipts checked by an
// independent verifier (jose + WebCrypto) against the served JWKS, and by `lds receipt verify`;
// refunds and adjustments idempotent under 20 concurrent submissions of one key; partial refunds;
// refunds over the amount paid refused; a processor top-up refund that never goes below zero;
// rotated and revoked tokens refused with 401 problems (on PostgreSQL across two instances);
// statement paging and CSV; and every change checked by `ledger verify` and carried by export.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes } from 'node:crypto';
import { cp, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { join } from 'node:path';
import { calculateJwkThumbprint, importJWK, type JWK } from 'jose';
import canonicalizeModule from 'canonicalize';
import { cliAsync } from './helpers/build.ts';
import { BACKEND, openTestLedger } from './helpers/ledgers.ts';
import { sharedSecrets, startInstance, stopInstance } from './helpers/instances.ts';
import { balanceOf, bearer, buildFixture, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { generateReceiptKey } from '../payments/receipts.ts';
import { hashToken } from '../payments/tokens.ts';
import { readExport, writeExport } from '../payments/ledger/transfer.ts';

/** Checks a success body against a schema of the OpenAPI document the build emitted (dist/v1/specification). */
let ajv: Ajv2020 | undefined;
function conforms(schema: string, body: unknown): void {
  if (!ajv) {
    const doc = JSON.parse(readFileSync(join(fx.dist, 'v1/specification'), 'utf8'));
    ajv = new Ajv2020({ strict: false });
    ((addFormatsModule as any).default ?? addFormatsModule)(ajv);
    ajv.addSchema({ $id: 'https://lds.test/spec.json', components: doc.components });
  }
  const validate = ajv.getSchema(`https://lds.test/spec.json#/components/schemas/${schema}`)!;
  assert.ok(validate(body), `${schema}: ${JSON.stringify(validate.errors)} in ${JSON.stringify(body).slice(0, 400)}`);
}

const canonicalize = canonicalizeModule as unknown as (v: unknown) => string;
const PRODUCT = 'svc-energy-eu';
const OPERATOR = randomBytes(32).toString('hex');
let fx: Fixture;
let srv: TestServer;
let refs: string[];
let nextRef = 0;

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  srv = await startTestServer(fx, { env: { LDS_OPERATOR_TOKEN: OPERATOR } });
});
test.after(async () => {
  await srv?.close();
});

const admin = (path: string, body: unknown, key?: string, token = OPERATOR) =>
  postJson(`${srv.base}/lds/admin/${path}`, body, { ...bearer(token), ...(key ? { 'idempotency-key': key } : {}) });

/** Quotes and pays `n` fresh units; returns the paid draw answer. */
async function draw(token: string, n = 1, base = srv.base): Promise<any> {
  const units = refs.slice(nextRef, nextRef + n);
  nextRef += n;
  const q = await postJson(`${base}/lds/draw`, { product_id: PRODUCT, units }, bearer(token));
  assert.is(q.status, 402);
  const quote = (await q.json()) as any;
  const paid = await postJson(`${base}/lds/draw`, { product_id: PRODUCT, units, quote_id: quote.quote_id }, bearer(token));
  const body = (await paid.json()) as any;
  assert.is(paid.status, 200, JSON.stringify(body));
  return { ...body, quote_id: quote.quote_id, units_requested: units };
}

/** The independent check: jose imports the key from the served JWKS, WebCrypto verifies Ed25519. */
async function joseVerifies(receipt: any, jwks: { keys: JWK[] }): Promise<boolean> {
  const jwk = jwks.keys.find((k) => k.kid === receipt.signature?.kid);
  if (!jwk) return false;
  assert.is(await calculateJwkThumbprint(jwk, 'sha256'), jwk.kid, 'kid is the RFC 7638 thumbprint');
  const key = (await importJWK(jwk, 'EdDSA')) as CryptoKey;
  const { signature, ...body } = receipt;
  return crypto.subtle.verify('Ed25519', key, Buffer.from(signature.value, 'base64url'), new TextEncoder().encode(canonicalize(body)));
}

async function problem(res: Response, status: number, slug: string): Promise<any> {
  const body = (await res.json()) as any;
  assert.is(res.status, status, JSON.stringify(body));
  assert.is(res.headers.get('content-type')?.split(';')[0], 'application/problem+json');
  assert.is(body.type, PROBLEM_BASE + slug, JSON.stringify(body));
  return body;
}

async function verifyClean(): Promise<void> {
  const v = await srv.ledger.verify();
  assert.equal(v, [], JSON.stringify(v, null, 1));
}

test('receipts of top-ups and draws verify with jose against the served JWKS; a replay returns the same receipt; tampering is caught', async () => {
  const jwksRes = await fetch(`${srv.url}/.well-known/jwks.json`);
  assert.is(jwksRes.status, 200);
  assert.is(jwksRes.headers.get('content-type'), 'application/jwk-set+json');
  const jwks = (await jwksRes.json()) as { keys: JWK[] };
  assert.is(jwks.keys.length, 1);
  assert.not.ok('d' in jwks.keys[0], 'only the public part is published');

  const { payTopup } = await import('../payments/topup/client.ts');
  const top = await payTopup(`${srv.base}/lds/balance/topup`, '5.00', { spt: 'spt_test_receipt' });
  const topBody = (await top.json()) as any;
  assert.is(top.status, 200);
  assert.is(topBody.receipt.type, 'topup');
  conforms('TopupResponse', topBody);
  assert.is(topBody.receipt.amount, '5.00');
  assert.is(topBody.receipt.balance_after, '5.00');
  assert.ok(await joseVerifies(topBody.receipt, jwks), 'top-up receipt verifies');

  const paid = await draw(topBody.balance_token, 2);
  const r = paid.receipt;
  assert.equal(Object.keys(r).sort(), ['amount', 'balance_after', 'catalogue_version', 'currency', 'draw_id', 'paid_at', 'product_id', 'quote_id', 'signature', 'type', 'unit_count', 'units_sha256'].sort());
  assert.is(r.unit_count, 2);
  conforms('PaidDraw', { units: paid.units, attribution: paid.attribution, receipt: paid.receipt });
  conforms('Jwks', jwks);
  assert.is(r.signature.alg, 'EdDSA');
  assert.ok(await joseVerifies(r, jwks), 'draw receipt verifies');

  // Replay: the same quote paid again returns the very same receipt (nothing stored but the draw).
  const again = await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: paid.units_requested, quote_id: paid.quote_id }, bearer(topBody.balance_token));
  assert.is(again.status, 200);
  assert.equal(((await again.json()) as any).receipt, r);

  for (const [field, value] of [['amount', '0.01'], ['balance_after', '999.00'], ['unit_count', 3], ['draw_id', 'drw_forged']] as const) {
    assert.not.ok(await joseVerifies({ ...r, [field]: value }, jwks), `a receipt with ${field} changed does not verify`);
  }

  // The CLI, offline: a saved receipt against a saved JWKS (and against the URL).
  const dir = srv.varDir;
  await writeFile(join(dir, 'jwks.json'), JSON.stringify(jwks));
  await writeFile(join(dir, 'draw.json'), JSON.stringify(paid));
  await writeFile(join(dir, 'forged.json'), JSON.stringify({ ...r, amount: '0.01' }));
  const ok = await cliAsync(['receipt', 'verify', join(dir, 'draw.json'), '--jwks', join(dir, 'jwks.json')]);
  assert.is(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, `signed by key ${r.signature.kid}`);
  const viaUrl = await cliAsync(['receipt', 'verify', join(dir, 'draw.json'), '--jwks', `${srv.url}/.well-known/jwks.json`]);
  assert.is(viaUrl.code, 0, viaUrl.stderr);
  const bad = await cliAsync(['receipt', 'verify', join(dir, 'forged.json'), '--jwks', join(dir, 'jwks.json')]);
  assert.is(bad.code, 1);
  assert.match(bad.stderr, 'NOT verified');
});

test('a retired key stays published and verifies; the first key signs', async () => {
  const current = generateReceiptKey();
  const retired = generateReceiptKey();
  // Its own copy of the unit store: the first server holds the store's LevelDB.
  const store = join(srv.varDir, 'store-copy');
  await cp(fx.store, store, { recursive: true });
  const s = await startTestServer(fx, { env: { LDS_STORE_DIR: store, LDS_RECEIPT_KEYS: JSON.stringify([current, { kty: 'OKP', crv: 'Ed25519', x: retired.x }]), LDS_OPERATOR_TOKEN: OPERATOR } });
  try {
    const jwks = (await (await fetch(`${s.url}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
    assert.is(jwks.keys.length, 2);
    assert.is(jwks.keys[1].x, retired.x);
    const token = await topUp(s.base, '5.00', 'spt_test_rotation_keys');
    const paid = await draw(token, 1, s.base);
    assert.is(paid.receipt.signature.kid, jwks.keys[0].kid);
    assert.ok(await joseVerifies(paid.receipt, jwks));
  } finally {
    await s.close();
  }
});

test('the admin API refuses anyone without the operator token', async () => {
  await problem(await admin('adjustments', { balance_id: 'a'.repeat(64), direction: 'credit', amount: '1.00', reason: 'x' }, 'k-noauth', 'wrong-token'), 401, 'operator-token-required');
  await problem(await postJson(`${srv.base}/lds/admin/refunds`, { draw_id: 'x', reason: 'x' }, { 'idempotency-key': 'k' }), 401, 'operator-token-required');
});

test('a refund is idempotent under 20 concurrent submissions of one key; partial refunds add up; over the paid amount is refused', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_refund');
  const paid = await draw(token, 3); // 3 units
  const drawCents = Math.round(Number(paid.receipt.amount) * 100);
  assert.ok(drawCents >= 2, 'the draw cost at least 2 cents');
  const before = await balanceOf(srv.base, token);

  const part = 1;
  const answers = await Promise.all(Array.from({ length: 20 }, () => admin('refunds', { draw_id: paid.receipt.draw_id, amount: '0.01', reason: 'one unit was empty' }, 'refund-key-1')));
  const bodies = await Promise.all(answers.map((r) => r.json() as Promise<any>));
  assert.equal(answers.map((r) => r.status).sort(), [...Array(19).fill(200), 201], JSON.stringify(bodies.find((b) => !b.correction_id)));
  assert.is(new Set(bodies.map((b) => b.correction_id)).size, 1, 'one correction');
  assert.is(bodies.filter((b) => b.replayed).length, 19);
  bodies.forEach((b) => conforms('Correction', b));
  assert.is(Math.round(Number(await balanceOf(srv.base, token)) * 100), Math.round(Number(before) * 100) + part);

  // More than what is left of the draw: refused, nothing changes.
  const over = await problem(await admin('refunds', { draw_id: paid.receipt.draw_id, amount: (drawCents / 100).toFixed(2), reason: 'too much' }, 'refund-key-2'), 422, 'refund-exceeds-payment');
  assert.is(over.available, ((drawCents - part) / 100).toFixed(2));
  // The same key with another request: 409, nothing changes.
  await problem(await admin('refunds', { draw_id: paid.receipt.draw_id, amount: '0.02', reason: 'changed my mind' }, 'refund-key-1'), 409, 'idempotency-key-reused');
  // The rest (no amount: all that is left).
  const rest = await admin('refunds', { draw_id: paid.receipt.draw_id, reason: 'refund the rest' }, 'refund-key-3');
  const restBody = (await rest.json()) as any;
  assert.is(rest.status, 201);
  assert.is(restBody.amount, ((drawCents - part) / 100).toFixed(2));
  assert.is(Math.round(Number(await balanceOf(srv.base, token)) * 100), Math.round(Number(before) * 100) + drawCents);
  await problem(await admin('refunds', { draw_id: paid.receipt.draw_id, amount: '0.01', reason: 'again' }, 'refund-key-4'), 422, 'refund-exceeds-payment');
  await problem(await admin('refunds', { draw_id: 'drw_nope', reason: 'x' }, 'refund-key-5'), 404, 'unknown-draw');
  const missingKey = await problem(await admin('refunds', { draw_id: paid.receipt.draw_id, reason: 'x' }), 400, 'malformed-request');
  assert.is(missingKey.field, 'Idempotency-Key');

  // In the buyer's statement, with the reason.
  const view = (await (await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) })).json()) as any;
  const refunds = view.statement.filter((l: any) => l.kind === 'refund');
  assert.is(refunds.length, 2);
  assert.equal(refunds.map((l: any) => l.reason).sort(), ['one unit was empty', 'refund the rest']);
  assert.ok(refunds.every((l: any) => l.draw_id === paid.receipt.draw_id && !l.amount.startsWith('-')));
  await verifyClean();
});

test('an adjustment is idempotent under 20 concurrent submissions; a debit never goes below zero', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_adjust');
  const balanceId = hashToken(token);
  const answers = await Promise.all(Array.from({ length: 20 }, () => admin('adjustments', { balance_id: balanceId, direction: 'credit', amount: '2.50', reason: 'goodwill' }, 'adjust-key-1')));
  assert.equal(answers.map((r) => r.status).sort(), [...Array(19).fill(200), 201]);
  assert.is(await balanceOf(srv.base, token), '7.50');
  const over = await problem(await admin('adjustments', { balance_id: balanceId, direction: 'debit', amount: '7.51', reason: 'too much' }, 'adjust-key-2'), 422, 'adjustment-below-zero');
  assert.is(over.balance, '7.50');
  const debit = await admin('adjustments', { balance_id: balanceId, direction: 'debit', amount: '7.50', reason: 'charge back' }, 'adjust-key-3');
  assert.is(debit.status, 201);
  assert.is(((await debit.json()) as any).balance_after, '0.00');
  assert.is(await balanceOf(srv.base, token), '0.00');
  await problem(await admin('adjustments', { balance_id: balanceId, direction: 'sideways', amount: '1.00', reason: 'x' }, 'adjust-key-4'), 400, 'malformed-request');
  const view = (await (await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) })).json()) as any;
  assert.equal(view.statement.slice(0, 2).map((l: any) => [l.kind, l.amount, l.reason]), [['debit', '-7.50', 'charge back'], ['credit', '2.50', 'goodwill']]);
  await verifyClean();
});

test('lds admin adjust / refund / revoke-token: the CLI drives the admin API, idempotent on --key', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_cli_admin');
  const paid = await draw(token, 1);
  const env = { LDS_OPERATOR_TOKEN: OPERATOR };
  const args = ['admin', 'adjust', '--balance', hashToken(token), '--credit', '1.25', '--reason', 'cli goodwill', '--key', 'cli-adjust-1', '--base-url', srv.base];
  const one = await cliAsync(args, { env });
  assert.is(one.code, 0, one.stderr);
  const two = await cliAsync(args, { env });
  assert.is(two.code, 0, two.stderr);
  const [a, b] = [JSON.parse(one.stdout), JSON.parse(two.stdout)];
  assert.is(a.correction_id, b.correction_id);
  assert.equal([a.replayed, b.replayed], [false, true]);
  const refund = await cliAsync(['admin', 'refund', '--draw', paid.receipt.draw_id, '--reason', 'cli refund', '--key', 'cli-refund-1', '--base-url', srv.base], { env });
  assert.is(refund.code, 0, refund.stderr);
  assert.is(JSON.parse(refund.stdout).amount, paid.receipt.amount);
  assert.is(await balanceOf(srv.base, token), '6.25');
  const over = await cliAsync(['admin', 'adjust', '--draw', paid.receipt.draw_id, '--debit', '100.00', '--reason', 'x', '--key', 'cli-adjust-2', '--base-url', srv.base], { env });
  assert.is(over.code, 1);
  assert.match(over.stderr, '422');
  const wrong = await cliAsync(args, { env: { LDS_OPERATOR_TOKEN: 'not-the-operator-token-0123456789abcdef' } });
  assert.is(wrong.code, 1);
  assert.match(wrong.stderr, '401');
  const revoke = await cliAsync(['admin', 'revoke-token', '--token-hash', hashToken(token), '--base-url', srv.base], { env });
  assert.is(revoke.code, 0, revoke.stderr);
  await problem(await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) }), 401, 'balance-token-revoked');
});

test('a top-up refunded through the processor debits only the unspent remainder, never below zero', async () => {
  const { payTopup } = await import('../payments/topup/client.ts');
  const res = await payTopup(`${srv.base}/lds/balance/topup`, '5.00', { spt: 'spt_test_topup_refund' });
  const top = (await res.json()) as any;
  const token = top.balance_token;
  const paid = await draw(token, 2);
  const left = await balanceOf(srv.base, token);
  assert.ok(left !== '5.00' && left !== '0.00');
  // Asking for more than the unspent remainder refunds the remainder: money spent stays spent.
  const r = await admin('topup-refunds', { topup_id: top.receipt.topup_id, reason: 'customer asked' }, 'topup-refund-1');
  const body = (await r.json()) as any;
  assert.is(r.status, 201, JSON.stringify(body));
  assert.is(body.amount, left);
  assert.is(body.balance_after, '0.00');
  assert.is(body.processor_refund.status, 'succeeded');
  conforms('Correction', body);
  assert.is(body.processor_refund.amount, left);
  assert.is(await balanceOf(srv.base, token), '0.00');
  // Replay: the same refund, not a second one (processor idempotency key included).
  const again = await admin('topup-refunds', { topup_id: top.receipt.topup_id, reason: 'customer asked' }, 'topup-refund-1');
  const againBody = (await again.json()) as any;
  assert.is(again.status, 200);
  assert.is(againBody.processor_refund.id, body.processor_refund.id);
  await problem(await admin('topup-refunds', { topup_id: top.receipt.topup_id, reason: 'more' }, 'topup-refund-2'), 422, 'nothing-to-refund');
  // The draw is still the buyer's; the refund of the draw itself would go back to the balance.
  assert.ok(paid.receipt.draw_id);
  await verifyClean();
});

test('a rotated token is refused at once with a 401 problem; the new one holds the balance; an operator revokes a token', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_rotate');
  await draw(token, 1);
  const before = await balanceOf(srv.base, token);
  const rot = await fetch(`${srv.base}/lds/balance/token`, { method: 'POST', headers: bearer(token) });
  const rotBody = (await rot.json()) as any;
  assert.is(rot.status, 200, JSON.stringify(rotBody));
  assert.match(rotBody.balance_token, /^lds_bal_/);
  conforms('TokenRotation', rotBody);
  assert.is(rotBody.balance, before);
  await problem(await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) }), 401, 'balance-token-revoked');
  await problem(await fetch(`${srv.base}/lds/balance/token`, { method: 'POST', headers: bearer(token) }), 401, 'balance-token-revoked');
  const q = (await (await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: [refs[nextRef]] }, bearer(token))).json()) as any;
  await problem(await postJson(`${srv.base}/lds/draw`, { product_id: PRODUCT, units: [refs[nextRef]], quote_id: q.quote_id }, bearer(token)), 401, 'balance-token-revoked');
  // The new token: same balance, same statement, pays and tops up.
  const fresh = rotBody.balance_token;
  assert.is(await balanceOf(srv.base, fresh), before);
  await draw(fresh, 1);
  // Operator revocation of the new token.
  const rev = await admin('tokens/revoke', { token_hash: hashToken(fresh) });
  assert.is(rev.status, 200);
  await problem(await fetch(`${srv.base}/lds/balance`, { headers: bearer(fresh) }), 401, 'balance-token-revoked');
  await problem(await admin('tokens/revoke', { token_hash: 'f'.repeat(64) }), 404, 'unknown-balance-token');
  await verifyClean();
});

test('statement paging with ?after=&limit= walks every line once; ?format=csv exports it', async () => {
  const token = await topUp(srv.base, '5.00', 'spt_test_paging');
  for (let i = 0; i < 4; i++) await draw(token, 1);
  await admin('adjustments', { balance_id: hashToken(token), direction: 'credit', amount: '0.10', reason: 'a "quoted", reason' }, 'paging-adjust');
  const all = (await (await fetch(`${srv.base}/lds/balance?limit=100`, { headers: bearer(token) })).json()) as any;
  assert.is(all.statement.length, 6);
  assert.is(all.next_after, undefined);
  const seen: string[] = [];
  let after: string | undefined;
  let pages = 0;
  do {
    const res = await fetch(`${srv.base}/lds/balance?limit=4${after ? `&after=${after}` : ''}`, { headers: bearer(token) });
    const page = (await res.json()) as any;
    assert.is(res.status, 200);
    seen.push(...page.statement.map((l: any) => l.id));
    conforms('Balance', page);
    after = page.next_after;
    if (after) assert.match(res.headers.get('link') ?? '', 'rel="next"');
    pages++;
  } while (after && pages < 10);
  assert.is(pages, 2);
  assert.equal(seen, all.statement.map((l: any) => l.id));
  await problem(await fetch(`${srv.base}/lds/balance?after=abc`, { headers: bearer(token) }), 400, 'malformed-request');
  await problem(await fetch(`${srv.base}/lds/balance?limit=0`, { headers: bearer(token) }), 400, 'malformed-request');

  const csv = await fetch(`${srv.base}/lds/balance?format=csv&limit=100`, { headers: bearer(token) });
  assert.is(csv.status, 200);
  assert.is(csv.headers.get('content-type')?.split(';')[0], 'text/csv');
  const text = await csv.text();
  const lines = text.split('\r\n').filter(Boolean);
  assert.is(lines[0], 'at,kind,id,amount,currency,balance_after,quote_id,product_id,draw_id,topup_id,reason');
  assert.is(lines.length, 7);
  assert.match(lines[1], /,credit,cor_[^,]+,0\.10,EUR,/);
  assert.ok(lines[1].endsWith(',"a ""quoted"", reason"'), lines[1]);
  assert.is(lines.filter((l) => l.includes(',draw,')).length, 4);
});

test('corrections and tokens pass ledger verify and survive export -> import -> export byte for byte', async () => {
  await verifyClean();
  const first: string[] = [];
  await srv.ledger.readSnapshot((records) => writeExport(records, (l) => void first.push(l)));
  const text = first.join('');
  assert.match(text, '"type":"correction"');
  assert.match(text, '"type":"token"');
  const target = await openTestLedger();
  try {
    async function* lines() {
      yield* text.split('\n').filter(Boolean);
    }
    await target.ledger.importRecords(readExport(lines()));
    assert.equal(await target.ledger.verify(), []);
    const second: string[] = [];
    await target.ledger.readSnapshot((records) => writeExport(records, (l) => void second.push(l)));
    assert.is(second.join(''), text);
  } finally {
    await target.ledger.close();
  }
});

if (BACKEND === 'postgres') {
  test('PostgreSQL, two instances: a token rotated on one is refused on the other at once, and the new one works there', async () => {
    const env = { ...sharedSecrets(), LDS_LEDGER_URL: srv.ledgerSettings.ledgerUrl!, LDS_OPERATOR_TOKEN: OPERATOR, LDS_RECEIPT_KEYS: JSON.stringify([generateReceiptKey()]) };
    const a = await startInstance(fx, env);
    const b = await startInstance(fx, env);
    try {
      const token = await topUp(a.base, '5.00', 'spt_test_two_instances');
      assert.is(await balanceOf(b.base, token), '5.00');
      const rot = await fetch(`${a.base}/lds/balance/token`, { method: 'POST', headers: bearer(token) });
      assert.is(rot.status, 200);
      const fresh = ((await rot.json()) as any).balance_token;
      await problem(await fetch(`${b.base}/lds/balance`, { headers: bearer(token) }), 401, 'balance-token-revoked');
      assert.is(await balanceOf(b.base, fresh), '5.00');
      await draw(fresh, 1, b.base);
      // Revoked on B through its admin API: refused on A.
      assert.is((await postJson(`${b.base}/lds/admin/tokens/revoke`, { token_hash: hashToken(fresh) }, bearer(OPERATOR))).status, 200);
      await problem(await fetch(`${a.base}/lds/balance`, { headers: bearer(fresh) }), 401, 'balance-token-revoked');
    } finally {
      await stopInstance(a);
      await stopInstance(b);
    }
    await verifyClean();
  });
}

test.run();
