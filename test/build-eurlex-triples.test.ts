// Issue 49: EuroVoc labels and "one act, one set of units" through the real CLI (lds check, lds
// build) on a copy of the test catalog-src whose EUR-Lex-Triples file holds real acts of the shipped
// cut chosen for the case.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { cli, copyCatalogSrc, editJson, SHIPPED_CATALOG_SRC, tempDir } from './helpers/build.ts';
import { TRIPLES } from './helpers/test-catalog.ts';
import { scanStore } from './helpers/store-fixtures.ts';

const shipped = gunzipSync(readFileSync(join(SHIPPED_CATALOG_SRC, TRIPLES))).toString('utf8').split('\n');
const lineOf = (celex: string) => shipped.find((l) => l.startsWith(`{"celex_id": "${celex}"`))!;
const gz = (...celex: string[]) => gzipSync(celex.map(lineOf).join('\n') + '\n');

test('a EuroVoc label that matches nothing: lds check and the build name the act and the label; the act is routed by its others', async () => {
  const src = await copyCatalogSrc();
  // 32008D0157 carries "Türkiye" (not a label of the 2021 table, which says "Turkey"); 32014L0060 matches fully
  writeFileSync(join(src, TRIPLES), gz('32008D0157', '32014L0060'));
  const check = cli(['check', '--src', src]);
  assert.is(check.code, 0, check.stdout + check.stderr);
  assert.match(check.stdout + check.stderr, /warning: .*1 EuroVoc label\(s\) in data\/eurlex_triples\/eurlex_triples_acts\.jsonl\.gz match no descriptor .*32008D0157 "Türkiye"/);
  const root = await tempDir('triples');
  const b = cli(['build', '--local', '--src', src, '--out', join(root, 'dist'), '--store-root', join(root, 'store')]);
  assert.is(b.code, 0, b.stdout + b.stderr);
  assert.match(b.stdout + b.stderr, /eu\.eurlex: 1 EuroVoc label\(s\) match no descriptor of the table \(not guessed; the act is routed by its other labels\): 32008D0157: "Türkiye"/);
  // its other labels route it: the store holds its paragraphs, in the products of those labels
  const version = readFileSync(join(root, 'store', 'CURRENT'), 'utf8').trim();
  const { units, products } = await scanStore(join(root, 'store', version));
  const mine = units.map((u, i) => [u, products[i]] as const).filter(([u]) => u.ref.startsWith('eu.eurlex:32008D0157/'));
  assert.ok(mine.length > 10, `${mine.length} units`);
  assert.ok(mine.every(([, ps]) => ps.length > 0));
});

test('one act through two data entries: lds check and the build refuse it, naming the act and both files', async () => {
  const src = await copyCatalogSrc();
  writeFileSync(join(src, 'data/eurlex_triples/culture.jsonl.gz'), gz('32014L0060'));
  await editJson(join(src, 'sources/eu.eurlex.json'), (d) => d.data.push({ adapter: 'eurlex-triples', path: 'data/eurlex_triples/culture.jsonl.gz' }));
  const check = cli(['check', '--src', src]);
  assert.is(check.code, 1, check.stdout + check.stderr);
  assert.match(check.stdout, /error: sources\/eu\.eurlex\.json#\/data\/4\/path: act 32014L0060 \(line 1 of data\/eurlex_triples\/culture\.jsonl\.gz\) also comes through data\/eurlex_triples\/eurlex_triples_acts\.jsonl\.gz: one act is one set of units/);
  const root = await tempDir('triples');
  const b = cli(['build', '--local', '--src', src, '--out', join(root, 'dist'), '--store-root', join(root, 'store')]);
  assert.is(b.code, 1, b.stdout + b.stderr);
  assert.match(b.stdout + b.stderr, /32014L0060 .*also comes through/);
  // --skip-bad-records does not let it through: the check refuses before anything is ingested
  const skip = cli(['build', '--local', '--skip-bad-records', '--src', src, '--out', join(root, 'dist'), '--store-root', join(root, 'store')]);
  assert.is(skip.code, 1, skip.stdout + skip.stderr);
});

test('the same act through two adapters (EURLEX57K and EUR-Lex-Triples): the build refuses the second', async () => {
  const src = await copyCatalogSrc();
  // an act of the EURLEX57K sample, also given in the EUR-Lex-Triples shape (its text as the act's reference)
  const e57 = readFileSync(join(src, 'data/eurlex57k/eurlex57k_dom28.jsonl'), 'utf8').split('\n')[0];
  const a = JSON.parse(e57);
  const dup = JSON.stringify({ celex_id: a.celex_id, reference: [a.header, a.recitals, ...a.main_body, a.attachments].filter(Boolean).join('\n'), summary: '', tags: ['culture'], subjects: [], split: 'test' });
  writeFileSync(join(src, TRIPLES), gzipSync(`${dup}\n`));
  const root = await tempDir('triples');
  const b = cli(['build', '--local', '--src', src, '--out', join(root, 'dist'), '--store-root', join(root, 'store')]);
  assert.is(b.code, 1, b.stdout + b.stderr);
  assert.match(b.stdout + b.stderr, new RegExp(`act ${a.celex_id} already comes through eu\\.eurlex data/eurlex57k/eurlex57k_dom28\\.jsonl: one act is one set of units`));
});

test.run();
