// The documentation as tests read it: README.md and every guide under docs/ (issue 37), the
// command blocks marked as tested in them (```sh tested```), and a fresh copy of the repository
// to run those blocks in, literally, as a reader would.
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, cpSync, existsSync, mkdirSync, readdirSync, readFileSync, symlinkSync } from 'node:fs';
import { buildStaleness, STAMP } from '../../scripts/build-state.mjs';
import { dirname, join, relative } from 'node:path';
import { REPO, tempDir } from './build.ts';
import { EPOCH } from './publish.ts';
import { TRIPLES } from './test-catalog.ts';

/** README.md and every Markdown file under docs/, as paths relative to the repository. */
export function documentationFiles(): string[] {
  const docs = readdirSync(join(REPO, 'docs'), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && e.name.endsWith('.md'))
    .map((e) => relative(REPO, join(e.parentPath, e.name)));
  return ['README.md', ...docs.sort()];
}

export const readDoc = (path: string) => readFileSync(join(REPO, path), 'utf8');

/** The blocks of `markdown` marked ```sh tested```, in order. */
export function testedBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```sh tested\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);
}

/** The part of `markdown` under the `## ` heading that starts with `title`, up to the next one. */
export function section(markdown: string, title: string): string {
  const start = markdown.indexOf(`\n## ${title}`);
  if (start < 0) throw new Error(`no section "${title}"`);
  return markdown.slice(start + 1).split(/^## /m)[1]!;
}

/**
 * A fresh checkout: every file git tracks (or would add), as it is on disk; node_modules linked.
 * When the repository's build/ is the compile of these very sources (scripts/build-state.mjs), it
 * is copied too, with the client package's dist/, as the first `npm start` would have left them:
 * `npx lds` then runs that compile (bin/lds.mjs) instead of the same TypeScript through tsx, which
 * cost a build in the copy ~2 CPU-seconds more. The copy's sources are older than its stamp, so
 * the copy is current by the same check. What `npx lds` runs in a checkout without build/ is
 * test/cli-bundle.test.ts's to check.
 */
export async function freshCopy(name: string): Promise<string> {
  const dir = join(await tempDir(name), 'checkout');
  const files = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: REPO, encoding: 'utf8' }).stdout.split('\0');
  for (const f of files) {
    if (!f || f === 'node_modules' || !existsSync(join(REPO, f))) continue;
    mkdirSync(dirname(join(dir, f)), { recursive: true });
    copyFileSync(join(REPO, f), join(dir, f));
  }
  symlinkSync(join(REPO, 'node_modules'), join(dir, 'node_modules'));
  // The guides' blocks build the copy's catalog-src: with the suites' subset of the EUR-Lex-Triples
  // acts (helpers/test-catalog.ts), not the million paragraphs every guide step would rebuild.
  if (process.env.LDS_TEST_CATALOG_SRC) copyFileSync(join(process.env.LDS_TEST_CATALOG_SRC, TRIPLES), join(dir, 'catalog-src', TRIPLES));
  if (buildStaleness(REPO) === null) {
    // The stamp last, after everything it vouches for.
    const compiled = (src: string) => !src.startsWith(join(REPO, 'build', 'test-js')) && src !== join(REPO, STAMP);
    cpSync(join(REPO, 'build'), join(dir, 'build'), { recursive: true, filter: compiled });
    cpSync(join(REPO, 'client', 'dist'), join(dir, 'client', 'dist'), { recursive: true });
    copyFileSync(join(REPO, 'client', '.dist-stamp'), join(dir, 'client', '.dist-stamp'));
    copyFileSync(join(REPO, STAMP), join(dir, STAMP));
  }
  return dir;
}

/**
 * Runs a shell script (`sh -e -x`: stops at the first failing command, echoes each) in `cwd` as a
 * reader's shell would: none of the service's settings from the test's environment, the build
 * clock fixed.
 */
export function runScript(script: string, cwd: string): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = { ...process.env, SOURCE_DATE_EPOCH: EPOCH };
    for (const k of Object.keys(env)) if (/^(LDS_|PORT$|HOST$)/.test(k)) delete env[k];
    const child = spawn('sh', ['-e', '-x', script], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}
