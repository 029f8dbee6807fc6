// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// The `stripe` processor: the real stripe SDK (retries off) pointed at a loopback fake of
// POST /v1/payment_intents, driven through the same mppx path by the official mppx client.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Credential, Receipt } from 'mppx';
import { Mppx, stripe } from 'mppx/client';
import { createStripeProcessor, stripeProcessorFromEnv } from '../payments/processors/stripe.ts';
import { loadConfig } from '../payments/config.ts';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { hashToken } from '../payments/tokens.ts';
import { postJson, startTopupApp, type TopupApp } from './helpers/topup-app.ts';

interface Seen {
  path: string;
  headers: IncomingMessage['headers'];
  form: URLSearchParams;
}

/** A tiny Stripe: enough of /v1/payment_intents for success, decline, 3-D Secure, idempotency. */
class FakeStripe {
  seen: Seen[] = [];
  private byKey = new Map<string, { status: number; body: unknown }>();
  private server!: Server;
  port = 0;

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const form = new URLSearchParams(raw);
        this.seen.push({ path: req.url ?? '', headers: req.headers, form });
        const send = (status: number, body: unknown, replayed = false) => {
          res.writeHead(status, { 'Content-Type': 'application/json', 'Request-Id': `req_${this.seen.length}`, ...(replayed ? { 'Idempotent-Replayed': 'true' } : {}) });
          res.end(JSON.stringify(body));
        };
        if (req.method !== 'POST' || req.url !== '/v1/payment_intents') return send(404, { error: { type: 'invalid_request_error', message: 'Unrecognized request URL' } });
        const key = String(req.headers['idempotency-key'] ?? '');
        const spt = form.get('shared_payment_granted_token') ?? '';
        const flakyCalls = this.seen.filter((s) => s.form.get('shared_payment_granted_token') === 'spt_flaky').length;
        const prior = key ? this.byKey.get(key) : undefined;
        if (prior && !(spt === 'spt_flaky' && flakyCalls <= 2)) return send(prior.status, prior.body, true);
        const amount = Number(form.get('amount'));
        const currency = form.get('currency');
        const pi = (status: string) => ({ id: `pi_fake_${this.seen.length}`, object: 'payment_intent', amount, currency, status });
        let outcome: { status: number; body: unknown };
        if (spt === 'spt_decline') outcome = { status: 402, body: { error: { type: 'card_error', code: 'card_declined', decline_code: 'insufficient_funds', message: 'Your card has insufficient funds.' } } };
        else if (spt === 'spt_3ds') outcome = { status: 200, body: pi('requires_action') };
        else if (spt === 'spt_down') outcome = { status: 500, body: { error: { type: 'api_error', message: 'Something went wrong on Stripe\u2019s end.' } } };
        else outcome = { status: 200, body: pi('succeeded') };
        if (key && outcome.status !== 500 && !prior) this.byKey.set(key, outcome);
        if (spt === 'spt_flaky' && flakyCalls <= 2) {
          // Stripe processed the charge but the answer never arrived - twice, because stripe-node
          // retries a closed connection once even with maxNetworkRetries 0.
          req.socket.destroy();
          return;
        }
        send(outcome.status, outcome.body);
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', () => r()));
    this.port = (this.server.address() as AddressInfo).port;
  }

  stop(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((r) => this.server.close(() => r()));
  }
}

const fake = new FakeStripe();
let app: TopupApp;

test.before(async () => {
  await fake.start();
  const processor = createStripeProcessor({
    secretKey: 'sk_test_fake_key_for_loopback',
    networkId: 'profile_test_123',
    api: { host: '127.0.0.1', port: fake.port, protocol: 'http' },
    timeoutMs: 5_000,
  });
  app = await startTopupApp(processor);
});
test.after(async () => {
  await app.close();
  await fake.stop();
});

function client(spt: string) {
  return Mppx.create({ polyfill: false, methods: [stripe.charge({ paymentMethod: 'pm_card_visa', createToken: async () => spt })] });
}

async function credentialFor(amount: string, spt: string): Promise<{ credential: string; challengeId: string }> {
  const first = await postJson(app.url, { amount, currency: 'EUR' });
  assert.is(first.status, 402);
  const credential = await client(spt).createCredential(first);
  return { credential, challengeId: Credential.deserialize(Credential.extractPaymentScheme(credential)!).challenge.id };
}

function callsFor(spt: string): Seen[] {
  return fake.seen.filter((s) => s.form.get('shared_payment_granted_token') === spt);
}

test('success: the SDK sends amount, currency, the SPT, confirm and the challenge-derived Idempotency-Key', async () => {
  const res = await client('spt_ok').fetch(app.url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ amount: '5.00', currency: 'EUR' }) });
  assert.is(res.status, 200);
  const body = await res.json();
  assert.match(body.balance_token, /^lds_bal_/);
  assert.is(body.balance, '5.00');
  const receipt = Receipt.fromResponse(res);
  assert.is(receipt.reference, 'pi_fake_1');

  const calls = callsFor('spt_ok');
  assert.is(calls.length, 1);
  const [call] = calls;
  assert.is(call.path, '/v1/payment_intents');
  assert.is(call.form.get('amount'), '500');
  assert.is(call.form.get('currency'), 'eur');
  assert.is(call.form.get('confirm'), 'true');
  assert.is(call.form.get('shared_payment_granted_token'), 'spt_ok');
  assert.is(call.headers.authorization, 'Bearer sk_test_fake_key_for_loopback');
  assert.ok(call.headers['stripe-version'], 'mppx pins a preview API version');
  const key = String(call.headers['idempotency-key']);
  assert.match(key, /^mpp_[A-Za-z0-9_-]+_spt_ok$/);
  const topup = await app.ledger.findTopupByPayment('stripe', 'pi_fake_1');
  assert.ok(topup);
  assert.is(key, `mpp_${topup!.challenge_id}_spt_ok`);
  assert.equal((await app.ledger.getBalance(hashToken(body.balance_token)))?.cents, 500);
});

test('decline (card_error): 402 problem, one request, nothing credited', async () => {
  const { credential, challengeId } = await credentialFor('5.00', 'spt_decline');
  const res = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(res.status, 402);
  const body = await res.json();
  assert.is(body.type, PROBLEM_BASE + 'payment-declined');
  assert.is(body.decline_code, 'insufficient_funds');
  assert.is(body.detail, 'Your card has insufficient funds.');
  assert.is(callsFor('spt_decline').length, 1);
  assert.is(await app.ledger.findTopupByChallenge(challengeId), null);
});

test('requires_action: 402 problem, nothing credited', async () => {
  const { credential, challengeId } = await credentialFor('5.00', 'spt_3ds');
  const res = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(res.status, 402);
  assert.is((await res.json()).type, PROBLEM_BASE + 'payment-requires-action');
  assert.is(await app.ledger.findTopupByChallenge(challengeId), null);
});

test('Stripe error: 502 problem, SDK retries off (exactly one request), nothing credited', async () => {
  const { credential, challengeId } = await credentialFor('5.00', 'spt_down');
  const res = await postJson(app.url, { amount: '5.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(res.status, 502);
  assert.is((await res.json()).type, PROBLEM_BASE + 'payment-processor-unavailable');
  assert.is(callsFor('spt_down').length, 1);
  assert.is(await app.ledger.findTopupByChallenge(challengeId), null);
});

test('idempotent replay: a charge whose answer was lost is credited once when the credential is resent', async () => {
  const { credential, challengeId } = await credentialFor('9.00', 'spt_flaky');
  const lost = await postJson(app.url, { amount: '9.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(lost.status, 502); // connection dropped: nothing credited, resend is safe
  assert.is(await app.ledger.findTopupByChallenge(challengeId), null);
  // stripe-node quirk: one automatic retry on a closed connection despite maxNetworkRetries 0;
  // harmless because mppx always sends the challenge-derived Idempotency-Key.
  assert.is(callsFor('spt_flaky').length, 2);

  const resent = await postJson(app.url, { amount: '9.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(resent.status, 200);
  const body = await resent.json();
  assert.is(body.balance, '9.00');
  const calls = callsFor('spt_flaky');
  assert.is(calls.length, 3);
  assert.ok(calls.every((c) => c.headers['idempotency-key'] === calls[0].headers['idempotency-key'])); // Stripe replayed it
  const receipt = Receipt.fromResponse(resent);
  assert.is(receipt.reference, 'pi_fake_' + String(fake.seen.indexOf(calls[0]) + 1));

  // resent once more (that answer lost too): the same answer again, never a second charge or credit
  const third = await postJson(app.url, { amount: '9.00', currency: 'EUR' }, { Authorization: credential });
  assert.is(third.status, 200);
  const thirdBody = await third.json();
  assert.is(thirdBody.balance_token, body.balance_token);
  assert.is(thirdBody.balance, '9.00');
  assert.is(callsFor('spt_flaky').length, 3); // answered before reaching Stripe
  assert.equal(await app.ledger.verify(), []);
});

test('SDK-level replay is visible as idempotent-replayed', async () => {
  const processor = createStripeProcessor({ secretKey: 'sk_test_x', networkId: 'n', api: { host: '127.0.0.1', port: fake.port, protocol: 'http' } });
  const params = { amount: 700, currency: 'eur', confirm: true, shared_payment_granted_token: 'spt_direct' };
  const a = await processor.client.paymentIntents.create(params, { idempotencyKey: 'k-direct' });
  const b = await processor.client.paymentIntents.create(params, { idempotencyKey: 'k-direct' });
  assert.is(a.id, b.id);
  assert.not.ok(a.lastResponse?.headers?.['idempotent-replayed']);
  assert.is(b.lastResponse?.headers?.['idempotent-replayed'], 'true');
});

test('configuration from env', () => {
  assert.throws(() => stripeProcessorFromEnv({}), /STRIPE_SECRET_KEY/);
  assert.throws(() => stripeProcessorFromEnv({ STRIPE_SECRET_KEY: 'sk_test_x' }), /STRIPE_NETWORK_ID/);
  const p = stripeProcessorFromEnv({ STRIPE_SECRET_KEY: 'sk_test_x', STRIPE_PROFILE_ID: 'prof_1', STRIPE_API_BASE: `http://127.0.0.1:${fake.port}` });
  assert.is(p.name, 'stripe');
  assert.is(p.networkId, 'prof_1');
});

test('the processor is chosen by the configuration: sandbox locally, never silently under production', async () => {
  const varDir = await mkdtemp(join(tmpdir(), 'lds-processor-'));
  assert.is((await loadConfig({}, { LDS_VAR_DIR: varDir })).processor, 'sandbox');
  assert.is((await loadConfig({}, { LDS_VAR_DIR: varDir, PAYMENT_PROCESSOR: 'stripe', STRIPE_SECRET_KEY: 'sk_test_x' })).processor, 'stripe');
  for (const [env, re] of [
    [{ NODE_ENV: 'production' }, /STRIPE_SECRET_KEY/],
    [{ NODE_ENV: 'production', PAYMENT_PROCESSOR: 'sandbox' }, /production refuses the sandbox/],
    [{ PAYMENT_PROCESSOR: 'paypal' }, /PAYMENT_PROCESSOR must be sandbox or stripe/],
  ] as const) {
    let err: unknown;
    try {
      await loadConfig({}, { LDS_VAR_DIR: varDir, ...env });
    } catch (e) {
      err = e;
    }
    assert.match(String((err as Error)?.message), re);
  }
});

test.run();
