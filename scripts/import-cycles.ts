// Finds import circles among the project's own TypeScript files (`npm run check:cycles`, and
// test/import-cycles.test.ts in npm test). An import graph that is a tree keeps a change local: a
// module can be read, tested and replaced knowing only what is below it.
//
// Every edge counts: `import`, `import type` and `export … from` (a type-only circle is still two
// modules that must be understood together), and `import('…')` (lazy, but the same knot). madge and
// dependency-cruiser would do this, but both parse TypeScript through the `typescript` package's
// JavaScript API, which TypeScript 7 (the native compiler this project uses) no longer ships; the
// project's imports are plain relative specifiers, which a scan reads exactly.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** Relative specifiers a file imports: static, type-only, re-exports and dynamic imports. */
export function importsOf(source: string): string[] {
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');
  const out: string[] = [];
  for (const m of code.matchAll(/(?:^|[;\s])(?:import|export)\s[^'"`;]*?\sfrom\s*['"](\.{1,2}\/[^'"]+)['"]/g)) out.push(m[1]);
  for (const m of code.matchAll(/(?:^|[;\s])import\s*['"](\.{1,2}\/[^'"]+)['"]/g)) out.push(m[1]);
  for (const m of code.matchAll(/\bimport\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)) out.push(m[1]);
  return out;
}

function tsFiles(path: string): string[] {
  if (statSync(path).isFile()) return path.endsWith('.ts') ? [path] : [];
  return readdirSync(path).filter((e) => e !== 'node_modules').flatMap((e) => tsFiles(join(path, e)));
}

/** The import graph of the given files and folders: file → the project files it imports. */
export function importGraph(roots: string[]): Map<string, string[]> {
  const files = roots.flatMap((r) => tsFiles(resolve(r)));
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const f of files) {
    const deps = importsOf(readFileSync(f, 'utf8'))
      .map((s) => resolve(dirname(f), s))
      .filter((d) => known.has(d));
    graph.set(f, [...new Set(deps)]);
  }
  return graph;
}

/** Every circle: the strongly connected components with more than one file (or a self-import), Tarjan's algorithm. */
export function cycles(graph: Map<string, string[]>): string[][] {
  let index = 0;
  const idx = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    idx.set(v, index);
    low.set(v, index++);
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!));
    }
    if (low.get(v) === idx.get(v)) {
      const scc: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        scc.push(w);
      } while (w !== v);
      if (scc.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(scc.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}

export const PROJECT_ROOTS = ['cli.ts', 'cli', 'client', 'generator', 'payments', 'contract', 'sim', 'bench', 'scripts'];

if (import.meta.url === `file://${process.argv[1]}`) {
  const roots = (process.argv.length > 2 ? process.argv.slice(2) : PROJECT_ROOTS).filter((r) => {
    try {
      statSync(r);
      return true;
    } catch {
      return false;
    }
  });
  const found = cycles(importGraph(roots));
  for (const c of found) console.log(`import circle: ${c.map((f) => relative(process.cwd(), f)).join(' <-> ')}`);
  console.log(found.length ? `${found.length} import circle${found.length === 1 ? '' : 's'}: give what the files share one owner below them` : 'no import circles');
  process.exit(found.length ? 1 : 0);
}
