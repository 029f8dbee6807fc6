// `lds diff OLD NEW`: reads two catalogues (a built dist/ folder or a catalogue file each), prints
// what the change means for buyers and exits 0 (nothing a buyer sees changed), 1 (changes) or 2
// (could not run: a missing or unreadable input). The comparison itself is generator/diff/.
import { readFile, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { CatalogueDoc } from '../contract/catalogue.ts';
import { diffCatalogues } from '../generator/diff/changes.ts';
import { diffJson, diffMarkdown } from '../generator/diff/render.ts';

export const DIFF_EXIT = { unchanged: 0, changed: 1, failed: 2 } as const;

/** An input `lds diff` cannot use; the message says which and what it expected. */
export class DiffInputError extends Error {}

/** The catalogue file in a dist/ folder: v1/lds/_catalog, or <path of base_url>/lds/_catalog. */
async function findCatalogue(dir: string, depth = 0): Promise<string | null> {
  const direct = join(dir, 'lds', '_catalog');
  if (await stat(direct).then((s) => s.isFile(), () => false)) return direct;
  if (depth >= 4) return null;
  const entries = await readdir(dir, { withFileTypes: true });
  // v1 first: a local or production build puts the catalogue at v1/lds/_catalog.
  const dirs = entries.filter((e) => e.isDirectory() && !e.name.startsWith('_')).map((e) => e.name).sort((a, b) => (a === 'v1' ? -1 : b === 'v1' ? 1 : a.localeCompare(b)));
  for (const name of dirs) {
    const found = await findCatalogue(join(dir, name), depth + 1);
    if (found) return found;
  }
  return null;
}

export async function readCatalogue(path: string): Promise<{ file: string; doc: CatalogueDoc }> {
  const info = await stat(path).catch(() => null);
  if (!info) throw new DiffInputError(`${path}: no such file or folder (give a built dist/ folder or a catalogue file such as dist/v1/lds/_catalog)`);
  const file = info.isDirectory() ? await findCatalogue(path) : path;
  if (!file) throw new DiffInputError(`${path}: no catalogue in this folder (expected v1/lds/_catalog inside a built dist/; run lds build first)`);
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new DiffInputError(`${file}: not JSON (${(err as Error).message}); expected the catalogue document v1/lds/_catalog`);
  }
  const d = doc as Partial<CatalogueDoc> | null;
  const missing = !d || typeof d !== 'object' ? ['everything'] : (['version', 'products', 'sources', 'base_url'] as const).filter((k) => d[k] === undefined);
  if (missing.length || !Array.isArray(d!.products) || !Array.isArray(d!.sources))
    throw new DiffInputError(`${file}: not a catalogue document (missing ${missing.join(', ') || 'the products and sources lists'}); expected v1/lds/_catalog of a build`);
  return { file, doc: d as CatalogueDoc };
}

export interface DiffOptions {
  format: 'markdown' | 'json';
}

/** Runs the command; returns the exit code. */
export async function runDiff(oldPath: string, newPath: string, o: DiffOptions, io: { stdout: (s: string) => void; stderr: (s: string) => void }): Promise<number> {
  try {
    const [a, b] = await Promise.all([readCatalogue(oldPath), readCatalogue(newPath)]);
    const changes = diffCatalogues(a.doc, b.doc);
    io.stdout(o.format === 'json' ? diffJson(changes) : diffMarkdown(changes));
    io.stderr(`lds diff: ${changes.change_count === 0 ? 'no change a buyer sees' : `${changes.change_count} change${changes.change_count === 1 ? '' : 's'} a buyer sees`} (${a.doc.version} → ${b.doc.version})\n`);
    return changes.change_count === 0 ? DIFF_EXIT.unchanged : DIFF_EXIT.changed;
  } catch (err) {
    if (!(err instanceof DiffInputError)) throw err;
    io.stderr(`lds diff: ${err.message}\n`);
    return DIFF_EXIT.failed;
  }
}
