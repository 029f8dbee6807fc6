// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// Top-up end to end over real HTTP with the OFFICIAL mppx client and the sandbox processor:
// 402 challenge → stripe credential (SPT) → 200 with balance token and Payment-Receipt.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Challenge, Credential, Receipt } from 'mppx';
import { Mppx, stripe } from 'mppx/client';
import { createSandboxProcessor, SANDBOX_DECLINE_TOKEN, SANDBOX_REQUIRES_ACTION_TOKEN } from '../payments/processors/sandbox.ts';
import { hashToken } from '../payments/tokens.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { payTopup } from '../payments/topup/client.ts';
import { postJson, startTopupApp, TEST_SECRET, type TopupApp } from './helpers/topup-app.ts';

const processor = createSandboxProcessor({ env: {} });
let app: TopupApp;

test.before(async () => {
  app = await startTopupApp(processor);
});
test.after(async () => {
  await app.close();
});

/** The official client, minting a fixed test SPT; records the requests it sends. */
function client(spt: string, sent: Request[] = []) {
  return Mppx.create({
    polyfill: false,
    fetch: async (input: RequestInfo | URL, init?: RequestInit) => {
      sent.push(new Request(input, init));
      return fetch(input, init);
    },
    methods: [stripe.charge({ paymentMethod: 'pm_card_visa', createToken: async () => spt })],
  });
}

function topupVia(c: ReturnType<typeof client>, amount: string, headers: Record<string, string> = {}) {
  return c.fetch(app.url, { method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body: JSON.stringify({ amount, currency: 'EUR' }) });
}

test('first request: 402 with WWW-Authenticate: Payment (stripe/charge, amount bound)', async () => {
  const res = await postJson(app.url, { amount: '5.00', currency: 'EUR' });
  assert.is(res.status, 402);
  const www = res.headers.get('www-authenticate') ?? '';
  assert.ok(www.startsWith('Payment '), www);
  const challenge = Challenge.deserialize(www);
  assert.is(challenge.method, 'stripe');
  assert.is(challenge.intent, 'charge');
  assert.is(challenge.realm, 'lds.test');
  assert.is((challenge.request as { amount: string }).amount, '500');
  assert.is((challenge.request as { currency: string }).currency, 'eur');
  assert.is((challenge.request as { methodDetails: { networkId: string } }).methodDetails.networkId, 'sandbox');
  assert.ok(challenge.expires);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/);
  const body = await res.json();
  assert.is(body.type, PROBLEM_BASE + 'payment-required');
  assert.is(body.amount, '5.00');
});

test('official client: credential → 200 with a new balance token and Payment-Receipt', async () => {
  const sent: Request[] = [];
  const res = await topupVia(client('spt_test_123', sent), '5.00');
  assert.is(res.status, 200);
  const body = await res.json();
  assert.match(body.balance_token, /^lds_bal_[A-Za-z0-9_-]{43}$/);
  assert.is(body.balance, '5.00');
  assert.is(body.currency, 'EUR');
  const receipt = Receipt.fromResponse(res);
  assert.is(receipt.method, 'stripe');
  assert.is(receipt.status, 'success');
  assert.match(receipt.reference, /^pi_sandbox_/);
  assert.ok((res.headers.get('cache-control') ?? '').includes('no-store'));
  // the second request carried the credential in Authorization
  assert.is(sent.length, 2);
  assert.ok(sent[1].headers.get('authorization')?.startsWith('Payment '));
  const bal = await app.ledger.getBalance(hashToken(body.balance_token));
  assert.equal(bal?.cents, 500);
  // the token never reaches the logs
  assert.not.ok(JSON.stringify(app.logs).includes(body.balance_token));
});

test('the same credential resent is answered again (same token) and credits nothing twice; another credential for a credited challenge is 409', async () => {
  const first = await postJson(app.url, { amount: '6.00', currency: 'EUR' });
  assert.is(first.status, 402);
  const credential = await client('spt_test_123').createCredential(first);
  const challengeId = Credential.deserialize(Credential.extractPaymentScheme(credential)!).challenge.id;

  const ok = await postJson(app.url, { amount: '6.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(ok.status, 200);
  const { balance_token } = await ok.json();
  // the buyer lost that answer and resends the very same credential: same token, nothing credited
  const again = await postJson(app.url, { amount: '6.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(again.status, 200);
  const againBody = await again.json();
  assert.is(againBody.balance_token, balance_token);
  assert.is(againBody.balance, '6.00');
  assert.is(Receipt.fromResponse(again).reference, Receipt.fromResponse(ok).reference);
  // someone holding only the challenge (another token, same challenge) learns nothing
  const forged = await client('spt_test_999').createCredential(first);
  const other = await postJson(app.url, { amount: '6.00', currency: 'EUR' }, { Authorization: forged });
  assert.is(other.status, 409);
  const otherBody = await other.json();
  assert.is(otherBody.type, PROBLEM_BASE + 'topup-already-credited');
  assert.not.ok(JSON.stringify(otherBody).includes(balance_token));
  // the buyer rotates the token; the very credential resent within its window no longer answers
  // with the dead token: 409, nothing credited (the balance is checked below)
  const rotatedTo = hashToken('lds_bal_' + 'r'.repeat(43));
  assert.is((await app.ledger.rotateToken(hashToken(balance_token), rotatedTo)).kind, 'ok');
  const afterRotation = await postJson(app.url, { amount: '6.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(afterRotation.status, 409);
  const afterBody = await afterRotation.json();
  assert.is(afterBody.type, PROBLEM_BASE + 'topup-already-credited');
  assert.not.ok(JSON.stringify(afterBody).includes(balance_token));
  assert.equal(await app.ledger.resolveToken(rotatedTo), { kind: 'balance', balance: hashToken(balance_token) });

  // a fresh challenge, its credential sent 8 times at once: exactly one credit, one token
  const second = await postJson(app.url, { amount: '7.00', currency: 'EUR' });
  const cred2 = await client('spt_test_456').createCredential(second);
  const results = await Promise.all(Array.from({ length: 8 }, () => postJson(app.url, { amount: '7.00', currency: 'EUR' }, { Authorization: cred2 })));
  const statuses = results.map((r) => r.status).sort();
  assert.ok(statuses.includes(200), statuses.join(','));
  assert.ok(statuses.every((s) => s === 200 || s === 409), statuses.join(','));
  const tokens = new Set((await Promise.all(results.filter((r) => r.status === 200).map((r) => r.json()))).map((b: any) => b.balance_token));
  assert.is(tokens.size, 1, 'every 200 names the same balance');
  assert.equal((await app.ledger.getBalance(hashToken([...tokens][0] as string)))?.cents, 700);

  assert.equal((await app.ledger.getBalance(hashToken(balance_token)))?.cents, 600);
  assert.ok(await app.ledger.findTopupByChallenge(challengeId));
  assert.equal(await app.ledger.verify(), []);
});

test('spt_sandbox_decline is declined with a problem, no balance, no retry loop', async () => {
  const sent: Request[] = [];
  const res = await topupVia(client(SANDBOX_DECLINE_TOKEN, sent), '5.00');
  assert.is(res.status, 402);
  assert.is(res.headers.get('www-authenticate'), null); // final: the client must not pay again
  const body = await res.json();
  assert.is(body.type, PROBLEM_BASE + 'payment-declined');
  assert.is(body.decline_code, 'generic_decline');
  assert.is(body.balance_token, undefined);
  assert.is(sent.length, 2); // challenge + one paid attempt
  const challengeId = Credential.deserialize(Credential.extractPaymentScheme(sent[1].headers.get('authorization')!)!).challenge.id;
  assert.is(await app.ledger.findTopupByChallenge(challengeId), null);
});

test('requires_action: problem, nothing credited', async () => {
  const res = await topupVia(client(SANDBOX_REQUIRES_ACTION_TOKEN), '5.00');
  assert.is(res.status, 402);
  const body = await res.json();
  assert.is(body.type, PROBLEM_BASE + 'payment-requires-action');
  assert.is(body.balance_token, undefined);
});

test('amounts below the minimum or with more than two decimals are refused, never rounded', async () => {
  const cases: [unknown, string][] = [
    ['4.99', 'topup-below-minimum'],
    ['5.001', 'invalid-amount'],
    [5, 'invalid-amount'],
    ['-5.00', 'invalid-amount'],
    ['1e3', 'invalid-amount'],
  ];
  for (const [amount, slug] of cases) {
    const res = await postJson(app.url, { amount, currency: 'EUR' });
    assert.is(res.status, 400, String(amount));
    const body = await res.json();
    assert.is(body.type, PROBLEM_BASE + slug, String(amount));
    assert.is(body.field, 'amount');
  }
  const usd = await postJson(app.url, { amount: '5.00', currency: 'USD' });
  assert.is(usd.status, 400);
  assert.is((await usd.json()).type, PROBLEM_BASE + 'unsupported-currency');
  const notObject = await postJson(app.url, ['5.00']);
  assert.is(notObject.status, 400);
  // through the official client too: refused before any payment
  const sent: Request[] = [];
  const res = await topupVia(client('spt_test_123', sent), '4.99');
  assert.is(res.status, 400);
  assert.is(sent.length, 1);
});

test('Bearer + Payment-Authorization credits the existing balance', async () => {
  const created = await payTopup(app.url, '5.00', { spt: 'spt_test_123' });
  assert.is(created.status, 200);
  const { balance_token } = await created.json();

  // the challenge asks for Payment-Authorization because Authorization carries the token
  const bare = await postJson(app.url, { amount: '7.50', currency: 'EUR' }, { Authorization: `Bearer ${balance_token}` });
  assert.is(bare.status, 402);
  assert.is(Challenge.fromResponse(bare).header, 'Payment-Authorization');

  const sent: Request[] = [];
  const res = await topupVia(client('spt_test_789', sent), '7.50', { Authorization: `Bearer ${balance_token}` });
  assert.is(res.status, 200);
  const body = await res.json();
  const { receipt, ...rest } = body as { receipt: Record<string, unknown> };
  assert.equal(rest, { balance: '12.50', currency: 'EUR' }); // no new token
  assert.is(receipt.type, 'topup');
  assert.is(receipt.balance_after, '12.50');
  assert.ok(res.headers.get('payment-receipt'));
  assert.is(sent[1].headers.get('authorization'), `Bearer ${balance_token}`);
  assert.ok(sent[1].headers.get('payment-authorization')?.startsWith('Payment '));
  const stmt = await app.ledger.statement(hashToken(balance_token), 10);
  assert.equal(stmt.map((s) => [s.kind, s.amountCents, s.balanceAfterCents]), [
    ['topup', 750, 1250],
    ['topup', 500, 500],
  ]);
});

test('unknown or malformed Bearer token: 401 before any challenge', async () => {
  const unknown = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: 'Bearer lds_bal_' + 'A'.repeat(43) });
  assert.is(unknown.status, 401);
  assert.is((await unknown.json()).type, PROBLEM_BASE + 'invalid-balance-token');
  const malformed = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: 'Bearer nope' });
  assert.is(malformed.status, 401);
});

test('tampered, foreign or mismatched credentials get a fresh challenge and credit nothing', async () => {
  const first = await postJson(app.url, { amount: '5.00', currency: 'EUR' });
  const credential = await client('spt_test_123').createCredential(first);
  // same credential, different amount in the body: the challenge is bound to 5.00
  const mismatch = await postJson(app.url, { amount: '9.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(mismatch.status, 402);
  assert.is((await mismatch.json()).type, PROBLEM_BASE + 'payment-credential-invalid');
  assert.ok(mismatch.headers.get('www-authenticate')?.startsWith('Payment '));
  // a challenge signed with another key
  const parsed = Credential.deserialize<{ spt: string }>(Credential.extractPaymentScheme(credential)!);
  const forged = Credential.serialize({ ...parsed, challenge: { ...parsed.challenge, request: { ...parsed.challenge.request, amount: '1' } } });
  const f = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: forged });
  assert.is(f.status, 402);
  assert.is((await f.json()).type, PROBLEM_BASE + 'payment-credential-invalid');
  const garbage = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: 'Payment !!!' });
  assert.is(garbage.status, 402);
  assert.is(await app.ledger.findTopupByChallenge(parsed.challenge.id), null);
  // the untouched credential still works afterwards
  const ok = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(ok.status, 200);
});

test('recovery: a succeeded payment replayed by the processor but never credited is credited once', async () => {
  const first = await postJson(app.url, { amount: '8.00', currency: 'EUR' });
  const credential = await client('spt_test_recover').createCredential(first);
  const { challenge } = Credential.deserialize(Credential.extractPaymentScheme(credential)!);
  // Simulate an earlier attempt that charged (same idempotency key mppx derives) and then died
  // before the ledger write.
  await processor.client.paymentIntents.create(
    { amount: 800, currency: 'eur', confirm: true, shared_payment_granted_token: 'spt_test_recover' },
    { idempotencyKey: `mpp_${challenge.id}_spt_test_recover` },
  );
  const res = await postJson(app.url, { amount: '8.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(res.status, 200);
  const body = await res.json();
  assert.is(body.balance, '8.00');
  assert.ok(res.headers.get('payment-receipt'));
  const again = await postJson(app.url, { amount: '8.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(again.status, 200); // answered again, not credited again
  const againBody = await again.json();
  assert.is(againBody.balance_token, body.balance_token);
  assert.is(againBody.balance, '8.00');
  assert.equal(await app.ledger.verify(), []);
});

test('two challenges for the same amount in the same millisecond are two challenges: both buyers are credited', async () => {
  // A frozen clock makes "the same millisecond" certain (found by the simulator, whose clock stands still).
  const frozen = await startTopupApp(processor, { now: () => Date.UTC(2030, 0, 1) });
  try {
    const body = JSON.stringify({ amount: '7.00', currency: 'EUR' });
    const ask = () => fetch(frozen.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    const [c1, c2] = [Challenge.fromResponse(await ask()), Challenge.fromResponse(await ask())];
    assert.is(c1.expires, c2.expires);
    assert.is.not(c1.id, c2.id, 'the same amount at the same instant: two challenge ids');
    const pay = async (spt: string) => {
      const res = await client(spt).fetch(frozen.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
      const text = await res.text();
      assert.is(res.status, 200, text);
      return JSON.parse(text) as { balance_token: string; balance: string };
    };
    const [a, b] = [await pay('spt_test_same_ms_a'), await pay('spt_test_same_ms_b')];
    assert.is(a.balance, '7.00');
    assert.is(b.balance, '7.00');
    assert.is.not(a.balance_token, b.balance_token);
    assert.is((await frozen.ledger.getBalance(hashToken(b.balance_token)))?.cents, 700);
  } finally {
    await frozen.close();
  }
});

test('the sandbox refuses to exist in production', () => {
  assert.throws(() => createSandboxProcessor({ env: { NODE_ENV: 'production' } }), /production/);
});

test('secret used by tests is long enough for mppx', () => {
  assert.ok(Buffer.byteLength(TEST_SECRET) >= 32);
});

test.run();
