// @tier: quick  (npm run test:quick: in-process)
// The project's imports form a tree (scripts/import-cycles.ts): no module needs a module that needs it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { PROJECT_ROOTS, cycles, importGraph, importsOf } from '../scripts/import-cycles.ts';
import { existsSync } from 'node:fs';

test('the project has no import circles', () => {
  const found = cycles(importGraph(PROJECT_ROOTS.filter((r) => existsSync(r))));
  assert.equal(found.map((c) => c.map((f) => relative(resolve('.'), f))), []);
});

test('the checker reads every kind of import: static, type-only, re-export, side-effect, dynamic; not comments or strings', () => {
  const src = [
    "import { a } from './a.ts';",
    "import type { B } from '../b.ts';",
    "export { c } from './c.ts';",
    "export * from './d.ts';",
    "import './e.ts';",
    "const f = await import('./f.ts');",
    "import {\n  g,\n  type G,\n} from './g.ts';",
    "// import { x } from './commented.ts';",
    "/* import { y } from './block.ts'; */",
    "import { h } from 'koa';",
    "const s = 'import nothing from here';",
  ].join('\n');
  assert.equal(importsOf(src), ['./a.ts', '../b.ts', './c.ts', './d.ts', './g.ts', './e.ts', './f.ts']);
});

test('a circle through a type-only import is found, and a tree is not', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'lds-cycles-'));
  try {
    await writeFile(join(dir, 'top.ts'), "import { Section } from './section.ts';\nimport { part } from './part.ts';\n");
    await writeFile(join(dir, 'part.ts'), "import type { Top } from './top.ts';\nexport const part = 1;\n");
    await writeFile(join(dir, 'section.ts'), 'export type Section = string;\n');
    await writeFile(join(dir, 'leaf.ts'), "import type { Section } from './section.ts';\n");
    const found = cycles(importGraph([dir]));
    assert.equal(found.map((c) => c.map((f) => relative(dir, f))), [['part.ts', 'top.ts']]);
    await writeFile(join(dir, 'part.ts'), "import type { Section } from './section.ts';\nexport const part = 1;\n");
    assert.equal(cycles(importGraph([dir])), []);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
