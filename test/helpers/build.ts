// Test helpers: throwaway copies of catalog-src and builds into temp folders.
import { createHash } from 'node:crypto';
import { cp, mkdtemp, readdir, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawn, spawnSync } from 'node:child_process';
import { realpathSync } from 'node:fs';

/**
 * The repository's root. Under test/run.ts the suites run compiled, from build/test-js/<hash>/, where
 * package.json is a link to the repository's own: its real path names the repository, so
 * catalog-src, cli.ts and every other path below REPO are the repository's, never the compiled copy's.
 */
export const REPO = dirname(realpathSync(resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', 'package.json')));
/** The repository's catalog-src, as shipped: the real catalogue (1,504 EUR-Lex acts among the rest). */
export const SHIPPED_CATALOG_SRC = join(REPO, 'catalog-src');
/**
 * The catalog-src the suites build: test/run.ts's copy of the shipped one with a small real subset
 * of the EUR-Lex-Triples acts (helpers/test-catalog.ts, LDS_TEST_CATALOG_SRC); a file run on its
 * own, outside test/run.ts, builds the shipped one (the same tests, a minute more of CPU).
 */
export const CATALOG_SRC = process.env.LDS_TEST_CATALOG_SRC ?? SHIPPED_CATALOG_SRC;

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `lds-${prefix}-`));
}

/** A private copy of catalog-src (data files included) that a test may break. */
export async function copyCatalogSrc(): Promise<string> {
  const dir = join(await tempDir('src'), 'catalog-src');
  await cp(CATALOG_SRC, dir, { recursive: true });
  return dir;
}

/** Every file under `dir` (a dist/ link is followed) by its path relative to `dir`, with the sha256 of its bytes. */
export async function treeDigest(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const walk = async (d: string) => {
    for (const e of await readdir(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.set(relative(dir, p), createHash('sha256').update(await readFile(p)).digest('hex'));
    }
  };
  await walk(dir);
  return out;
}

export async function editJson(path: string, edit: (doc: any) => void): Promise<void> {
  const doc = JSON.parse(await readFile(path, 'utf8'));
  edit(doc);
  await writeFile(path, JSON.stringify(doc, null, 2) + '\n');
}

/**
 * Node's arguments that run the `lds` command: the compiled build/cli.js that `npm start` runs, when
 * test/run.ts compiled it for this run (LDS_TEST_CLI_JS), else cli.ts through tsx (a file run on its
 * own). The same program either way; the compiled one starts in a fifth of the CPU time, and the
 * suites start it hundreds of times.
 */
export const LDS_ARGS: readonly string[] = process.env.LDS_TEST_CLI_JS ? [process.env.LDS_TEST_CLI_JS] : ['--import', 'tsx', join(REPO, 'cli.ts')];

/** Runs the real CLI (as a publisher's CI would). */
export function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, [...LDS_ARGS, ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Runs the real CLI without blocking this process (use it when the service under test runs in
 * this process). `input` is written to its standard input.
 */
export function cliAsync(args: string[], opts: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return runAsync(process.execPath, [...LDS_ARGS, ...args], opts);
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program without blocking this process (killed after `timeoutMs`, default 60 s); `input` goes to its standard input. */
export function runAsync(cmd: string, args: string[], opts: { env?: Record<string, string>; input?: string; cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? REPO, env: { ...process.env, ...opts.env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(opts.input ?? '');
  });
}
