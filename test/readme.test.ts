// Issue 14, item 11: README.md matches the code; since issue 37 the same holds for the guides its
// text moved to (docs/, not the dated benchmark rounds of docs/benchmarks/). Every file or folder
// they name is in the repository (nothing outside the clone), every published path docs/hosting.md
// lists is emitted by the build, every command and flag exists (`npx lds <command> --help`,
// package.json scripts), every setting they name is read somewhere, and the agent endpoints are
// where the service mounts them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { a2aUrl, localAddresses } from '../generator/addresses.ts';
import { emitHostingConfig } from '../generator/emit/headers.ts';
import { EMITTERS } from '../generator/emit/index.ts';
import { PROBLEM_TYPES } from '../contract/problems.ts';
import { buildContext } from './helpers/conformance.ts';
import { cli, REPO } from './helpers/build.ts';
import { documentationFiles, readDoc, section as docSection } from './helpers/docs.ts';

const readme = readFileSync(join(REPO, 'README.md'), 'utf8');
const docs = new Map(documentationFiles().filter((f) => !f.startsWith('docs/benchmarks/')).map((f) => [f, readDoc(f)]));
const all = [...docs.values()].join('\n');
const code = [...all.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
const placeholder = (t: string) => /[<{*…]/.test(t);
/** The part of a document under the `## ` heading that starts with `title`, up to the next one. */
const section = (file: string, title: string) => docSection(docs.get(file)!, title);

test('points at nothing outside the clone', () => {
  assert.not.match(readme, /\.\.\//, 'no ../ path');
  for (const [f, text] of docs) assert.not.match(text, /\bshared\/(spec|DESIGN|conformance|fixtures)/, f);
});

test('every repository path it names exists', () => {
  const top = new Set(readdirSync(REPO).filter((n) => !['node_modules', 'dist', 'var'].includes(n)));
  // The table of what the build publishes names dist/ paths (docs/ there is the buyers' docs, not
  // the repository's docs/): the next test checks those against the build.
  const published = new Set([...section('docs/hosting.md', 'What the build publishes').matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!));
  const paths = code.filter((t) => !placeholder(t) && !/\s/.test(t) && !published.has(t) && top.has(t.split('/')[0]!.replace(/\/$/, '')));
  assert.ok(paths.length >= 8, `found the paths (${paths.join(', ')})`);
  for (const p of paths) assert.ok(existsSync(join(REPO, p)), `the documentation names ${p}`);
  // The layout blocks (the README's short one, development.md's whole one): top-level folders, and
  // indented sub-folders of the one above.
  for (const [file, min] of [['README.md', 8], ['docs/development.md', 10]] as const) {
    const layout = section(file, 'Layout').split('```')[1]!.split('\n').filter((l) => /^\s*[\w.-]+\/\s/.test(l));
    let parent = '';
    for (const line of layout) {
      const name = line.trim().split(/\s/)[0]!;
      const path = line.startsWith(' ') ? join(parent, name) : name;
      if (!line.startsWith(' ')) parent = name;
      if (name === 'dist/') continue; // generated
      assert.ok(existsSync(join(REPO, path)) && statSync(join(REPO, path)).isDirectory(), `${file}: layout names ${path}`);
    }
    assert.ok(layout.length >= min, `read the layout block of ${file}`);
  }
});

test('every path in docs/hosting.md "What the build publishes" is one the build emits', async () => {
  const ctx = await buildContext({ local: true, store: 'fake' });
  const files = EMITTERS.flatMap((e) => e(ctx));
  const emitted = new Set([...files, ...emitHostingConfig(ctx, files)].map((f) => f.path));
  const rows = section('docs/hosting.md', 'What the build publishes').split('\n').filter((l) => l.startsWith('| `'));
  const paths = rows.flatMap((r) => [...r.split('|')[1]!.matchAll(/`([^`]+)`/g)].map((m) => m[1]!));
  assert.ok(paths.length >= 10, `read the table (${paths.length})`);
  const id = ctx.catalogue.products[0]!.product_id;
  for (const p of paths) {
    const path = p.replace('{product_id}', id).replace('{slug}', PROBLEM_TYPES[0]!.slug).replace(/\/$/, '/index.md');
    assert.ok(emitted.has(path), `the build emits ${path}`);
  }
});

test('every command and flag it names exists; every npm script it names is in package.json', () => {
  const scripts = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8')).scripts as Record<string, string>;
  for (const m of all.matchAll(/npm (start|test|run ([\w:-]+))/g)) assert.ok(scripts[m[2] ?? m[1]!], `npm script ${m[0]}`);
  // The command as the README writes it, `npx lds <command> …` (package.json bin); never the old forms.
  // (The guides may name a command `lds buy` in prose and headings; the README writes what to type.)
  const readmeCode = [...readme.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!);
  assert.equal(readmeCode.filter((t) => /^lds [a-z]/.test(t)), [], 'the README writes every command `npx lds …`');
  assert.equal(code.filter((t) => /^(npx tsx )?cli\.ts [a-z]/.test(t)), [], 'never `cli.ts <command>`');
  const commands = code.filter((t) => t.startsWith('npx lds ') && !t.includes('<command>'));
  assert.ok(commands.length >= 4, 'read the command table');
  const help = new Map<string, string>();
  for (const c of commands) {
    // the command words: up to the first option, placeholder or argument
    const words = c.slice('npx lds '.length).split(/\s+(?=\[|--|<|\(|[^a-z-])/)[0]!.split(' ').filter((w) => w && !w.startsWith('-'));
    const key = words.join(' ');
    if (!help.has(key)) {
      const r = cli([...words, '--help']);
      assert.is(r.code, 0, `lds ${key} --help: ${r.stderr}`);
      help.set(key, r.stdout);
    }
    for (const flag of c.match(/--[a-z][a-z-]*/g) ?? []) assert.ok(help.get(key)!.includes(flag), `lds ${key} has ${flag}`);
  }
});

test('issue 50 item 12: the start times the README states are measured figures with their machine, as BENCHMARKS.md records them', () => {
  const start = readme.slice(readme.indexOf('The first start'), readme.indexOf('The\nwhole `npm test`'));
  assert.not.match(start, /a few seconds|well under a second/, 'no unmeasured claim');
  const first = /\*\*(\d+) s\*\* to ready, at a load\s+average of ([\d–]+)/.exec(start);
  assert.ok(first, start);
  assert.match(start, /2-core/);
  const bench = readFileSync(join(REPO, 'BENCHMARKS.md'), 'utf8');
  const row = bench.split('\n').find((l) => l.startsWith('| first `npm start` from a fresh clone'))!;
  assert.ok(row, 'BENCHMARKS.md records the first start');
  assert.ok(row.includes(`load ${first![2]}`) && row.includes(`| ${first![1]} s `), row);
  const built = /On a built tree `npm start` serves in ([\d.]+) s\s+\(([\d.]+) s to "serving"/.exec(start);
  assert.ok(built, start);
  assert.ok(bench.includes(`(${built![1]} s measured on a quiet machine`), 'the built-tree figure is in BENCHMARKS.md');
  assert.ok(docs.get('docs/operations.md')!.includes(`serves in ${built![1]} s`), 'docs/operations.md says the same');
});

test('every setting it names is read by the code', () => {
  const sources = (dir: string): string[] =>
    readdirSync(join(REPO, dir), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile() && /\.(ts|mjs|py|sh|yml)$/.test(e.name) && !e.parentPath.includes('node_modules'))
      .map((e) => readFileSync(join(e.parentPath, e.name), 'utf8'));
  const text = [readFileSync(join(REPO, 'cli.ts'), 'utf8'), readFileSync(join(REPO, '.ci/run'), 'utf8'), ...['bin', 'cli', 'generator', 'payments', 'test', 'bench', 'sim', 'client', 'contract', 'deploy', 'scripts'].flatMap(sources)].join('\n');
  const settings = [...new Set(code.map((t) => t.replace(/=.*$/, '')).filter((t) => /^[A-Z][A-Z0-9]*_[A-Z0-9_]+$/.test(t)))];
  assert.ok(settings.length >= 25, `read the settings (${settings.length})`);
  for (const s of settings) assert.ok(text.includes(`'${s}'`) || text.includes(`env.${s}`) || text.includes(`${s}=`) || text.includes(`const ${s} =`) || text.includes(`.${s}`) || text.includes('${' + s), `${s} is read somewhere (or is a constant of the code or a library's)`);
});

// Issue 37: the README's "Dependencies and why" moved to docs/decisions.md; each dependency keeps its reason there.
test('every dependency of package.json has its reason in docs/decisions.md, which the README links', () => {
  const pkg = JSON.parse(readFileSync(join(REPO, 'package.json'), 'utf8'));
  const reasons = section('docs/decisions.md', 'Dependencies and why').split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| Package'));
  const named = new Set(reasons.flatMap((r) => r.split('|')[1]!.replace(/\([^)]*\)/g, '').split(',').map((n) => n.trim())));
  for (const d of [...Object.keys(pkg.dependencies), ...Object.keys(pkg.devDependencies)]) assert.ok(named.has(d), `docs/decisions.md says why ${d} is a dependency`);
  assert.match(readme, '(docs/decisions.md#dependencies-and-why)');
});

test('the agent endpoints are where the service mounts them: A2A at /v1/a2a, MCP at /mcp', () => {
  const a = localAddresses('http://127.0.0.1:8080', 'https://publisher.example');
  assert.is(new URL(a2aUrl(a)).pathname, '/v1/a2a');
  assert.is(new URL(a.mcp_url).pathname, '/mcp');
  assert.match(section('docs/agents.md', "The service's agent endpoints"), /JSON-RPC at `\/v1\/a2a`/);
  for (const [f, text] of docs) assert.not.match(text, /(^|[\s(])`\/a2a`/m, `${f}: never the bare /a2a`);
});

test.run();
