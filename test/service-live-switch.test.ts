// Issue 34: what a live switch may change and what it must change, on a real `lds serve` process.
// 1. A build made for another origin (a local `npm run build` for :8080 while the service serves
//    another origin) is refused: logged with both origins and the command that builds for this
//    service, counted in lds_release_refused_total{reason="base_url"}; the catalogue, the 402s and
//    /readyz keep naming this service's addresses and version.
// 2. The build that command makes (a new product added, and draw bounds a newer generator would
//    publish) is switched to, and everything follows without a restart: the metrics count the new
//    product under its own id (not `other`), MCP advertises and applies the new bounds, A2A applies
//    them too, and an A2A task made before the switch is still readable.
// The service checks only on SIGHUP here (LDS_RELEASE_CHECK_MS=0), so each build is examined whole,
// exactly once, when the test asks; the watch that also triggers it is service-publish-live's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { copyCatalogSrc, editJson } from './helpers/build.ts';
import { mcpClient } from './helpers/agents.ts';
import { startInstance, stopInstance, type Instance } from './helpers/instances.ts';
import { copyBuild, metric, readyz, runBuildWith } from './helpers/releases.ts';
import { buildFixture, postJson, type Fixture } from './helpers/service-harness.ts';

const METRICS = randomBytes(32).toString('hex'); // the scrape token (GET /metrics)
const SERVED = 'http://127.0.0.1:8080'; // the fixture's addresses (a local build)
const OTHER = 'http://127.0.0.1:18411'; // the origin of the build that must be refused
const NEW_PRODUCT = 'svc-epidemics-eu';
const NEW_QUERY_MAX = 600; // the bound the second build publishes (the generator's is 500)

let fx: Fixture;
let own: { dist: string; store: string };
let inst: Instance;
let origin: string; // where the instance listens (port 0): its documents name SERVED
let v2Src: string;
let v1: string; // the catalogue version served at start

test.before(async () => {
  fx = await buildFixture();
  own = await copyBuild(fx.dist, fx.store, await mkdtemp(join(fx.root, 'switch-')));
  // catalog-src plus one product, sold from the sources of svc-health-eu.
  v2Src = await copyCatalogSrc();
  const health = JSON.parse(await readFile(join(v2Src, 'products/svc-health-eu.json'), 'utf8'));
  const product = { ...health, product_id: NEW_PRODUCT, slug: 'epidemics', title: 'EU Epidemics', tag: 'Epidemics', marker: 'facts:epidemics', asset_uri: `urn:x-lds:asset:${NEW_PRODUCT}` };
  await writeFile(join(v2Src, `products/${NEW_PRODUCT}.json`), JSON.stringify(product, null, 2) + '\n');
  await editJson(join(v2Src, 'catalogue.json'), (c) => c.agent_skill_order.push(NEW_PRODUCT));
  inst = await startInstance(fx, { LDS_DIST_DIR: own.dist, LDS_STORE_DIR: own.store, LDS_RELEASE_CHECK_MS: '0', LDS_METRICS_TOKEN: METRICS, LOG_LEVEL: 'info' });
  origin = new URL(inst.base).origin;
  v1 = (await readyz(inst.base)).body.catalogue_version!;
});

test.after(async () => {
  if (inst) await stopInstance(inst);
});

/** SIGHUP (look for a new build now), then wait until the log has grown by a line matching `line`. */
async function hangUpUntil(line: RegExp, ms = 60_000): Promise<string> {
  const before = inst.log().length;
  inst.proc.kill('SIGHUP');
  const deadline = Date.now() + ms;
  for (;;) {
    const grown = inst.log().slice(before);
    if (line.test(grown)) return grown;
    if (Date.now() > deadline) throw new Error(`no log line ${line} within ${ms / 1000} s after SIGHUP:\n${grown}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function catalogue(): Promise<any> {
  return (await fetch(`${origin}/v1/lds/_catalog`)).json();
}

async function a2aQuote(query: string): Promise<any> {
  const res = await postJson(`${origin}/v1/a2a`, {
    jsonrpc: '2.0',
    id: 1,
    method: 'message/send',
    params: { message: { kind: 'message', role: 'user', messageId: randomUUID(), parts: [{ kind: 'data', data: { product_id: 'svc-health-eu', query, limit: 3 } }] } },
  });
  assert.is(res.status, 200);
  return res.json();
}

let refusal = '';

test('a build for another origin is refused, naming both origins and the command that builds for this service; buyers keep this service\'s addresses', async () => {
  const r = await runBuildWith(['--src', v2Src, '--out', own.dist, '--store-root', own.store, '--local', OTHER, '--source-date-epoch', '1767225600']);
  assert.is(r.code, 0, r.stderr);
  const log = await hangUpUntil(/new build refused|serving a newly published build/);
  refusal = /"msg":"(new build refused:[^"]*)"/.exec(log)?.[1] ?? '';
  assert.ok(refusal, `the build was refused, not served:\n${log}`);
  assert.match(refusal, `addressed for ${OTHER} (base_url ${OTHER}/v1) but this service serves ${SERVED} (base_url ${SERVED}/v1)`);
  assert.match(refusal, `Build for this service with: npx lds build --local ${SERVED} --out ${resolve(own.dist)} --store-root ${resolve(own.store)}`);
  assert.is(await metric(inst.base, METRICS, 'lds_release_refused_total', { reason: 'base_url' }), 1);

  // Buyers see this service's addresses and version, as before the build.
  const ready = await readyz(inst.base);
  assert.is(ready.status, 200);
  assert.is(ready.body.catalogue_version, v1);
  const cat = await catalogue();
  assert.is(cat.version, v1);
  assert.is(cat.base_url, `${SERVED}/v1`);
  const quote = await postJson(`${origin}/v1/lds/draw`, { product_id: 'svc-health-eu', query: 'covid', limit: 2 });
  const text = await quote.text();
  assert.is(quote.status, 402, text);
  assert.match(text, `${SERVED}/v1/lds/balance/topup`);
  assert.not.match(text, OTHER);
  assert.is((await postJson(`${origin}/v1/lds/draw`, { product_id: NEW_PRODUCT, query: 'covid' })).status, 404, 'the refused build\'s product is not sold');
});

test('the build that command makes is switched to; metrics, MCP and A2A follow it without a restart', async () => {
  assert.ok(refusal, 'the first test named the command');
  // Run the command the refusal named, on the same catalog-src.
  const named = /Build for this service with: npx lds build (.*?); or restart/.exec(refusal)![1]!.split(' ');
  const r = await runBuildWith([...named, '--src', v2Src, '--source-date-epoch', '1767225600']);
  assert.is(r.code, 0, r.stderr);
  // Draw bounds a newer generator publishes: a longer query. The real folder behind dist/.
  const spec = join(own.dist, 'v1/specification');
  const doc = JSON.parse(await readFile(spec, 'utf8'));
  const query = doc.components.schemas.DrawRequest.properties.query;
  assert.ok(query.maxLength < NEW_QUERY_MAX, `the generator's bound ${query.maxLength}`);
  const oldMax = query.maxLength as number;
  query.maxLength = NEW_QUERY_MAX;
  await writeFile(spec, JSON.stringify(doc));
  const long = `covid ${'cases '.repeat(Math.ceil((oldMax + 20) / 6))}`.slice(0, oldMax + 20);

  // Before the switch: MCP advertises the old bound, A2A refuses the longer query, a task is made.
  const before = await mcpClient(`${origin}/mcp`);
  const schemaOf = async (c: Awaited<ReturnType<typeof mcpClient>>) => (await c.listTools()).tools.find((t) => t.name === 'quote_draw')!.inputSchema as any;
  assert.is((await schemaOf(before)).properties.query.maxLength, oldMax);
  await before.close();
  assert.is((await a2aQuote(long)).error?.code, -32602, 'A2A applies the served bound');
  const kept = (await a2aQuote('covid')).result;
  assert.is(kept.status.state, 'completed');

  await hangUpUntil(/serving a newly published build/);
  const cat = await catalogue();
  assert.is.not(cat.version, v1);
  assert.is(cat.base_url, `${SERVED}/v1`);
  assert.ok(cat.products.some((p: any) => p.product_id === NEW_PRODUCT), 'the new product is sold');
  const card = await (await fetch(`${origin}/.well-known/agent-card.json`)).json();
  assert.ok(card.skills.some((s: any) => s.id === NEW_PRODUCT), 'the published agent card names it');

  // Metrics: the new product under its own id.
  const q = await postJson(`${origin}/v1/lds/draw`, { product_id: NEW_PRODUCT, query: 'covid', limit: 2 });
  assert.is(q.status, 402, await q.text());
  assert.is(await metric(inst.base, METRICS, 'lds_quotes_total', { product: NEW_PRODUCT }), 1);
  assert.is(await metric(inst.base, METRICS, 'lds_quotes_total', { product: 'other' }), 0);

  // MCP: the new release's bounds, advertised and applied.
  const after = await mcpClient(`${origin}/mcp`);
  assert.is((await schemaOf(after)).properties.query.maxLength, NEW_QUERY_MAX);
  const mcpQuote = (await after.callTool({ name: 'quote_draw', arguments: { product_id: NEW_PRODUCT, query: long, limit: 2 } })) as any;
  assert.not.ok(mcpQuote.isError, JSON.stringify(mcpQuote.structuredContent));
  assert.is(mcpQuote.structuredContent.product_id, NEW_PRODUCT);
  await after.close();

  // A2A: the new bound, and the task made before the switch is still there.
  const a2a = await a2aQuote(long);
  assert.is(a2a.error, undefined, JSON.stringify(a2a.error));
  assert.is(a2a.result.status.state, 'completed');
  const got = await postJson(`${origin}/v1/a2a`, { jsonrpc: '2.0', id: 2, method: 'tasks/get', params: { id: kept.id } });
  const task = (await got.json()) as any;
  assert.is(task.result?.id, kept.id, JSON.stringify(task));
});

test.run();
