// Issue 49, done when: the shipped catalogue (catalog-src as committed, all 1,504 EUR-Lex-Triples
// acts; not the suites' subset) built once per machine (test/helpers/fixture-cache.ts) and served:
// 14 products with real units, the 12 culture acts in cultural heritage, a 402 quote for "cultural
// objects" paid from a balance returning units that cite CELEX 32014L0060, and the README's buyer
// example (the curl draw and the `npx lds buy` line) answering as its comments promise, with every
// product's example query finding its real content.
import { execFileSync } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile } from 'node:fs/promises';
import { openUnitStore } from '../payments/store/unit-store.ts';
import { join } from 'node:path';
import { cliAsync, REPO } from './helpers/build.ts';
import { realCatalogue } from './helpers/real-catalogue.ts';
import { documentationFiles, readDoc } from './helpers/docs.ts';
import { bearer, postJson, startTestServer, topUp, type Fixture, type TestServer } from './helpers/service-harness.ts';

const CULTURE = ['32006D0515', '32009R0116', '32011D1194', '32012H0417', '32012L0028', '32014D0445', '32014L0026', '32014L0060', '32019L0790', '32019R0880', '32021D2316', '32021R0818'];

let fx: Fixture;
let srv: TestServer;
let heritageUnknown: string[];
test.before(async () => {
  fx = await realCatalogue();
  // the first paragraph of each culture act, looked up in cultural heritage (before the service holds the store's lock)
  const store = await openUnitStore(fx.store);
  try {
    heritageUnknown = (await store.getUnits('svc-cultural-heritage-eu', CULTURE.map((c) => `eu.eurlex:${c}/1`))).unknown;
  } finally {
    await store.close();
  }
  srv = await startTestServer(fx);
});
test.after(async () => {
  await srv?.close();
});

test('14 of 14 products sell real units; cultural heritage holds the 12 culture acts', async () => {
  const products = fx.catalogue.products as { product_id: string; live_unit_count: number }[];
  assert.is(products.length, 14);
  for (const p of products) assert.ok(p.live_unit_count > 0, `${p.product_id}: ${p.live_unit_count} units`);
  assert.equal(heritageUnknown, [], 'every culture act sells in cultural heritage');
  const eurlex = (fx.catalogue.sources as { source: string; units: number }[]).find((s) => s.source === 'eu.eurlex')!;
  // 1,370,714 lines: less page furniture, titles, labels joined to their paragraphs and the 53 acts no product's rule selects
  assert.ok(eurlex.units > 900_000, `${eurlex.units} EUR-Lex units`);
});

test('done when: a 402 quote for "cultural objects", paid from a balance, returns units citing CELEX 32014L0060', async () => {
  const draw = { product_id: 'svc-cultural-heritage-eu', query: 'cultural objects', limit: 5 };
  const q0 = await postJson(`${srv.base}/lds/draw`, draw);
  assert.is(q0.status, 402);
  const token = await topUp(srv.base, '5.00');
  const q = (await (await postJson(`${srv.base}/lds/draw`, draw, bearer(token))).json()) as any;
  assert.ok(q.quote_id, JSON.stringify(q));
  const paid = await postJson(`${srv.base}/lds/draw`, { ...draw, quote_id: q.quote_id }, bearer(token));
  assert.is(paid.status, 200);
  const body = (await paid.json()) as any;
  assert.ok(body.units.some((u: any) => u.citation.celex === '32014L0060' && /^CELEX 32014L0060, /.test(u.citation.label) && u.citation.eli === 'http://data.europa.eu/eli/dir/2014/60/oj'), JSON.stringify(body.units.map((u: any) => u.citation.label)));
});

test("the README's buyer example answers as its comments say: the curl draw is a 402 with a quote, `npx lds buy` pays and verifies", async () => {
  const readme = await readFile(join(REPO, 'README.md'), 'utf8');
  const m = /-d '(\{"product_id":[^']+\})'\s+# 402 and a quote/.exec(readme);
  assert.ok(m, 'the README draws with curl');
  const res = await postJson(`${srv.base}/lds/draw`, JSON.parse(m![1]));
  assert.is(res.status, 402);
  const quote = (await res.json()) as any;
  assert.ok(quote.quote_id && quote.breakdown.length > 0, JSON.stringify(quote));
  const line = /npx lds buy ([^\n\\]+)\\\n\s+([^#\n]+)#/.exec(readme);
  assert.ok(line, 'the README buys with npx lds buy');
  // The README's files live in the buyer's home (~/.config/lds, $XDG_STATE_HOME): a home of the test's own.
  const home = await mkdtemp(join(fx.root, 'buyer-'));
  const env = { HOME: home, XDG_STATE_HOME: '', LDS_BALANCE_TOKEN: '' };
  const args = `${line![1]} ${line![2]}`.trim().split(/\s+/).map((a) => a.replace(/^~\//, `${home}/`));
  const buy = await cliAsync(['buy', '--base-url', srv.base, ...args], { env, timeoutMs: 300_000 });
  assert.is(buy.code, 0, buy.stdout + buy.stderr);
  const verifyLine = /npx lds receipts verify (\S+)/.exec(readme);
  assert.ok(verifyLine, 'the README verifies the journal');
  const journal = execFileSync('sh', ['-c', `printf %s ${verifyLine![1]}`], { env: { ...process.env, ...env }, encoding: 'utf8' });
  assert.ok(journal.startsWith(home), `the journal the README verifies is in the buyer's home: ${journal}`);
  const verify = await cliAsync(['receipts', 'verify', journal], { env, timeoutMs: 300_000 });
  assert.is(verify.code, 0, verify.stdout + verify.stderr);
});

test('every draw by query in the README and the guides finds units in the shipped catalogue (a 402 with a quote)', async () => {
  const draws: { product_id: string; query: string; where: string }[] = [];
  for (const doc of documentationFiles().filter((f) => !f.startsWith('docs/benchmarks/'))) {
    const text = readDoc(doc);
    for (const m of text.matchAll(/"product_id":"([a-z0-9-]+)","query":"([^"]+)"/g)) draws.push({ product_id: m[1]!, query: m[2]!, where: doc });
    for (const m of text.matchAll(/--product (svc-[a-z0-9-]+) --query (?:'([^']+)'|([^\s'<]+))/g)) draws.push({ product_id: m[1]!, query: m[2] ?? m[3]!, where: doc });
  }
  assert.ok(draws.length >= 3, JSON.stringify(draws));
  for (const d of draws) {
    const res = await postJson(`${srv.base}/lds/draw`, { product_id: d.product_id, query: d.query, limit: 3 });
    const body = await res.text();
    assert.is(res.status, 402, `${d.where}: ${d.product_id} "${d.query}": ${body}`);
    assert.ok(JSON.parse(body).quote_id, body);
  }
});

test("every product's example query finds its real content", async () => {
  for (const p of fx.catalogue.products as { product_id: string; example_query: { query: string } }[]) {
    const res = await postJson(`${srv.base}/lds/draw`, { product_id: p.product_id, query: p.example_query.query, limit: 3 });
    const body = await res.text();
    assert.is(res.status, 402, `${p.product_id} "${p.example_query.query}": ${res.status} ${body}`);
    assert.ok(JSON.parse(body).quote_id, body);
  }
});

test.run();
