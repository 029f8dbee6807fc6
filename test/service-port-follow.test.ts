// Issue 20: the local address follows the port. A local build (`npm run build`, or the first
// `npm start`) writes its origin into every address it publishes; `PORT=B npm start` afterwards
// must serve documents that name port B - catalogue base_url, agent card, the .well-known
// indexes, the 402's topup_url - rebuilding them (and saying so on stderr) rather than sending
// buyers to the old port. A second start on the same port does not rebuild, and a production build
// (explicit addresses) is never rebuilt by a start.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { cliAsync, REPO } from './helpers/build.ts';
import { catalogSrcBuild } from './helpers/publish.ts';
import { freePort, postJson } from './helpers/http.ts';
import { refsByProduct } from './helpers/service-harness.ts';

const groups = new Set<number>();
test.after.each(() => {
  // whatever a failing test left running (each start runs in its own process group)
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  groups.clear();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Started {
  port: number;
  /** npmStart: the ports taken before the start listened (each start rebuilt for its port first). */
  taken: number[];
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  stop: () => Promise<number | null>;
}

/**
 * `npm start` on `port` over these folders; resolves once it serves (a rebuild first may take a
 * while). Says on stdout how long the start and the stop took, for the run's log.
 */
async function npmStartOn(port: number, dirs: { dist: string; store: string; var: string }): Promise<Started> {
  const started = Date.now();
  const proc = spawn('npm', ['start'], {
    cwd: REPO,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LDS_DIST_DIR: dirs.dist, LDS_STORE_DIR: dirs.store, LDS_VAR_DIR: dirs.var, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', LDS_RATE_LIMIT_RPS: '0' },
  });
  groups.add(proc.pid!);
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (err += d));
  const exit = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const deadline = Date.now() + 240_000;
  while (!(out + err).includes(`serving http://127.0.0.1:${port}`)) {
    if (proc.exitCode !== null || Date.now() > deadline) throw new PortStartError(port, `npm start did not serve on port ${port}:\n${out}\n${err}`, /EADDRINUSE/.test(err));
    await sleep(100);
  }
  console.log(`npm start served on port ${port} after ${((Date.now() - started) / 1000).toFixed(1)} s${/rebuilding/.test(err) ? ' (rebuilt first)' : ''}`);
  return {
    port,
    taken: [],
    proc,
    stdout: () => out,
    stderr: () => err,
    stop: async () => {
      const stopping = Date.now();
      process.kill(proc.pid!, 'SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const code = await Promise.race([exit, new Promise<'still running'>((r) => (timer = setTimeout(() => r('still running'), STOP_MS)))]);
      clearTimeout(timer); // not left to keep this process alive after the last test
      if (code === 'still running') throw new Error(`npm start on port ${port} still running ${STOP_MS / 1000} s after SIGTERM:\n${out.slice(-2000)}\n${err.slice(-2000)}`);
      groups.delete(proc.pid!);
      console.log(`npm start on port ${port} stopped ${((Date.now() - stopping) / 1000).toFixed(1)} s after SIGTERM`);
      return code;
    },
  };
}
/** A stop drains the requests in flight and closes the ledger: seconds, not a minute. */
const STOP_MS = 60_000;

class PortStartError extends Error {
  constructor(readonly port: number, message: string, readonly portTaken: boolean) {
    super(message);
  }
}

/**
 * `npm start` on a free port other than `avoid`. A port free when picked can be taken before the
 * server listens (it rebuilds first, for seconds, and every outgoing connection on the machine
 * takes a port from the same range): then another port is picked, up to three times.
 */
async function npmStart(dirs: { dist: string; store: string; var: string }, avoid: number): Promise<Started> {
  const taken: number[] = [];
  for (;;) {
    let port = await freePort();
    while (port === avoid || taken.includes(port)) port = await freePort();
    try {
      return { ...(await npmStartOn(port, dirs)), taken };
    } catch (err) {
      if (!(err instanceof PortStartError && err.portTaken && taken.length < 2)) throw err;
      console.log(`port ${port} was taken before npm start listened on it: another port`);
      taken.push(port);
    }
  }
}

/** Every published address the issue names, fetched from the running service. */
async function publishedAddresses(port: number, draw: { product: string; ref: string }): Promise<Record<string, string>> {
  const origin = `http://127.0.0.1:${port}`;
  const cat = (await (await fetch(`${origin}/v1/lds/_catalog`)).json()) as { base_url: string; mcp_url: string; docs_url: string };
  const card = (await (await fetch(`${origin}/.well-known/agent-card.json`)).json()) as { url: string };
  const docs: Record<string, string> = {
    'catalogue base_url': cat.base_url,
    'catalogue mcp_url': cat.mcp_url,
    'catalogue docs_url': cat.docs_url,
    'agent card url': card.url,
  };
  for (const path of ['/.well-known/api-catalog', '/.well-known/svc-catalog.json', '/.well-known/agent-card.json']) {
    const res = await fetch(origin + path);
    assert.is(res.status, 200, path);
    docs[path] = await res.text();
  }
  // An unpaid draw: 402 and a quote whose topup_url says where to fund a balance.
  const quote = await postJson(`${origin}/v1/lds/draw`, { product_id: draw.product, currency: 'EUR', units: [draw.ref] });
  assert.is(quote.status, 402);
  docs['402 topup_url'] = ((await quote.json()) as { topup_url: string }).topup_url;
  return docs;
}

function assertAllName(docs: Record<string, string>, port: number, oldPort: number) {
  for (const [what, text] of Object.entries(docs)) {
    assert.ok(text.includes(`127.0.0.1:${port}`), `${what} names port ${port}: ${text.slice(0, 300)}`);
    assert.not.ok(text.includes(`127.0.0.1:${oldPort}`), `${what} still names the old port ${oldPort}`);
  }
  for (const key of ['catalogue base_url', 'agent card url', '402 topup_url']) assert.is(new URL(docs[key]!).origin, `http://127.0.0.1:${port}`, key);
}

/**
 * A local build for port A (`lds build --local`, A the default 8080: the build of catalog-src the
 * suites share, helpers/publish.ts), in folders of the test's own. A is never listened on here.
 */
async function localBuildForA() {
  const built = await catalogSrcBuild();
  const a = Number(new URL(built.localOrigin).port);
  return { a, dirs: { dist: built.out, store: built.store, var: join(built.root, 'var') } };
}

test('build --local for port A, npm start on port B: every address says B (rebuilt, said on stderr); a restart on B does not rebuild', async () => {
  const { a, dirs } = await localBuildForA();
  // a unit to quote, read while no server holds the store (a rebuild of the same data keeps it)
  const [product, refs] = [...(await refsByProduct(dirs.store)).entries()].find(([, r]) => r.length > 0)!;
  const draw = { product, ref: refs[0]! };

  const first = await npmStart(dirs, a);
  const b = first.port;
  assert.is.not(b, a);
  const rebuilt = new RegExp(`was built for http://127\\.0\\.0\\.1:(\\d+) but this start listens on http://127\\.0\\.0\\.1:${b}: rebuilding`).exec(first.stderr());
  assert.ok(rebuilt, first.stderr());
  // built for A, or for a port an earlier attempt rebuilt for and then found taken
  assert.ok([a, ...first.taken].includes(Number(rebuilt[1])), rebuilt[0]);
  assertAllName(await publishedAddresses(b, draw), b, a);
  assert.is(await first.stop(), 0);

  // Stopped and started again on the same port: the documents already match, nothing is rebuilt.
  const again = await npmStartOn(b, dirs);
  assert.not.match(again.stderr(), /rebuilding|\[build\]/, again.stderr());
  assertAllName(await publishedAddresses(b, draw), b, a);
  assert.is(await again.stop(), 0);
});

test('a production build (explicit addresses) is served as built, whatever the port', async () => {
  // first a local build (so a record of it exists), then a production build over the same dist/
  const { a, dirs } = await localBuildForA();
  const prod = await cliAsync(['build', '--no-store', '--base-url', 'https://api.example.net/v1', '--mcp-url', 'https://api.example.net/mcp', '--docs-url', 'https://api.example.net/docs/', '--out', dirs.dist, '--store-root', dirs.store]);
  assert.is(prod.code, 0, prod.stderr);
  const s = await npmStart(dirs, a);
  assert.not.match(s.stderr(), /rebuilding|\[build\]/, s.stderr());
  const cat = (await (await fetch(`http://127.0.0.1:${s.port}/v1/lds/_catalog`)).json()) as { base_url: string };
  assert.is(cat.base_url, 'https://api.example.net/v1');
  assert.is(await s.stop(), 0);
});

test.run();
