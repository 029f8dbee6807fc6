// Whether build/ holds the JavaScript of the sources as they are: build/.stamp (written when
// scripts/ensure-build.mjs finished a compile) newer than every source file, and the client
// package's dist/ there (the compiled CLI imports it). It compares modification times only (a few
// ms on this tree): an edit, a checkout or a pull makes a source newer than the stamp. Shared by
// ensure-build.mjs (compiles when it is not current) and bin/lds.mjs (runs build/cli.js when it is,
// else the TypeScript through tsx). Plain JavaScript on purpose: it runs before anything is compiled.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

/** Written by ensure-build.mjs when a compile is complete (relative to the repository). */
export const STAMP = join('build', '.stamp');

/** What build/ is compiled from (paths relative to the repository). */
const SOURCES = ['cli.ts', 'cli', 'client', 'generator', 'payments', 'contract', 'tsconfig.json', 'tsconfig.build.json', 'package-lock.json', 'scripts/bundle.mjs'];

/** The newest modification time of a TypeScript, JSON or bundler file at or below `path` (0: none). */
function newest(path) {
  let s;
  try {
    s = statSync(path);
  } catch {
    return 0;
  }
  if (!s.isDirectory()) return path.endsWith('.ts') || path.endsWith('.json') || path.endsWith('.mjs') ? s.mtimeMs : 0;
  let m = 0;
  for (const e of readdirSync(path)) if (e !== 'dist' && e !== 'node_modules') m = Math.max(m, newest(join(path, e)));
  return m;
}

/**
 * Why build/ in the repository at `root` is not the compile of its sources: 'never built',
 * 'sources changed' or 'client package not built'; null when it is current.
 */
export function buildStaleness(root) {
  let built = 0;
  try {
    built = statSync(join(root, STAMP)).mtimeMs;
  } catch {
    return 'never built';
  }
  if (Math.max(...SOURCES.map((p) => newest(join(root, p)))) > built) return 'sources changed';
  if (!existsSync(join(root, 'client', 'dist', 'client', 'index.js'))) return 'client package not built';
  return null;
}
