// Unit store search: relevant units rank first, the ranking equals a brute-force BM25 over the
// fixture texts, limits hold, and identical store + query give identical results.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { cp, open, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Level } from 'level';
import { KEY, STORE_FILES, tokenize, type TermHeader } from '../contract/store-format.ts';
import { buildUnitStore } from '../generator/store/build-store.ts';
import type { CatalogSrc } from '../generator/model.ts';
import { openUnitStore } from '../payments/store/unit-store.ts';
import { tempDir } from './helpers/build.ts';
import { BUILT_AT, catalog, scanStore } from './helpers/store-fixtures.ts';

let cat: CatalogSrc;
let root: string;
let store: Awaited<ReturnType<typeof openUnitStore>>;
/** Every stored unit with its products, read straight from the store (no reader code). */
let scanned: { ref: string; kind: string; rows: { lang: string; kind?: string; text: string }[]; products: string[] }[];

test.before(async () => {
  cat = await catalog();
  root = await tempDir('store-search');
  const built = await buildUnitStore(cat, { storeRoot: root, builtAt: BUILT_AT, skipBadRecords: false });
  const scan = await scanStore(join(root, built.store_version!));
  scanned = scan.units.map((u, i) => ({ ...(u as any), products: scan.products[i] }));
  store = await openUnitStore(root);
});
test.after(async () => store.close());

const refs = async (pid: string, q: string, limit = 10) => (await store.search(pid, q, limit)).map((u) => u.ref);

test('known queries: the relevant unit ranks first', async () => {
  const fire = await refs('svc-green-deal-eu', 'reaction to fire classes wood flooring panelling');
  assert.match(fire[0], /^eu\.eurlex:32006D0213\//);
  assert.ok(fire.slice(0, 3).every((r) => r.startsWith('eu.eurlex:32006D0213/')), fire.join());
  assert.is((await refs('svc-agriculture-eu', 'aid to milk producers in Portugal'))[0], 'eu.eurlex:31993R1663/15');
  // Finlex (Finnish text): the farm energy investment section
  assert.is((await refs('svc-language-eu', 'biokaasuntuotantoon energiainvestoinnit'))[0], 'fi.finlex:/akn/fi/act/statute/2026/3#sec_16');
  // ECDC records: location, indicator and week
  assert.is((await refs('svc-health-eu', 'Austria deaths 2023-31'))[0], 'global.ecdc:AT/deaths/2023-31');
  // a product only sees its own units: the fire decision is not in agriculture
  assert.not.ok((await refs('svc-agriculture-eu', 'reaction to fire wood flooring', 50)).some((r) => r.startsWith('eu.eurlex:32006D0213/')));
});

test('tokenizer: hyphenated and alphanumeric terms give their parts and the whole; case and accents fold', () => {
  assert.equal(tokenize('COVID-19'), ['covid', '19', 'covid-19']);
  assert.equal(tokenize('TESSy COVID-19'), ['tessy', 'covid', '19', 'covid-19']);
  assert.equal(tokenize('Austria deaths 2023-31'), ['austria', 'deaths', '2023', '31', '2023-31']);
  assert.equal(tokenize('PM2.5 and PM10'), ['pm2', 'pm2.5', 'pm10']);
  assert.equal(tokenize('Köln Turiner Straße'), ['koln', 'turiner', 'strasse']);
  assert.equal(tokenize('ÉCOLE, Ærø, Łódź, päätös'), ['ecole', 'aero', 'lodz', 'paatos']);
  assert.equal(tokenize('ＣＯＶＩＤ－１９'), ['covid', '19', 'covid-19'], 'full-width forms fold too');
  assert.equal(tokenize('state-of-the-art e-mail'), ['state', 'art', 'state-of-the-art', 'mail', 'e-mail'], 'stop words and 1-letter parts drop, the compound stays');
  assert.equal(tokenize('infor\u00admation'), ['information'], 'a soft hyphen is not a word break');
  assert.equal(tokenize('2019–2020'), ['2019', '2020'], 'an en dash is a range, not a compound');
});

test('what a buyer types finds what the records say (issue 14 item 10)', async () => {
  // svc-health-eu is mostly ECDC COVID-19 records: "covid" used to find nothing
  const covid = await store.search('svc-health-eu', 'covid', 100);
  assert.is(covid.length, 100);
  assert.ok(covid.every((u) => u.source === 'global.ecdc'), 'the records whose source column says COVID-19');
  // "COVID-19" matches on the whole term first, not on the number
  assert.ok((await refs('svc-health-eu', 'COVID-19', 20)).every((r) => r.startsWith('global.ecdc:')));
  assert.equal(await refs('svc-health-eu', 'covid 19 austria deaths 2023-31', 1), ['global.ecdc:AT/deaths/2023-31']);
  // descriptive columns of row sources: a station's name (folded), a pollutant, an occupation's alternative label
  assert.match((await refs('svc-green-deal-eu', 'koln turiner strasse PM2.5', 1))[0], /^global\.eea:airbase\/DENW212\/6001\//);
  assert.is((await refs('svc-green-deal-eu', 'continuous urban fabric', 1))[0], 'global.copernicus:clc/111');
  assert.is((await refs('svc-skills-eu', 'conservatory theatre lecturer', 1))[0], 'global.esco:occupation/00747307-6341-4266-a061-25416f7c6a96');
  assert.is((await refs('svc-research-eu', 'PEMETH mental healthcare buildings', 1))[0], 'global.openaire:dedup_wf_001::685e2587f6e6a64115f1c3c1ace9243a');
});

test('results carry citation, licence and every language version', async () => {
  const [u] = await store.search('svc-agriculture-eu', 'aid to milk producers in Portugal', 1);
  assert.is(u.kind, 'P');
  assert.is(u.citation.celex, '31993R1663');
  assert.is(u.citation.para, 15);
  assert.is(u.citation.url, 'https://eur-lex.europa.eu/legal-content/EN/TXT/?uri=CELEX:31993R1663');
  assert.is(u.licence.source, 'eu.eurlex');
  assert.ok(u.licence.attribution.includes('European Union'));
  const line = readFileSync(join(cat.root, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl'), 'utf8').split('\n').map((l) => l && JSON.parse(l)).find((x) => x && x.celex_id === '31993R1663' && x.para_idx === 15);
  assert.equal(u.rows.map((r) => r.lang).sort(), [...line.langs].sort());
  for (const r of u.rows) assert.is(r.text, line.text[r.lang]);
});

/**
 * The text a unit is searched by, as contract/store-format.ts defines it: the English pivot row of
 * a P unit (an IATE concept: every row but its domain paths, so any term in any language), the
 * descriptive row of an R unit, the original statute's text of an A unit.
 */
function searchable(u: (typeof scanned)[number]): string {
  if (u.kind === 'P' && u.ref.startsWith('eu.iate:')) return u.rows.filter((r) => r.kind !== 'domain').map((r) => r.text).join('\n');
  if (u.kind === 'P') return u.rows.find((r) => r.lang === 'en')!.text;
  if (u.kind === 'A') return (u.rows.find((r) => r.kind === 'statute') ?? u.rows[0]).text;
  return u.rows[0].text;
}

/** BM25 (k1 1.2, b 0.75) computed by brute force over every unit of a product, of every source. */
function bruteForce(pid: string, query: string, limit: number): string[] {
  return bruteForceScored(pid, query, limit).map((d) => d.ref);
}

function bruteForceScored(pid: string, query: string, limit: number): { ref: string; score: number }[] {
  const docs = scanned
    .filter((u) => u.products.includes(pid))
    .map((u) => ({ ref: u.ref, tokens: tokenize(searchable(u)) }))
    .filter((d) => d.tokens.length > 0);
  const avgdl = docs.reduce((s, d) => s + d.tokens.length, 0) / docs.length;
  const terms = [...new Set(tokenize(query))].sort();
  const df = new Map(terms.map((t) => [t, docs.filter((d) => d.tokens.includes(t)).length]));
  const scored = docs.map((d) => {
    let score = 0;
    for (const t of terms) {
      const tf = d.tokens.filter((x) => x === t).length;
      if (!tf) continue;
      const idf = Math.log(1 + (docs.length - df.get(t)! + 0.5) / (df.get(t)! + 0.5));
      score += (idf * (tf * 2.2)) / (tf + 1.2 * (1 - 0.75 + (0.75 * d.tokens.length) / avgdl));
    }
    return { ref: d.ref, score };
  }).filter((d) => d.score > 0);
  scored.sort((a, b) => b.score - a.score || (a.ref < b.ref ? -1 : a.ref > b.ref ? 1 : 0));
  return scored.slice(0, limit);
}

const cases: [string, string][] = [
  ['svc-agriculture-eu', 'export refunds'],
  ['svc-agriculture-eu', 'commission regulation'],
  ['svc-agriculture-eu', 'Member States shall notify the Commission'],
  ['svc-agriculture-eu', 'article'],
  ['svc-finance-eu', 'import duties'],
  ['svc-finance-eu', 'export refunds products'],
  ['svc-finance-eu', 'aid'],
  ['svc-green-deal-eu', 'fire'],
  ['svc-manufacturing-eu', 'products classes'],
  // tokenizer v2: compounds, folded case and accents, row sources' descriptive columns
  ['svc-health-eu', 'covid'],
  ['svc-health-eu', 'COVID-19 deaths Austria'],
  ['svc-health-eu', 'covid 19 2023-31'],
  ['svc-green-deal-eu', 'PM2.5 Köln'],
  ['svc-green-deal-eu', 'koln-chorweiler nitrogen dioxide annual mean'],
  ['svc-green-deal-eu', 'forest land cover'],
  ['svc-skills-eu', 'digital skills'],
  ['svc-skills-eu', 'teacher ISCO'],
  ['svc-research-eu', 'research H2020'],
  ['svc-media-eu', 'satellite television'],
  ['svc-language-eu', 'päätös asetus'],
  // IATE concepts: terms in any language, with EUR-Lex paragraphs and Finlex provisions of the same product
  ['svc-language-eu', 'koronavirus'],
  ['svc-language-eu', 'Coronavirus pandemic measures'],
];

test('ranking equals brute-force BM25 over the product (score, then unit id)', async () => {
  for (const [pid, q] of cases) {
    for (const limit of [1, 10, 40]) {
      const expected = bruteForce(pid, q, limit);
      assert.ok(expected.length > 0, `${q} has matches`);
      assert.equal(await refs(pid, q, limit), expected, `${pid} "${q}" limit ${limit}`);
    }
  }
});

/** The store's top k equals brute-force BM25 in references and scores, limits 1 to 100. */
async function assertScoresExact(of: typeof store): Promise<void> {
  // docids are positions in reference order (contract/store-format.ts D1)
  const byDocid = scanned.map((u) => u.ref).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  const more: [string, string][] = [
    ['svc-agriculture-eu', 'regulation application council'],
    ['svc-agriculture-eu', 'council implementing regulation'],
    ['svc-agriculture-eu', 'commission european communities regulation article'],
    ['svc-agriculture-eu', 'products following market'],
    ['svc-finance-eu', 'regulation'],
    ['svc-finance-eu', 'member states commission'],
    ['svc-finance-eu', 'member states commission zzzyxw'],
  ];
  for (const [pid, q] of [...cases, ...more]) {
    const expected = bruteForceScored(pid, q, 100);
    for (const limit of [1, 3, 10, 40, 100]) {
      const got = (await of.rank(pid, q, limit)).map((h) => ({ ref: byDocid[h.docid], score: h.score }));
      assert.equal(got, expected.slice(0, limit), `${pid} "${q}" limit ${limit}`);
    }
  }
}

test('scores too: the store top k equals brute-force BM25 in references and scores, limits 1 to 100', async () => {
  await assertScoresExact(store);
});

test('searches split across threads (every query, three threads) give the same references and scores', async () => {
  await store.close(); // LevelDB allows one handle per store and process
  store = await openUnitStore(root, { searchThreads: 3, splitMinPostings: 0 });
  try {
    await assertScoresExact(store);
  } finally {
    await store.close();
    store = await openUnitStore(root);
  }
});

test('limit is honoured', async () => {
  for (const limit of [1, 2, 5, 17]) assert.is((await refs('svc-agriculture-eu', 'regulation', limit)).length, limit);
  const all = await refs('svc-agriculture-eu', 'regulation', 100000);
  assert.ok(all.length > 17 && all.length < 100000);
  assert.equal(new Set(all).size, all.length, 'no duplicates');
  assert.equal(await refs('svc-agriculture-eu', 'regulation', 0), []);
});

test('same query, same results (also after reopening the store)', async () => {
  const q = 'Commission regulation export refunds cereals';
  const a = await refs('svc-agriculture-eu', q, 25);
  const b = await refs('svc-agriculture-eu', q, 25);
  await store.close(); // LevelDB allows one handle per store and process
  store = await openUnitStore(root);
  const c = await refs('svc-agriculture-eu', q, 25);
  assert.equal(a, b);
  assert.equal(a, c);
  assert.is(a.length, 25);
});

test('queries with no indexed word, and unknown products, give nothing', async () => {
  assert.equal(await refs('svc-agriculture-eu', 'the of and'), []);
  assert.equal(await refs('svc-agriculture-eu', 'zzzyxw'), []);
  assert.equal(await refs('svc-unknown', 'milk'), []);
  assert.equal(await refs('svc-tourism-eu', 'milk'), [], 'a product with no units');
});

test('look-up by reference: in request order, unknown references reported', async () => {
  const r = await store.getUnits('svc-language-eu', ['fi.finlex:/akn/fi/act/statute/2026/3#sec_16', 'eu.eurlex:nope/1', 'global.ecdc:AT/cases/2023-27']);
  assert.equal(r.units.map((u) => u.ref), ['fi.finlex:/akn/fi/act/statute/2026/3#sec_16']);
  assert.equal(r.unknown, ['eu.eurlex:nope/1', 'global.ecdc:AT/cases/2023-27'], 'an ECDC record is not in the language product');
  const a = r.units[0];
  assert.is(a.kind, 'A');
  assert.is(a.citation.akn, '/akn/fi/act/statute/2026/3');
  assert.is(a.citation.eid, 'sec_16');
  assert.is(a.citation.eli, 'http://data.finlex.fi/eli/sd/2026/3/alkup');
  assert.is(a.citation.url, 'https://opendata.finlex.fi/finlex/avoindata/v1/akn/fi/act/statute/2026/3/fin@');
  assert.equal(a.rows.map((x) => [x.lang, x.kind]), [['fi', 'statute']]);
  const h = await store.getUnits('svc-health-eu', ['global.ecdc:AT/cases/2023-27']);
  assert.equal(h.units[0].record?.location_name, 'Austria');
  assert.is(h.units[0].rows.length, 1);
});

test('a store of an older format is refused with one line saying to rebuild with lds build', async () => {
  // what a format-3 store (one LevelDB, units under d!<docid>) holds at its keys meta, licences and index
  const old = await tempDir('store-format-3');
  const version = 'store-0123456789ab';
  const db = new Level<string, string>(join(old, version));
  await db.open();
  await db.batch([
    { type: 'put', key: 'meta', value: JSON.stringify({ format: 3, store_version: version, built_at: BUILT_AT, products: {} }) },
    { type: 'put', key: 'licences', value: '{}' },
    { type: 'put', key: 'index', value: JSON.stringify({ tokenizer: 'fold-nfkd-compound-en-stop-v2', doc_count: 1, bm25: { k1: 1.2, b: 0.75 }, products: {} }) },
    { type: 'put', key: 'd!00000000', value: '{}' },
  ]);
  await db.close();
  await writeFile(join(old, 'CURRENT'), `${version}\n`);
  const err = await openUnitStore(old).then(() => null, (e: Error) => e);
  assert.ok(err, 'an old store must not open');
  assert.match(err!.message, /format 3/);
  assert.match(err!.message, /format 4/);
  assert.match(err!.message, /rebuild it with lds build/);
  assert.not.match(err!.message, /\n/, 'one line');
});

test('a damaged store fails loudly, never answers short: a block maximum lowered, refs.idx not JSON', async () => {
  // the search skips blocks by their maxima, so a damaged maximum must be caught when its list is read
  const version = readFileSync(join(root, 'CURRENT'), 'utf8').trim();
  const word = 'regulation';
  const before = await store.rank('svc-agriculture-eu', word, 5);
  assert.ok(before.length === 5, 'the word is in the product');
  for (const [what, value] of [['zero', 0], ['NaN', NaN], ['lowered', 1e-9]] as const) {
    const copy = await tempDir(`store-damaged-${what}`);
    await cp(root, copy, { recursive: true });
    const db = new Level<string, string>(join(copy, version), { valueEncoding: 'utf8' });
    await db.open();
    const header = JSON.parse(await db.get(KEY.term('svc-agriculture-eu', word)) as string) as TermHeader;
    await db.close();
    const fh = await open(join(copy, version, STORE_FILES.postings), 'r+');
    const f64 = Buffer.alloc(8);
    f64.writeDoubleLE(value);
    await fh.write(f64, 0, 8, header.at); // blockMax[0]
    await fh.close();
    const damaged = await openUnitStore(copy);
    try {
      const err = await damaged.rank('svc-agriculture-eu', word, 5).then(() => null, (e: Error) => e);
      assert.ok(err, `a ${what} block maximum must not give an answer`);
      assert.match(err!.message, /rebuild it with lds build/);
    } finally {
      await damaged.close();
    }
  }
  const copy = await tempDir('store-damaged-refs');
  await cp(root, copy, { recursive: true });
  await writeFile(join(copy, version, STORE_FILES.refIndex), '{"count": 1');
  const err = await openUnitStore(copy).then(() => null, (e: Error) => e);
  assert.ok(err);
  assert.match(err!.message, new RegExp(`unit store ${version}: ${STORE_FILES.refIndex.replace('.', '\\.')} is not JSON \\(the store is damaged: rebuild it with lds build\\)`));
});

test.run();
