// @tier: quick  (npm run test:quick: in-process)
// The ingest adapters on the real fixtures, checked against the fixtures' own derived files, and
// on broken input: every problem is located (file:line or file:line:col + XML path), fails by
// default and is counted when skipping is allowed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { readAkomaNtoso } from '../generator/ingest/akoma-ntoso.ts';
import { readAlignedParagraphs } from '../generator/ingest/aligned-paragraphs.ts';
import { readCsv } from '../generator/ingest/csv.ts';
import { BadRecordCounter, failOnBadRecord, IngestError } from '../generator/ingest/errors.ts';
import { readEuroVocDescriptors } from '../generator/ingest/eurovoc.ts';
import { readJsonStat } from '../generator/ingest/jsonstat.ts';
import { readLines } from '../generator/ingest/lines.ts';
import { CATALOG_SRC, tempDir } from './helpers/build.ts';

const data = (p: string) => join(CATALOG_SRC, 'data', p);
async function all<T>(gen: AsyncGenerator<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of gen) out.push(x);
  return out;
}
const rejects = async (p: Promise<unknown>) => p.then(() => null, (e: unknown) => e as IngestError);

test('aligned paragraphs: every line, all language versions, sorted', async () => {
  const lines = readFileSync(data('eurlex/multi_eurlex_paragraphs_aligned.jsonl'), 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const got = await all(readAlignedParagraphs(data('eurlex/multi_eurlex_paragraphs_aligned.jsonl'), 'x.jsonl', failOnBadRecord));
  assert.is(got.length, lines.length);
  got.forEach((p, i) => {
    assert.is(p.celex, lines[i].celex_id);
    assert.is(p.para, lines[i].para_idx);
    assert.is(p.line, i + 1);
    assert.equal(p.versions.map(([l]) => l), [...lines[i].langs].sort());
    for (const [l, t] of p.versions) assert.is(t, lines[i].text[l]);
  });
});

test('aligned paragraphs: malformed lines are located, fail by default, counted when skipping', async () => {
  const dir = await tempDir('ingest');
  const file = join(dir, 'p.jsonl');
  const good = { celex_id: '32006D0213', para_idx: 0, pivot_lang: 'en', langs: ['en', 'fi'], text: { en: 'a', fi: 'b' } };
  await writeFile(file, [
    JSON.stringify(good),
    '{"celex_id": "32006D0213", ',
    JSON.stringify({ ...good, para_idx: 1, langs: ['en', 'de'] }), // de listed, no text
    JSON.stringify({ ...good, para_idx: -1 }),
    '',
    JSON.stringify({ ...good, para_idx: 2 }),
  ].join('\n'));
  const err = await rejects(all(readAlignedParagraphs(file, 'data/p.jsonl', failOnBadRecord)));
  assert.instance(err, IngestError);
  assert.match(err!.message, /^data\/p\.jsonl:2: invalid JSON/);
  const counter = new BadRecordCounter();
  const got = await all(readAlignedParagraphs(file, 'data/p.jsonl', counter.handler));
  assert.equal(got.map((p) => [p.para, p.line]), [[0, 1], [2, 6]]);
  assert.is(counter.count, 3);
  assert.match(counter.samples[1], /^data\/p\.jsonl:3: text\.de is missing/);
  assert.match(counter.samples[2], /^data\/p\.jsonl:4: para_idx/);
});

test('line reader: CRLF, no final newline, multi-byte characters across read chunks', async () => {
  const dir = await tempDir('lines');
  const file = join(dir, 'l.txt');
  const long = 'ä'.repeat(700_000); // 1.4 MB: crosses the 1 MiB read chunk mid-character
  await writeFile(file, `one\r\n${long}\nthree`);
  const got = await all(readLines(file));
  assert.equal(got.map((l) => [l.line, l.text.length]), [[1, 3], [2, 700_000], [3, 5]]);
  assert.is(got[1].text, long);
});

test('Akoma Ntoso: one record per body eId, matching the fixture provision index', async () => {
  const got = await all(readAkomaNtoso(data('akn/finlex/act'), CATALOG_SRC, failOnBadRecord));
  const index = parseCsv(readFileSync(data('akn/finlex/provisions_index.csv')), { columns: true }) as Record<string, string>[];
  assert.is(got.length, index.length);
  assert.equal(got.map((p) => `${p.work}#${p.eid}`).sort(), index.map((r) => `${r.akn_act}#${r.akn_eid}`).sort());
  const byKey = new Map(got.map((p) => [`${p.work}#${p.eid}`, p]));
  let sameText = 0;
  for (const r of index) {
    const p = byKey.get(`${r.akn_act}#${r.akn_eid}`)!;
    assert.is(p.expression, r.akn_expression);
    assert.is(p.kind, r.kind);
    assert.is(p.lang, r.lang);
    assert.is(p.eli, r.eli);
    assert.is(p.parentEid ?? '', r.parent_eid);
    assert.is(p.num ?? '', r.num);
    assert.is(p.heading ?? '', r.heading);
    // the index joined text without spaces between some elements; compare word content
    if (p.text.replace(/\s/g, '') === r.text.replace(/\s/g, '')) sameText++;
  }
  assert.is(sameText, index.length);
});

test('Akoma Ntoso: a broken document is reported with line:column and XML path, skipped whole when allowed', async () => {
  const dir = await tempDir('akn');
  await mkdir(join(dir, 'a'), { recursive: true });
  const xml = readFileSync(data('akn/finlex/act/statute/2026/3/fin@/main.xml'), 'utf8');
  await writeFile(join(dir, 'a', 'good.xml'), xml);
  await writeFile(join(dir, 'a', 'broken.xml'), xml.replace('</heading>', '</headin>'));
  const err = await rejects(all(readAkomaNtoso(dir, dir, failOnBadRecord)));
  assert.instance(err, IngestError);
  assert.match(err!.message, /^a\/broken\.xml:71:\d+ \/akomaNtoso\/act\/body\/hcontainer\/section(\/heading)?: unexpected close tag/);
  const counter = new BadRecordCounter();
  const got = await all(readAkomaNtoso(dir, dir, counter.handler));
  assert.is(counter.count, 1);
  assert.is(got.length, 2, 'only the good document (2 provisions)');
  assert.ok(got.every((p) => p.file === 'a/good.xml'));

  await writeFile(join(dir, 'a', 'broken.xml'), xml.replace(/<FRBRuri value="\/akn\/fi\/act\/statute\/2026\/3"\/>/, ''));
  const missing = await rejects(all(readAkomaNtoso(dir, dir, failOnBadRecord)));
  assert.match(missing!.message, /^a\/broken\.xml:\/akomaNtoso\/\*\/meta\/identification: missing FRBR FRBRWork\/uri/);
});

test('CSV: every record with its line; bad rows located', async () => {
  const file = data('ecdc/covid19_weekly_cases_deaths_2023w27-w46.csv');
  const expected = parseCsv(readFileSync(file), { columns: true }) as Record<string, string>[];
  const got = await all(readCsv(file, 'ecdc.csv', failOnBadRecord));
  assert.equal(got.map((r) => r.record), expected);
  assert.is(got[0].line, 2);

  const dir = await tempDir('csv');
  const bad = join(dir, 'b.csv');
  await writeFile(bad, 'a,b\n1,2\n3\n4,5\n');
  const err = await rejects(all(readCsv(bad, 'b.csv', failOnBadRecord)));
  assert.match(err!.message, /^b\.csv:3: /);
  const counter = new BadRecordCounter();
  assert.equal((await all(readCsv(bad, 'b.csv', counter.handler))).map((r) => r.record.a), ['1', '4']);
  assert.is(counter.count, 1);
});

test('JSON-stat: one record per non-null cell, equal to the fixture flattened CSV', async () => {
  const got = await all(readJsonStat(data('eurostat/nama_gdp_c.jsonstat.json'), 'x', failOnBadRecord));
  const rows = parseCsv(readFileSync(data('eurostat/nama_gdp_c_rows.csv')), { columns: true }) as Record<string, string>[];
  assert.is(got.length, rows.length);
  const key = (r: Record<string, string>) => [r.unit, r.indic_na, r.geo, r.time, Number(r.value)].join('|');
  assert.equal(got.map((r) => key(r.record)).sort(), rows.map(key).sort());
  const it1990 = got.find((r) => r.record.geo === 'IT' && r.record.time === '1990')!;
  assert.is(it1990.record.value, '15800');
  assert.is(it1990.record.geo_label, 'Italy');
  assert.equal(it1990.key, ['EUR_HAB', 'B1GM', 'IT', '1990']);
  const two = await all(readJsonStat(data('eurostat/nama_gdp_c_geo_IT_FR.jsonstat.json'), 'x', failOnBadRecord));
  assert.equal([...new Set(two.map((r) => r.record.geo))].sort(), ['FR', 'IT']);
  assert.is(two.find((r) => r.record.geo === 'IT' && r.record.time === '1990')!.record.value, '15800');

  const dir = await tempDir('jsonstat');
  await writeFile(join(dir, 'bad.json'), '{"ds": {"value": [1], "dimension": {"id": ["a"], "size": [2], "a": {"category": {"index": {"x": 0}}}}}}');
  const err = await rejects(all(readJsonStat(join(dir, 'bad.json'), 'bad.json', failOnBadRecord)));
  assert.match(err!.message, /^bad\.json:\/ds\/dimension: dimension a/);
});

test('EuroVoc tables: every descriptor with its microthesauri and domains', async () => {
  const t = await readEuroVocDescriptors(data('eurovoc'), 'data/eurovoc', failOnBadRecord);
  const rows = parseCsv(readFileSync(data('eurovoc/descriptors.csv')), { columns: true }) as Record<string, string>[];
  assert.is(t.size, rows.length);
  const r = rows.find((x) => x.mt_eurovoc_ids.includes(';'))!;
  assert.equal(t.get(r.descriptor_id)!.microthesauri, r.mt_eurovoc_ids.split(';'));
});

test.run();
