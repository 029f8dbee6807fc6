// Issue 20: `lds check` reports every finding of a catalog-src copy in one run - a schema error
// and an unknown source in the same file, an unused licence (warning) and a wrong licence text
// hash - each at the line and column of its value, as text, GitHub workflow commands and JSON;
// exits 0/1/2; `lds licence hash` prints what check asks for and `check --fix` writes it;
// `npx lds --help` runs this checkout's command with no registry reachable; `lds --version`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cp, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CATALOGUE_FORMAT } from '../contract/catalogue.ts';
import { STORE_FORMAT } from '../contract/store-format.ts';
import { jsonSpans, JsonSyntaxError } from '../generator/json-positions.ts';
import { CATALOG_SRC, REPO, tempDir } from './helpers/build.ts';

const LDS = join(REPO, 'bin', 'lds.mjs');

/** The real command, run from `cwd` (as a publisher's CI runs it from the repository root). */
function lds(args: string[], cwd: string) {
  const r = spawnSync(process.execPath, [LDS, ...args], { cwd, encoding: 'utf8', env: { ...process.env } });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Line and column (1-based) where `needle` starts in `text`, computed from the file as written. */
function where(text: string, needle: string, after = 0): { line: number; col: number } {
  const at = text.indexOf(needle, after);
  assert.ok(at >= 0, `${needle} is in the file`);
  const before = text.slice(0, at).split('\n');
  return { line: before.length, col: before.at(-1)!.length + 1 };
}

const PRODUCT = 'products/svc-media-eu.json';
const SOURCE = 'sources/fi.finlex.json';
const UNUSED = 'licences/odc-by-1.0.json';
const WRONG_HASH = 'e'.repeat(64);

/** A broken copy in <tmp>/catalog-src-copy and the expected findings, located from the text written. */
async function brokenCopy() {
  const parent = await tempDir('check');
  const src = join(parent, 'catalog-src-copy');
  await cp(CATALOG_SRC, src, { recursive: true });

  // One file, two findings: a schema error (launch_state not in the enum) and an unknown source.
  const product = JSON.parse(await readFile(join(src, PRODUCT), 'utf8'));
  product.launch_state = 'live';
  product.sources[1].source = 'global.nowhere';
  const productText = JSON.stringify(product, null, 2) + '\n';
  await writeFile(join(src, PRODUCT), productText);

  // A licence that nothing uses, with its text.
  await writeFile(join(src, 'licences/texts/odc-by-1.0.txt'), 'Open Data Commons Attribution License v1.0 (summary)\n');
  const unusedText = JSON.stringify(
    { id: 'odc-by-1.0', title: 'Open Data Commons Attribution License v1.0', spdx: 'ODC-By-1.0', iri: 'http://publications.europa.eu/resource/authority/licence/ODC_BY', legal_code_url: 'https://opendatacommons.org/licenses/by/1-0/', deed_url: 'https://opendatacommons.org/licenses/by/summary/', text: 'texts/odc-by-1.0.txt' },
    null,
    2,
  );
  await writeFile(join(src, UNUSED), unusedText);

  // A ruling whose quote_sha256 is well-formed but not the hash of its licence text.
  const source = JSON.parse(await readFile(join(src, SOURCE), 'utf8'));
  source.ruling.quote_sha256 = WRONG_HASH;
  const sourceText = JSON.stringify(source, null, 2) + '\n';
  await writeFile(join(src, SOURCE), sourceText);
  const quoteHash = createHash('sha256').update(await readFile(join(src, source.ruling.quote_file))).digest('hex');
  assert.is.not(quoteHash, WRONG_HASH);

  const expected = [
    { severity: 'error', file: PRODUCT, pointer: '/launch_state', ...where(productText, '"live"', productText.indexOf('"launch_state"')), reason: /must be equal to one of the allowed values/ },
    { severity: 'error', file: PRODUCT, pointer: '/sources/1/source', ...where(productText, '"global.nowhere"'), reason: /unknown source "global\.nowhere"/ },
    { severity: 'error', file: SOURCE, pointer: '/ruling/quote_sha256', ...where(sourceText, `"${WRONG_HASH}"`), reason: new RegExp(`quote_sha256 is "${WRONG_HASH}" but the licence text ${source.ruling.quote_file} hashes to ${quoteHash}`) },
    { severity: 'warning', file: UNUSED, pointer: '/id', ...where(unusedText, '"odc-by-1.0"'), reason: /licence "odc-by-1.0" is not used/ },
  ];
  return { parent, src, expected, quoteHash, quoteFile: source.ruling.quote_file as string };
}

/** The value at an RFC 6901 pointer. */
function at(doc: unknown, ptr: string): unknown {
  return ptr === '' ? doc : ptr.slice(1).split('/').map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~')).reduce((v: any, k) => v[k], doc);
}

test('json positions: every value of every catalog-src file is where its span says (its text parses to the value at its pointer)', async () => {
  const { readdirSync } = await import('node:fs');
  const files = readdirSync(CATALOG_SRC, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith('.json') && !e.parentPath.includes('/data'));
  assert.ok(files.length > 40, `read the definitions (${files.length})`);
  const tricky = '{"a~b/c": [1, {"x": "}\\"\u00e9]"}], "":\n  -1.5e3, "n": [[], {}, null, true]}';
  for (const text of [...files.map((e) => readFileSync(join(e.parentPath, e.name), 'utf8')), tricky]) {
    const doc = JSON.parse(text);
    const spans = jsonSpans(text);
    for (const [ptr, span] of spans) {
      assert.equal(JSON.parse(text.slice(span.start, span.end)), at(doc, ptr), ptr);
      const lines = text.slice(0, span.start).split('\n');
      assert.equal([span.line, span.col], [lines.length, lines.at(-1)!.length + 1], ptr);
    }
  }
  assert.ok(jsonSpans(tricky).has('/a~0b~1c/1/x'));
  assert.ok(jsonSpans(tricky).has('/'));
  for (const bad of ['{"a": 1,}', '[1 2]', '{"a" 1}', '"open', '{} x']) assert.throws(() => jsonSpans(bad), (e: unknown) => e instanceof JsonSyntaxError);
});

test('text: all four findings in one run, each at its line and column, then the summary naming the folder; exit 1', async () => {
  const { parent, expected } = await brokenCopy();
  const r = lds(['check', '--src', 'catalog-src-copy'], parent);
  assert.is(r.code, 1, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.is(lines.length, expected.length + 1, `one line per finding, then the summary:\n${r.stdout}`);
  for (const e of expected) {
    const prefix = `catalog-src-copy/${e.file}:${e.line}:${e.col}: ${e.severity}: ${e.file}#${e.pointer}: `;
    const line = lines.find((l) => l.startsWith(prefix));
    assert.ok(line, `a line starting ${prefix} in\n${r.stdout}`);
    assert.match(line!.slice(prefix.length), e.reason);
  }
  assert.is(lines.at(-1), 'catalog-src-copy: 3 errors, 1 warning');
});

test('github: workflow commands with repository-relative paths, then the summary', async () => {
  const { parent, expected } = await brokenCopy();
  const r = lds(['check', '--src', 'catalog-src-copy', '--format', 'github'], parent);
  assert.is(r.code, 1, r.stderr);
  const lines = r.stdout.trimEnd().split('\n');
  assert.is(lines.length, expected.length + 1, r.stdout);
  for (const e of expected) {
    const prefix = `::${e.severity} file=catalog-src-copy/${e.file},line=${e.line},col=${e.col}::${e.file}#${e.pointer}: `;
    const line = lines.find((l) => l.startsWith(prefix));
    assert.ok(line, `a line starting ${prefix} in\n${r.stdout}`);
    assert.match(line!.slice(prefix.length), e.reason);
  }
  assert.is(lines.at(-1), 'catalog-src-copy: 3 errors, 1 warning');
});

test('json: one document with every finding', async () => {
  const { src, expected } = await brokenCopy();
  // From another directory: the folder is named as given, files as paths from here.
  const r = lds(['check', '--src', src, '--format', 'json'], REPO);
  assert.is(r.code, 1, r.stderr);
  const doc = JSON.parse(r.stdout);
  assert.is(doc.src, src);
  assert.is(doc.errors, 3);
  assert.is(doc.warnings, 1);
  assert.is(doc.findings.length, 4);
  for (const e of expected) {
    const f = doc.findings.find((x: { pointer: string; file: string }) => x.pointer === e.pointer && x.file === join(src, e.file));
    assert.ok(f, `finding ${e.file}#${e.pointer} in ${r.stdout}`);
    assert.equal(Object.keys(f).sort(), ['col', 'file', 'line', 'message', 'pointer', 'severity']);
    assert.equal([f.severity, f.line, f.col], [e.severity, e.line, e.col], `${e.file}#${e.pointer}`);
    assert.match(f.message, e.reason);
  }
});

test('build refuses the same input with the same findings', async () => {
  const { parent, expected } = await brokenCopy();
  const out = join(parent, 'dist');
  const r = lds(['build', '--no-store', '--local', '--src', 'catalog-src-copy', '--out', out, '--store-root', join(parent, 'store')], parent);
  assert.is(r.code, 1);
  for (const e of expected) assert.ok(r.stderr.includes(`catalog-src-copy/${e.file}:${e.line}:${e.col}: ${e.severity}: ${e.file}#${e.pointer}: `), `${e.file}#${e.pointer} in\n${r.stderr}`);
  assert.match(r.stderr, /catalog-src-copy: 3 errors, 1 warning/);
  assert.not.match(r.stderr, /catalog-src has/, 'names the folder it was given');
});

test('licence hash prints what check asks for; check --fix writes it and says so, and only the hash changes', async () => {
  const { parent, src, quoteHash, quoteFile } = await brokenCopy();
  const h = lds(['licence', 'hash', join('catalog-src-copy', quoteFile)], parent);
  assert.is(h.code, 0, h.stderr);
  assert.is(h.stdout.trim(), quoteHash);

  const before = await readFile(join(src, SOURCE), 'utf8');
  const r = lds(['check', '--src', 'catalog-src-copy', '--fix'], parent);
  assert.match(r.stderr, new RegExp(`fixed catalog-src-copy/${SOURCE}: ${SOURCE}#/ruling/quote_sha256: "${WRONG_HASH}" -> "${quoteHash}"`));
  const after = await readFile(join(src, SOURCE), 'utf8');
  assert.is(after, before.replace(WRONG_HASH, quoteHash), 'the hash is the only change, formatting kept');
  // The report after the fix: the hash error is gone, the rest stays.
  assert.is(r.code, 1);
  assert.not.match(r.stdout, /quote_sha256/);
  assert.is(r.stdout.trimEnd().split('\n').at(-1), 'catalog-src-copy: 2 errors, 1 warning');

  assert.is(lds(['licence', 'hash', 'no-such-file.txt'], parent).code, 2);
});

test('exit 0 with warnings only, 0 on the shipped catalog-src, 2 when the folder cannot be checked', async () => {
  const parent = await tempDir('check');
  const src = join(parent, 'ok');
  await cp(CATALOG_SRC, src, { recursive: true });
  const clean = lds(['check', '--src', 'ok'], parent);
  assert.is(clean.code, 0, clean.stdout + clean.stderr);
  assert.is(clean.stdout.trim(), 'ok: 0 errors, 0 warnings');

  await writeFile(join(src, 'licences/texts/unused.txt'), 'text\n');
  await writeFile(join(src, 'licences/unused-1.json'), JSON.stringify({ id: 'unused-1', title: 'U', spdx: 'U', iri: 'http://example.org/u', legal_code_url: 'https://example.org/u', deed_url: 'https://example.org/u', text: 'texts/unused.txt' }));
  const warned = lds(['check', '--src', 'ok', '--format', 'github'], parent);
  assert.is(warned.code, 0, warned.stdout);
  assert.match(warned.stdout, /^::warning file=ok\/licences\/unused-1\.json,line=1,col=7::licences\/unused-1\.json#\/id: /m);

  const missing = lds(['check', '--src', 'no-such-folder', '--format', 'json'], parent);
  assert.is(missing.code, 2);
  assert.match(missing.stderr, /could not check no-such-folder: .*does not exist/);
  const noSchemas = join(parent, 'empty');
  await cp(join(src, 'catalogue.json'), join(noSchemas, 'catalogue.json'));
  assert.is(lds(['check', '--src', noSchemas], parent).code, 2);

  // Issue 34: build ends as check does when it cannot run at all (it ended 1, "the input has errors").
  const store = ['--out', join(parent, 'dist'), '--store-root', join(parent, 'store')];
  const buildMissing = lds(['build', '--no-store', '--src', 'no-such-folder', ...store], parent);
  assert.is(buildMissing.code, 2, buildMissing.stderr);
  assert.match(buildMissing.stderr, /no-such-folder does not exist/);
  assert.is(lds(['build', '--no-store', '--src', noSchemas, ...store], parent).code, 2);
});

test('a value of the wrong type is reported with the value found and the type expected (check and build)', async () => {
  const parent = await tempDir('check');
  const src = join(parent, 'typed');
  await cp(CATALOG_SRC, src, { recursive: true });
  const file = 'products/svc-energy-eu.json';
  const product = JSON.parse(await readFile(join(src, file), 'utf8'));
  product.pricing.draw_unit_price_micro_eur = '5000';
  product.row_count_at_launch = 1.5;
  product.keywords = 'energy';
  await writeFile(join(src, file), JSON.stringify(product, null, 2) + '\n');
  const expected = [
    `${file}#/pricing/draw_unit_price_micro_eur: must be an integer, found the string "5000"`,
    `${file}#/row_count_at_launch: must be an integer, found the number 1.5`,
    `${file}#/keywords: must be a list, found the string "energy"`,
  ];
  const checked = lds(['check', '--src', 'typed'], parent);
  assert.is(checked.code, 1, checked.stderr);
  for (const e of expected) assert.ok(checked.stdout.includes(`: error: ${e}\n`), `${e} in\n${checked.stdout}`);
  const built = lds(['build', '--no-store', '--src', 'typed', '--out', join(parent, 'dist'), '--store-root', join(parent, 'store')], parent);
  assert.is(built.code, 1, built.stderr);
  for (const e of expected) assert.ok(built.stderr.includes(e), `${e} in\n${built.stderr}`);
});

test('a JSON syntax error is located too, and does not hide the other files\' findings', async () => {
  const { parent, src } = await brokenCopy();
  const text = '{\n  "id": "eu.eurlex",\n  "title": "x",,\n}\n';
  await writeFile(join(src, 'sources/eu.eurlex.json'), text);
  const r = lds(['check', '--src', 'catalog-src-copy'], parent);
  assert.is(r.code, 1);
  const at = where(text, ',,');
  assert.match(r.stdout, new RegExp(`^catalog-src-copy/sources/eu\\.eurlex\\.json:${at.line}:${at.col + 1}: error: sources/eu\\.eurlex\\.json#: invalid JSON`, 'm'));
  assert.match(r.stdout, /unknown source "global\.nowhere"/);
});

test('npx lds --help and --version run this checkout\'s command with no registry reachable', () => {
  const env = { ...process.env, npm_config_registry: 'http://127.0.0.1:9', npm_config_offline: '', npm_config_yes: 'false' };
  const help = spawnSync('npx', ['lds', '--help'], { cwd: REPO, encoding: 'utf8', env, timeout: 120_000 });
  assert.is(help.status, 0, help.stderr);
  assert.match(help.stdout, /^Usage: lds \[options\] \[command\]/m);
  for (const c of ['check', 'build', 'serve', 'licence']) assert.match(help.stdout, new RegExp(`^  ${c}\\b`, 'm'));
  const version = spawnSync('npx', ['lds', '--version'], { cwd: REPO, encoding: 'utf8', env, timeout: 120_000 });
  assert.is(version.status, 0, version.stderr);
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
  assert.match(version.stdout, `lds ${pkg.version} `);
  assert.match(version.stdout, `catalogue format ${CATALOGUE_FORMAT} `);
  assert.match(version.stdout, `unit store format ${STORE_FORMAT}`);
});

test.run();
