// Bundles our TypeScript with the packages it imports (esbuild), for the two places where Node
// loading them one file at a time cost more than the work: the CLI that `npm start` and every
// `lds` command run (bundleCli, run by ensure-build.mjs after tsc), and the test suites
// (test/helpers/bundle-suites.ts). Resolving, reading, compiling and linking ~1,000 modules was half
// of what a start costs: `lds serve` from start to listening and stopped took 3.0-3.6 CPU-seconds
// file by file and 1.6-1.7 bundled, `lds topup` 2.8 and 0.95 (2 cores, Node 20); mppx's unused
// payment methods are left out of the bundle (it declares no side effects).
//
// tsc's per-file output stays beside the bundle, and three things keep it the same program:
//   - each of our modules keeps its own address: import.meta.url in them becomes the address of
//     their compiled copy, relative to the bundle, so a module that starts a worker from its own
//     place (startWorker: the search and ingest workers, which run from tsc's output) or reads a
//     file beside itself finds the same one, wherever the checkout is moved;
//   - packages that load native code, run files from their own folder (pino's transports run
//     worker files beside pino) or are only there for development load from node_modules as before
//     (EXTERNAL). The client package is bundled from its dist/ (tsconfig.build.json has no paths):
//     the code the compiled CLI and suites imported by name before;
//   - code is split at dynamic imports, so what a command loads only when needed (the payments
//     service for `lds serve`, the generator for `lds build`) is still loaded only then.
// Plain JavaScript on purpose: it runs before anything is compiled.
import { readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');

export const EXTERNAL = ['classic-level', 'pg-native', 'pino', 'thread-stream', 'tsx', 'tsx/*', 'esbuild', 'typescript'];

/**
 * Bundles `entryPoints` (output name: source path) into `outdir`, every output file (entries and
 * their shared chunks, `chunk-*`) in that one folder. `mirrors` is the folder of the repository
 * that `outdir` stands for in tsc's output tree: a module's own address is its compiled copy's,
 * relative to it. Returns null when done, else why not.
 */
export async function bundle({ entryPoints, outdir, mirrors, external = [] }) {
  let esbuild;
  try {
    esbuild = await import('esbuild');
  } catch (err) {
    return `esbuild cannot be loaded (${String(err?.message ?? err).split('\n')[0]})`;
  }
  const ownAddress = {
    name: 'own-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path.includes('/node_modules/')) return undefined;
        const source = readFileSync(args.path, 'utf8');
        const copy = relative(join(repo, mirrors), args.path).replace(/\.ts$/, '.js');
        const address = `new URL(${JSON.stringify(copy.startsWith('.') ? copy : `./${copy}`)}, import.meta.url).href`;
        return { contents: source.replaceAll('import.meta.url', address), loader: 'ts' };
      });
    },
  };
  let result;
  try {
    result = await esbuild.build({
      absWorkingDir: repo,
      entryPoints,
      tsconfig: join(repo, 'tsconfig.build.json'),
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node20',
      outdir,
      chunkNames: 'chunk-[name]-[hash]',
      splitting: true,
      // Stack traces under `node --enable-source-maps` name the TypeScript lines; the maps point
      // at the sources instead of carrying them.
      sourcemap: 'linked',
      sourcesContent: false,
      external: [...EXTERNAL, ...external],
      // CommonJS packages in an ES module bundle call require() for Node's own modules.
      banner: { js: "import { createRequire as __ldsCreateRequire } from 'node:module'; const require = __ldsCreateRequire(import.meta.url);" },
      plugins: [ownAddress],
      metafile: true,
      logLevel: 'silent',
    });
  } catch (err) {
    return String(err?.message ?? err).split('\n').slice(0, 3).join(' ');
  }
  removeOldChunks(outdir, new Set(Object.keys(result.metafile.outputs).map((o) => join(repo, o))));
  return null;
}

const CHUNK_KEEP_MS = 24 * 3600 * 1000;

/**
 * Chunks of earlier bundles (a changed chunk gets a new name: it carries a hash of its content),
 * once a day old. Not at once: a server started before this rebuild still loads the chunks of its
 * own bundle when it first needs them.
 */
function removeOldChunks(outdir, current) {
  for (const f of readdirSync(outdir)) {
    const path = join(outdir, f);
    if (!f.startsWith('chunk-') || current.has(path) || current.has(path.replace(/\.map$/, ''))) continue;
    try {
      if (Date.now() - statSync(path).mtimeMs > CHUNK_KEEP_MS) rmSync(path, { force: true });
    } catch {
      // removed meanwhile
    }
  }
}

/** cli.ts bundled over tsc's build/cli.js; null when done, else why not (tsc's cli.js then stays). */
export function bundleCli() {
  return bundle({ entryPoints: { cli: join(repo, 'cli.ts') }, outdir: join(repo, 'build'), mirrors: '.' });
}
