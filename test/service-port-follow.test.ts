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
import { cliAsync, REPO, tempDir } from './helpers/build.ts';
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
  proc: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  stop: () => Promise<number | null>;
}

/** `npm start` on `port` over these folders; resolves once it serves (a rebuild first may take a while). */
async function npmStart(port: number, dirs: { dist: string; store: string; var: string }): Promise<Started> {
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
    if (proc.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not serve on port ${port}:\n${out}\n${err}`);
    await sleep(100);
  }
  return {
    proc,
    stdout: () => out,
    stderr: () => err,
    stop: async () => {
      process.kill(proc.pid!, 'SIGTERM');
      const code = await exit;
      groups.delete(proc.pid!);
      return code;
    },
  };
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

test('build --local for port A, npm start on port B: every address says B (rebuilt, said on stderr); a restart on B does not rebuild', async () => {
  const root = await tempDir('port');
  const dirs = { dist: join(root, 'dist'), store: join(root, 'store'), var: join(root, 'var') };
  const [a, b] = [await freePort(), await freePort()];
  assert.is.not(a, b);
  const built = await cliAsync(['build', '--local', `http://127.0.0.1:${a}`, '--out', dirs.dist, '--store-root', dirs.store]);
  assert.is(built.code, 0, built.stderr);
  // a unit to quote, read while no server holds the store (a rebuild of the same data keeps it)
  const [product, refs] = [...(await refsByProduct(dirs.store)).entries()].find(([, r]) => r.length > 0)!;
  const draw = { product, ref: refs[0]! };

  const first = await npmStart(b, dirs);
  assert.match(first.stderr(), new RegExp(`was built for http://127\\.0\\.0\\.1:${a} but this start listens on http://127\\.0\\.0\\.1:${b}: rebuilding`));
  assertAllName(await publishedAddresses(b, draw), b, a);
  assert.is(await first.stop(), 0);

  // Stopped and started again on the same port: the documents already match, nothing is rebuilt.
  const again = await npmStart(b, dirs);
  assert.not.match(again.stderr(), /rebuilding|\[build\]/, again.stderr());
  assertAllName(await publishedAddresses(b, draw), b, a);
  assert.is(await again.stop(), 0);
});

test('a production build (explicit addresses) is served as built, whatever the port', async () => {
  const root = await tempDir('port');
  const dirs = { dist: join(root, 'dist'), store: join(root, 'store'), var: join(root, 'var') };
  const [a, b] = [await freePort(), await freePort()];
  // first a local build (so a record of it exists), then a production build over the same dist/
  const local = await cliAsync(['build', '--local', `http://127.0.0.1:${a}`, '--out', dirs.dist, '--store-root', dirs.store]);
  assert.is(local.code, 0, local.stderr);
  const prod = await cliAsync(['build', '--no-store', '--base-url', 'https://api.example.net/v1', '--mcp-url', 'https://api.example.net/mcp', '--docs-url', 'https://api.example.net/docs/', '--out', dirs.dist, '--store-root', dirs.store]);
  assert.is(prod.code, 0, prod.stderr);
  const s = await npmStart(b, dirs);
  assert.not.match(s.stderr(), /rebuilding|\[build\]/, s.stderr());
  const cat = (await (await fetch(`http://127.0.0.1:${b}/v1/lds/_catalog`)).json()) as { base_url: string };
  assert.is(cat.base_url, 'https://api.example.net/v1');
  assert.is(await s.stop(), 0);
});

test.run();
