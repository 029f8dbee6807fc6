// The ingest workers' byte path for aligned paragraph lines (generator/store/paragraph-bytes.ts)
// gives exactly the unit JSON of the ordinary path (JSON.parse, checkAlignedParagraph,
// paragraphUnit, JSON.stringify) for every line it takes, and declines (null) every line it does
// not fully understand, so the ordinary path reads it and words its error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { alignedParagraphOf } from '../generator/ingest/aligned-paragraphs.ts';
import { decodeLine } from '../generator/ingest/lines.ts';
import { ByteSink, paragraphBytes } from '../generator/store/paragraph-bytes.ts';
import { paragraphUnit } from '../generator/store/units.ts';
import type { Source } from '../generator/model.ts';
import { CATALOG_SRC } from './helpers/build.ts';

const src = { id: 'eu.eurlex', publisher: 'Publications Office of the European Union' };

/** The ordinary path: the unit's JSON and pivot text, or the reason the line is bad. */
function ordinary(line: Buffer): { json: string; pivot: string } | { bad: string } | null {
  const p = alignedParagraphOf(decodeLine(line, 0, line.length, 1), 'x.jsonl');
  if (p === null) return null;
  if (!p.ok) return { bad: p.reason };
  const b = paragraphUnit(src as Source, p.value);
  return { json: JSON.stringify(b.unit), pivot: b.searchText };
}

function fast(line: Buffer) {
  const sink = new ByteSink(16);
  sink.used = 3; // written after what is there
  sink.buf.write('xyz');
  const r = paragraphBytes(line, src, sink);
  if (!r) {
    assert.is(sink.used, 3, 'a declined line writes nothing');
    return null;
  }
  assert.is(sink.buf.toString('latin1', 0, 3), 'xyz');
  return { ...r, json: sink.buf.toString('utf8', 3, sink.used) };
}

function same(line: Buffer, label: string): void {
  const o = ordinary(line);
  const f = fast(line);
  assert.ok(o && 'json' in o, `${label}: the ordinary path takes it`);
  assert.ok(f, `${label}: the byte path takes it`);
  assert.is(f!.json, (o as { json: string }).json, label);
  assert.is(f!.pivotText, (o as { pivot: string }).pivot, label);
  const unit = JSON.parse(f!.json);
  assert.is(f!.ref, unit.ref);
  assert.is(f!.celex, unit.citation.celex);
  assert.is(f!.rows, unit.rows.length);
}

test('every line of the fixture paragraphs: the same unit JSON and pivot text as the ordinary path', () => {
  const lines = readFileSync(join(CATALOG_SRC, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl')).toString('latin1').split('\n').filter(Boolean);
  assert.ok(lines.length > 700);
  for (const [i, l] of lines.entries()) same(Buffer.from(l, 'latin1'), `line ${i + 1}`);
});

const base = { celex_id: '32006D0213', para_idx: 4, pivot_lang: 'en', langs: ['fr', 'en', 'de'], text: { en: 'Reaction to fire', de: 'Brandverhalten', fr: 'Réaction au feu' } };
const line = (s: string) => Buffer.from(s, 'utf8');

test('plain forms it takes: spacing, key order, repeated languages, short escapes, every script', () => {
  same(line(JSON.stringify(base)), 'compact');
  same(line(JSON.stringify(base, null, 1).replace(/\n/g, ' ')), 'spaced');
  same(line(`{ "text" : ${JSON.stringify(base.text)} , "langs":["de","en","fr","en"],"pivot_lang":"en","para_idx":4,"celex_id":"32006D0213" } `), 'other order, repeated language');
  same(line(JSON.stringify({ ...base, text: { ...base.text, en: 'He said "no" \\ then\n\ttabbed\r\u0008\f back' } })), 'short escapes');
  same(line(JSON.stringify({ ...base, text: { ...base.text, en: 'Ελληνικά, български, 中文, emoji 😀, U+2028 \u2028 here' } })), 'other scripts');
  same(line(JSON.stringify({ ...base, para_idx: 0 })), 'paragraph 0');
});

test('what it declines: the ordinary path reads those lines, and words the errors of the bad ones', () => {
  const declined: [string, Buffer][] = [
    ['a \\u escape', line(JSON.stringify(base).replace('Reaction', '\\u0052eaction'))],
    ['an escaped slash', line(JSON.stringify(base).replace('Reaction', 'Re\\/action'))],
    ['another key', line(JSON.stringify({ ...base, extra: 1 }))],
    ['a key twice', line(JSON.stringify(base).replace('{', '{"para_idx":5,'))],
    ['a language twice in text', line(JSON.stringify(base).replace('"en":', '"en":"x","en":'))],
    ['a decimal index', line(JSON.stringify(base).replace('"para_idx":4', '"para_idx":4.0'))],
    ['an index with a leading zero', line(JSON.stringify(base).replace('"para_idx":4', '"para_idx":04'))],
    ['a negative index', line(JSON.stringify({ ...base, para_idx: -1 }))],
    ['a raw control character', line(JSON.stringify(base).replace('Reaction', 'Re\u0001action'))],
    ['a tab as white space', line(JSON.stringify(base).replace('"para_idx"', '\t"para_idx"'))],
    ['a missing pivot', line(JSON.stringify({ ...base, pivot_lang: 'es' }))],
    ['text for an unlisted language', line(JSON.stringify({ ...base, langs: ['en', 'de'] }))],
    ['a listed language without text', line(JSON.stringify({ ...base, langs: ['en', 'de', 'fr', 'it'] }))],
    ['a bad CELEX', line(JSON.stringify({ ...base, celex_id: '32006/D0213' }))],
    ['truncated JSON', line(JSON.stringify(base).slice(0, -3))],
    ['trailing text', line(JSON.stringify(base) + ' x')],
    ['not UTF-8', Buffer.concat([line(JSON.stringify(base).slice(0, 40)), Buffer.from([0xff, 0xfe]), line(JSON.stringify(base).slice(40))])],
    ['a blank line', line('   ')],
  ];
  for (const [label, bytes] of declined) {
    assert.is(fast(bytes), null, label);
    const o = ordinary(bytes);
    // the ordinary path either takes it (and the worker stores what it gives) or says why not
    if (o && 'json' in o) assert.ok(['a \\u escape', 'an escaped slash', 'another key', 'a key twice', 'a language twice in text', 'a decimal index', 'a tab as white space'].includes(label), `${label} is valid`);
  }
  assert.match(JSON.stringify(ordinary(declined.find(([l]) => l === 'truncated JSON')![1])), /invalid JSON/);
  assert.match(JSON.stringify(ordinary(declined.find(([l]) => l === 'not UTF-8')![1])), /not valid UTF-8/);
});

test.run();
