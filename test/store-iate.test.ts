// @tier: quick  (npm run test:quick: in-process)
// IATE (issue 25) from the files in catalog-src/data/iate/: the adapter's counts per file
// (concepts, terms, languages, domains) against the files read independently here with
// csv-parse and JSON.parse; the P unit of a concept as stored (citation, definition, typed English
// terms, terms per language, domains); search by any term in any language, case and accents
// folded; broken rows of either format located as file:line; a broken row fails the whole build
// and leaves the previous store current.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { buildUnitStore } from '../generator/store/build-store.ts';
import { BadRecordCounter, failOnBadRecord, IngestError, type BadRecordHandler } from '../generator/ingest/errors.ts';
import { readIateEntries, readIateTerms, splitJsonArray, type IateEntry, type IateTerm } from '../generator/ingest/iate.ts';
import type { CatalogSrc } from '../generator/model.ts';
import { iateConceptUnit } from '../generator/store/units.ts';
import { openUnitStore } from '../payments/store/unit-store.ts';
import { CATALOG_SRC, copyCatalogSrc, tempDir } from './helpers/build.ts';
import { BUILT_AT, catalog, scanStore } from './helpers/store-fixtures.ts';

const CSV = 'data/iate/OP_Covid19_IATE_2872020.csv';
const JSON_FILE = 'data/iate/iate_data_covid19_first330.json';
const LANGS = ['en', 'cs', 'da', 'de', 'es', 'fi', 'fr', 'it', 'nl', 'pt'];

// ------------------------------------------------------------------ the files, read independently
const csvRows = parseCsv(readFileSync(join(CATALOG_SRC, CSV)), { columns: true }) as Record<string, string>[];
const entries = JSON.parse(readFileSync(join(CATALOG_SRC, JSON_FILE), 'utf8')) as Record<string, any>[];
const count = <T>(xs: T[]) => {
  const m: Record<string, number> = {};
  for (const x of xs) m[String(x)] = (m[String(x)] ?? 0) + 1;
  return m;
};
const csvIds = [...new Set(csvRows.map((r) => r['IATE ID']))];
const jsonIds = entries.map((e) => String(e.id_concept));
/** Terms of a language field as the pull joined them. */
const pieces = (v: string | undefined) => (v ?? '').split(', ').filter((t) => t.trim() !== '');

async function all<T>(gen: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const x of gen) out.push(x);
  return out;
}
const readTerms = (file: string, name: string, onBad: BadRecordHandler = failOnBadRecord) => all(readIateTerms(file, name, onBad));
const readEntries = (file: string, name: string, onBad: BadRecordHandler = failOnBadRecord) => all(readIateEntries(file, name, onBad));

let terms: IateTerm[];
let pulled: IateEntry[];

test.before(async () => {
  terms = await readTerms(join(CATALOG_SRC, CSV), CSV);
  pulled = await readEntries(join(CATALOG_SRC, JSON_FILE), JSON_FILE);
});

test('both files are byte copies of the fixture set, hashes listed in PROVENANCE.md', () => {
  const provenance = readFileSync(join(CATALOG_SRC, 'data/PROVENANCE.md'), 'utf8');
  for (const [f, h] of [[CSV, '8624f3a0ad000e13'], [JSON_FILE, 'a6adaecb53aaee84']]) {
    assert.is(createHash('sha256').update(readFileSync(join(CATALOG_SRC, f))).digest('hex').slice(0, 16), h, f);
    assert.ok(provenance.includes(`\`${f.slice('data/'.length)}\` | \`${h}\``), `PROVENANCE.md lists ${f} with its hash`);
  }
});

test('CSV release: 1,131 English term rows of 458 concepts, every type and evaluation as published', () => {
  assert.is(terms.length, csvRows.length);
  assert.is(terms.length, 1131);
  assert.is(new Set(terms.map((t) => t.id)).size, csvIds.length);
  assert.is(csvIds.length, 458);
  assert.equal(terms.map((t) => [t.id, t.term, t.type, t.evaluation, t.url]), csvRows.map((r) => [r['IATE ID'], r.TERM, r['TERM TYPE'], r.EVALUATION, r['IATE entry URL']]));
  // the counts the provenance states, recomputed from the file
  assert.equal(count(terms.map((t) => t.type)), count(csvRows.map((r) => r['TERM TYPE'])));
  assert.equal(count(terms.map((t) => t.type)), { Term: 800, Redirection: 187, Abbrev: 97, 'Short Form': 38, Appellation: 6, Phrase: 3 });
  assert.equal(count(terms.map((t) => t.evaluation)), { '': 1061, preferred: 28, admitted: 17, obsolete: 17, deprecated: 6, proposed: 2 });
  assert.equal([terms[0].line, terms[0].term, terms[0].id], [2, 'Pan-European Guarantee Fund', '3589501']);
  assert.equal([terms[1130].line, terms[1130].file], [1132, CSV]);
});

test('API pull: 330 concepts, terms in 10 languages, domain paths', () => {
  assert.is(pulled.length, entries.length);
  assert.is(pulled.length, 330);
  assert.equal(pulled.map((e) => e.id), jsonIds);
  // terms per language (as the pull joins them with ", "), and in how many concepts each language has terms
  const perLang = (from: (lang: string) => number[]) => Object.fromEntries(LANGS.map((l) => [l, from(l).reduce((a, b) => a + b, 0)]));
  const expectedTerms = perLang((l) => entries.map((e) => pieces(e[l]).length));
  const gotTerms = perLang((l) => pulled.map((e) => pieces(e.terms.find(([x]) => x === l)?.[1]).length));
  assert.equal(gotTerms, expectedTerms);
  const expectedConcepts = perLang((l) => entries.map((e) => (pieces(e[l]).length ? 1 : 0)));
  assert.equal(perLang((l) => pulled.map((e) => (e.terms.some(([x]) => x === l) ? 1 : 0))), expectedConcepts);
  assert.is(Object.values(gotTerms).reduce((a, b) => a + b, 0), entries.reduce((n, e) => n + LANGS.reduce((m, l) => m + pieces(e[l]).length, 0), 0));
  assert.is(new Set(pulled.flatMap((e) => e.terms.map(([l]) => l))).size, 10, 'ten languages');
  assert.is(expectedConcepts.en, 330, 'every concept has English terms');
  assert.is(pulled.reduce((n, e) => n + e.terms.length, 0), entries.reduce((n, e) => n + LANGS.filter((l) => pieces(e[l]).length).length, 0), 'language rows');
  // definitions with their source note, kept as published; two concepts have none
  assert.is(pulled.filter((e) => e.definition).length, entries.filter((e) => e.en_def.trim()).length);
  assert.is(pulled.filter((e) => !e.definition).length, 2);
  // domain paths: the pull joins them with ", " too
  assert.is(pulled.reduce((n, e) => n + e.domains.length, 0), entries.reduce((n, e) => n + e.domains.split(', ').length, 0));
  const sars = pulled.find((e) => e.id === '3588006')!;
  assert.equal([sars.file, sars.where, sars.index, sars.url], [JSON_FILE, '1:2', 0, 'https://iate.europa.eu/entry/result/3588006']);
  assert.match(sars.definition, /^virus in the coronavirus family, .* - COM-Terminology Coordination and COM-EN, based on:World Health Organization \(WHO\)/);
  assert.equal(sars.domains, ['SOCIAL QUESTIONS > health > medical science > epidemiology > disease vector', 'SCIENCE > natural and applied sciences > life sciences']);
  assert.is(sars.terms.find(([l]) => l === 'cs')![1], entries[0].cs);
  // every pulled concept is in the release; the release has 128 concepts more
  assert.ok(jsonIds.every((id) => csvIds.includes(id)));
  assert.is(csvIds.filter((id) => !jsonIds.includes(id)).length, 128);
});

// ------------------------------------------------------------------ broken input, located

/** Writes a broken copy and expects the reader to fail with `file:where: reason`. */
async function broken(name: string, body: string | Buffer, read: (file: string, onBad: BadRecordHandler) => Promise<unknown>, expected: RegExp) {
  const dir = await tempDir('iate-broken');
  const file = join(dir, name);
  await writeFile(file, body);
  const err = await read(file, failOnBadRecord).then(() => null, (e: unknown) => e as IngestError);
  assert.instance(err, IngestError, `${name}: ${String(err)}`);
  assert.match(err!.message, expected);
}

test('CSV: a malformed row, a wrong column set, bad encoding and a cut-off file are located as file:line', async () => {
  const text = readFileSync(join(CATALOG_SRC, CSV), 'utf8');
  const lines = text.split('\n');
  const read = (f: string, onBad: BadRecordHandler) => readTerms(f, 'data/iate/t.csv', onBad);
  const at = (n: number, edit: (l: string) => string) => lines.map((l, i) => (i === n - 1 ? edit(l) : l)).join('\n');
  await broken('t.csv', at(5, (l) => l.replace(',3589927,', ',35899x7,')), read, /^data\/iate\/t\.csv:5: IATE ID must be a number, got "35899x7"/);
  await broken('t.csv', at(7, (l) => l.replace('result/3589927', 'result/3589928')), read, /^data\/iate\/t\.csv:7: IATE entry URL must be https:\/\/iate\.europa\.eu\/entry\/result\/3589927/);
  await broken('t.csv', at(10, (l) => l.replace('teaching staff', '')), read, /^data\/iate\/t\.csv:10: IATE 774241 has an empty TERM/);
  await broken('t.csv', at(12, (l) => `${l}great`), read, /^data\/iate\/t\.csv:12: EVALUATION must be empty or one of preferred, admitted, deprecated, obsolete, proposed, got "great"/);
  await broken('t.csv', at(20, (l) => `${l},extra`), read, /^data\/iate\/t\.csv:20: /);
  await broken('t.csv', at(1, (l) => l.replace('TERM TYPE', 'TYPE')), read, /^data\/iate\/t\.csv:1: wrong column set: missing TERM TYPE/);
  await broken('t.csv', Buffer.concat([Buffer.from(lines.slice(0, 3).join('\n') + '\n'), Buffer.from('Fonds européen,https://iate.europa.eu/entry/result/3589501,3589501,Term,\n', 'latin1')]), read, /^data\/iate\/t\.csv:4: not valid UTF-8/);
  await broken('t.csv', text.slice(0, text.indexOf('teaching staff') + 3) + '"', read, /^data\/iate\/t\.csv:10: /);
  // with --skip-bad-records the bad row is counted and the others read
  const dir = await tempDir('iate-skip');
  await writeFile(join(dir, 't.csv'), at(5, (l) => l.replace(',3589927,', ',x,')));
  const counter = new BadRecordCounter();
  assert.is((await readTerms(join(dir, 't.csv'), 't.csv', counter.handler)).length, 1130);
  assert.equal([counter.count, counter.samples], [1, ['t.csv:5: IATE ID must be a number, got "x"']]);
});

test('JSON pull: a malformed entry, a truncated file and bad encoding are located as file:line:column', async () => {
  const text = readFileSync(join(CATALOG_SRC, JSON_FILE), 'utf8');
  const split = splitJsonArray(text);
  assert.ok(split.ok);
  assert.is(split.items.length, 330);
  const read = (f: string, onBad: BadRecordHandler) => readEntries(f, 'data/iate/p.json', onBad);
  const col = (i: number) => split.items[i][0] + 1; // the pull is one line: the column is the offset + 1
  const replaceIn = (i: number, from: string, to: string) => {
    const [s, e] = split.items[i];
    return text.slice(0, s) + text.slice(s, e).replace(from, to) + text.slice(e);
  };
  await broken('p.json', replaceIn(2, '"id_concept": ', '"id_concept": "x'), read, new RegExp(`^data/iate/p\\.json:1:${col(2)}: entry 3: invalid JSON`));
  await broken('p.json', replaceIn(4, `"iate_link": "https://iate.europa.eu/entry/result/${entries[4].id_concept}"`, '"iate_link": "https://example.org/1"'), read, new RegExp(`^data/iate/p\\.json:1:${col(4)}: entry 5: iate_link of IATE ${entries[4].id_concept} must be https://iate\\.europa\\.eu/entry/result/${entries[4].id_concept}`));
  await broken('p.json', replaceIn(6, '"en": ', '"en": 7, "xx": '), read, new RegExp(`^data/iate/p\\.json:1:${col(6)}: entry 7: IATE ${entries[6].id_concept}: unknown field\\(s\\) xx`));
  await broken('p.json', replaceIn(8, '"en": "', '"en": "", "en_x": "'), read, /^data\/iate\/p\.json:1:\d+: entry 9: IATE \d+: unknown field/);
  // truncated: the file ends inside entry 330
  await broken('p.json', text.slice(0, split.items[329][0] + 200), read, new RegExp(`^data/iate/p\\.json:1:${col(329)}: entry 330: the entry is cut off`));
  // a pretty-printed pull is located by its own lines
  const pretty = JSON.stringify([entries[0], { ...entries[1], id_concept: -1 }], null, 2);
  await broken('p.json', pretty, read, new RegExp(`^data/iate/p\\.json:${pretty.split('\n').findIndex((l, i) => i > 2 && l === '  {') + 1}:3: entry 2: id_concept must be an IATE id`));
  // bad encoding: the pull is ASCII (json.dumps escapes every other character), so an edit saved
  // as Latin-1 shows as a lone byte: located at that character
  const one = text.slice(0, split.items[0][1]) + ']';
  const i = one.indexOf('coronavirus family') + 'coronavirus famil'.length;
  const latin = Buffer.concat([Buffer.from(one.slice(0, i)), Buffer.from([0xe9]), Buffer.from(one.slice(i + 1))]); // "famil\xe9"
  await broken('p.json', latin, read, new RegExp(`^data/iate/p\\.json:1:${i + 1}: entry 1: not valid UTF-8`));
  // with --skip-bad-records a broken entry is skipped alone
  const dir = await tempDir('iate-skip-json');
  await writeFile(join(dir, 'p.json'), replaceIn(2, '"id_concept": ', '"id_concept": "x'));
  const counter = new BadRecordCounter();
  assert.is((await readEntries(join(dir, 'p.json'), 'p.json', counter.handler)).length, 329);
  assert.is(counter.count, 1);
});

test('a concept only an API pull has becomes a unit from the pull alone, titled by its first English term', async () => {
  const cat0 = await catalog();
  const e = pulled.find((x) => x.id === '907309')!; // "one-off measure, one-off fiscal measure, one-off"
  const b = iateConceptUnit(cat0.sources.get('eu.iate')!, [], e);
  assert.is(b.unit.ref, 'eu.iate:907309');
  assert.is(b.unit.title, entries.find((x) => x.id_concept === 907309)!.en.split(', ')[0]);
  assert.equal(b.unit.citation, { label: `IATE 907309, “${b.unit.title}”`, publisher: cat0.sources.get('eu.iate')!.publisher, iate: '907309', uri: 'https://iate.europa.eu/entry/result/907309', url: 'https://iate.europa.eu/entry/result/907309' });
  assert.equal(b.unit.rows.map((r) => r.kind), ['definition', ...e.terms.map(() => 'terms'), ...e.domains.map(() => 'domain')]);
  assert.not.ok(b.searchText.includes('FINANCE > budget'), 'domain paths are not searched');
  assert.ok(b.searchText.includes('kertaluonteinen toimenpide'), 'terms of every language are');
});

// ------------------------------------------------------------------ the store

let cat: CatalogSrc;
let storeRoot: string;
let scanned: { ref: string; source: string; kind: string; title?: string; citation: any; rows: { lang: string; kind?: string; text: string; term_type?: string; evaluation?: string }[] }[];
let productsOf: string[][];

test('store: one P unit per concept of either file, all sold in svc-language-eu, rows as counted from the files', async () => {
  cat = await catalog();
  storeRoot = await tempDir('store-iate');
  const built = await buildUnitStore(cat, { storeRoot, builtAt: BUILT_AT, skipBadRecords: false });
  const scan = await scanStore(join(storeRoot, built.store_version!));
  const iate = scan.units.map((u, i) => [u, scan.products[i]] as const).filter(([u]) => u.source === 'eu.iate');
  scanned = iate.map(([u]) => u as any);
  productsOf = iate.map(([, p]) => p);
  const ids = [...new Set([...csvIds, ...jsonIds])];
  assert.is(scanned.length, ids.length);
  assert.is(scanned.length, 458);
  assert.equal(scanned.map((u) => u.ref).sort(), ids.map((id) => `eu.iate:${id}`).sort());
  const listing = cat.products.filter((p) => p.sources.some((s) => s.source === 'eu.iate')).map((p) => p.product_id);
  assert.equal(listing, ['svc-language-eu']);
  for (const p of productsOf) assert.equal(p, listing);
  // rows: definition + one per release term row + one per language of the pull + one per domain path
  const expectedRows = ids.reduce((n, id) => {
    const e = entries.find((x) => String(x.id_concept) === id);
    return n + csvRows.filter((r) => r['IATE ID'] === id).length + (e ? (e.en_def.trim() ? 1 : 0) + LANGS.filter((l) => pieces(e[l]).length).length + e.domains.split(', ').length : 0);
  }, 0);
  assert.is(scanned.reduce((n, u) => n + u.rows.length, 0), expectedRows);
  assert.equal(built.products['svc-language-eu']['eu.iate'], { units: 458, rows: expectedRows });
  for (const u of scanned) {
    assert.is(u.kind, 'P');
    const id = u.ref.slice('eu.iate:'.length);
    assert.equal([u.citation.iate, u.citation.url, u.citation.uri], [id, `https://iate.europa.eu/entry/result/${id}`, `https://iate.europa.eu/entry/result/${id}`], u.ref);
    assert.is(u.citation.publisher, cat.sources.get('eu.iate')!.publisher);
  }
});

test('store: a concept of both files, and one of the release only', () => {
  const sars = scanned.find((u) => u.ref === 'eu.iate:3588006')!;
  const e = entries[0];
  const rel = csvRows.filter((r) => r['IATE ID'] === '3588006');
  assert.equal(sars.rows, [
    { lang: 'en', kind: 'definition', text: e.en_def },
    ...rel.map((r) => ({ lang: 'en', kind: 'term', text: r.TERM, term_type: r['TERM TYPE'], ...(r.EVALUATION ? { evaluation: r.EVALUATION } : {}) })),
    ...LANGS.filter((l) => e[l]).map((l) => ({ lang: l, kind: 'terms', text: e[l] })),
    ...e.domains.split(', ').map((d: string) => ({ lang: 'en', kind: 'domain', text: d })),
  ]);
  assert.ok(rel.some((r) => r.EVALUATION), 'the evaluation is carried where the release gives one');
  assert.is(sars.title, rel.find((r) => r.EVALUATION === 'preferred')?.TERM ?? rel.find((r) => r['TERM TYPE'] === 'Term')!.TERM);
  assert.is(sars.citation.label, `IATE 3588006, “${sars.title}”`);
  // a concept only the release has: its English terms, typed, and nothing invented
  const only = csvIds.find((id) => !jsonIds.includes(id))!;
  const u = scanned.find((x) => x.ref === `eu.iate:${only}`)!;
  assert.equal(u.rows, csvRows.filter((r) => r['IATE ID'] === only).map((r) => ({ lang: 'en', kind: 'term', text: r.TERM, term_type: r['TERM TYPE'], ...(r.EVALUATION ? { evaluation: r.EVALUATION } : {}) })));
});

/** Case- and accent-folded whole-word test, written independently of the tokenizer. */
const fold = (s: string) => s.normalize('NFKD').replace(/\p{M}/gu, '').toLowerCase();
const hasWord = (text: string, w: string) => new RegExp(`(^|[^\\p{L}\\p{N}])${fold(w)}($|[^\\p{L}\\p{N}])`, 'u').test(fold(text));

test('search: a concept is found by any of its terms in any language, case and accents folded', async () => {
  const store = await openUnitStore(storeRoot);
  try {
    for (const q of ['koronavirus', 'Coronavirus', 'KORONAVIRUS', 'coronavírus', 'Gavi', 'toipilasluovuttaja']) {
      // the concepts with the word in a term or the definition, from the files
      const expected = new Set<string>();
      for (const e of entries) if ([e.en_def, ...LANGS.map((l) => e[l] ?? '')].some((t: string) => hasWord(t, q))) expected.add(`eu.iate:${e.id_concept}`);
      for (const r of csvRows) if (hasWord(r.TERM, q)) expected.add(`eu.iate:${r['IATE ID']}`);
      assert.ok(expected.size > 0, q);
      const got = (await store.search('svc-language-eu', q, 1000)).map((u) => u.ref).filter((r) => r.startsWith('eu.iate:'));
      assert.equal(got.sort(), [...expected].sort(), q);
    }
    // "koronavirus" is only in Czech and Finnish terms: the English-only concepts of the release do not match
    const k = await store.search('svc-language-eu', 'koronavirus', 1000);
    assert.ok(k.length > 0 && k.every((u) => u.source === 'eu.iate'));
    for (const u of k) assert.is(u.licence.attribution, cat.sources.get('eu.iate')!.ruling!.attribution, 'units are read with their source\'s ruling');
    for (const u of k) assert.ok(u.rows.some((r) => (r.lang === 'cs' || r.lang === 'fi') && hasWord(r.text, 'koronavirus')), u.ref);
    // domain paths are not searched (every health concept would match "health")
    const dom = await store.search('svc-language-eu', 'epidemiology', 1000);
    const byDomainOnly = entries.filter((e) => e.domains.toLowerCase().includes('epidemiology') && ![e.en_def, ...LANGS.map((l) => e[l] ?? '')].some((t) => hasWord(t, 'epidemiology')));
    assert.ok(byDomainOnly.length > 0);
    for (const e of byDomainOnly) assert.not.ok(dom.some((u) => u.ref === `eu.iate:${e.id_concept}`), `${e.id_concept} matched by its domain`);
  } finally {
    await store.close();
  }
});

// ------------------------------------------------------------------ a broken row fails the build

async function expectBuildFails(file: string, breakIt: (text: string) => string | Buffer, where: RegExp) {
  const src = await copyCatalogSrc();
  const path = join(src, file);
  await writeFile(path, breakIt(await readFile(path, 'utf8')));
  const before = await readFile(join(storeRoot, 'CURRENT'), 'utf8');
  const listing = (await readdir(storeRoot)).sort();
  const err = await buildUnitStore(await catalog(src), { storeRoot, builtAt: BUILT_AT, skipBadRecords: false }).then(() => null, (e: Error) => e);
  assert.ok(err, `${file}: the build must fail`);
  assert.match(err!.message, where, file);
  assert.is(await readFile(join(storeRoot, 'CURRENT'), 'utf8'), before, `${file}: CURRENT unchanged`);
  assert.equal((await readdir(storeRoot)).sort(), listing, `${file}: no partial store left behind`);
}

test('a malformed row of either file fails the build naming file and line; the previous store stays current', async () => {
  await expectBuildFails(CSV, (t) => t.replace('\nODL,https://iate.europa.eu/entry/result/145226,145226,', '\nODL,https://iate.europa.eu/entry/result/145226,14522x,'), /^data\/iate\/OP_Covid19_IATE_2872020\.csv:13: IATE ID must be a number, got "14522x"/);
  await expectBuildFails(JSON_FILE, (t) => t.replace('"id_concept": 3588006,', '"id_concept": 3588006, "sv": "coronavirus",'), /^data\/iate\/iate_data_covid19_first330\.json:1:2: entry 1: IATE 3588006: unknown field\(s\) sv/);
  // and the store still serves IATE as before
  const store = await openUnitStore(storeRoot);
  try {
    assert.ok((await store.search('svc-language-eu', 'koronavirus', 5)).some((u) => u.ref === 'eu.iate:3588006'));
  } finally {
    await store.close();
  }
});

test.run();
