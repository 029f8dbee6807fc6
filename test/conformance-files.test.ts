// @tier: quick  (npm run test:quick: in-process)
// Issue 14, item 12: the conformance data the tests read is part of the repository, each file with
// its origin and licence in test/conformance/README.md. Every file there is listed with its SHA-256
// and still has it (the upstream copies stay byte-identical to upstream); every listed file exists;
// every file the conformance harness reads is among them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { CONFORMANCE, DCAT_SHAPES } from './helpers/conformance.ts';

const readme = readFileSync(join(CONFORMANCE, 'README.md'), 'utf8');
const listed = new Map([...readme.matchAll(/^([0-9a-f]{64}) {2}(\S+)$/gm)].map((m) => [m[2]!, m[1]!]));
const onDisk = readdirSync(CONFORMANCE, { recursive: true, withFileTypes: true })
  .filter((e) => e.isFile())
  .map((e) => relative(CONFORMANCE, join(e.parentPath, e.name)))
  .filter((f) => f !== 'README.md' && !f.startsWith('LICENSES/'))
  .sort();

test('every data file is listed with its SHA-256, and every listed file is there', () => {
  assert.ok(listed.size >= 10, `the README lists the files (${listed.size})`);
  assert.equal(onDisk, [...listed.keys()].sort());
});

test('every file still has the SHA-256 the README records', () => {
  for (const [file, sha] of listed) assert.is(createHash('sha256').update(readFileSync(join(CONFORMANCE, file))).digest('hex'), sha, file);
});

test('every file has a row naming its source and licence', () => {
  for (const file of listed.keys()) {
    const row = readme.split('\n').find((l) => l.startsWith(`| \`${file}\` |`));
    assert.ok(row, `${file} has a row`);
    assert.match(row!, /Apache-2\.0|CC BY 4\.0|no third-party rights/, `${file}: licence`);
  }
  assert.match(readFileSync(join(CONFORMANCE, 'LICENSES/Apache-2.0.txt'), 'utf8'), /Apache License\s+Version 2\.0, January 2004/);
});

test('the harness reads only listed files', () => {
  for (const rel of [...DCAT_SHAPES, 'dcat-ap/vocab-stubs.ttl', 'dcat-ap/sample-product.jsonld', 'a2a-0.3.0.schema.json', 'rfc9727/linkset.schema.json', 'rfc9727/svc-catalog.example.json'])
    assert.ok(listed.has(rel), rel);
});

test.run();
