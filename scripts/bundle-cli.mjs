// Bundles the compiled CLI (build/cli.js, which `npm start` runs) with the packages it imports into
// build/cli.js and build/chunk-*.js (esbuild), run by ensure-build.mjs after tsc. Node loading the
// service's ~1,000 modules one file at a time (resolve, stat, read, compile and link each) was
// half of what a start costs: `lds serve` from start to listening and stopped took 3.0-3.6 CPU-seconds
// file by file and 1.6-1.8 bundled (2 cores, Node 20). Every `lds` command starts faster.
//
// tsc's per-file output stays in build/ beside the bundle, and three things keep it the same program:
//   - each of our modules keeps its own address: import.meta.url in them becomes the address of
//     their compiled copy, relative to the bundle, so a module that starts a worker from its own
//     place (startWorker: the search and ingest workers, which run from tsc's output) or reads a
//     file beside itself finds the same one, wherever the checkout is moved;
//   - packages that load native code, run files from their own folder (pino's transports run
//     worker files beside pino) or are only there for development load from node_modules as before
//     (EXTERNAL), as does the client package (its dist/, as the service imports it by name);
//   - code is split at dynamic imports, so what a command loads only when needed (the payments
//     service for `lds serve`, the generator for `lds build`) is still loaded only then.
// Plain JavaScript on purpose: it runs before anything is compiled.
import { readFileSync, readdirSync, rmSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const out = join(repo, 'build');

const EXTERNAL = ['classic-level', 'pg-native', 'pino', 'thread-stream', 'lds-catalogue-client', 'lds-catalogue-client/*', 'tsx', 'tsx/*', 'esbuild', 'typescript'];

/** import.meta.url of each of our modules: its compiled copy's address, found from the bundle's. */
const ownAddress = {
  name: 'own-import-meta-url',
  setup(build) {
    build.onLoad({ filter: /\.ts$/ }, (args) => {
      if (args.path.includes('/node_modules/')) return undefined;
      const source = readFileSync(args.path, 'utf8');
      const copy = `./${relative(repo, args.path).replace(/\.ts$/, '.js')}`;
      return { contents: source.replaceAll('import.meta.url', `new URL(${JSON.stringify(copy)}, import.meta.url).href`), loader: 'ts' };
    });
  },
};

/** Bundles cli.ts over build/cli.js; returns null when done, else why not (tsc's cli.js then stays). */
export async function bundleCli() {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch (err) {
    return `esbuild cannot be loaded (${String(err?.message ?? err).split('\n')[0]})`;
  }
  // The chunks of an earlier bundle (their names carry a hash of their content).
  for (const f of readdirSync(out)) if (f.startsWith('chunk-')) rmSync(join(out, f), { force: true });
  try {
    await esbuild.build({
      absWorkingDir: repo,
      entryPoints: { cli: join(repo, 'cli.ts') },
      tsconfig: join(repo, 'tsconfig.build.json'),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outdir: out,
      // Beside cli.js, so that the addresses above (relative to the bundle) hold in every chunk.
      chunkNames: 'chunk-[name]-[hash]',
      splitting: true,
      // Stack traces under `node --enable-source-maps` name the TypeScript lines; the maps point
      // at the sources instead of carrying them.
      sourcemap: 'linked',
      sourcesContent: false,
      external: EXTERNAL,
      // CommonJS packages in an ES module bundle call require() for Node's own modules.
      banner: { js: "import { createRequire as __ldsCreateRequire } from 'node:module'; const require = __ldsCreateRequire(import.meta.url);" },
      plugins: [ownAddress],
      logLevel: 'silent',
    });
    return null;
  } catch (err) {
    return String(err?.message ?? err).split('\n').slice(0, 3).join(' ');
  }
}
