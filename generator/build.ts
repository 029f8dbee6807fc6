// The build: validate catalog-src, build the unit store, compute the catalogue, emit every
// document into a temporary folder, then swap it in as dist/. A failure at any step leaves the
// previous dist/ and unit store exactly as they were.
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { buildCatalogue } from './catalog.ts';
import { EMITTERS } from './emit/index.ts';
import { emitHostingConfig } from './emit/headers.ts';
import { compressedVariants, type CompressedVariant } from './emit/compress.ts';
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
  skipBadRecords?: boolean;
  /** Seconds since the epoch; defaults to SOURCE_DATE_EPOCH, then the clock. */
  sourceDateEpoch?: number;
  progress?: (msg: string) => void;
}

export interface BuildResult {
  version: string;
  storeVersion: string | null;
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

export function renderAll(ctx: EmitContext): RenderedFile[] {
  // Compressed once here: the hosting configuration needs to know which documents have variants
  // (Vary, and the rules that send them), and writeTree writes the same bytes.
  const files = EMITTERS.flatMap((emit) => emit(ctx)).map((f) => {
    const variants = compressedVariants(f);
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

/** Replace outDir with the freshly written tmpDir: two renames, the old tree removed last. */
async function swapIn(tmpDir: string, outDir: string): Promise<void> {
  const old = `${outDir}.old-${process.pid}`;
  let hadOld = true;
  try {
    await rename(outDir, old);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    hadOld = false;
  }
  await rename(tmpDir, outDir);
  if (hadOld) await rm(old, { recursive: true, force: true });
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
  if (!opts.noStore) {
    const { buildUnitStore } = await import('./store/build-store.ts');
    const built = await buildUnitStore(cat, { storeRoot: resolve(opts.storeRoot), builtAt, skipBadRecords: !!opts.skipBadRecords, progress });
    store = built;
    report = built.report;
  }

  progress('rendering documents');
  const ctx = emitContext(cat, addresses, store, builtAt);
  const files = renderAll(ctx);

  // Only a build whose service addresses are the local origin's follows the port `serve` listens on
  // (generator/local-build.ts). The record goes before the swap when it is removed and after it when
  // it is written, so a crash between never leaves a production dist/ marked as local.
  const followsPort = opts.localOrigin !== undefined && addresses.base_url === local.base_url;
  if (!followsPort) await forgetLocalBuild(outDir);
  const tmpDir = `${outDir}.tmp-${process.pid}`;
  await rm(tmpDir, { recursive: true, force: true });
  try {
    await writeTree(tmpDir, files);
    await swapIn(tmpDir, outDir);
  } catch (err) {
    await rm(tmpDir, { recursive: true, force: true });
    throw err;
  }
  if (followsPort) await writeLocalBuild(outDir, opts.localOrigin!, srcDir);
  progress(`wrote ${files.length} files to ${outDir} (${ctx.version})`);
  return { version: ctx.version, storeVersion: store.store_version, files: files.length, outDir, report };
}
