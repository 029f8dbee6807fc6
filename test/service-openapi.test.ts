// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// The OpenAPI document in dist/ is valid OpenAPI 3.1 (checked with a real validator), documents
// every endpoint of spec section 4, and the running service answers every documented operation
// with a documented status and a body matching the documented schema. Published documents are
// served with their _headers (content type, ETag) and answer 304 to a matching If-None-Match.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { join } from 'node:path';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { PROBLEM_TYPES, problemBase } from '../contract/problems.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { parseHeadersFile } from '../payments/http/static.ts';
import { TOPUP_PROBLEMS } from '../payments/topup/handler.ts';
import { REPO } from './helpers/build.ts';
import { buildFixture, postJson, refsByProduct, startTestServer, type Fixture, type TestServer } from './helpers/service-harness.ts';

let fx: Fixture;
let srv: TestServer;
let doc: any;
let refs: string[];

test.before(async () => {
  fx = await buildFixture();
  refs = (await refsByProduct(fx.store)).get('svc-energy-eu')!;
  doc = JSON.parse(readFileSync(join(fx.dist, 'v1/specification'), 'utf8'));
  srv = await startTestServer(fx);
});
test.after(async () => {
  await srv?.close();
});

test('v1/specification passes the OpenAPI 3.1 schema validator', async () => {
  const v = new Validator();
  const res = await v.validate(structuredClone(doc));
  assert.ok(res.valid, JSON.stringify(res.errors, null, 2));
  assert.is(v.version, '3.1');
  assert.equal(doc.servers, [{ url: fx.catalogue.base_url }]);
});

test('documents every endpoint of spec section 4, with security schemes and problem types', () => {
  const want: [string, string][] = [
    ['get', '/lds/_catalog'],
    ['get', '/dcat/catalog/{product_id}'],
    ['post', '/lds/draw'],
    ['post', '/lds/balance/topup'],
    ['get', '/lds/balance'],
    ['get', '/specification'],
  ];
  for (const [m, p] of want) assert.ok(doc.paths[p]?.[m], `${m.toUpperCase()} ${p} documented`);
  assert.is(doc.components.securitySchemes.balanceToken.scheme, 'bearer');
  assert.is(doc.components.securitySchemes.mpp.scheme, 'payment');
  // One table (contract/problems.ts) under the build's docs_url: what the document lists and what the service answers.
  const base = problemBase(fx.catalogue.docs_url);
  assert.is(base, new URL('problems/', fx.catalogue.docs_url).href);
  assert.is(PROBLEM_BASE, base, 'the tests expect the base derived from the served catalogue');
  assert.equal(doc.components.schemas.Problem.properties.type.enum, PROBLEM_TYPES.map((t) => base + t.slug));
  const documented = new Set(doc.components.schemas.Problem.properties.type.enum);
  for (const slug of Object.values(TOPUP_PROBLEMS)) assert.ok(documented.has(PROBLEM_BASE + slug), `top-up problem ${slug} is documented`);
});

test('every problem type is the address of its page: served as HTML by the service, _headers and the nginx include, its Markdown beside it', async () => {
  const base = problemBase(fx.catalogue.docs_url);
  assert.not.match(base, 'lds.example', 'not the placeholder');
  // A refusal's type, as the service answers it, names the page of this build's docs.
  const refused = await postJson(`${srv.base}/lds/draw`, { product_id: 'no-such-product', query: 'water' });
  const p = (await refused.json()) as any;
  assert.is(p.type, `${base}unknown-product`);
  const headers = parseHeadersFile(readFileSync(join(fx.dist, '_headers'), 'utf8'));
  const nginx = readFileSync(join(fx.dist, '_nginx/lds.conf'), 'utf8');
  for (const t of PROBLEM_TYPES) {
    const path = new URL(base + t.slug).pathname; // the type, on the origin that serves dist/
    // Issue 37: the type is a page for people (RFC 9457 3.1.1), its Markdown at the same address + .md.
    const html = await fetch(`${srv.url}${path}`);
    assert.is(html.status, 200, path);
    assert.is(html.headers.get('content-type'), 'text/html; charset=utf-8', path);
    assert.match(await html.text(), `<title>Problem: ${t.slug}</title>`);
    const res = await fetch(`${srv.url}${path}.md`);
    assert.is(res.status, 200, `${path}.md`);
    assert.is(res.headers.get('content-type'), 'text/markdown; charset=utf-8', `${path}.md`);
    const page = await res.text();
    assert.match(page, `# Problem: ${t.slug}`);
    assert.match(page, `HTTP status: **${t.status}**`);
    assert.match(page, '## What it means');
    assert.match(page, '## What to do');
    assert.match(page, t.todo);
    assert.match(page, `\`${base}${t.slug}\``);
    assert.equal(headers.get(path)?.find(([k]) => k === 'Content-Type'), ['Content-Type', 'text/html; charset=utf-8'], `_headers ${path}`);
    assert.match(nginx, `location = ${path} {\n  types { }\n  default_type "text/html; charset=utf-8";`);
    assert.equal(headers.get(`${path}.md`)?.find(([k]) => k === 'Content-Type'), ['Content-Type', 'text/markdown; charset=utf-8'], `_headers ${path}.md`);
  }
  // The problems nginx answers itself (deploy/nginx/lds.conf) are pages of the production build.
  const prodBase = problemBase(JSON.parse(readFileSync(join(REPO, 'catalog-src/catalogue.json'), 'utf8')).addresses.docs_url);
  const edgeTypes = [...readFileSync(join(REPO, 'deploy/nginx/lds.conf'), 'utf8').matchAll(/"type":"([^"]+)"/g)].map((m) => m[1]!);
  assert.is(edgeTypes.length, 3);
  for (const type of edgeTypes) assert.ok(PROBLEM_TYPES.some((t) => prodBase + t.slug === type), `deploy/nginx/lds.conf: ${type} is a documented type under ${prodBase}`);
  // The list of all of them, at the folder's address (a page linking each type; its Markdown at index.md).
  const index = await fetch(`${srv.url}${new URL(base).pathname}`);
  assert.is(index.status, 200);
  assert.is(index.headers.get('content-type'), 'text/html; charset=utf-8');
  const text = await index.text();
  for (const t of PROBLEM_TYPES) assert.match(text, `<a href="${base}${t.slug}">${t.slug}</a>`);
  const markdown = await (await fetch(`${srv.url}${new URL(base).pathname}index.md`)).text();
  for (const t of PROBLEM_TYPES) assert.match(markdown, `[${t.slug}](${base}${t.slug})`);
});

test('every documented operation answers with a documented status and schema', async () => {
  const ajv = new Ajv2020({ strict: false });
  ((addFormatsModule as any).default ?? addFormatsModule)(ajv);
  ajv.addSchema({ $id: 'https://lds.test/spec.json', components: doc.components });
  const check = (schemaRef: unknown, body: unknown, what: string) => {
    const schema = JSON.parse(JSON.stringify(schemaRef).replaceAll('"#/components/', '"https://lds.test/spec.json#/components/'));
    const validate = ajv.compile(schema);
    assert.ok(validate(body), `${what}: ${JSON.stringify(validate.errors)}`);
  };
  const product = fx.catalogue.products[2].product_id;
  const requests: Record<string, () => Promise<Response>> = {
    getCatalogue: () => fetch(`${srv.base}/lds/_catalog`),
    getProductDcat: () => fetch(`${srv.base}/dcat/catalog/${product}`),
    getProductPreview: () => fetch(`${srv.base}/lds/preview/${product}`),
    draw: () => postJson(`${srv.base}/lds/draw`, { product_id: 'svc-energy-eu', units: refs.slice(0, 2) }),
    topUp: () => postJson(`${srv.base}/lds/balance/topup`, { amount: '5.00', currency: 'EUR' }),
    getBalance: () => fetch(`${srv.base}/lds/balance`),
    getSpecification: () => fetch(`${srv.base}/specification`),
    getHealth: () => fetch(`${srv.url}/healthz`),
    getReadiness: () => fetch(`${srv.url}/readyz`),
    getMetrics: () => fetch(`${srv.url}/metrics`), // without the metrics token: the 401 problem
    // Tokens and the admin API: refusals without credentials (the success answers are validated in service-money)
    rotateBalanceToken: () => fetch(`${srv.base}/lds/balance/token`, { method: 'POST' }),
    refundDraw: () => postJson(`${srv.base}/lds/admin/refunds`, { draw_id: 'x', reason: 'x' }, { 'idempotency-key': 'k' }),
    adjustBalance: () => postJson(`${srv.base}/lds/admin/adjustments`, { direction: 'credit', amount: '1.00', reason: 'x' }, { 'idempotency-key': 'k' }),
    refundTopup: () => postJson(`${srv.base}/lds/admin/topup-refunds`, { topup_id: 'x', reason: 'x' }, { 'idempotency-key': 'k' }),
    revokeBalanceToken: () => postJson(`${srv.base}/lds/admin/tokens/revoke`, { token_hash: 'f'.repeat(64) }),
    getReceiptKeys: () => fetch(`${srv.url}/.well-known/jwks.json`),
  };
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue; // e.g. a path's own `servers` (the operator endpoints live at the origin's root)
      const send = requests[op.operationId];
      assert.ok(send, `a request for ${op.operationId}`);
      const res = await send();
      const documented = op.responses[String(res.status)];
      assert.ok(documented, `${method.toUpperCase()} ${path} answered ${res.status}, which is not documented`);
      const type = (res.headers.get('content-type') ?? '').split(';')[0];
      const body = type === 'text/csv' ? await res.text() : await res.json();
      const resolved = documented.$ref ? doc.components.responses[documented.$ref.split('/').pop()] : documented;
      const schema = resolved.content?.[type]?.schema;
      assert.ok(schema, `${op.operationId} ${res.status} ${type} has a documented schema`);
      check(schema, body, `${op.operationId} ${res.status}`);
    }
  }
});

test('every published path is served with its _headers, and a matching If-None-Match is a 304', async () => {
  const listed = parseHeadersFile(readFileSync(join(fx.dist, '_headers'), 'utf8'));
  assert.ok(listed.size > 20);
  const identity = { 'accept-encoding': 'identity' };
  for (const [path, headers] of listed) {
    const res = await fetch(srv.url + path, { headers: identity });
    assert.is(res.status, 200, path);
    await res.arrayBuffer();
    assert.is(res.headers.get('content-encoding'), null, path);
    for (const [k, v] of headers) assert.is(res.headers.get(k), v, `${path} ${k}`);
    const etag = headers.find(([k]) => k === 'ETag')![1];
    const again = await fetch(srv.url + path, { headers: { ...identity, 'if-none-match': etag } });
    assert.is(again.status, 304, path);
    assert.is(again.headers.get('etag'), etag);
    const stale = await fetch(srv.url + path, { headers: { 'if-none-match': '"catalogue-000000000000"' } });
    assert.is(stale.status, 200, path);
    await stale.arrayBuffer();
  }
  // The hosting configuration itself is not published.
  assert.is((await fetch(`${srv.url}/_headers`)).status, 404);
  assert.is((await fetch(`${srv.url}/_nginx/lds.conf`)).status, 404);
});

/** One request without decoding: status, headers and the raw body bytes. */
function rawRequest(url: string, headers: Record<string, string>, method = 'GET'): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}

test('published documents: the br and gz variants of the build by Accept-Encoding, each with its own strong ETag, Vary, and 304', async () => {
  const path = '/v1/lds/_catalog';
  const file = readFileSync(join(fx.dist, 'v1/lds/_catalog'));
  const version = JSON.parse(file.toString('utf8')).version as string;
  const cases: [string, string | undefined, Buffer, string][] = [
    ['br, gzip', 'br', readFileSync(join(fx.dist, 'v1/lds/_catalog.br')), `"${version}br"`],
    ['gzip, deflate', 'gzip', readFileSync(join(fx.dist, 'v1/lds/_catalog.gz')), `"${version}gzip"`],
    ['gzip;q=1, br;q=0.5', 'gzip', readFileSync(join(fx.dist, 'v1/lds/_catalog.gz')), `"${version}gzip"`],
    ['br;q=0, gzip;q=0', undefined, file, `"${version}"`],
    ['deflate', undefined, file, `"${version}"`],
    ['*', 'br', readFileSync(join(fx.dist, 'v1/lds/_catalog.br')), `"${version}br"`],
    ['', undefined, file, `"${version}"`],
  ];
  for (const [ae, encoding, bytes, etag] of cases) {
    const res = await rawRequest(srv.url + path, ae ? { 'accept-encoding': ae } : {});
    assert.is(res.status, 200, ae);
    assert.is(res.headers['content-encoding'], encoding, `Accept-Encoding: ${ae}`);
    assert.is(res.headers.etag, etag, `Accept-Encoding: ${ae}`);
    assert.is(res.headers.vary, 'Accept-Encoding', `Accept-Encoding: ${ae}`);
    assert.is(res.headers['content-type'], 'application/json; charset=utf-8');
    assert.ok(res.body.equals(bytes), `Accept-Encoding: ${ae}: the build's bytes`);
    assert.is(Number(res.headers['content-length']), bytes.length);
    // HEAD: the same headers, no body
    const head = await rawRequest(srv.url + path, ae ? { 'accept-encoding': ae } : {}, 'HEAD');
    assert.is(head.headers.etag, etag);
    assert.is(head.body.length, 0);
  }
  assert.ok(brotliDecompressSync(readFileSync(join(fx.dist, 'v1/lds/_catalog.br'))).equals(file));
  assert.ok(gunzipSync(readFileSync(join(fx.dist, 'v1/lds/_catalog.gz'))).equals(file));
  // Any representation's tag revalidates: 304 with the tag this request would get, no body.
  for (const tag of [`"${version}"`, `"${version}br"`, `"${version}gzip"`]) {
    const res = await rawRequest(srv.url + path, { 'accept-encoding': 'gzip', 'if-none-match': tag });
    assert.is(res.status, 304, tag);
    assert.is(res.headers.etag, `"${version}gzip"`);
    assert.is(res.headers.vary, 'Accept-Encoding');
    assert.is(res.body.length, 0);
  }
  const stale = await rawRequest(srv.url + path, { 'accept-encoding': 'br', 'if-none-match': '"catalogue-000000000000br"' });
  assert.is(stale.status, 200);
  // the variants are not published at URLs of their own
  assert.is((await rawRequest(`${srv.url}${path}.gz`, {})).status, 404);
});

test.run();
