// Runs before `npm start` (and as `npm run build:js`, with --force): compiles the client package
// (client/dist, scripts/build-client.mjs: the compiled CLI imports it by name) and then the TypeScript to build/ (tsc -p tsconfig.build.json) when
// build/ is missing or older than any source file, so a fresh clone and an edited tree both start
// the JavaScript of the code they hold. On an up-to-date tree it only compares modification times
// (a few ms). Plain JavaScript on purpose: it runs before anything is compiled.
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { buildStaleness, STAMP } from './build-state.mjs';
import { bundleCli } from './bundle.mjs';

const stale = buildStaleness('.');
if (process.argv.includes('--force') || stale) {
  console.error(stale === 'never built' ? 'compiling to build/ (first start)…' : `${stale ?? '--force'}: recompiling to build/…`);
  const started = Date.now();
  const client = spawnSync(process.execPath, [join('scripts', 'build-client.mjs'), ...(process.argv.includes('--force') ? ['--force'] : [])], { stdio: 'inherit' });
  if (client.status !== 0) process.exit(client.status ?? 1);
  const r = spawnSync(process.execPath, [join('node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json'], { stdio: 'inherit' });
  if (r.status !== 0) {
    console.error('tsc failed: fix the errors above (or run the TypeScript directly: npm run dev)');
    process.exit(r.status ?? 1);
  }
  // Then the CLI bundled over tsc's build/cli.js (scripts/bundle.mjs): a start loads a few
  // dozen files instead of ~1,000. Without it tsc's cli.js runs, file by file, and only slower.
  const notBundled = await bundleCli();
  if (notBundled) console.error(`note: build/cli.js runs file by file, not bundled: ${notBundled}`);
  writeFileSync(STAMP, `${new Date().toISOString()}\n`);
  console.error(`compiled in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}
