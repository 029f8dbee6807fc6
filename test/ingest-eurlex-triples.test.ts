// @tier: quick
// Issue 49: the eurlex-triples adapter on the shipped EUR-Lex-Triples cut (catalog-src/data/
// eurlex_triples/). What a paragraph is, checked against counts made independently of the adapter
// (test/helpers/store-fixtures.ts countTriplesParagraphs, and the figures measured by the fixture
// set's own script in ../shared/fixtures/more3/PROVENANCE.md for the 12 culture acts); no text lost
// or doubled; citations as a lawyer writes them; references stable.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cutParagraphs, actLines, checkTriplesAct, eliOf } from '../generator/ingest/eurlex-triples.ts';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { actParagraphUnit } from '../generator/store/units.ts';
import type { Source } from '../generator/model.ts';
import { REPO, SHIPPED_CATALOG_SRC } from './helpers/build.ts';
import { countTriplesParagraphs, triplesActs } from './helpers/store-fixtures.ts';
import { ingestProgress } from '../generator/store/ingest-progress.ts';

const acts = triplesActs(SHIPPED_CATALOG_SRC);
const byCelex = new Map(acts.map((a) => [a.celex_id, a]));

// PROVENANCE.md (more3), section 1: per culture act, its non-empty lines and its distinct "Article N" lines
const CULTURE: Record<string, { lines: number; articles: number }> = {
  '32006D0515': { lines: 450, articles: 35 }, '32009R0116': { lines: 327, articles: 12 }, '32011D1194': { lines: 298, articles: 21 },
  '32012H0417': { lines: 170, articles: 0 }, '32012L0028': { lines: 207, articles: 12 }, '32014D0445': { lines: 376, articles: 18 },
  '32014L0026': { lines: 665, articles: 45 }, '32014L0060': { lines: 285, articles: 22 }, '32019L0790': { lines: 530, articles: 32 },
  '32019R0880': { lines: 364, articles: 16 }, '32021D2316': { lines: 163, articles: 8 }, '32021R0818': { lines: 579, articles: 27 },
};

test('the shipped cut: 1,504 acts, 1,370,714 non-empty lines (as PROVENANCE.md measured)', () => {
  assert.is(acts.length, 1504);
  assert.is(acts.reduce((n, a) => n + a.reference.split('\n').filter((l) => l.trim()).length, 0), 1370714);
});

test('12 culture acts: paragraph count equals the independent count, articles equal PROVENANCE.md, no text lost or doubled', () => {
  for (const [celex, want] of Object.entries(CULTURE)) {
    const act = byCelex.get(celex)!;
    assert.ok(act, celex);
    const lines = act.reference.split('\n').map((l) => l.trim()).filter(Boolean);
    assert.is(lines.length, want.lines, `${celex}: non-empty lines`);
    const ps = cutParagraphs(celex, act.reference);
    assert.is(ps.length, countTriplesParagraphs(celex, act.reference), `${celex}: paragraphs`);
    // every line after the furniture and the title is in exactly one paragraph, in order
    const { title, body } = actLines(celex, act.reference);
    assert.equal(ps.flatMap((p) => p.text.split('\n')), body, `${celex}: text kept whole`);
    assert.is(title.length + body.length, lines.length - 4, `${celex}: 4 lines of page furniture`);
    // the articles the citations name are the act's articles (those of correlation tables add none)
    const cited = new Set(ps.map((p) => /^Article (\d+[a-z]*)/.exec(p.cite)?.[1]).filter(Boolean));
    assert.is(cited.size, want.articles, `${celex}: articles cited`);
    assert.equal(ps.map((p) => p.pos), ps.map((_, i) => i + 1), `${celex}: positions 1..n`);
  }
});

test('every act of the cut: the adapter count equals the independent count, and every act has paragraphs', () => {
  const differ: string[] = [];
  let total = 0;
  for (const a of acts) {
    const n = cutParagraphs(a.celex_id, a.reference).length;
    total += n;
    if (n !== countTriplesParagraphs(a.celex_id, a.reference) || n === 0) differ.push(a.celex_id);
  }
  assert.equal(differ, []);
  assert.ok(total > 1_000_000, `${total} paragraphs`);
});

test('Directive 2014/60/EU: cited as a lawyer cites it', () => {
  const act = byCelex.get('32014L0060')!;
  const checked = checkTriplesAct(act);
  assert.ok(checked.ok);
  if (!checked.ok) return;
  const { title, paragraphs } = checked.value;
  assert.match(title, /^DIRECTIVE 2014\/60\/EU OF THE EUROPEAN PARLIAMENT AND OF THE COUNCIL of 15 May 2014 on the return of cultural objects/);
  const at = (start: string) => paragraphs.find((p) => p.text.includes(start))!;
  assert.is(at('Having regard to the Treaty').cite, 'citations');
  const r12 = at('In order to ensure the protection of personal data');
  assert.is(r12.cite, 'recital (12)');
  assert.ok(r12.text.startsWith('(12)\nIn order'), 'the label joins the recital it introduces');
  const a1 = at('This Directive applies to the return');
  assert.is(a1.cite, 'Article 1');
  assert.ok(a1.text.startsWith('Article 1\n'), 'the heading joins the paragraph it introduces');
  const a82 = at('Return proceedings may not be brought if removal');
  assert.is(a82.cite, 'Article 8(2)');
  // the unit as sold, and as docs/publishing.md shows its citation
  const src = { id: 'eu.eurlex', publisher: 'Publications Office of the European Union' } as Source;
  const u = actParagraphUnit(src, { file: 'f', line: 1, ...checked.value }, a82).unit;
  assert.equal([u.ref, u.citation.label, u.citation.eli, u.citation.para], ['eu.eurlex:32014L0060/65', 'CELEX 32014L0060, Article 8(2) (paragraph 65)', 'http://data.europa.eu/eli/dir/2014/60/oj', 65]);
  assert.ok(readFileSync(join(REPO, 'docs/publishing.md'), 'utf8').replace(/\s+/g, ' ').includes(`"${u.citation.label}"`), 'the guide shows the citation as built');
  assert.is(at('removed from the territory of a Member State in breach').cite, 'Article 2, point (2)(a)');
  assert.is(at('‘holder’ means').cite, 'Article 2, point (7)');
  assert.is(at('Repealed Directive with list of its successive amendments').cite, 'Annex I');
  assert.is(at('Correlation table').cite, 'Annex II');
  assert.is(at('Done at Brussels').cite, 'closing');
  assert.is(at('Position of the European Parliament of 16 April 2014').cite, 'footnote (1)');
  assert.not.ok(paragraphs.some((p) => /^(28\.5\.2014|EN|Official Journal of the European Union|L 159\/1)$/m.test(p.text)), 'no page furniture');
  assert.not.ok(paragraphs.some((p) => p.text.startsWith('DIRECTIVE 2014/60/EU')), 'the title is not sold as a paragraph');
  assert.is(eliOf('32014L0060'), 'http://data.europa.eu/eli/dir/2014/60/oj');
  assert.is(eliOf('32009R0116'), 'http://data.europa.eu/eli/reg/2009/116/oj');
  assert.is(eliOf('32012H0417'), undefined, 'a recommendation: no ELI derived');
});

test('references are stable: the same text gives the same paragraphs and positions', () => {
  const a = byCelex.get('32019R0880')!;
  assert.equal(cutParagraphs(a.celex_id, a.reference), cutParagraphs(a.celex_id, `${a.reference}`));
  // the older packaging ("EUR-Lex - … - EN", "Important legal notice", "|", CELEX, "Official Journal L …")
  const old = acts.find((x) => x.reference.startsWith('EUR-Lex - '))!;
  const { title, body } = actLines(old.celex_id, old.reference);
  assert.ok(title.length <= 1 && !title.some((t) => /^EUR-Lex|^Official Journal/.test(t)), old.celex_id);
  assert.not.ok(body.some((l, i) => i < 3 && /^(EUR-Lex - |Important legal notice|\||Official Journal [LC] )/.test(l)), old.celex_id);
});

test('the ingest progress line: phase, units, rate, share of the data read and the time left, at most every 2 s', () => {
  const lines: string[] = [];
  let t = 0;
  const m = ingestProgress(1000, (l) => lines.push(l), 2000, () => t);
  m.file('eu.eurlex from data/a.gz', 1000);
  for (let i = 0; i < 1024; i++) m.unit();
  assert.equal(lines, [], 'nothing before 2 s');
  t = 10_000;
  m.readAt(250);
  for (let i = 0; i < 1024; i++) m.unit();
  assert.equal(lines, ['ingest: eu.eurlex from data/a.gz: 2,048 units, 205 units/s, 25 % of the data read, about 30 s of ingest left']);
});

test.run();
