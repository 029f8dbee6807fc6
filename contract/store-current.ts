// Which unit store is current: the one-line CURRENT file in the store root names a store folder.
// The generator writes it (generator/store/publish.ts switchCurrent) and both it and the service
// read it here, so the two cannot disagree on what counts as a store version.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CURRENT_FILE } from './store-format.ts';

/** A store folder's name: `store-` and the first 12 hex digits of the content hash. */
export const STORE_VERSION = /^store-[0-9a-f]{12}$/;

/** The store version CURRENT names (null: none, or not a store version). */
export async function readCurrentVersion(storeRoot: string): Promise<string | null> {
  try {
    const v = (await readFile(join(storeRoot, CURRENT_FILE), 'utf8')).trim();
    return STORE_VERSION.test(v) ? v : null;
  } catch {
    return null;
  }
}
