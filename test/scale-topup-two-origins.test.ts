// @ledger-backends: postgres  (two instances share one PostgreSQL ledger)
// Issue 50, item 10: one MPP credential at two instances of one deployment that are built for two
// origins (so each names its own host as the MPP realm), sharing the PostgreSQL ledger and the
// secrets, each a real `lds serve` process. A credential sent to both at once was answered 409
// `topup-in-progress` by one and 402 "credential realm does not match this route's requirements" by
// the other, which a client reads as a refused payment while it is being charged. Proven here:
//   - a credential in flight (its claim held in the ledger) is answered 409 with Retry-After by
//     either instance, whichever issued its challenge;
//   - a credential of one instance's challenge is charged and credited by the other (never 402), and
//     sent to both at once it is credited once: 200 and 200 (answered again) or 409;
//   - the client package sends a 409 `topup-in-progress` again, after Retry-After, until it learns
//     the outcome (here: the claim released, then credited), and a duplicate of its credential sent
//     to the other instance at the same moment changes nothing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Credential } from 'mppx';
import type { LedgerSettings } from '../payments/ledger/open.ts';
import { openLedger } from '../payments/ledger/open.ts';
import type { Ledger } from '../payments/ledger/ledger.ts';
import { hashToken } from '../payments/tokens.ts';
import { sharedSecrets, startInstance, stopInstance, type Instance } from './helpers/instances.ts';
import { ledgerEnv, ledgerRecords, newLedgerSettings } from './helpers/ledgers.ts';
import { balanceOf, buildFixture, buildFixtureFor, mppxClient, postJson } from './helpers/service-harness.ts';
import { LdsClient } from '../client/index.ts';

let settings: LedgerSettings;
let ledger: Ledger;
let a: Instance;
let b: Instance;

test.before(async () => {
  const [fxA, fxB] = await Promise.all([buildFixture(), buildFixtureFor('http://127.0.0.1:18611')]);
  assert.is.not(new URL(fxA.catalogue.base_url).host, new URL(fxB.catalogue.base_url).host, 'two origins, two realms');
  settings = await newLedgerSettings('postgres');
  const env = { ...ledgerEnv(settings), ...sharedSecrets() };
  [a, b] = await Promise.all([startInstance(fxA, env), startInstance(fxB, env)]);
  ledger = await openLedger(settings);
});
test.after(async () => {
  await ledger?.close();
  await Promise.all([a, b].filter(Boolean).map(stopInstance));
});

const AMOUNT = { amount: '6.00', currency: 'EUR' };
/** A credential for a challenge `at` issued. */
async function credentialFrom(at: Instance, spt: string): Promise<{ credential: string; challengeId: string }> {
  const first = await postJson(`${at.base}/lds/balance/topup`, AMOUNT);
  assert.is(first.status, 402);
  const credential = await mppxClient(spt).createCredential(first);
  return { credential, challengeId: Credential.deserialize(Credential.extractPaymentScheme(credential)!).challenge.id };
}
const send = (at: Instance, credential: string) => postJson(`${at.base}/lds/balance/topup`, AMOUNT, { Authorization: credential });
const creditsOf = async (token: string) => [...(await ledgerRecords(settings))].filter(([k, v]) => k.startsWith('t:') && v.token_hash === hashToken(token)).length;

test('a credential in flight is answered 409 topup-in-progress with Retry-After by both instances', async () => {
  const { credential, challengeId } = await credentialFrom(a, 'spt_test_in_flight');
  const claim = await ledger.claimChallenge(challengeId, 60_000); // another instance charging it
  assert.ok(claim);
  try {
    for (const at of [a, b]) {
      const res = await send(at, credential);
      const body = (await res.json()) as { type: string };
      assert.is(res.status, 409, `${at.base}: ${JSON.stringify(body)}`);
      assert.match(body.type, /topup-in-progress$/);
      assert.ok(Number(res.headers.get('retry-after')) >= 1, `${at.base}: Retry-After ${res.headers.get('retry-after')}`);
    }
  } finally {
    await claim!.release();
  }
  // Released: the outcome at either instance, credited once.
  const paid = await send(b, credential);
  assert.is(paid.status, 200, await paid.clone().text());
  const token = ((await paid.json()) as { balance_token: string }).balance_token;
  const again = await send(a, credential);
  assert.is(again.status, 200);
  assert.is(((await again.json()) as { balance_token: string }).balance_token, token);
  assert.is(await creditsOf(token), 1);
});

test("a credential of one instance's challenge is credited by the other, never refused for its realm; sent to both at once, credited once", async () => {
  for (let i = 0; i < 3; i++) {
    const { credential } = await credentialFrom(a, `spt_test_two_origins_${i}`);
    const answers = await Promise.all([send(a, credential), send(b, credential)]);
    const bodies = await Promise.all(answers.map(async (r) => ({ status: r.status, body: (await r.json()) as { balance_token?: string; type?: string } })));
    assert.ok(bodies.every((x) => x.status === 200 || x.status === 409), JSON.stringify(bodies));
    assert.ok(bodies.some((x) => x.status === 200), JSON.stringify(bodies));
    const tokens = new Set(bodies.flatMap((x) => (x.body.balance_token ? [x.body.balance_token] : [])));
    assert.is(tokens.size, 1);
    const token = [...tokens][0]!;
    assert.is(await balanceOf(b.base, token), '6.00');
    assert.is(await creditsOf(token), 1);
  }
  // At the other instance alone (its realm is not the challenge's): charged and credited there.
  const { credential } = await credentialFrom(a, 'spt_test_other_realm');
  const res = await send(b, credential);
  assert.is(res.status, 200, await res.clone().text());
});

test('the client package asks again after a 409 topup-in-progress until it learns the outcome; a duplicate at the other origin changes nothing', async () => {
  const progress: string[] = [];
  let held: { release(): Promise<void> } | null = null;
  let released: Promise<void> | undefined;
  // The first credential the client sends is "in flight elsewhere" for three seconds: the test holds its claim.
  const fetchHolding: typeof fetch = async (input, init) => {
    const auth = new Headers(init?.headers).get('authorization') ?? '';
    if (auth.startsWith('Payment ') && !released) {
      held = await ledger.claimChallenge(Credential.deserialize(Credential.extractPaymentScheme(auth)!).challenge.id, 60_000);
      released = new Promise((r) => setTimeout(r, 3000)).then(() => held!.release());
    }
    return fetch(input, init);
  };
  let token = '';
  const client = await LdsClient.create({ baseUrl: b.base, spt: 'spt_test_client_in_flight', fetch: fetchHolding, onProgress: (l) => progress.push(l), onNewToken: (t) => void (token = t) });
  try {
    const r = await client.topup('6.00');
    assert.is(r.balance, '6.00');
    assert.ok(held, 'the claim was held');
    assert.ok(progress.some((l) => /processing this top-up's payment already: asking for its outcome again/.test(l)), progress.join('\n'));
    assert.is(await creditsOf(token), 1);
  } finally {
    await client.close();
    await released;
  }
  // The same credential sent to both origins at once, as a retrying proxy might.
  const other = a.base;
  const duplicating: typeof fetch = async (input, init) => {
    const auth = new Headers(init?.headers).get('authorization') ?? '';
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    if (auth.startsWith('Payment ')) void fetch(url.replace(b.base, other), init).catch(() => undefined);
    return fetch(input, init);
  };
  let token2 = '';
  const dup = await LdsClient.create({ baseUrl: b.base, spt: 'spt_test_client_duplicate', fetch: duplicating, onNewToken: (t) => void (token2 = t) });
  try {
    const r = await dup.topup('6.00');
    assert.is(r.balance, '6.00');
    assert.is(await creditsOf(token2), 1);
  } finally {
    await dup.close();
  }
});

test.run();
