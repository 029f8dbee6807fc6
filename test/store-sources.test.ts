// The unit store with the sources of issue 13: where the 57 EURLEX57K acts are routed (pinned),
// what every new unit carries (citation, publisher, licence, title), that nothing of a held source
// or of a held part (OpenAIRE abstracts, the unconfirmed EFSA copy) is ever stored, and that broken
// input of every new format fails the whole build with file and line, leaving the store as it was.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildUnitStore } from '../generator/store/build-store.ts';
import type { CatalogSrc } from '../generator/model.ts';
import { openUnitStore } from '../payments/store/unit-store.ts';
import { copyCatalogSrc, tempDir } from './helpers/build.ts';
import { BUILT_AT, catalog, EURLEX57K_FILES, openAireAbstracts, scanStore } from './helpers/store-fixtures.ts';

const opts = (storeRoot: string, extra: object = {}) => ({ storeRoot, builtAt: BUILT_AT, skipBadRecords: false, ...extra });

let cat: CatalogSrc;
let root: string;
let built: Awaited<ReturnType<typeof buildUnitStore>>;
let scan: Awaited<ReturnType<typeof scanStore>>;

test.before(async () => {
  cat = await catalog();
  root = await tempDir('store-sources');
  built = await buildUnitStore(cat, opts(root));
  scan = await scanStore(join(root, built.store_version!));
});

const acts57k = () => EURLEX57K_FILES.flatMap((f) => readFileSync(join(cat.root, f), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l).celex_id as string));

test('routing of the 57 EURLEX57K acts: pinned per product (media, research and tourism now sell acts; cultural heritage none)', async () => {
  const celex = new Set(acts57k());
  assert.is(celex.size, 57);
  const productsOf = new Map<string, string[]>();
  scan.units.forEach((u, i) => {
    const c = u.ref.slice('eu.eurlex:'.length).split('/')[0];
    if (u.source === 'eu.eurlex' && celex.has(c)) productsOf.set(c, scan.products[i]);
  });
  assert.is(productsOf.size, 57, 'every act reached at least one product');
  const actsIn = (pid: string) => [...productsOf].filter(([, ps]) => ps.includes(pid)).map(([c]) => c).sort();
  assert.equal(actsIn('svc-media-eu'), [
    '31977D0737', '31979L0268', '31986L0529', '31992D0486', '31993D0072', '31995R2841', '31999D0645', '32000R1209', '32002D0005', '32002R1217',
    '32002R1997', '32004D0675', '32005R2083', '32006R0511', '32007D0698', '32009R0295', '32010D0049', '32012R0045', '32014R1136',
  ]);
  assert.equal(actsIn('svc-research-eu'), [
    '31982D0211', '31983D0173', '31993D0422', '31996L0078', '32002D0547', '32002L0016', '32004D0675', '32005R0378', '32006R0907', '32007R1432',
    '32007R1520', '32008D0327', '32010D0049', '32012R0045',
  ]);
  assert.equal(actsIn('svc-tourism-eu'), ['32004D0767']);
  assert.equal(actsIn('svc-cultural-heritage-eu'), []);
  const counts = Object.fromEntries(Object.keys(built.products).map((p) => [p, actsIn(p).length]));
  assert.equal(counts, {
    'svc-agriculture-eu': 38, 'svc-cultural-heritage-eu': 0, 'svc-energy-eu': 2, 'svc-finance-eu': 4, 'svc-green-deal-eu': 7, 'svc-health-eu': 30, 'svc-language-eu': 16,
    'svc-manufacturing-eu': 11, 'svc-media-eu': 19, 'svc-mobility-eu': 4, 'svc-public-admin-eu': 5, 'svc-research-eu': 14, 'svc-skills-eu': 1, 'svc-tourism-eu': 1,
  });
  // units per product from these acts (English only: one row each)
  const from57k = (pid: string) => scan.units.filter((u, i) => u.source === 'eu.eurlex' && celex.has(u.ref.slice('eu.eurlex:'.length).split('/')[0]) && scan.products[i].includes(pid)).length;
  assert.equal([from57k('svc-media-eu'), from57k('svc-research-eu'), from57k('svc-tourism-eu')], [124, 105, 6]);
  // the routing report names the new acts files
  for (const f of EURLEX57K_FILES) assert.ok(built.report.includes(`acts file ${f}: `), built.report);
  // cultural heritage sells the culture acts of the EUR-Lex-Triples cut (issue 49), so no note explains a zero
  assert.is(built.product_notes?.['svc-cultural-heritage-eu']?.['eu.eurlex'], undefined);
  assert.ok(built.products['svc-cultural-heritage-eu']['eu.eurlex'].units > 0);
});

test('new units: citation with publisher, title, the source licence; references as documented', async () => {
  const store = await openUnitStore(root);
  try {
    const refs = {
      act: 'eu.eurlex:31982D0211/2',
      occupation: 'global.esco:occupation/00747307-6341-4266-a061-25416f7c6a96',
      skill: 'global.esco:skill/14832d87-2f2f-4895-b290-e4760ebae42a',
      result: 'global.openaire:dedup_wf_001::685e2587f6e6a64115f1c3c1ace9243a',
      statistic: 'global.eea:airbase/DENW053/1/100/Calendar+year/1987/day/P50',
      clc: 'global.copernicus:clc/111',
    };
    const get = async (pid: string, ref: string) => {
      const r = await store.getUnits(pid, [ref]);
      assert.equal(r.unknown, [], `${ref} in ${pid}`);
      return r.units[0];
    };
    const act = await get('svc-research-eu', refs.act);
    assert.is(act.kind, 'P');
    assert.equal(act.citation, { label: 'CELEX 31982D0211, article 1 of 2', publisher: 'Publications Office of the European Union', part: 'article 1 of 2', celex: '31982D0211', para: 2, url: 'https://eur-lex.europa.eu/legal-content/EN/TXT/?uri=CELEX:31982D0211' });
    assert.match(act.title!, /^82\/211\/EEC: Commission Decision of 17 March 1982/);
    assert.equal(act.rows.map((r) => r.lang), ['en']);
    assert.is(act.licence.source, 'eu.eurlex');
    assert.ok(act.licence.attribution.includes('EURLEX57K'));

    const occ = await get('svc-skills-eu', refs.occupation);
    assert.is(occ.citation.uri, 'http://data.europa.eu/esco/occupation/00747307-6341-4266-a061-25416f7c6a96');
    assert.is(occ.citation.publisher, 'European Commission (DG EMPL)');
    assert.is(occ.record!.preferredLabel, 'performing arts theatre instructor');
    assert.is(occ.licence.quote_sha256, cat.sources.get('global.esco')!.ruling!.quote_sha256);
    const skill = await get('svc-skills-eu', refs.skill);
    assert.is(skill.record!.collections, 'ictSkillsCollection; transversalSkillsCollection');

    const res = await get('svc-research-eu', refs.result);
    assert.is(res.citation.doi, '10.1155/2016/6189349');
    assert.is(res.citation.publisher, 'OpenAIRE');
    assert.is(res.record!.publisher, 'Hindawi Publishing Corporation', "the result's own publisher is a field of the record");

    const stat = await get('svc-green-deal-eu', refs.statistic);
    assert.is(stat.record!.statistic_value, '26.0');
    assert.is(stat.citation.publisher, 'European Environment Agency');
    const clc = await get('svc-green-deal-eu', refs.clc);
    assert.is(clc.title, 'Continuous urban fabric');
    assert.is(clc.citation.publisher, 'European Environment Agency (Copernicus Land Monitoring Service)');
    // a unit is only in the products that list its source
    assert.equal((await store.getUnits('svc-health-eu', [refs.clc, refs.occupation])).unknown, [refs.clc, refs.occupation]);
  } finally {
    await store.close();
  }
  // every stored unit names its publisher, and it is its source's
  for (const u of scan.units as any[]) assert.is(u.citation.publisher, cat.sources.get(u.source)!.publisher, u.ref);
});

test('held parts are never stored: no OpenAIRE abstract, no EFSA row, no unit of a held source', async () => {
  const abstracts = openAireAbstracts();
  assert.ok(abstracts.length >= 50 && abstracts.some((a) => a.startsWith('Abstract Background Recombination')), 'the abstracts of the JSON lines and of the OAF XML records');
  const everything = scan.units.map((u) => JSON.stringify(u)).join('\n');
  for (const a of abstracts) assert.not.ok(everything.includes(a.slice(10, 70)), `an abstract is stored: ${a.slice(0, 60)}`);
  assert.not.ok(scan.units.some((u) => u.source === 'eu.efsa'), 'the unconfirmed OpenFoodTox copy is not stored');
  assert.not.ok(everything.includes('Dimethyl-6-octen'), 'no OpenFoodTox value is stored');
  const held = new Set([...cat.sources.values()].filter((s) => s.held).map((s) => s.id));
  assert.not.ok(scan.units.some((u) => held.has(u.source)));
});

test('a source put on hold is neither read nor stored, whatever data it named', async () => {
  const sources = new Map(cat.sources);
  const openaire = sources.get('global.openaire')!;
  sources.set('global.openaire', { ...openaire, ruling: undefined, held: { reason: 'test: licence withdrawn', since: '2026-11-23' } });
  const storeRoot = await tempDir('store-held-openaire');
  const r = await buildUnitStore({ ...cat, sources }, opts(storeRoot));
  const s = await scanStore(join(storeRoot, r.store_version!));
  assert.not.ok(s.units.some((u) => u.source === 'global.openaire'));
  assert.not.ok(s.keys.some((k) => k.includes('global.openaire')));
  assert.equal(r.products['svc-research-eu']['global.openaire'], { units: 0, rows: 0 });
  assert.match(r.report, /global\.openaire: held, not read \(test: licence withdrawn\)/);
});

/** Breaks one file of a copy of catalog-src; the build must fail naming file:line and leave the store untouched. */
async function expectBuildFails(storeRoot: string, file: string, breakIt: (text: string) => Buffer, where: RegExp) {
  const src = await copyCatalogSrc();
  const path = join(src, file);
  await writeFile(path, breakIt(await readFile(path, 'latin1')));
  const before = await readFile(join(storeRoot, 'CURRENT'), 'utf8');
  const listing = (await readdir(storeRoot)).sort();
  const err = await buildUnitStore(await catalog(src), opts(storeRoot)).then(() => null, (e: Error) => e);
  assert.ok(err, `${file}: the build must fail`);
  assert.match(err!.message, where, file);
  assert.is(await readFile(join(storeRoot, 'CURRENT'), 'utf8'), before, `${file}: CURRENT unchanged`);
  assert.equal((await readdir(storeRoot)).sort(), listing, `${file}: no partial store left behind`);
}

// The files are read as latin1 (one character per byte), so an edit writes the other bytes back unchanged.
const latin1 = (t: string) => Buffer.from(t, 'latin1');
/** The file's UTF-8 text saved as Latin-1: invalid UTF-8 wherever it has ä, é, ö, ... */
const asLatin1 = (t: string) => Buffer.from(Buffer.from(t, 'latin1').toString('utf8'), 'latin1');

test('broken input of every new format fails the build with file and line, never a partial store', async () => {
  const storeRoot = await tempDir('store-broken');
  await buildUnitStore(cat, opts(storeRoot));
  const fails = (file: string, breakIt: (text: string) => Buffer, where: RegExp) => expectBuildFails(storeRoot, file, breakIt, where);
  // EURLEX57K: truncated (a cut-off last line)
  await fails('data/eurlex57k/eurlex57k_dom28.jsonl', (t) => latin1(t.slice(0, t.length - 500)), /^data\/eurlex57k\/eurlex57k_dom28\.jsonl:29: invalid JSON/);
  // ESCO: wrong column set
  await fails('data/esco/transversalSkillsCollection_en.csv', (t) => latin1(t.replace('preferredLabel', 'label')), /^data\/esco\/transversalSkillsCollection_en\.csv:1: wrong column set: missing preferredLabel/);
  // OpenAIRE: bad encoding
  await fails('data/openaire/h2020_results_sample.jsonl', asLatin1, /^data\/openaire\/h2020_results_sample\.jsonl:\d+: not valid UTF-8/);
  // EEA: a statistic of a station not in the station list
  await fails('data/eea_airbase/DENW212.csv', (t) => latin1(t.replace('\nDENW212,5,', '\nDENW999,5,')), /^data\/eea_airbase\/DENW212\.csv:2: station "DENW999" is not in data\/eea_airbase\/stations\.csv/);
  // EEA: the station list in the wrong encoding (the ö of Köln)
  await fails('data/eea_airbase/stations.csv', asLatin1, /^data\/eea_airbase\/stations\.csv:2: not valid UTF-8/);
  // CORINE: a truncated row
  await fails('data/copernicus_clc/clc_legend.csv', (t) => latin1(t.slice(0, t.length - 20)), /^data\/copernicus_clc\/clc_legend\.csv:45: /);
});

test.run();
