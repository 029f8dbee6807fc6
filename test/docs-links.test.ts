// Issue 37: the front door. README.md stays a first read (at most 300 lines), and every relative
// link in it and in the guides under docs/ reaches a file that exists and, when it names one, an
// anchor that file has: a heading's anchor as GitHub makes it (generator/emit/markdown.ts
// headingAnchor, the same rule the published documentation's page uses), counted -1, -2, … when a
// heading repeats. Links are read as a Markdown renderer reads them (markdown-it), so a `[x](y)` in
// a code span or block is not a link.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { markdownHtml } from '../generator/emit/markdown-page.ts';
import { REPO } from './helpers/build.ts';
import { documentationFiles, readDoc } from './helpers/docs.ts';

const rendered = new Map<string, string>();
const html = (path: string) => rendered.get(path) ?? rendered.set(path, markdownHtml(readDoc(path))).get(path)!;
const unescape = (s: string) => s.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>');
/** The anchors a Markdown file's headings get on GitHub. */
const anchors = (path: string) => new Set([...html(path).matchAll(/<h[1-6] id="([^"]*)">/g)].map((m) => unescape(m[1]!)));
/** Every link target in a Markdown file. */
const links = (path: string) => [...html(path).matchAll(/<a href="([^"]*)">/g)].map((m) => unescape(m[1]!));

test('README.md is a first read: at most 300 lines, linking every guide', () => {
  const readme = readDoc('README.md');
  const lines = readme.split('\n').length - (readme.endsWith('\n') ? 1 : 0);
  assert.ok(lines <= 300, `README.md has ${lines} lines`);
  for (const guide of ['development', 'publishing', 'hosting', 'buying', 'agents', 'operations', 'security', 'decisions', 'reference/cli', 'reference/configuration'])
    assert.ok(links('README.md').includes(`docs/${guide}.md`), `README links docs/${guide}.md`);
});

test('BENCHMARKS.md leads with today\'s figures in at most 200 lines; the dated rounds are in docs/benchmarks/history.md', () => {
  const text = readDoc('BENCHMARKS.md');
  assert.ok(text.split('\n').length <= 201, `BENCHMARKS.md has ${text.split('\n').length - 1} lines`);
  const table = text.split(/^## /m).find((s) => s.startsWith("Today's figures"));
  assert.ok(table, 'a section "Today\'s figures"');
  assert.match(table!, '| Measure | Date (UTC), load | Command | Anchor | Figure | Ratio | Goal | Met? |');
  assert.ok(table!.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| Measure')).length >= 10, 'rows of figures');
  assert.match(readDoc('docs/benchmarks/history.md'), /^# Benchmarks\n/);
});

test('every guide starts by saying who it is for and what they will have done at the end', () => {
  for (const f of documentationFiles().filter((f) => f.startsWith('docs/') && !f.startsWith('docs/benchmarks/'))) {
    const opening = readDoc(f).split(/^## /m)[0]!.replace(/\s+/g, ' ');
    assert.match(opening, /\b(is )?for\b/i, `${f}: says who it is for`);
    assert.match(opening, /at the end,? (you|your \w+) will/i, `${f}: says what the reader will have done`);
  }
});

test('the anchor rule is GitHub\'s: a heading with code, punctuation and a repeat', () => {
  const h = markdownHtml('## `lds build`: the build (dist/)\n\n## Same\n\n## Same');
  assert.match(h, '<h2 id="lds-build-the-build-dist">');
  assert.match(h, '<h2 id="same-1">');
});

test('every relative link in README.md and docs/ resolves to a file, and to an anchor it has', () => {
  const broken: string[] = [];
  let checked = 0;
  for (const from of [...documentationFiles(), 'BENCHMARKS.md']) {
    for (const href of links(from)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(href)) continue; // https:, mailto: (not this check's)
      checked++;
      const [rawPath, anchor] = href.split('#', 2) as [string, string | undefined];
      const target = rawPath === '' ? from : normalize(join(dirname(from), decodeURIComponent(rawPath)));
      if (target.startsWith('..')) {
        broken.push(`${from}: ${href} leaves the repository`);
        continue;
      }
      if (!existsSync(join(REPO, target))) {
        broken.push(`${from}: ${href}: no file ${target}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!target.endsWith('.md') || statSync(join(REPO, target)).isDirectory()) broken.push(`${from}: ${href}: an anchor into a file that is not Markdown`);
      else if (!anchors(target).has(anchor)) broken.push(`${from}: ${href}: ${target} has no heading #${anchor}`);
    }
  }
  assert.ok(checked >= 100, `checked the links (${checked})`);
  assert.equal(broken, [], broken.join('\n'));
});

test.run();
