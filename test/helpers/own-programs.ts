// Our TypeScript modules that suites start as processes by path (a simulator instance, `lds serve`
// with a fault armed, a store build to kill): how each is run. Under test/run.ts, from the compiled
// suites (LDS_TEST_COMPILED): bundled like the suites (test/helpers/bundle-suites.ts), a start then
// loads a few dozen files instead of ~1,000 (a simulator run starts dozens of instances), else
// (LDS_TEST_BUNDLE=0) tsc's per-file copy; a file run on its own runs the TypeScript through tsx.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The programs bundled with the suites, as paths from the repository's root. */
export const OWN_PROGRAMS = ['sim/instance.ts', 'test/helpers/fault-serve.ts', 'test/helpers/store-build-child.ts'] as const;
export type OwnProgram = (typeof OWN_PROGRAMS)[number];

/** The bundle's name in the compiled suites' test/ folder, beside the suites' own: flat, so its chunks are beside it. */
export function bundledProgramName(program: OwnProgram): string {
  return `program-${program.replace(/\.ts$/, '').replaceAll('/', '-')}`;
}

/** Node's arguments that run `program` (arguments of its own follow them). */
export function ownProgramArgs(program: OwnProgram): string[] {
  const compiled = process.env.LDS_TEST_COMPILED;
  if (compiled) {
    const bundled = join(compiled, 'test', `${bundledProgramName(program)}.js`);
    if (existsSync(bundled)) return ['--enable-source-maps', bundled];
    return ['--enable-source-maps', join(compiled, program.replace(/\.ts$/, '.js'))];
  }
  return ['--import', 'tsx', fileURLToPath(new URL(`../../${program}`, import.meta.url))];
}
