// Issue 33, failover without a restart. A real primary with a synchronous streaming standby (Debian's
// PostgreSQL, test/helpers/pg-cluster.ts), two `lds serve` instances on the libpq multi-host URL of
// both servers, buyers paying draws through both. The primary is killed (SIGKILL of its whole
// process group: the machine died), the standby is promoted as the runbook says (docs/operations.md,
// "High availability": clear synchronous_standby_names on it, then `pg_ctl promote`), and:
//   - the same instances pay again within 15 s of the promotion, without a restart;
//   - no 500, ever: what could not be paid was answered 503 ledger-unavailable with Retry-After;
//   - every acknowledged draw (200) is on the new primary, under the draw id its buyer was told;
//   - every quote is debited once: each quote that met a 503 pays exactly once when resent;
//   - `lds ledger verify --url <the multi-host URL>` finds the new primary's ledger clean (and export
//     and migrate take the same URL).
// Before this issue the service refused the multi-host URL at start ("Invalid URL").
import * as assert from 'uvu/assert';
import { cli } from './helpers/build.ts';
import { sharedSecrets, startInstances, stopInstance, type Instance } from './helpers/instances.ts';
import { ledgerRecords } from './helpers/ledgers.ts';
import { payAgain, startPaying } from './helpers/paying.ts';
import { startPgCluster, type PgCluster } from './helpers/pg-cluster.ts';
import { POSTGRES_SERVER, suiteNeeding } from './helpers/programs.ts';
import { balanceOf, buildFixture, cents, refsByProduct, topUp, type Fixture } from './helpers/service-harness.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';

const test = suiteNeeding('ha-failover', [POSTGRES_SERVER]);
const PRODUCT = 'svc-health-eu';
/** The bound of every ledger call in these instances (LDS_PG_QUERY_TIMEOUT_MS). */
const BOUND_MS = 2000;
let fx: Fixture;
let cluster: PgCluster;
let url: string;
let inst: Instance[] = [];

test.before(async () => {
  [fx, cluster] = await Promise.all([buildFixture(), startPgCluster({ standbys: 1, synchronous: true })]);
  url = cluster.url(await cluster.createDatabase());
  inst = await startInstances(fx, { LDS_LEDGER_URL: url, LDS_PG_QUERY_TIMEOUT_MS: String(BOUND_MS), LDS_PG_POOL_SIZE: '4', ...sharedSecrets() }, 2);
});

test.after(async () => {
  await Promise.all(inst.map(stopInstance));
  await cluster?.stop();
});

test('primary killed, standby promoted: the same instances pay again within 15 s, nothing acknowledged lost, every quote debited once', async () => {
  const refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
  const token = await topUp(inst[0]!.base, '500.00');
  const start = cents(await balanceOf(inst[1]!.base, token));
  const loop = startPaying({ bases: inst.map((i) => i.base), token, product: PRODUCT, refs, requestTimeoutMs: 20_000 });
  try {
    // Paid draws are flowing through both instances, synchronously replicated.
    for (const i of inst) await loop.until((p) => p.status === 200 && p.base === i.base, `paid at ${i.base}`);
    const [primary, standby] = cluster.nodes as [typeof cluster.primary, typeof cluster.primary];
    await primary.kill9();
    // The runbook: the promoted server must not wait for a synchronous standby it does not have.
    await cluster.setSynchronous('', standby);
    await standby.promote();
    const promotedAt = Date.now();
    for (const i of inst) {
      const first = await loop.until((p) => p.status === 200 && p.base === i.base && p.at >= promotedAt, `paid at ${i.base} after the promotion`, 30_000);
      const after = first.at + first.ms - promotedAt;
      console.log(`# ${i.base}: first paid draw ${after} ms after the promotion`);
      assert.ok(after < 15_000, `${i.base} paid again ${after} ms after the promotion (bound 15 s)`);
    }
  } finally {
    await loop.stop();
  }

  const answered = loop.paid;
  const refused = answered.filter((p) => p.status !== 200);
  console.log(`# ${answered.length} paid draws answered, ${refused.length} refused around the failover: ${[...new Set(refused.map((p) => p.problem?.outcome))].join(', ')}`);
  for (const p of refused) {
    assert.is(p.status, 503, `only 200 or 503, never a 500: ${JSON.stringify(p.problem)}`);
    assert.is(p.problem!.type, `${PROBLEM_BASE}ledger-unavailable`);
    assert.ok(p.retryAfter && Number(p.retryAfter) > 0, 'a 503 says when to retry');
    assert.ok(p.problem!.outcome === 'none' || p.problem!.outcome === 'unknown', JSON.stringify(p.problem));
    if (p.problem!.outcome === 'unknown') assert.match(p.problem!.detail ?? '', /may or may not have been made.*same quote_id/);
  }
  // Every quote that met a 503 is resent, as its buyer would: paid exactly once (or replayed).
  for (const p of refused) p.drawId = await payAgain(p, token, PRODUCT);

  // The new primary holds exactly the draws the buyers were told of, one per quote.
  const records = await ledgerRecords({ ledgerDir: '', ledgerUrl: url });
  const draws = [...records.entries()].filter(([k]) => k.startsWith('d:')).map(([, v]) => v as { draw_id: string; quote_id: string; amount_cents: number });
  const byQuote = new Map(draws.map((d) => [d.quote_id, d]));
  assert.is(byQuote.size, draws.length, 'no quote debited twice');
  assert.is(draws.length, answered.length, 'one draw per quote asked, none more');
  for (const p of answered) assert.is(byQuote.get(p.quote_id)?.draw_id, p.drawId, `the draw of quote ${p.quote_id.slice(0, 16)}… is the one its buyer was told`);
  const spent = draws.reduce((s, d) => s + d.amount_cents, 0);
  assert.is(cents(await balanceOf(inst[0]!.base, token)), start - spent);
  // The operator's audit reads the same URL the service does.
  const v = cli(['ledger', 'verify', '--url', url]);
  assert.is(v.code, 0, v.stderr + v.stdout);
  assert.match(v.stdout, /clean/);
  assert.not.match(v.stdout + v.stderr, /lds-test/, 'the password is not printed');
  // ... as does every other ledger command.
  const exported = cli(['ledger', 'export', '--url', url]);
  assert.is(exported.code, 0, exported.stderr);
  assert.is(JSON.parse(exported.stdout.trim().split('\n').at(-1)!).draws, draws.length);
  const migrated = cli(['ledger', 'migrate', '--url', url]);
  assert.is(migrated.code, 0, migrated.stderr);
  assert.match(migrated.stdout, /schema at version \d+/);
});

test.run();
