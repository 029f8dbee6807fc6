// Test helpers: throwaway copies of catalog-src and builds into temp folders.
import { cp, mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';

export const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const CATALOG_SRC = join(REPO, 'catalog-src');

export async function tempDir(prefix: string): Promise<string> {
  return mkdtemp(join(tmpdir(), `lds-${prefix}-`));
}

/** A private copy of catalog-src (data files included) that a test may break. */
export async function copyCatalogSrc(): Promise<string> {
  const dir = join(await tempDir('src'), 'catalog-src');
  await cp(CATALOG_SRC, dir, { recursive: true });
  return dir;
}

export async function editJson(path: string, edit: (doc: any) => void): Promise<void> {
  const doc = JSON.parse(await readFile(path, 'utf8'));
  edit(doc);
  await writeFile(path, JSON.stringify(doc, null, 2) + '\n');
}

/** Runs the real CLI (as a publisher's CI would). */
export function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['--import', 'tsx', join(REPO, 'cli.ts'), ...args], {
    cwd: REPO,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
