// The build: validate catalog-src, build the unit store, compute the catalogue, emit every
// document into a new folder, then switch the dist/ link to it (switchDist). The store switches
// its CURRENT first and dist/ switches last, and the service serves the store dist/ names, so a
// failure or a kill at any step leaves the previous build served (test/build-crash).
import { lstat, mkdir, readdir, readFile, readlink, rename, rm, writeFile } from 'node:fs/promises';
import { basename, dirname, join, resolve } from 'node:path';
import { fsyncPath, fsyncTree, removeLinkLeftovers, removeStaleTemp, switchLink, tmpName } from './durable.ts';
import { buildCatalogue } from './catalog.ts';
import { EMITTERS } from './emit/index.ts';
import { emitHostingConfig } from './emit/headers.ts';
import { compressedVariants, type CompressedVariant, type Compressor } from './emit/compress.ts';
import { compressCacheDir, openCompressCache } from './compress-cache.ts';
import type { EmitContext, OutputFile } from './emit/types.ts';
import { localServiceAddresses, resolveAddresses } from './addresses.ts';
import { loadCatalogSrc } from './load.ts';
import { forgetLocalBuild, writeLocalBuild } from './local-build.ts';
import type { Addresses, CatalogSrc, StoreSummary } from './model.ts';
import { contentVersion } from './version.ts';

export interface BuildOptions {
  srcDir: string;
  outDir: string;
  storeRoot: string;
  addresses?: Partial<Addresses>;
  /** Point base_url, mcp_url and docs_url at this origin (e.g. http://127.0.0.1:8080); explicit `addresses` still win. */
  localOrigin?: string;
  /** Skip ingestion: counts are zero and _health says the store was not built. */
  noStore?: boolean;
  /**
   * The summary of a unit store already built from this same catalog-src (an earlier build's
   * `store`, with that store in `storeRoot`): render the documents against it and build no store.
   * For re-rendering a build for other addresses; counts, previews and health come from the summary.
   */
  store?: StoreSummary;
  skipBadRecords?: boolean;
  /** Seconds since the epoch; defaults to SOURCE_DATE_EPOCH, then the clock. */
  sourceDateEpoch?: number;
  progress?: (msg: string) => void;
  /** The compression cache folder (generator/compress-cache.ts); null: none. Default: LDS_BUILD_CACHE, else ~/.cache/lds/compress. */
  compressCache?: string | null;
}

export interface BuildResult {
  version: string;
  storeVersion: string | null;
  /** What the documents say of the unit store (its counts, previews, notes): `store` of a later build for other addresses. */
  store: StoreSummary;
  files: number;
  outDir: string;
  report: string;
}

export function buildTime(epoch?: number, env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env.SOURCE_DATE_EPOCH;
  const seconds = epoch ?? (fromEnv !== undefined && fromEnv !== '' ? Number(fromEnv) : undefined);
  if (seconds !== undefined && (!Number.isInteger(seconds) || seconds < 0)) throw new Error(`SOURCE_DATE_EPOCH must be whole seconds since 1970: ${fromEnv}`);
  return new Date(seconds !== undefined ? seconds * 1000 : Date.now()).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function emptyStore(builtAt: string): StoreSummary {
  return { store_version: null, computed_at: builtAt, products: {}, notes: {} };
}

/**
 * Everything the emitters need, computed in memory. The version hashes the whole content that the
 * documents are made from: inputs, addresses, clock and what the store holds.
 */
export function emitContext(cat: CatalogSrc, addresses: Addresses, store: StoreSummary, builtAt: string): EmitContext {
  const draft = buildCatalogue(cat, addresses, store, builtAt, '');
  const content = {
    settings: cat.settings,
    licences: [...cat.licences.values()],
    sources: [...cat.sources.values()],
    products: cat.products,
    inputs_sha256: cat.inputs_sha256 ?? null,
    addresses,
    catalogue: draft,
  };
  const version = contentVersion('catalogue', content);
  // The version is the only field that differs between the hashed draft and the published document.
  return { cat, addresses, builtAt, version, catalogue: { ...draft, version }, previews: store.previews ?? {} };
}

/** A rendered file with the precompressed variants written beside it. */
export interface RenderedFile extends OutputFile {
  variants: CompressedVariant[];
}

export function renderAll(ctx: EmitContext, compress?: Compressor): RenderedFile[] {
  // Compressed once here: the hosting configuration needs to know which documents have variants
  // (Vary, and the rules that send them), and writeTree writes the same bytes.
  const files = EMITTERS.flatMap((emit) => emit(ctx)).map((f) => {
    const variants = compressedVariants(f, compress);
    return { ...f, codings: variants.map((v) => v.coding), variants };
  });
  const all: RenderedFile[] = [...files, ...emitHostingConfig(ctx, files).map((f) => ({ ...f, variants: [] }))];
  const seen = new Set<string>();
  for (const f of all) {
    if (seen.has(f.path)) throw new Error(`two documents claim ${f.path}`);
    seen.add(f.path);
    if (/json/.test(f.contentType)) JSON.parse(f.body); // never publish a document that does not parse
  }
  return all.sort((a, b) => a.path.localeCompare(b.path));
}

async function writeTree(dir: string, files: RenderedFile[]): Promise<void> {
  for (const f of files) {
    const target = join(dir, f.path);
    await mkdir(dirname(target), { recursive: true });
    await writeFile(target, f.body);
    // Beside each published document: its .br and .gz, sent as they are by the service and nginx.
    for (const v of f.variants) await writeFile(join(dir, v.path), v.body);
  }
}

/** The unit store version the catalogue of the served dist/ names, or null (no dist/ yet, or another layout). */
async function servedStoreVersion(outDir: string, basePath: string): Promise<string | null> {
  try {
    const version = (JSON.parse(await readFile(join(outDir, basePath, 'lds', '_catalog'), 'utf8')) as { store_version?: unknown }).store_version;
    return typeof version === 'string' ? version : null;
  } catch {
    return null;
  }
}

/**
 * Test hook: `LDS_TEST_BUILD_CRASH_AT=<step>` kills the build (SIGKILL, as a power cut or an OOM
 * kill would) at that step, so test/build-crash can check that each one leaves the previous build
 * served. Steps, in order: store-switched (the new unit store is CURRENT), dist-written (the new
 * tree is complete and fsynced under .<dist>.builds/), dist-linked (its link is made, not yet
 * renamed over dist), dist-switched (dist names the new build; the old one not yet pruned).
 */
function crashPoint(step: 'store-switched' | 'dist-written' | 'dist-linked' | 'dist-switched'): void {
  if (process.env.LDS_TEST_BUILD_CRASH_AT === step) process.kill(process.pid, 'SIGKILL');
}

/**
 * dist/ is a symbolic link to one finished build in the folder beside it, `.<name>.builds/<id>`.
 * A new build is written and fsynced there under a temporary name, renamed to its id, and made the
 * served one by renaming a new link over dist/ (atomic): a reader (the service, a web server) always
 * finds a whole build, the old or the new, and a build killed at any point leaves the old one in
 * place. The previous build is kept (a reader may still be loading it, and a rollback is a link
 * away); older ones are removed. A dist/ that is still a real folder (written by an earlier version
 * of lds) is moved in as the previous build, the only moment without a dist/.
 */
async function switchDist(outDir: string, id: string, files: RenderedFile[]): Promise<void> {
  const parent = dirname(outDir);
  const name = basename(outDir);
  const builds = join(parent, `.${name}.builds`);
  await mkdir(builds, { recursive: true });
  await removeStaleTemp(builds);
  await removeLinkLeftovers(parent, name);
  const tmp = join(builds, tmpName(id));
  try {
    await writeTree(tmp, files);
    await fsyncTree(tmp);
    await rename(tmp, join(builds, id));
    await fsyncPath(builds);
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
  crashPoint('dist-written');
  const current = await lstat(outDir).catch(() => null);
  let previous: string | null = null;
  if (current?.isSymbolicLink()) previous = basename(await readlink(outDir));
  else if (current) {
    previous = `earlier-${Date.now()}`;
    await rename(outDir, join(builds, previous));
  }
  await switchLink(parent, name, join(`.${name}.builds`, id), () => crashPoint('dist-linked'));
  crashPoint('dist-switched');
  for (const old of await readdir(builds)) {
    if (old !== id && old !== previous && !old.startsWith('.tmp-')) await rm(join(builds, old), { recursive: true, force: true });
  }
}

export async function build(opts: BuildOptions): Promise<BuildResult> {
  const progress = opts.progress ?? (() => {});
  const srcDir = resolve(opts.srcDir);
  const outDir = resolve(opts.outDir);
  const builtAt = buildTime(opts.sourceDateEpoch);

  progress(`checking ${srcDir}`);
  // The same checks as `lds check`; its findings, in its text format, are the error a bad input throws.
  const cat = await loadCatalogSrc(srcDir, { folder: opts.srcDir.replace(/(.)\/+$/, '$1'), onWarning: progress });
  // Only the service's addresses move; publisher_url keeps catalog-src's value or LDS_PUBLISHER_URL.
  const local: Partial<Addresses> = opts.localOrigin ? localServiceAddresses(opts.localOrigin) : {};
  const addresses = resolveAddresses(cat.settings.addresses, { ...local, ...opts.addresses });

  let store = emptyStore(builtAt);
  let report = 'unit store: not built (--no-store)';
  if (opts.store) {
    store = opts.store;
    report = `unit store: ${store.store_version} as built before (not rebuilt)`;
  } else if (!opts.noStore) {
    const { buildUnitStore } = await import('./store/build-store.ts');
    // The store the served dist/ was built against stays until dist/ switches (it switches last).
    const served = await servedStoreVersion(outDir, new URL(addresses.base_url).pathname);
    const built = await buildUnitStore(cat, { storeRoot: resolve(opts.storeRoot), builtAt, skipBadRecords: !!opts.skipBadRecords, progress, keepVersions: served ? [served] : [] });
    const { report: text, ...summary } = built;
    store = summary;
    report = text;
    crashPoint('store-switched');
  }

  progress('rendering documents');
  const ctx = emitContext(cat, addresses, store, builtAt);
  const cacheDir = opts.compressCache === undefined ? compressCacheDir() : opts.compressCache;
  const cache = cacheDir === null ? null : openCompressCache(cacheDir, progress);
  const files = renderAll(ctx, cache?.compress);
  if (cache) {
    const { hits, made, damaged } = cache.stats;
    progress(`compressed variants: ${hits} from the cache (${cache.dir}), ${made} made${damaged ? `, ${damaged} damaged cache entries replaced` : ''}`);
  }

  // Only a build whose service addresses are the local origin's follows the port `serve` listens on
  // (generator/local-build.ts). The record goes before the swap when it is removed and after it when
  // it is written, so a crash between never leaves a production dist/ marked as local.
  const followsPort = opts.localOrigin !== undefined && addresses.base_url === local.base_url;
  if (!followsPort) await forgetLocalBuild(outDir);
  await switchDist(outDir, `${ctx.version}-${Date.now().toString(36)}`, files);
  if (followsPort) await writeLocalBuild(outDir, opts.localOrigin!, srcDir);
  await cache?.prune();
  progress(`wrote ${files.length} files to ${outDir} (${ctx.version})`);
  return { version: ctx.version, storeVersion: store.store_version, store, files: files.length, outDir, report };
}
