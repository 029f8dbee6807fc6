// @ledger-backends: level  (the catalog protocol never touches the ledger: one backend is enough)
// Issue 51: the Dataspace Protocol catalog (DSP 2025-1, catalog protocol, HTTPS binding) through the
// real service over real HTTP, every message checked both ways against the DSP JSON schemas of
// eclipse-dataspace-protocol-base/DataspaceProtocol @ 2025-1-err1 (test/conformance/dsp/, pinned in
// its README): the requests the test sends and the answers. And the negotiated address of the whole
// DCAT-AP catalogue (303 to the file Accept prefers).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv2019 from 'ajv/dist/2019.js';
import { buildFixture, postJson, startTestServer, type Fixture, type TestServer } from './helpers/service-harness.ts';
import { CONFORMANCE } from './helpers/conformance.ts';
import { REPO } from './helpers/build.ts';

const run = promisify(execFile);
const DSP = 'https://w3id.org/dspace/2025/1/context.jsonld';
const SCHEMAS = ['common/context-schema.json', 'common/protocol-version-schema.json', 'negotiation/contract-schema.json', 'catalog/dataset-schema.json', 'catalog/catalog-schema.json', 'catalog/catalog-request-message-schema.json', 'catalog/catalog-error-schema.json'];
const ajv = new (Ajv2019 as any).default({ allErrors: true, strict: false });
for (const s of SCHEMAS) ajv.addSchema(JSON.parse(readFileSync(join(CONFORMANCE, 'dsp', s), 'utf8')));
const schema = (name: string) => `https://w3id.org/dspace/2025/1/${name}`;
function valid(name: string, doc: unknown): void {
  const v = ajv.getSchema(schema(name))!;
  assert.ok(v(doc), `${name}: ${ajv.errorsText(v.errors, { separator: '\n  ' })}\n${JSON.stringify(doc).slice(0, 400)}`);
}

let fx: Fixture;
let srv: TestServer;
let origin: string;
const request = { '@context': [DSP], '@type': 'CatalogRequestMessage', filter: [] };

test.before(async () => {
  fx = await buildFixture();
  srv = await startTestServer(fx);
  origin = new URL(srv.base).origin;
});
test.after(async () => {
  await srv?.close();
});

test('the schemas can fail: a catalog without participantId, a dataset without distribution, a version without binding', () => {
  const bad = [
    ['catalog/catalog-schema.json', { '@context': [DSP], '@id': 'urn:x', '@type': 'Catalog' }],
    ['catalog/dataset-schema.json', { '@context': [DSP], '@id': 'urn:x', '@type': 'Dataset', hasPolicy: [{ '@id': 'urn:o', '@type': 'Offer', permission: [{ action: 'use' }] }] }],
    ['common/protocol-version-schema.json', { protocolVersions: [{ version: '2025-1', path: '/v1/dsp' }] }],
    ['catalog/catalog-request-message-schema.json', { '@context': {}, '@type': 'CatalogRequestMessage' }],
  ] as const;
  for (const [name, doc] of bad) assert.not.ok(ajv.getSchema(schema(name))!(doc), `${name} accepted a broken message`);
  valid('catalog/catalog-request-message-schema.json', request);
});

test('/.well-known/dspace-version: 2025-1, HTTPS binding, the path of the catalog endpoints; valid', async () => {
  const res = await fetch(`${origin}/.well-known/dspace-version`);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^application\/json/);
  const body = await res.json();
  valid('common/protocol-version-schema.json', body);
  assert.equal(body.protocolVersions, [{ version: '2025-1', path: '/v1/dsp', binding: 'HTTPS' }]);
});

test('POST /v1/dsp/catalog/request: the catalog, every product a Dataset with an Offer stating the EUR price per unit and how to buy; valid', async () => {
  const res = await postJson(`${srv.base}/dsp/catalog/request`, request);
  assert.is(res.status, 200);
  assert.match(res.headers.get('content-type')!, /^application\/json/);
  const cat = await res.json();
  valid('catalog/catalog-schema.json', cat);
  assert.equal(cat['@context'], [DSP]);
  assert.is(cat.participantId, `${fx.catalogue.publisher_url}#org`);
  assert.is(cat.dataset.length, fx.catalogue.products.length);
  for (const p of fx.catalogue.products) {
    const d = cat.dataset.find((x: any) => x['@id'] === p.dcat_url);
    assert.ok(d, `${p.product_id} is a dataset`);
    valid('catalog/dataset-schema.json', { '@context': [DSP], ...d });
    assert.ok(d.hasPolicy.length >= 1);
    const offer = d.hasPolicy[0];
    assert.is(offer['@type'], 'Offer');
    const c = offer.permission[0].duty[0].constraint[0];
    assert.equal([c.leftOperand, c.operator, c.rightOperand['@value'], c['odrl:unit']['@id']], ['odrl:payAmount', 'eq', p.pricing.draw_unit_price, 'http://publications.europa.eu/resource/authority/currency/EUR']);
    for (const how of [`${fx.catalogue.base_url}/lds/draw`, fx.catalogue.mcp_url, `${fx.catalogue.base_url}/a2a`]) {
      assert.ok(offer['dct:description'].includes(how), `${p.product_id}: the offer says how to buy (${how})`);
      assert.ok(offer['dct:references'].some((r: any) => r['@id'] === how));
    }
    assert.ok(offer['dct:description'].includes('402'));
    for (const dist of d.distribution) assert.is(dist.accessService, cat.service[0]['@id']);
  }
  assert.is(cat.service[0].endpointURL, `${fx.catalogue.base_url}/lds/draw`);
});

test('GET /v1/dsp/catalog/datasets/{id}: by product id and by the URL-encoded @id; the same dataset; valid', async () => {
  const p = fx.catalogue.products[0];
  const byPid = await fetch(`${srv.base}/dsp/catalog/datasets/${p.product_id}`);
  assert.is(byPid.status, 200);
  const d = await byPid.json();
  valid('catalog/dataset-schema.json', d);
  const byIri = await (await fetch(`${srv.base}/dsp/catalog/datasets/${encodeURIComponent(p.dcat_url)}`)).json();
  assert.equal(byIri, d);
  assert.is(d['@id'], p.dcat_url);
});

test('refusals are CatalogError messages (application/json, valid), 4xx, never 5xx', async () => {
  const cases: [string, () => Promise<Response>, number, string | null][] = [
    ['not JSON', () => fetch(`${srv.base}/dsp/catalog/request`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"@type":' }), 400, '(body)'],
    ['wrong media type', () => fetch(`${srv.base}/dsp/catalog/request`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: '{}' }), 415, 'Content-Type'],
    ['not an object', () => postJson(`${srv.base}/dsp/catalog/request`, [request]), 400, '(body)'],
    ['no DSP context', () => postJson(`${srv.base}/dsp/catalog/request`, { '@type': 'CatalogRequestMessage' }), 400, '@context'],
    ['another message type', () => postJson(`${srv.base}/dsp/catalog/request`, { '@context': [DSP], '@type': 'DatasetRequestMessage', dataset: 'x' }), 400, '@type'],
    ['a filter (unsupported: 400 as DSP says)', () => postJson(`${srv.base}/dsp/catalog/request`, { ...request, filter: [{ q: 'health' }] }), 400, 'filter'],
    ['too large', () => postJson(`${srv.base}/dsp/catalog/request`, { ...request, pad: 'x'.repeat(20_000) }), 413, null],
    ['GET of the request endpoint', () => fetch(`${srv.base}/dsp/catalog/request`), 405, null],
    ['unknown dataset', () => fetch(`${srv.base}/dsp/catalog/datasets/svc-nothing-eu`), 404, 'id'],
    ['bad percent-encoding', () => fetch(`${srv.base}/dsp/catalog/datasets/%E0%A4%A`), 400, 'id'],
    ['unknown catalog path', () => fetch(`${srv.base}/dsp/catalog/other`), 404, null],
  ];
  for (const [what, send, status, field] of cases) {
    const res = await send();
    assert.is(res.status, status, what);
    assert.match(res.headers.get('content-type')!, /^application\/json/, what);
    const body = await res.json();
    valid('catalog/catalog-error-schema.json', body);
    assert.is(body['@type'], 'CatalogError', what);
    assert.is(body.status, status, what);
    assert.ok(body.reason[0].length > 10, what);
    if (field) assert.is(body.field, field, what);
  }
});

test('GET /v1/dcat/catalog: 303 to the serialisation Accept prefers, Vary: Accept; each file with its media type; 406 for none', async () => {
  for (const [accept, suffix, type] of [
    [undefined, '.jsonld', 'application/ld+json'],
    ['text/turtle', '.ttl', 'text/turtle'],
    ['application/rdf+xml;q=0.9, application/ld+json;q=0.5', '.rdf', 'application/rdf+xml'],
  ] as const) {
    const res = await fetch(`${srv.base}/dcat/catalog`, { redirect: 'manual', headers: accept ? { accept } : {} });
    assert.is(res.status, 303, String(accept));
    assert.is(res.headers.get('location'), `/v1/dcat/catalog${suffix}`);
    assert.is(res.headers.get('vary'), 'Accept');
    const file = await fetch(`${origin}/v1/dcat/catalog${suffix}`);
    assert.is(file.status, 200);
    assert.is(file.headers.get('content-type'), `${type}; charset=utf-8`);
    assert.ok((await file.text()).includes(fx.catalogue.products[0].dcat_url));
  }
  const none = await fetch(`${srv.base}/dcat/catalog`, { redirect: 'manual', headers: { accept: 'text/html' } });
  assert.is(none.status, 406);
  assert.is((await none.json()).field, 'Accept');
});

test('docs/dataspaces.md: its curl commands run as written against the service (origin replaced), every answer valid', async () => {
  const guide = readFileSync(join(REPO, 'docs', 'dataspaces.md'), 'utf8');
  const block = /```sh\n([\s\S]*?)```/.exec(guide)![1]!;
  const commands = block.replace(/\\\n\s*/g, '').split('\n').filter((l) => l.startsWith('curl '));
  assert.is(commands.length, 3);
  const schemas = ['common/protocol-version-schema.json', 'catalog/catalog-schema.json', 'catalog/dataset-schema.json'];
  for (const [i, command] of commands.entries()) {
    assert.ok(command.includes('http://127.0.0.1:8080/'), command);
    // Asynchronously: the service answers from this very process.
    const r = await run('bash', ['-c', command.replaceAll('http://127.0.0.1:8080', origin)], { encoding: 'utf8', timeout: 30_000 });
    valid(schemas[i]!, JSON.parse(r.stdout));
  }
  // The guide's claims about the answers: the version entry as printed, the offer's parts.
  assert.ok(guide.includes(JSON.stringify((await (await fetch(`${origin}/.well-known/dspace-version`)).json()))), 'the version metadata as the guide prints it');
  for (const claim of ['odrl:payAmount', 'odrl:compensate', '`/mcp`', '`/v1/a2a`', 'POST /v1/lds/draw', '16 KiB']) assert.ok(guide.includes(claim), claim);
});

test('rate limited like every API route (per client address), with an Authorization header ignored', async () => {
  // A LevelDB opens in one process only: the suite's server stops first (this is the last test).
  await srv.close();
  srv = undefined as unknown as TestServer;
  const limited = await startTestServer(fx, { env: { LDS_RATE_LIMIT_RPS: '1', LDS_RATE_LIMIT_BURST: '2' } });
  try {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await postJson(`${limited.base}/dsp/catalog/request`, request, { authorization: 'Bearer anything' })).status);
    assert.is(statuses[0], 200, 'no authorization needed; one sent is ignored');
    assert.ok(statuses.includes(429), `statuses: ${statuses}`);
  } finally {
    await limited.close();
  }
});

test.run();
