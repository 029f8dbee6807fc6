// Compiles the client package (client/, npm workspace lds-catalogue-client) to client/dist/: ESM
// JavaScript and .d.ts declarations of client/*.ts and of the contract/ files they import. Run by
// `npm run build -w client`, by npm pack (prepack) and by ensure-build.mjs before `npm start`.
// It starts from an empty dist/ so nothing of a deleted source is ever packed, and refuses a
// program that reached outside client/ and contract/ (the package must hold nothing of the server).
// When dist/ is newer than every source (client/.dist-stamp, outside what npm packs), it does
// nothing (--force: compile anyway): a pack during a test run then never empties the dist/ that a
// running `npm start` (build/cli.js) imports; the test runner compiled it before any suite.
// Plain JavaScript on purpose: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(repo, 'client', 'dist');
const stamp = join(repo, 'client', '.dist-stamp');
const mtime = (path) => statSync(path).mtimeMs;
const sources = [
  ...['client', 'contract'].flatMap((d) => readdirSync(join(repo, d)).filter((f) => /\.(ts|json)$/.test(f)).map((f) => join(repo, d, f))),
  join(repo, 'tsconfig.json'),
  fileURLToPath(import.meta.url),
];
if (!process.argv.includes('--force') && existsSync(stamp) && existsSync(join(dist, 'client', 'index.js')) && Math.max(...sources.map(mtime)) <= mtime(stamp)) process.exit(0);
rmSync(dist, { recursive: true, force: true });
const r = spawnSync(process.execPath, [join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(repo, 'client', 'tsconfig.json')], { stdio: 'inherit' });
if (r.status !== 0) {
  console.error('the client package did not compile (see above)');
  process.exit(r.status ?? 1);
}
const outside = readdirSync(dist).filter((d) => d !== 'client' && d !== 'contract');
if (outside.length) {
  console.error(`the client package imports code outside client/ and contract/: ${outside.map((d) => `dist/${d}/`).join(', ')}; it must hold nothing of the server`);
  process.exit(1);
}
// tsc rewrites `./x.ts` to `./x.js` in the JavaScript it emits, but leaves the declarations' own
// import paths as written; a consumer's TypeScript resolves `./x.js` to `./x.d.ts`, not `./x.ts`.
for (const folder of ['client', 'contract'])
  for (const file of readdirSync(join(dist, folder)).filter((f) => f.endsWith('.d.ts'))) {
    const path = join(dist, folder, file);
    writeFileSync(path, readFileSync(path, 'utf8').replace(/((?:from|import)\s*\(?\s*'\.{1,2}\/[^']+)\.ts'/g, "$1.js'"));
  }
writeFileSync(stamp, `${new Date().toISOString()}\n`);
