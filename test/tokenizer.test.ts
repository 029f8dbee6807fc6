// The tokenizer's ASCII scan (contract/store-format.ts tokenizeAscii, what nearly every unit's text
// and query goes through) cuts exactly the tokens of its definition, the regular expressions of
// tokenizeUnicode: on every English paragraph of the fixtures and on random text made of the
// characters that decide compounds (letters, digits, "-", ".", ",", spaces).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { tokenize, tokenizeAscii, tokenizeUnicode } from '../contract/store-format.ts';
import { CATALOG_SRC } from './helpers/build.ts';

test('the fixture paragraphs: the scan gives the regular expressions\' tokens', () => {
  const lines = readFileSync(join(CATALOG_SRC, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl'), 'utf8').split('\n').filter(Boolean);
  let ascii = 0;
  for (const l of lines) {
    const text = (JSON.parse(l).text.en as string).toLowerCase();
    // eslint-disable-next-line no-control-regex
    if (/[^\u0000-\u007f]/.test(text)) continue;
    ascii++;
    assert.equal(tokenizeAscii(text), tokenizeUnicode(text), text.slice(0, 80));
  }
  assert.ok(ascii > 500, 'most paragraphs are ASCII');
});

test('random text of letters, digits and joiners: the same tokens', () => {
  let a = 36;
  const r = () => ((a = (Math.imul(a, 1103515245) + 12345) >>> 0) / 2 ** 32);
  const alphabet = 'aaeeioub0123456789-.,  -.,zzx';
  for (let i = 0; i < 20_000; i++) {
    const text = Array.from({ length: 1 + Math.floor(r() * 40) }, () => alphabet[Math.floor(r() * alphabet.length)]).join('');
    assert.equal(tokenizeAscii(text), tokenizeUnicode(text), JSON.stringify(text));
  }
  const long = `x${'ab'.repeat(40)}-${'9'.repeat(30)}.${'1'.repeat(10)} the of 2023-31 pm2.5 1.1.2005 a-b-c 3,5 x,5 5,x covid-19`;
  assert.equal(tokenizeAscii(long), tokenizeUnicode(long));
  assert.equal(tokenize('Austria deaths 2023-31'), ['austria', 'deaths', '2023', '31', '2023-31']);
});

test.run();
