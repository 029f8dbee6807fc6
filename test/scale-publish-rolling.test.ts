// @ledger-backends: postgres  (several instances need the PostgreSQL ledger)
// A rolling publish over two `lds serve` instances on one PostgreSQL ledger (issue 21): a new build
// (new price, some units gone) is shipped to A first (its store, then its dist/, the order of docs/operations.md "Deployment: several instances"),
// then to B. While A has switched and B has not, every outstanding quote - v1 quotes of either
// instance, v2 quotes of A - is paid at both instances at once: each is paid exactly once, with the
// units and the price it quoted, or answered with the documented retry problem
// (503 `quote-store-unavailable`, Retry-After, nothing charged); after B switches, the retried
// quotes pay. The balance moves by exactly the quoted amounts and `ledger verify` is clean.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { cp, mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { LedgerSettings } from '../payments/ledger/open.ts';
import { CATALOG_SRC, cliAsync } from './helpers/build.ts';
import { failLoudly } from './helpers/nginx.ts';
import { sharedSecrets, startInstance, stopInstance, type Instance } from './helpers/instances.ts';
import { ledgerEnv, newLedgerSettings } from './helpers/ledgers.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { balanceOf, bearer, buildFixture, postJson, refsByProduct, topUp, type Fixture } from './helpers/service-harness.ts';
import { PRODUCT, centsOf, copyBuild, lastEcdcRefs, readyz, secondVersionBuild, waitReady } from './helpers/releases.ts';

const V2_PRICE_MICROS = 25_000;
const DROPPED = 12;
const RETRY_PROBLEM = () => PROBLEM_BASE + 'quote-store-unavailable';

let fx: Fixture;
let ledger: LedgerSettings;
let stage: { dist: string; store: string };
let nodes: { inst: Instance; dist: string; store: string }[] = [];
let stable: string[];
let dropped: string[];

test.before(() => failLoudly(async () => {
  fx = await buildFixture();
  const refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  dropped = await lastEcdcRefs(CATALOG_SRC, DROPPED);
  stable = refs.filter((r) => !dropped.includes(r));
  // The new build, in a staging folder, shipped to each instance (made once per machine: secondVersionBuild).
  stage = await secondVersionBuild(V2_PRICE_MICROS, DROPPED, await mkdtemp(join(fx.root, 'stage-')));
  ledger = await newLedgerSettings('postgres');
  const env = { ...ledgerEnv(ledger), ...sharedSecrets(), LDS_RELEASE_CHECK_MS: '1000' };
  const owns = await Promise.all(['a', 'b'].map(async (name) => copyBuild(fx.dist, fx.store, await mkdtemp(join(fx.root, `node-${name}-`)))));
  // Both started at once; when one fails, the other is in `nodes` all the same, so that the after
  // hook stops it (left running, it kept this process alive until the runner killed it).
  const started = await Promise.allSettled(owns.map((own) => startInstance(fx, { ...env, LDS_DIST_DIR: own.dist, LDS_STORE_DIR: own.store })));
  nodes = started.flatMap((s, i) => (s.status === 'fulfilled' ? [{ inst: s.value, ...owns[i]! }] : []));
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
}));

test.after(async () => {
  await Promise.all(nodes.map((n) => stopInstance(n.inst)));
});

/** Ships the staged build to one instance: its store and CURRENT first, then its dist/ (renamed into place). */
async function ship(node: { dist: string; store: string }): Promise<void> {
  const version = readFileSync(join(stage.store, 'CURRENT'), 'utf8').trim();
  await cp(join(stage.store, version), join(node.store, version), { recursive: true });
  const tmp = join(node.store, '.tmp-ship-current');
  await writeFile(tmp, version + '\n');
  await rename(tmp, join(node.store, 'CURRENT'));
  await cp(stage.dist, `${node.dist}.new`, { recursive: true, dereference: true });
  await rename(node.dist, `${node.dist}.old`);
  await rename(`${node.dist}.new`, node.dist);
  await rm(`${node.dist}.old`, { recursive: true, force: true });
}

interface QuoteBody {
  quote_id: string;
  unit_count: number;
  amount: string;
  resolved_units: string[];
  store_version: string;
  catalogue_version: string;
  pay_with: Record<string, unknown>;
}

async function quote(base: string, body: Record<string, unknown>): Promise<QuoteBody> {
  const res = await postJson(`${base}/lds/draw`, { product_id: PRODUCT, ...body });
  const json = (await res.json()) as QuoteBody;
  assert.is(res.status, 402, JSON.stringify(json));
  return json;
}

async function pay(base: string, q: QuoteBody, token: string): Promise<{ status: number; body: any; retryAfter: string | null }> {
  const res = await postJson(`${base}/lds/draw`, q.pay_with, bearer(token));
  return { status: res.status, body: await res.json(), retryAfter: res.headers.get('retry-after') };
}

/** A pay answer is either the quote's draw (its units, its price) or the documented retry problem. */
function paidOrRetry(q: QuoteBody, a: { status: number; body: any; retryAfter: string | null }): 'paid' | 'retry' {
  if (a.status === 200) {
    assert.equal(a.body.units.map((u: { ref: string }) => u.ref).sort(), [...q.resolved_units].sort(), 'delivered exactly the quoted units');
    assert.is(a.body.receipt.amount, q.amount);
    assert.is(a.body.receipt.unit_count, q.unit_count);
    assert.is(a.body.receipt.quote_id, q.quote_id);
    return 'paid';
  }
  assert.is(a.status, 503, JSON.stringify(a.body));
  assert.is(a.body.type, RETRY_PROBLEM());
  assert.is(a.body.store_version, q.store_version);
  assert.ok(Number(a.retryAfter) >= 1, `Retry-After ${a.retryAfter}`);
  return 'retry';
}

test('postgres: two instances during a rolling publish honour every outstanding quote exactly once, or answer the retry problem', async () => {
  const [A, B] = nodes;
  const v1 = (await readyz(A.inst.base)).body;
  assert.is((await readyz(B.inst.base)).body.store_version, v1.store_version);
  const token = await topUp(A.inst.base, '50.00');
  const opening = centsOf(await balanceOf(B.inst.base, token));

  // v1 quotes from both instances, some of units v2 drops.
  const oldQuotes = [
    await quote(A.inst.base, { units: dropped.slice(0, 3) }),
    await quote(B.inst.base, { units: [dropped[3], stable[0]] }),
    await quote(A.inst.base, { query: 'covid deaths Belgium', limit: 4 }),
    await quote(B.inst.base, { units: [stable[5], stable[6]] }),
  ];
  // One more v1 quote of B, left unpaid until B has switched too.
  const kept = await quote(B.inst.base, { units: [dropped[4], stable[9]] });

  await ship(A);
  const switched = await waitReady(A.inst.base, (r) => r.body.store_version !== v1.store_version, 60_000);
  const v2 = switched.body;
  assert.is.not(v2.catalogue_version, v1.catalogue_version);
  assert.is((await readyz(B.inst.base)).body.store_version, v1.store_version, 'B has not switched yet');

  const newQuotes = [await quote(A.inst.base, { units: [stable[1], stable[2]] }), await quote(A.inst.base, { units: [stable[3]] })];
  for (const q of newQuotes) {
    assert.is(q.store_version, v2.store_version);
    assert.is(centsOf(q.amount), Math.max(1, Math.ceil((q.unit_count * V2_PRICE_MICROS) / 10_000)));
  }

  // B does not hold v2 yet: the retry problem, nothing charged.
  const early = await pay(B.inst.base, newQuotes[0], token);
  assert.is(paidOrRetry(newQuotes[0], early), 'retry');
  assert.is(centsOf(await balanceOf(B.inst.base, token)), opening, 'a retry answer charges nothing');

  // Mid-roll, every outstanding quote paid at both instances at once.
  const drawOf = new Map<string, string>();
  let retries = 0;
  for (const q of [...oldQuotes, ...newQuotes]) {
    const answers = await Promise.all([pay(A.inst.base, q, token), pay(B.inst.base, q, token)]);
    for (const a of answers) {
      if (paidOrRetry(q, a) === 'retry') {
        retries++;
        continue;
      }
      const id = a.body.receipt.draw_id as string;
      assert.is(drawOf.get(q.quote_id) ?? id, id, 'one draw per quote, whichever instance answered');
      drawOf.set(q.quote_id, id);
    }
    // A holds both versions: it always pays.
    assert.is(answers[0].status, 200);
  }
  assert.ok(oldQuotes.every((q) => drawOf.has(q.quote_id)) && newQuotes.every((q) => drawOf.has(q.quote_id)));

  // B switches; a v1 quote and v2 quotes all pay there now (replays of the draws above).
  await ship(B);
  await waitReady(B.inst.base, (r) => r.body.store_version === v2.store_version, 60_000);
  for (const q of [...newQuotes, oldQuotes[0]]) {
    const a = await pay(B.inst.base, q, token);
    assert.is(paidOrRetry(q, a), 'paid');
    assert.is(a.body.receipt.draw_id, drawOf.get(q.quote_id));
  }
  // The v1 quote left unpaid: B switched but kept its v1 store for it (a unit v2 dropped included).
  const k = await pay(B.inst.base, kept, token);
  assert.is(paidOrRetry(kept, k), 'paid');
  assert.is(k.body.receipt.catalogue_version, v1.catalogue_version);
  assert.ok(k.body.units.some((u: { ref: string }) => u.ref === dropped[4]));

  const spent = [...oldQuotes, ...newQuotes, kept].reduce((s, q) => s + centsOf(q.amount), 0);
  assert.is(centsOf(await balanceOf(A.inst.base, token)), opening - spent, 'each quote debited exactly once');
  console.log(`# rolling publish: ${drawOf.size} outstanding quotes paid once each, ${retries + 1} retry answers`);

  const v = await cliAsync(['ledger', 'verify', '--url', ledger.ledgerUrl!]);
  assert.is(v.code, 0, v.stderr + v.stdout);
  assert.match(v.stdout, /clean/);
});

test.run();
