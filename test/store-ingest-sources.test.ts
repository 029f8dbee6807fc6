// @tier: quick  (npm run test:quick: in-process)
// The adapters of the sources added with issue 13 (EURLEX57K acts, ESCO, OpenAIRE, EEA AirBase,
// EFSA OpenFoodTox, the CORINE legend), on the real fixtures in catalog-src/data/: exact counts and
// exact field values, checked against the files read with plain JSON.parse and csv-parse. Then
// broken copies of each format (truncated, wrong column set, bad encoding, bad values): every
// problem is located as file:line and fails by default.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { readCorineLegend } from '../generator/ingest/corine-legend.ts';
import { readAirbaseStatistics, readStations } from '../generator/ingest/eea-airbase.ts';
import { BadRecordCounter, failOnBadRecord, IngestError, type BadRecordHandler } from '../generator/ingest/errors.ts';
import { escoFiles, escoRecord, mergeSkillRows, readEscoFile, type EscoRow } from '../generator/ingest/esco.ts';
import { readEurlex57k } from '../generator/ingest/eurlex57k.ts';
import { readOpenAireResults } from '../generator/ingest/openaire.ts';
import { readOafResults } from '../generator/ingest/openaire-oaf.ts';
import { readOpenFoodTox } from '../generator/ingest/openfoodtox.ts';
import { CATALOG_SRC, tempDir } from './helpers/build.ts';
import { openAireAbstracts } from './helpers/store-fixtures.ts';

const data = (p: string) => join(CATALOG_SRC, 'data', p);
const text = (p: string) => readFileSync(data(p), 'utf8');
const csvRows = (p: string, delimiter = ',') => parseCsv(readFileSync(data(p)), { columns: true, bom: true, delimiter }) as Record<string, string>[];
const jsonl = (p: string) => text(p).split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
async function all<T>(gen: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of gen) out.push(x);
  return out;
}
const rejects = async (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as IngestError);

/** Writes a broken copy and expects the adapter to fail with `file:line: reason`. */
async function broken(name: string, body: string | Buffer, read: (file: string, onBad: BadRecordHandler) => Promise<unknown>, expected: RegExp) {
  const dir = await tempDir('broken');
  const file = join(dir, name);
  await writeFile(file, body);
  const err = await rejects(read(file, failOnBadRecord));
  assert.instance(err, IngestError, `${name}: ${String(err)}`);
  assert.match(err!.message, expected);
}

const LATIN1 = (s: string) => Buffer.from(s, 'latin1'); // a file saved in the wrong encoding

// ---------------------------------------------------------------------------------------------- EURLEX57K

test('EURLEX57K: 57 acts, one block per heading, recitals, article and closing part; descriptors for routing', async () => {
  const files = ['eurlex57k/eurlex57k_dom32_36.jsonl', 'eurlex57k/eurlex57k_dom28.jsonl'];
  const acts = (await Promise.all(files.map((f) => all(readEurlex57k(data(f), `data/${f}`, failOnBadRecord))))).flat();
  const raw = files.flatMap(jsonl);
  assert.is(acts.length, 57);
  assert.equal(acts.map((a) => a.celex), raw.map((r) => r.celex_id));
  assert.is(acts.reduce((n, a) => n + a.blocks.length, 0), 372);
  // the fixture's own index lists the same acts and descriptors
  const index = csvRows('eurlex57k/index.csv');
  assert.equal(acts.map((a) => a.celex).sort(), index.map((r) => r.celex_id).sort());
  for (const r of index) assert.equal(acts.find((a) => a.celex === r.celex_id)!.descriptors, [...new Set(r.eurovoc_concepts.split(';'))].sort(), r.celex_id);

  const a = acts[0];
  assert.is(a.celex, '31982D0211');
  assert.is(a.file, 'data/eurlex57k/eurlex57k_dom32_36.jsonl');
  assert.is(a.line, 1);
  assert.is(a.title, "82/211/EEC: Commission Decision of 17 March 1982 establishing that the 'Jodon EA-immersion type X-Y micropositionable photographic plate holder, model MPH- 45W, with beam splitter attenuator, model UBA-200 and parabolic mirrors' may not be imported free of Common Customs Tariff duties");
  assert.equal(a.descriptors, ['1091', '3842', '3874', '4110', '4381', '5287']);
  assert.equal(a.blocks.map((b) => [b.index, b.part]), [[0, 'heading'], [1, 'citations and recitals'], [2, 'article 1 of 2'], [3, 'article 2 of 2'], [4, 'closing part and annexes']]);
  assert.is(a.blocks[3].text, 'This Decision is addressed to the Member States.');
  assert.is(a.blocks[0].text, raw[0].header, 'texts are kept as published');
});

test('EURLEX57K: truncated file, wrong shape and bad encoding are located', async () => {
  const first = text('eurlex57k/eurlex57k_dom32_36.jsonl').split('\n')[0];
  const read = (f: string, onBad: BadRecordHandler) => all(readEurlex57k(f, 'data/x.jsonl', onBad));
  await broken('truncated.jsonl', `${first}\n${first.slice(0, 500)}`, read, /^data\/x\.jsonl:2: invalid JSON/);
  await broken('shape.jsonl', `${first}\n${JSON.stringify({ ...JSON.parse(first), celex_id: '31982D0212', main_body: 'one article' })}\n`, read, /^data\/x\.jsonl:2: main_body of 31982D0212 must be an array/);
  await broken('celex.jsonl', JSON.stringify({ ...JSON.parse(first), celex_id: 'not/a/celex' }), read, /^data\/x\.jsonl:1: celex_id must be a CELEX number/);
  await broken('latin1.jsonl', Buffer.concat([Buffer.from(`${first}\n`), LATIN1(JSON.stringify({ ...JSON.parse(first), title: 'Décision' }))]), read, /^data\/x\.jsonl:2: not valid UTF-8/);
  // with --skip-bad-records the bad line is counted and the rest read
  const dir = await tempDir('e57');
  await writeFile(join(dir, 'x.jsonl'), `${first}\n{"celex_id":\n${first}\n`);
  const counter = new BadRecordCounter();
  assert.is((await all(readEurlex57k(join(dir, 'x.jsonl'), 'x.jsonl', counter.handler))).length, 2);
  assert.is(counter.count, 1);
});

// ---------------------------------------------------------------------------------------------- ESCO

test('ESCO: 296 occupations and 107 skills; the ICT collection merges into the transversal skills', async () => {
  const files = await escoFiles(data('esco'));
  assert.equal(files.map((f) => [f.name, f.kind, f.collection]), [
    ['ictSkillsCollection_en.csv', 'skill', 'ictSkillsCollection'],
    ['occupations_en_sample.csv', 'occupation', null],
    ['transversalSkillsCollection_en.csv', 'skill', 'transversalSkillsCollection'],
  ]);
  const rows: EscoRow[] = [];
  for (const f of files) rows.push(...(await all(readEscoFile(f, `data/esco/${f.name}`, failOnBadRecord))));
  const occupations = rows.filter((r) => r.kind === 'occupation');
  assert.is(occupations.length, csvRows('esco/occupations_en_sample.csv').length);
  assert.is(occupations.length, 296);
  const skills = new Map<string, EscoRow[]>();
  for (const r of rows.filter((x) => x.kind === 'skill')) skills.set(r.id, [...(skills.get(r.id) ?? []), r]);
  assert.is(skills.size, 107);
  assert.is([...skills.values()].filter((g) => g.length === 2).length, 21, 'every ICT skill is also transversal');

  const occ = escoRecord(occupations[0]);
  assert.equal(occ.key, ['occupation', '00747307-6341-4266-a061-25416f7c6a96']);
  assert.is(occ.uri, 'http://data.europa.eu/esco/occupation/00747307-6341-4266-a061-25416f7c6a96');
  assert.is(occ.title, 'performing arts theatre instructor');
  assert.is(occ.label, 'ESCO occupation “performing arts theatre instructor” (ISCO-08 2310)');
  assert.is(occ.fields.iscoGroup, '2310');
  assert.is(occupations[0].line, 2);
  assert.ok(occ.text.includes('conservatory theatre instructor'), 'alternative labels are searchable');

  const merged = mergeSkillRows(skills.get('14832d87-2f2f-4895-b290-e4760ebae42a')!);
  assert.ok(merged.ok);
  if (!merged.ok) return;
  const skill = escoRecord(merged.row, merged.collections);
  assert.is(skill.title, 'solve technical problems');
  assert.is(skill.fields.collections, 'ictSkillsCollection; transversalSkillsCollection');
  assert.is(skill.label, 'ESCO skill/competence “solve technical problems” (transversal)');
  // rows of one skill that disagree are an error, not a choice
  const [a, b] = skills.get('14832d87-2f2f-4895-b290-e4760ebae42a')!;
  const conflict = mergeSkillRows([a, { ...b, record: { ...b.record, description: 'changed' } }]);
  assert.not.ok(conflict.ok);
  // and a skill listed twice in one file is an error too
  const twice = mergeSkillRows([a, { ...a, line: a.line + 5 }]);
  assert.equal(twice, { ok: false, reason: `${a.record.conceptUri} is listed twice in ${a.file} (lines ${a.line} and ${a.line + 5})` });
});

test('ESCO: wrong column set, truncated file, bad encoding and a foreign URI are located', async () => {
  const occ = text('esco/occupations_en_sample.csv');
  const read = async (file: string, onBad: BadRecordHandler) => {
    const [f] = (await escoFiles(join(file, '..'))).filter((x) => file.endsWith(x.name));
    return all(readEscoFile(f, 'data/esco/occupations_x.csv', onBad));
  };
  await broken('occupations_x.csv', occ.replace('iscoGroup', 'isco_group'), read, /^data\/esco\/occupations_x\.csv:1: wrong column set: missing iscoGroup/);
  await broken('occupations_x.csv', occ.slice(0, occ.indexOf('http://data.europa.eu/esco/occupation/01484951')), read, /^data\/esco\/occupations_x\.csv:\d+: /);
  const lines = occ.split('\n');
  await broken('occupations_x.csv', Buffer.concat([Buffer.from(`${lines[0]}\n`), LATIN1('Occupation,http://data.europa.eu/esco/occupation/x1,2310,théâtre,,,released,,,,,,\n')]), read, /^data\/esco\/occupations_x\.csv:2: not valid UTF-8/);
  await broken('occupations_x.csv', `${lines[0]}\nOccupation,http://example.org/occupation/1,2310,x,,,released,,,,,,\n`, read, /^data\/esco\/occupations_x\.csv:2: conceptUri must be an ESCO occupation URI/);
});

// ---------------------------------------------------------------------------------------------- OpenAIRE

test('OpenAIRE: 55 results, metadata and project links, never an abstract', async () => {
  const got = await all(readOpenAireResults(data('openaire/h2020_results_sample.jsonl'), 'data/openaire/h2020_results_sample.jsonl', failOnBadRecord));
  const raw = jsonl('openaire/h2020_results_sample.jsonl');
  assert.is(got.length, 55);
  assert.equal(got.map((r) => r.key[0]), raw.map((r) => r.openaire_id));
  const r = got[0];
  assert.is(r.uri, 'dedup_wf_001::685e2587f6e6a64115f1c3c1ace9243a');
  assert.is(r.doi, '10.1155/2016/6189349');
  assert.is(r.url, 'https://doi.org/10.1155/2016/6189349');
  assert.is(r.title, 'Perspectives on the Role and Synergies of Architecture and Social and Built Environment in Enabling Active Healthy Aging');
  assert.is(r.label, 'OpenAIRE publication dedup_wf_001::685e2587f6e6a64115f1c3c1ace9243a, doi:10.1155/2016/6189349');
  assert.is(r.fields.pids, 'pmid:27656295; pmc:PMC5021504; doi:10.1155/2016/6189349');
  assert.ok(r.fields.projects.startsWith('EC H2020 · 658244 · PEMETH · Planning and Evaluation Methodologies'), r.fields.projects);
  assert.is(r.fields.publisher, 'Hindawi Publishing Corporation');
  // abstracts are held: not one of them (nor a long piece of one) is in any record
  const abstracts = raw.flatMap((x) => x.descriptions as string[]).filter(Boolean);
  assert.is(abstracts.length, 51);
  for (const rec of got) {
    assert.not.ok('descriptions' in rec.fields || 'description' in rec.fields);
    const all = JSON.stringify(rec);
    for (const ab of abstracts) assert.not.ok(all.includes(ab.replace(/<[^>]+>/g, '').slice(20, 120)), `${rec.uri} carries an abstract`);
  }
});

test('OpenAIRE: truncated file, missing id and bad encoding are located', async () => {
  const first = text('openaire/h2020_results_sample.jsonl').split('\n')[0];
  const read = (f: string, onBad: BadRecordHandler) => all(readOpenAireResults(f, 'data/o.jsonl', onBad));
  await broken('t.jsonl', `${first}\n${first}\n${first.slice(0, 100)}`, read, /^data\/o\.jsonl:3: invalid JSON/);
  await broken('id.jsonl', JSON.stringify({ ...JSON.parse(first), openaire_id: 'nope' }), read, /^data\/o\.jsonl:1: openaire_id must be an OpenAIRE identifier/);
  await broken('l.jsonl', LATIN1(JSON.stringify({ ...JSON.parse(first), publisher: 'Éditions' })), read, /^data\/o\.jsonl:1: not valid UTF-8/);
});

test('OpenAIRE OAF XML: the two raw dump records, same fields as the JSON lines, no abstract', async () => {
  const got = await all(readOafResults(data('openaire'), CATALOG_SRC, failOnBadRecord));
  assert.is(got.length, 2);
  const [figshare, one] = got;
  assert.is(figshare.file, 'data/openaire/oaf_result_5dbc230696a3706d45b5a2ff.xml');
  assert.equal(figshare.key, ['scholexplore::edd9ec0a5e33c6c0a47a2a50d8f16a06']);
  assert.is(figshare.title, 'Assessing the benefits of horizontal gene transfer by laboratory evolution and genome sequencing');
  assert.is(figshare.label, 'OpenAIRE dataset scholexplore::edd9ec0a5e33c6c0a47a2a50d8f16a06, doi:10.6084/m9.figshare.c.4075649');
  assert.is(figshare.fields.publisher, 'Figshare');
  assert.is(figshare.fields.projects, 'EC H2020 · 739874 · NoiseRobustEvo · Noise and robustness in the evolution of novel protein phenotypes', 'result-to-result links are not projects');
  assert.is(figshare.fields.creators.split('; ').length, 6);
  assert.is(one.uri, 'dedup_wf_001::2c8a49a95bef402a688853c31412a30f');
  assert.is(one.doi, '10.1093/aje/kwx278');
  assert.is(one.fields.creators, 'Courtin, Emilie; Dowd, Jennifer B; Avendano, Mauricio');
  assert.match(one.fields.projects, /^EC H2020 · 667661 · MINDMAP · PROMOTING MENTAL WELLBEING/);
  assert.equal(Object.keys(one.fields), Object.keys((await all(readOpenAireResults(data('openaire/h2020_results_sample.jsonl'), 'x', failOnBadRecord)))[0].fields), 'the same record shape from both formats');
  const xmlAbstract = openAireAbstracts().find((a) => a.startsWith('Abstract Background Recombination'))!;
  assert.ok(xmlAbstract);
  assert.not.ok(JSON.stringify(got).includes(xmlAbstract.slice(0, 60)), 'the <description> is never read');
});

test('OpenAIRE OAF XML: a broken document, a foreign id and bad encoding are located, the document skipped whole', async () => {
  const xml = text('openaire/oaf_result_one_project.xml');
  const read = (f: string, onBad: BadRecordHandler) => all(readOafResults(f, join(f, '..'), onBad));
  await broken('a.xml', xml.replace('</title>', '</titl>'), read, /^a\.xml:15:\d+ \/record\/result\/metadata\/entity\/result(\/title)?: unexpected close tag/);
  await broken('a.xml', xml.slice(0, xml.indexOf('<rels>')), read, /^a\.xml:\d+:\d+ /);
  await broken('a.xml', xml.replace('dedup_wf_001::2c8a49a95bef402a688853c31412a30f', 'nope'), read, /^a\.xml:\d+:\d+ .*dri:objIdentifier must be an OpenAIRE identifier/);
  await broken('a.xml', Buffer.concat([Buffer.from(xml.slice(0, xml.indexOf('Courtin'))), LATIN1('Courtïn'), Buffer.from(xml.slice(xml.indexOf('Courtin') + 7))]), read, /^a\.xml:15: not valid UTF-8/);
  const dir = await tempDir('oaf');
  await writeFile(join(dir, 'good.xml'), xml);
  await writeFile(join(dir, 'bad.xml'), xml.replace('</title>', '</titl>'));
  const counter = new BadRecordCounter();
  const got = await all(readOafResults(dir, dir, counter.handler));
  assert.equal([got.length, counter.count], [1, 1]);
  assert.is(got[0].file, 'good.xml');
});

// ---------------------------------------------------------------------------------------------- EEA AirBase

test('EEA AirBase: 19 stations; 1,719 + 419 statistics joined to their station', async () => {
  const stations = await readStations(data('eea_airbase/stations.csv'), 'data/eea_airbase/stations.csv', failOnBadRecord);
  assert.is(stations.size, 19);
  assert.equal(stations.get('DENW053'), { id: 'DENW053', name: 'Köln-Chorweiler', operator: 'Köln, Stadt', longitude: '6.884636', latitude: '51.019344' });
  const read = (f: string) => all(readAirbaseStatistics(data(`eea_airbase/${f}`), `data/eea_airbase/${f}`, stations, 'data/eea_airbase/stations.csv', failOnBadRecord));
  const a = await read('DENW053.csv');
  const b = await read('DENW212.csv');
  assert.is(a.length, 1719);
  assert.is(b.length, 419);
  assert.is(a.length, csvRows('eea_airbase/DENW053.csv').length);
  const r = a[0];
  assert.equal(r.key, ['airbase', 'DENW053', '1', '100', 'Calendar year', '1987', 'day', 'P50']);
  assert.is(r.title, 'Köln-Chorweiler (DENW053): SO2, Calendar year 1987, 50 percentile');
  assert.is(r.fields.statistic_value, '26.0');
  assert.is(r.fields.station_latitude, '51.019344');
  assert.is(r.where, '2');
  const last = b[b.length - 1];
  assert.equal(last.key, ['airbase', 'DENW212', '6001', '100', 'Calendar year', '2011', 'hour', 'Max']);
  assert.is(last.fields.component_caption, 'PM2.5');
  assert.is(last.fields.station_name, 'Köln Turiner Straße');
  assert.is(new Set([...a, ...b].map((x) => x.key.join('/'))).size, 2138, 'every statistic has its own key');
});

test('EEA AirBase: unknown station, wrong columns, truncated row and bad encoding are located', async () => {
  const stations = await readStations(data('eea_airbase/stations.csv'), 'data/eea_airbase/stations.csv', failOnBadRecord);
  const stats = text('eea_airbase/DENW212.csv').split('\n');
  const read = (f: string, onBad: BadRecordHandler) => all(readAirbaseStatistics(f, 'data/s.csv', stations, 'data/eea_airbase/stations.csv', onBad));
  await broken('s.csv', [stats[0], stats[1].replace('DENW212', 'DENW999')].join('\n'), read, /^data\/s\.csv:2: station "DENW999" is not in data\/eea_airbase\/stations\.csv/);
  await broken('s.csv', [stats[0].replace('statistic_value', 'value'), stats[1]].join('\n'), read, /^data\/s\.csv:1: wrong column set: missing statistic_value/);
  await broken('s.csv', [stats[0], stats[1], stats[2].slice(0, 40)].join('\n'), read, /^data\/s\.csv:3: /);
  await broken('s.csv', Buffer.concat([Buffer.from(`${stats[0]}\n${stats[1]}\n`), LATIN1(stats[2])]), read, /^data\/s\.csv:3: not valid UTF-8/);
  const readStationsOf = (f: string, onBad: BadRecordHandler) => readStations(f, 'data/st.csv', onBad);
  await broken('st.csv', 'id,name,operator,longitude,latitude\nDENW053,X,Y,east,north\n', readStationsOf, /^data\/st\.csv:2: station DENW053: longitude and latitude must be numbers/);
});

// ---------------------------------------------------------------------------------------------- CORINE

test('CORINE Land Cover legend: 44 classes, semicolon-separated with CRLF', async () => {
  const got = await all(readCorineLegend(data('copernicus_clc/clc_legend.csv'), 'data/copernicus_clc/clc_legend.csv', failOnBadRecord, ';'));
  assert.is(got.length, 44);
  assert.equal(got.map((r) => r.key[1]), csvRows('copernicus_clc/clc_legend.csv', ';').map((r) => r.CLC_CODE));
  assert.equal(got[0].key, ['clc', '111']);
  assert.is(got[0].title, 'Continuous urban fabric');
  assert.is(got[0].label, 'CORINE Land Cover nomenclature, class 111 (grid code 1; Artificial surfaces > Urban fabric)');
  assert.equal(got[0].fields, { GRID_CODE: '1', CLC_CODE: '111', LABEL1: 'Artificial surfaces', LABEL2: 'Urban fabric', LABEL3: 'Continuous urban fabric', RGB: '230-000-077' });
  assert.is(got[43].title, 'Sea and ocean');
  assert.is(got[43].where, '45');
});

test('CORINE legend: a comma file, a bad code and a truncated row are located', async () => {
  const legend = text('copernicus_clc/clc_legend.csv');
  const read = (f: string, onBad: BadRecordHandler) => all(readCorineLegend(f, 'data/l.csv', onBad, ';'));
  await broken('l.csv', legend.replace(/;/g, ','), read, /^data\/l\.csv:1: wrong column set: missing GRID_CODE/);
  await broken('l.csv', legend.replace('2;112;', '2;11x;'), read, /^data\/l\.csv:3: CLC_CODE must be a 3-digit CORINE code/);
  await broken('l.csv', legend.slice(0, legend.indexOf('Discontinuous urban fabric')), read, /^data\/l\.csv:3: /);
  await broken('l.csv', Buffer.concat([Buffer.from(legend.split('\r\n').slice(0, 3).join('\r\n') + '\r\n'), LATIN1('4;122;Artificial surfaces;Réseaux;Road;204-000-000\r\n')]), read, /^data\/l\.csv:4: not valid UTF-8/);
});

// ---------------------------------------------------------------------------------------------- OpenFoodTox

test('OpenFoodTox: 300 rows of each table, identified by their values', async () => {
  const tables = ['SubstanceCharacterisation', 'ReferenceValues', 'ReferencePoints'];
  const got = await Promise.all(tables.map((t) => all(readOpenFoodTox(data(`efsa_openfoodtox/${t}_KJ_2022_first300.csv`), `data/efsa_openfoodtox/${t}_KJ_2022_first300.csv`, failOnBadRecord))));
  assert.equal(got.map((g) => g.length), [300, 300, 300]);
  for (const g of got) assert.is(new Set(g.map((r) => r.key.join('/'))).size, 300, 'no two rows share a key');
  const v = got[1][0];
  assert.equal(v.key.slice(0, 2), ['openfoodtox', 'reference-value']);
  assert.match(v.key[2], /^[0-9a-f]{16}$/);
  assert.is(v.title, '(-)-3,7-Dimethyl-6-octen-1-ol: TTC Cramer Class I for Consumers');
  assert.is(v.label, 'EFSA OpenFoodTox reference value, (-)-3,7-Dimethyl-6-octen-1-ol, EFSA output 2180 (EFSA CEF 2013)');
  assert.is(v.fields.unit, 'µg/kg bw/day');
  assert.is(v.fields.Substance, '(-)-3,7-Dimethyl-6-octen-1-ol', 'the byte-order mark is not part of the first column name');
});

test('OpenFoodTox: an unknown table, wrong columns and bad encoding are located', async () => {
  const values = text('efsa_openfoodtox/ReferenceValues_KJ_2022_first300.csv');
  const read = (f: string, onBad: BadRecordHandler) => all(readOpenFoodTox(f, 'data/t.csv', onBad));
  await broken('Genotoxicity_KJ_2022.csv', values, read, /^data\/t\.csv:1: not an OpenFoodTox table/);
  await broken('ReferenceValues_x.csv', values.replace('Population', 'Group'), read, /^data\/t\.csv:1: wrong column set: missing Population/);
  const lines = values.split('\n');
  await broken('ReferenceValues_x.csv', Buffer.concat([Buffer.from(lines.slice(0, 5).join('\n') + '\n'), LATIN1('Ochratoxin A,EFSA CONTAM,2020,1,TWI,=,1,ng/kg bw,Consommateurs é\n')]), read, /^data\/t\.csv:6: not valid UTF-8/);
});

test('every new data file is a byte copy of the fixture set (hashes as in PROVENANCE.md)', async () => {
  const { createHash } = await import('node:crypto');
  const expected: Record<string, string> = {
    'eurlex57k/eurlex57k_dom32_36.jsonl': 'a90f81f978c1ce73',
    'eurlex57k/eurlex57k_dom28.jsonl': 'dafab23f280d14a3',
    'eurlex57k/index.csv': '5fff380c8d94c437',
    'esco/occupations_en_sample.csv': 'b265dc7e229d8097',
    'esco/transversalSkillsCollection_en.csv': 'b2b505a62ad9d6e0',
    'esco/ictSkillsCollection_en.csv': '25d7e73cd0c39509',
    'openaire/h2020_results_sample.jsonl': '0c693070675ca18b',
    'eea_airbase/stations.csv': 'b81877b03dac9b52',
    'eea_airbase/DENW053.csv': '7cf339b48012ce96',
    'eea_airbase/DENW212.csv': '9e0ba13890d0903a',
    'efsa_openfoodtox/SubstanceCharacterisation_KJ_2022_first300.csv': 'a8241202aa035224',
    'efsa_openfoodtox/ReferenceValues_KJ_2022_first300.csv': 'f0ec0e34d993bccf',
    'efsa_openfoodtox/ReferencePoints_KJ_2022_first300.csv': 'afbf18f658f396bd',
    'copernicus_clc/clc_legend.csv': '79dd64c9db5d663d',
  };
  const provenance = text('PROVENANCE.md');
  for (const [f, h] of Object.entries(expected)) {
    assert.is(createHash('sha256').update(readFileSync(data(f))).digest('hex').slice(0, 16), h, f);
    assert.ok(provenance.includes(h), `PROVENANCE.md lists ${f}`);
  }
});

test.run();
