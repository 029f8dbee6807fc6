// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// Issue 11, "Fail-stop and recovery", over real HTTP:
//   LevelDB: a failed ledger write (injected: the one fault hook, LedgerHooks.failWrite) stops the
//     ledger at once - 503 problems, /readyz 503 naming the ledger - and `lds serve` exits 75 with a
//     clear log line; restarted on the same directory it serves again and `ledger verify` is clean.
//   PostgreSQL: the database goes away (a dedicated embedded server, stopped): 503 problems and
//     /readyz 503 naming the ledger, the process stays up; the database returns: the pool reconnects
//     by itself, /readyz is 200 again, draws are paid, the ledger verifies.
//   Both: SIGTERM stops accepting, answers the request in flight, closes the ledger and exits 0;
//     a second SIGTERM exits at once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { connect } from 'node:net';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { cliAsync } from './helpers/build.ts';
import { canConnect } from './helpers/http.ts';
import { exited, startInstance, type Instance } from './helpers/instances.ts';
import { BACKEND, ledgerEnv, newLedgerSettings } from './helpers/ledgers.ts';
import { startEmbeddedPostgres, type PgServer } from './helpers/pg.ts';
import { balanceOf, bearer, buildFixture, cents, postJson, refsByProduct, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';

const PRODUCT = 'svc-health-eu';
let fx: Fixture;
let refs: string[];
const children: Instance[] = [];

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get(PRODUCT)!;
});
test.after(() => {
  for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually(what: string, check: () => Promise<boolean> | boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await sleep(100);
  }
}

async function quote(base: string, n = 3): Promise<{ body: any; req: { product_id: string; units: string[] } }> {
  const req = { product_id: PRODUCT, units: refs.slice(0, n) };
  const res = await postJson(`${base}/lds/draw`, req);
  assert.is(res.status, 402);
  return { body: await res.json(), req };
}

async function readiness(url: string): Promise<{ status: number; body: any }> {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: await res.json() };
}

const origin = (base: string) => base.replace(/\/v1$/, '');

async function verifyCli(env: Record<string, string>): Promise<void> {
  const r = await cliAsync(['ledger', 'verify'], { env });
  assert.is(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /: clean/);
}

if (BACKEND === 'level') {
  test('LevelDB: an injected write failure stops the ledger: 503 problems, /readyz 503 naming the ledger; a restart is ready and clean', async () => {
    let armed = false;
    const fatal: Error[] = [];
    const srv: TestServer = await startTestServer(fx, {
      ledgerFaults: { failWrite: () => (armed ? new Error('injected write failure (test)') : undefined) },
      onLedgerFatal: (err) => void fatal.push(err),
    });
    let restarted: TestServer | undefined;
    try {
      const token = await topUp(srv.base, '5.00');
      assert.is((await readiness(srv.url)).status, 200);
      const q = await quote(srv.base);
      armed = true;
      const paid = await postJson(`${srv.base}/lds/draw`, { ...q.req, quote_id: q.body.quote_id }, bearer(token));
      assert.is(paid.status, 503, 'the draw whose write failed is not paid');
      const p = (await paid.json()) as any;
      assert.is(p.type, PROBLEM_BASE + 'ledger-unavailable');
      assert.not.match(JSON.stringify(p), /injected/, 'no internals in the answer');
      assert.is(fatal.length, 1, 'the service was told once');
      armed = false; // even with the disk healthy again, the stopped ledger refuses: only a restart recovers
      const r = await readiness(srv.url);
      assert.is(r.status, 503);
      assert.is(r.body.type, PROBLEM_BASE + 'not-ready');
      assert.equal(r.body.not_ready, ['ledger']);
      assert.match(r.body.checks.ledger, /failed write/);
      assert.is((await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) })).status, 503);
      assert.is((await fetch(`${srv.url}/healthz`)).status, 200, 'alive, but not ready');

      await srv.close();
      restarted = await startTestServer(fx, { varDir: srv.varDir, env: srv.ledgerEnv });
      assert.is((await readiness(restarted.url)).status, 200, 'ready again after the restart');
      assert.is(await balanceOf(restarted.base, token), '5.00', 'the failed draw debited nothing');
      const again = await postJson(`${restarted.base}/lds/draw`, { ...q.req, quote_id: q.body.quote_id }, bearer(token));
      assert.is(again.status, 200, 'the same quote is paid now, once');
      assert.is(cents(await balanceOf(restarted.base, token)), 500 - cents(q.body.amount));
      assert.equal(await restarted.ledger.verify(), []);
    } finally {
      await srv.close();
      await restarted?.close();
    }
  });

  test('LevelDB: `lds serve` exits 75 with a clear log line after a failed write; restarted on the same ledger it serves and `ledger verify` is clean', async () => {
    const varDir = await mkdtemp(join(fx.root, 'var-fault-'));
    const ledger = await newLedgerSettings();
    const env = ledgerEnv(ledger);
    const child = await startInstance(fx, env, varDir, 'test/helpers/fault-serve.ts');
    children.push(child);
    const token = await topUp(child.base, '5.00');
    const q = await quote(child.base);
    child.proc.kill('SIGUSR2'); // arm the fault
    await eventually('the fault is armed', () => child.log().includes('fault armed'));
    const exit = exited(child.proc);
    const paid = await postJson(`${child.base}/lds/draw`, { ...q.req, quote_id: q.body.quote_id }, bearer(token)).catch((e: Error) => e);
    if (!(paid instanceof Error)) assert.is(paid.status, 503, 'answered 503 if answered at all');
    assert.is(await exit, 75, `exit status 75:\n${child.log()}`);
    const fatal = child
      .log()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l))
      .find((l) => l.level === 60);
    assert.ok(fatal, `a fatal log line:\n${child.log()}`);
    assert.match(fatal.msg, /^ledger write failed: exiting so the supervisor restarts the service/);
    assert.match(fatal.err, /injected write failure/);
    assert.is(fatal.exit_status, 75);

    const next = await startInstance(fx, env, varDir);
    children.push(next);
    assert.is((await readiness(origin(next.base))).status, 200);
    assert.is(await balanceOf(next.base, token), '5.00', 'the top-up survived; the failed draw debited nothing');
    const again = await postJson(`${next.base}/lds/draw`, { ...q.req, quote_id: q.body.quote_id }, bearer(token));
    assert.is(again.status, 200);
    next.proc.kill('SIGTERM');
    assert.is(await exited(next.proc), 0);
    await verifyCli(env);
  });
} else {
  test('PostgreSQL: the database stops: 503 problems and /readyz 503 naming the ledger; it returns: the pool recovers, ready, paid, clean', async () => {
    const pg: PgServer = await startEmbeddedPostgres();
    let srv: TestServer | undefined;
    try {
      srv = await startTestServer(fx, { env: { LDS_LEDGER_URL: pg.url, LDS_PG_STATEMENT_TIMEOUT_MS: '2000', LDS_METRICS_TOKEN: 'm'.repeat(40) } });
      const token = await topUp(srv.base, '5.00');
      const q = await quote(srv.base);
      assert.is((await readiness(srv.url)).status, 200);

      await pg.stopOnly!();
      const r = await readiness(srv.url);
      assert.is(r.status, 503);
      assert.equal(r.body.not_ready, ['ledger']);
      assert.is(r.body.checks.ledger, 'unavailable');
      const paid = await postJson(`${srv.base}/lds/draw`, { ...q.req, quote_id: q.body.quote_id }, bearer(token));
      assert.is(paid.status, 503);
      assert.is(((await paid.json()) as any).type, PROBLEM_BASE + 'ledger-unavailable');
      const bal = await fetch(`${srv.base}/lds/balance`, { headers: bearer(token) });
      assert.is(bal.status, 503);
      await bal.arrayBuffer();
      assert.is((await fetch(`${srv.url}/healthz`)).status, 200, 'the process stays up');
      const down = await (await fetch(`${srv.url}/metrics`, { headers: bearer('m'.repeat(40)) })).text();
      assert.match(down, /^lds_ready\{[^}]*\} 0$/m, 'a scrape sees the instance not ready');

      await pg.startOnly!();
      await eventually('/readyz is 200 again', async () => (await readiness(srv!.url)).status === 200);
      const again = await postJson(`${srv.base}/lds/draw`, { ...q.req, quote_id: q.body.quote_id }, bearer(token));
      assert.is(again.status, 200, 'the pool reconnected by itself');
      assert.is(cents(await balanceOf(srv.base, token)), 500 - cents(q.body.amount));
      assert.equal(await srv.ledger.verify(), []);
      const metrics = await (await fetch(`${srv.url}/metrics`, { headers: bearer('m'.repeat(40)) })).text();
      assert.match(metrics, /^lds_pg_unavailable_total\{[^}]*\} [1-9]/m, 'the outage is counted');
      assert.match(metrics, /^lds_ready\{[^}]*\} 1$/m, 'ready again');
    } finally {
      await srv?.close();
      await pg.stop();
    }
  });
}

/**
 * A request in flight: headers and part of a draw body sent, the rest held back. The request asks
 * `Expect: 100-continue`, so the server's `100 Continue` says it has parsed the headers and holds
 * the request (Node answers it just before it emits 'request'): in flight for certain, however
 * loaded the machine, with no guessed sleep. `answer()` is what came after that interim response.
 */
async function halfSentDraw(port: number): Promise<{ finish(): void; answer(): string; closed: Promise<void> }> {
  const body = JSON.stringify({ product_id: PRODUCT, units: refs.slice(0, 2) });
  const sock = connect({ host: '127.0.0.1', port });
  let answer = '';
  const CONTINUE = 'HTTP/1.1 100 Continue\r\n\r\n';
  const continued = new Promise<void>((r) => sock.on('data', (d) => {
    answer += d;
    if (answer.startsWith(CONTINUE)) r();
  }));
  sock.on('error', () => {});
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  await new Promise<void>((r) => sock.once('connect', () => r()));
  sock.write(`POST /v1/lds/draw HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`);
  await continued;
  sock.write(body.slice(0, 10));
  return { finish: () => void sock.write(body.slice(10)), answer: () => answer.slice(CONTINUE.length), closed };
}

async function servingInstance(grace: number): Promise<{ inst: Instance; port: number }> {
  // The half-sent request must outlive the drain, not the request timeout (15 s by default, which a
  // loaded machine reached before the drain: a 408 instead of the answer this test waits for).
  const env = { ...ledgerEnv(await newLedgerSettings()), LDS_SHUTDOWN_GRACE_MS: String(grace), LDS_REQUEST_TIMEOUT_MS: String(grace + 60_000), LOG_LEVEL: 'info' };
  const inst = await startInstance(fx, env);
  children.push(inst);
  return { inst, port: Number(new URL(inst.base).port) };
}

test('SIGTERM: stops accepting, answers the request in flight, closes the ledger, exits 0', async () => {
  const { inst, port } = await servingInstance(20_000);
  const req = await halfSentDraw(port);
  inst.proc.kill('SIGTERM');
  await eventually('the port stops accepting connections', async () => !(await canConnect(port)));
  assert.is(inst.proc.exitCode, null, 'waits for the request in flight');
  req.finish();
  await req.closed;
  assert.match(req.answer(), /^HTTP\/1\.1 402 /, `the request in flight is answered: ${req.answer().slice(0, 80)}`);
  assert.is(await exited(inst.proc), 0);
  assert.match(inst.log(), /"msg":"draining"/);
  assert.match(inst.log(), /"msg":"stopped"/, 'the ledger and store were closed');
});

test('a second SIGTERM exits at once, without waiting for the grace period', async () => {
  const { inst, port } = await servingInstance(60_000);
  const req = await halfSentDraw(port); // never finished: the drain would wait a minute
  inst.proc.kill('SIGTERM');
  await sleep(800);
  assert.is(inst.proc.exitCode, null, 'still draining after the first');
  const t0 = Date.now();
  inst.proc.kill('SIGTERM');
  const code = await exited(inst.proc);
  const ms = Date.now() - t0;
  assert.is(code, 143);
  assert.ok(ms < 3000, `exited ${ms} ms after the second SIGTERM`);
  assert.match(inst.log(), /second signal: exiting now without draining/);
  assert.not.match(inst.log(), /"msg":"stopped"/);
  await req.closed;
});

test.run();
