// What a --local build records so that `lds serve` can tell whether dist/ names the address it is
// about to listen on: the local origin and the catalog-src folder it was built from. A local
// build's documents hold that origin in every address (catalogue base_url, agent card, the 402's
// topup_url), so a start on another port must rebuild them first. Production builds (explicit
// addresses) write no record and are never rebuilt by a start.
//
// The record sits beside dist/, not in it: dist/ is exactly what is published, and _headers lists
// every file in it. `dist/` -> `.dist.local-build.json` in the same parent folder.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve } from 'node:path';

export interface LocalBuild {
  /** e.g. http://127.0.0.1:8080: every service address of the build is under it. */
  local_origin: string;
  /** The catalog-src folder, relative to the folder holding this record. */
  src: string;
}

export function localBuildRecordPath(outDir: string): string {
  const out = resolve(outDir);
  return join(dirname(out), `.${basename(out)}.local-build.json`);
}

export async function writeLocalBuild(outDir: string, localOrigin: string, srcDir: string): Promise<void> {
  const path = localBuildRecordPath(outDir);
  const record: LocalBuild = { local_origin: localOrigin.replace(/\/$/, ''), src: relative(dirname(path), resolve(srcDir)) || '.' };
  await writeFile(path, JSON.stringify(record, null, 2) + '\n');
}

export async function forgetLocalBuild(outDir: string): Promise<void> {
  await rm(localBuildRecordPath(outDir), { force: true });
}

/** The record of the local build in outDir, with src made absolute; null for a production build (or none). */
export async function readLocalBuild(outDir: string): Promise<LocalBuild | null> {
  const path = localBuildRecordPath(outDir);
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch {
    return null;
  }
  try {
    const r = JSON.parse(text) as LocalBuild;
    if (typeof r.local_origin !== 'string' || typeof r.src !== 'string') return null;
    return { local_origin: r.local_origin, src: resolve(dirname(path), r.src) };
  } catch {
    return null;
  }
}
