// @tier: quick  (npm run test:quick: in-process)
// Issue 2: .well-known/api-catalog and .well-known/svc-catalog.json are one RFC 9727 API catalog
// (RFC 9264 linkset) naming the API, its OpenAPI description, docs, catalogue, agent card, MCP
// endpoint, licence and the 14 per-product DCAT descriptions.
// Reads test/conformance/ (in the repository; origins and licences in its README).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import Ajv from 'ajv';
import { emitAgentCard } from '../generator/emit/agent-card.ts';
import { EMITTERS } from '../generator/emit/index.ts';
import { emitLinkset } from '../generator/emit/linkset.ts';
import { LINKSET_TYPE, type EmitContext } from '../generator/emit/types.ts';
import { buildContext, readConformanceJson } from './helpers/conformance.ts';
import { SPEC_2_7 } from './helpers/spec-table.ts';

const ajv = new Ajv.default({ allErrors: true, strict: false });
const validate = ajv.compile(readConformanceJson('rfc9727/linkset.schema.json'));
const errors = () => ajv.errorsText(validate.errors, { separator: '\n  ' });

/** Every link in the linkset as [anchor, rel, target]. */
const links = (doc: any): [string, string, any][] =>
  doc.linkset.flatMap((c: any) => Object.entries(c).filter(([k]) => k !== 'anchor').flatMap(([rel, targets]) => (targets as any[]).map((t) => [c.anchor, rel, t] as [string, string, any])));

for (const local of [false, true]) {
  let ctx: EmitContext;
  let doc: any;
  const label = local ? 'local addresses' : 'production addresses';

  test(`${label}: both well-known paths, same body, application/linkset+json`, async () => {
    ctx = await buildContext({ local, store: local ? 'fake' : 'empty' });
    assert.ok(EMITTERS.includes(emitLinkset));
    const files = emitLinkset(ctx);
    assert.equal(files.map((f) => f.path).sort(), ['.well-known/api-catalog', '.well-known/svc-catalog.json']);
    for (const f of files) assert.is(f.contentType, LINKSET_TYPE);
    assert.is(files[0].body, files[1].body);
    doc = JSON.parse(files[0].body);
  });

  test(`${label}: validates against the RFC 9264 linkset schema`, () => {
    assert.ok(validate(doc), `linkset invalid:\n  ${errors()}`);
  });

  test(`${label}: names the API, OpenAPI, docs, catalogue, agent card, MCP, licence`, () => {
    const a = ctx.addresses;
    const all = links(doc);
    const has = (rel: string, href: string) => all.some(([, r, t]) => r === rel && t.href === href);
    assert.ok(all.some(([, , t]) => t.href === a.base_url), 'API');
    assert.ok(has('service-desc', `${a.base_url}/specification`), 'OpenAPI as service-desc');
    const doc_ = all.find(([, r, t]) => r === 'service-doc' && t.href === a.docs_url);
    assert.ok(doc_, 'docs as service-doc');
    // Issue 37: docs_url is the documentation's HTML page; its Markdown beside it is a service-doc too.
    assert.is(doc_![2].type, 'text/html');
    assert.ok(all.some(([, r, t]) => r === 'service-doc' && t.type === 'text/markdown' && t.href === new URL('index.md', a.docs_url).href), 'the Markdown as service-doc');
    assert.ok(has('service-meta', `${a.base_url}/lds/_catalog`), 'catalogue as service-meta');
    const cardPath = emitAgentCard(ctx)[0].path;
    assert.ok(has('service-meta', `${new URL(a.base_url).origin}/${cardPath}`), 'agent card as service-meta, at the path the card is emitted to');
    assert.ok(all.some(([, , t]) => t.href === a.mcp_url), 'MCP endpoint');
    const licence = ctx.cat.licences.get(ctx.cat.settings.licence)!;
    assert.ok(all.some(([, r, t]) => r === 'license' && [licence.deed_url, licence.iri, licence.legal_code_url].includes(t.href)), 'licence');
  });

  test(`${label}: names all 14 DCAT descriptions (describedby, JSON-LD)`, () => {
    // Issue 51: the whole catalogue's three files come first; the per-product descriptions carry product_id.
    const described = links(doc).filter(([, r, t]) => r === 'describedby' && t.product_id).map(([, , t]) => t);
    assert.equal(described.map((t) => t.href).sort(), SPEC_2_7.map((p) => `${ctx.addresses.base_url}/dcat/catalog/${p.id}`).sort());
    for (const t of described) assert.is(t.type, 'application/ld+json');
    assert.equal(described.map((t) => t.href).sort(), ctx.catalogue.products.map((p) => p.dcat_url).sort());
  });
}

test('issue 51: the whole DCAT-AP catalogue (one link per serialisation) and the DSP version metadata are linked', async () => {
  const ctx = await buildContext();
  const doc = JSON.parse(emitLinkset(ctx)[0].body);
  const all = links(doc);
  const base = `${ctx.addresses.base_url}/dcat/catalog`;
  const whole = all.filter(([, r, t]) => r === 'describedby' && !t.product_id).map(([, , t]) => [t.href, t.type]);
  assert.equal(whole, [[`${base}.jsonld`, 'application/ld+json'], [`${base}.ttl`, 'text/turtle'], [`${base}.rdf`, 'application/rdf+xml']]);
  assert.ok(all.some(([, r, t]) => r === 'service-meta' && t.href === `${new URL(ctx.addresses.base_url).origin}/.well-known/dspace-version`), 'DSP version metadata');
});

test('the schema accepts the shipped example and rejects a broken linkset', () => {
  assert.ok(validate(readConformanceJson('rfc9727/svc-catalog.example.json')), errors());
  assert.not.ok(validate({ linkset: [{ anchor: 'https://x.example/', item: [{ title: 'no href' }] }] }));
  assert.not.ok(validate({ linkset: [{ anchor: 'https://x.example/', item: { href: 'https://x.example/a' } }] }));
});

test.run();
