// @tier: quick  (npm run test:quick: in-process)
// Issue 2: .well-known/agent-card.json is a valid A2A 0.3.0 AgentCard (official JSON Schema,
// draft-07, #/definitions/AgentCard) with one skill per product in spec 2.9 order.
// Reads test/conformance/ (in the repository; origins and licences in its README).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { a2aUrl } from '../generator/addresses.ts';
import { agentCard, emitAgentCard } from '../generator/emit/agent-card.ts';
import { EMITTERS } from '../generator/emit/index.ts';
import { JSON_TYPE, type EmitContext } from '../generator/emit/types.ts';
import { buildContext, readConformanceJson } from './helpers/conformance.ts';
import { SPEC_2_7, SPEC_2_9_ORDER } from './helpers/spec-table.ts';

const ajv = new Ajv.default({ allErrors: true, strict: false });
addFormats.default(ajv);
ajv.addSchema(readConformanceJson('a2a-0.3.0.schema.json'), 'a2a');
const validate = ajv.getSchema('a2a#/definitions/AgentCard')!;
const errors = () => ajv.errorsText(validate.errors, { separator: '\n  ' });

let ctx: EmitContext;
let card: any;

test.before(async () => {
  ctx = await buildContext();
  const files = emitAgentCard(ctx);
  assert.is(files.length, 1);
  assert.is(files[0].path, '.well-known/agent-card.json');
  assert.is(files[0].contentType, JSON_TYPE);
  assert.is(files[0].cache, 'catalogue');
  card = JSON.parse(files[0].body);
});

test('registered in EMITTERS', () => {
  assert.ok(EMITTERS.includes(emitAgentCard));
});

test('validates against the A2A 0.3.0 schema (#/definitions/AgentCard)', () => {
  assert.ok(validate(card), `agent card is not a valid AgentCard:\n  ${errors()}`);
});

test('the validator can fail: a card with a wrong type and a missing required field is rejected', () => {
  const broken = structuredClone(card);
  delete broken.version;
  broken.capabilities.streaming = 'no';
  assert.not.ok(validate(broken), 'a broken card passed the schema');
  const failed = (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`).join('; ');
  assert.match(failed, /version/);
  assert.match(failed, /streaming/);
});

test('spec 2.9 header: protocolVersion, version, documentationUrl, provider, capabilities, modes', () => {
  assert.is(card.protocolVersion, '0.3.0');
  assert.match(card.version, /^catalogue-[0-9a-f]{12}$/);
  assert.is(card.version, ctx.version);
  assert.is(card.version, ctx.catalogue.version);
  assert.is(card.documentationUrl, ctx.addresses.docs_url);
  assert.type(card.name, 'string');
  assert.is(card.provider.organization, ctx.cat.settings.publisher.name);
  assert.is(card.provider.url, ctx.addresses.publisher_url);
  assert.is(card.capabilities.streaming, false);
  assert.is(card.capabilities.pushNotifications, false);
  assert.is(card.capabilities.stateTransitionHistory, false);
  assert.equal(card.defaultInputModes, ['application/json']);
  assert.equal(card.defaultOutputModes, ['application/json']);
});

test('description names the products, the 402 price answer and the prepaid top-up', () => {
  assert.match(card.description, /products/);
  assert.match(card.description, /402/);
  assert.match(card.description, /price/);
  assert.match(card.description, /prepaid balance/);
  assert.match(card.description, /top/i);
});

test('url and preferredTransport name the real A2A JSON-RPC endpoint', () => {
  assert.is(card.url, a2aUrl(ctx.addresses));
  assert.is(card.preferredTransport, 'JSONRPC');
  assert.equal(card.additionalInterfaces, [{ url: a2aUrl(ctx.addresses), transport: 'JSONRPC' }]);
});

test('the balance token is described as an HTTP bearer scheme, and quoting does not require it', () => {
  const schemes = Object.values(card.securitySchemes ?? {}) as any[];
  assert.ok(schemes.some((s) => s.type === 'http' && /^bearer$/i.test(s.scheme)), 'no http bearer scheme');
  // No card-wide or per-skill requirement: anyone may ask for a quote.
  assert.is(card.security, undefined);
  for (const s of card.skills) assert.is(s.security, undefined, s.id);
});

test('skills: exactly the 14 products, in spec 2.9 order, with spec 2.7 titles', () => {
  assert.equal(card.skills.map((s: any) => s.id), SPEC_2_9_ORDER.map((slug) => `svc-${slug}-eu`));
  const titles = new Map(SPEC_2_7.map((p) => [p.id, p.title]));
  for (const s of card.skills) assert.is(s.name, titles.get(s.id), s.id);
});

test('every skill: description with price and how to ask, tags, examples, JSON modes', () => {
  const tags = new Map(SPEC_2_7.map((p) => [p.id, p.tag]));
  for (const s of card.skills) {
    const p = ctx.catalogue.products.find((x) => x.product_id === s.id)!;
    assert.ok(s.description.includes(`${p.pricing.draw_unit_price} EUR per unit`), `${s.id}: price per unit`);
    for (const word of ['product_id', 'query', 'limit', 'units', 'quote_id', 'Bearer']) assert.ok(s.description.includes(word), `${s.id}: mentions ${word}`);
    assert.ok(s.tags.includes(tags.get(s.id)), `${s.id}: tag ${tags.get(s.id)}`);
    assert.ok(s.tags.includes(p.slug), `${s.id}: slug`);
    for (const k of p.keywords) assert.ok(s.tags.includes(k), `${s.id}: keyword ${k}`);
    assert.ok(Array.isArray(s.examples) && s.examples.length > 0, `${s.id}: examples`);
    assert.equal(s.inputModes, ['application/json']);
    assert.equal(s.outputModes, ['application/json']);
  }
});

test('deterministic, and built from the context (not from fixed values)', async () => {
  assert.is(emitAgentCard(ctx)[0].body, emitAgentCard(ctx)[0].body);
  const local = await buildContext({ local: true, store: 'fake' });
  const other = agentCard(local);
  assert.ok(validate(other), errors());
  assert.is(other.url, 'http://127.0.0.1:8080/v1/a2a');
  assert.is(other.version, local.version);
  assert.is.not(other.version, card.version);
});

test.run();
