// Shared by the service tests (not itself a suite): a real build of catalog-src into a temp dir
// (dist + unit store), a real server on 127.0.0.1:0 over real LevelDB, and small HTTP helpers.
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Mppx, stripe } from 'mppx/client';
import { localAddresses } from '../../generator/addresses.ts';
import type { StoreSummary } from '../../generator/model.ts';
import { CURRENT_FILE } from '../../contract/store-format.ts';
import { unitRecords } from '../../contract/unit-records.ts';
import { loadConfig } from '../../payments/config.ts';
import { createLogger, startServer, type RunningServer, type StartOptions } from '../../payments/serve.ts';
import { payTopup } from '../../payments/topup/client.ts';
import { CATALOG_SRC } from './build.ts';
import { cachedBuild } from './fixture-cache.ts';

export { cachedBuild };
import { bearer, postJson } from './http.ts';
import { BACKEND, ledgerEnv } from './ledgers.ts';
import type { LedgerSettings } from '../../payments/ledger/open.ts';
import { freshDatabase } from './pg.ts';
import { servedBuild } from './problems.ts';
import { StoreDrawService, type DrawServiceOptions } from '../../payments/draw/store-service.ts';
import { createRequestValidator } from '../../payments/http/openapi-validate.ts';
import { ReceiptSigner, generateReceiptKey } from '../../payments/receipts.ts';
import type { Ledger } from '../../payments/ledger/ledger.ts';
import type { UnitStoreReader } from '../../contract/store-format.ts';

export interface Fixture {
  root: string;
  dist: string;
  store: string;
  catalogue: any;
}

/**
 * A draw service over the fixture's catalogue and an opened unit store, without HTTP: the bounds of
 * the build's OpenAPI document, a fixed quote secret, a fresh receipt key; `extra` overrides.
 */
export function storeDrawService(fx: Fixture, store: UnitStoreReader, ledger: Ledger, extra: Partial<DrawServiceOptions> = {}): StoreDrawService {
  const spec = JSON.parse(readFileSync(join(fx.dist, 'v1/specification'), 'utf8'));
  return new StoreDrawService({
    catalogue: fx.catalogue,
    store,
    ledger,
    quoteSecret: Buffer.alloc(32, 7),
    bounds: createRequestValidator(spec).bounds,
    quoteTtlSeconds: 300,
    receipts: ReceiptSigner.fromJwks([generateReceiptKey()]),
    ...extra,
  });
}

/** The fixed build clock of the service fixture (2026-01-01T00:00:00Z). */
export const FIXTURE_EPOCH = 1767225600;
/** Beside dist/ and store/ in the fixture: the build's summary of its unit store (BuildResult.store). */
const STORE_SUMMARY = 'store-summary.json';

/**
 * Beside store/ in the fixture: refsByProduct of its store version, read from its unit records when
 * the fixture was made. Nearly every service suite asks for it, and a walk of the whole store costs
 * a quarter of a second each time; the files of a store version never change, so the walk made
 * for that version answers as long as CURRENT names it.
 */
const REFS_BY_PRODUCT = 'refs-by-product.json';

/**
 * The generator, loaded only when a build is made: a suite that takes the cached fixture (nearly
 * every run of nearly every service suite) does not parse the generator's modules (markdown-it,
 * csv-parse, the emitters: ~0.45 MB of JavaScript) at start.
 */
const generator = () => import('../../generator/build.ts');

/** Builds catalog-src (dist + unit store) into `root` with the generator's build(), and keeps its store summary and its refsByProduct. */
async function buildInto(root: string): Promise<void> {
  const storeRoot = join(root, 'store');
  const { build } = await generator();
  const r = await build({
    srcDir: CATALOG_SRC,
    outDir: join(root, 'dist'),
    storeRoot,
    addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example'),
    sourceDateEpoch: FIXTURE_EPOCH,
  });
  await writeFile(join(root, STORE_SUMMARY), JSON.stringify(r.store));
  await writeFile(join(root, REFS_BY_PRODUCT), JSON.stringify({ version: r.storeVersion, refs: Object.fromEntries(await refsByProduct(storeRoot)) }));
}

/**
 * The fixture's build for another origin (a server on a port chosen first, whose published documents
 * must name it): the fixture's unit store, and dist/ rendered by the generator for that origin
 * against the store's summary (`build({ store })`), as a full build of the same catalog-src would
 * render it, without ingesting the data again.
 */
export async function buildFixtureFor(origin: string): Promise<Fixture> {
  const fx = await buildFixture();
  const store = JSON.parse(await readFile(join(fx.root, STORE_SUMMARY), 'utf8')) as StoreSummary;
  const { build } = await generator();
  await build({ srcDir: CATALOG_SRC, outDir: fx.dist, storeRoot: fx.store, addresses: localAddresses(origin, 'https://publisher.example'), sourceDateEpoch: FIXTURE_EPOCH, store });
  return { ...fx, catalogue: JSON.parse(await readFile(join(fx.dist, 'v1/lds/_catalog'), 'utf8')) };
}

/**
 * A build of catalog-src (dist + unit store) in a fresh temp dir of the caller's own, which it may
 * change. The build's inputs are fixed, so it is made once (test/helpers/fixture-cache.ts: once
 * per machine until an input changes) and each caller gets a copy (links kept as links: dist/ is one).
 */
export async function buildFixture(): Promise<Fixture> {
  const root = await mkdtemp(join(tmpdir(), 'lds-svc-'));
  await cachedBuild('service', root, buildInto, ['test/helpers/service-harness.ts']);
  const dist = join(root, 'dist');
  const catalogue = JSON.parse(readFileSync(join(dist, 'v1/lds/_catalog'), 'utf8'));
  return { root, dist, store: join(root, 'store'), catalogue };
}


/**
 * Unit references per product, read straight from the store's unit records (the documented on-disk
 * format) of the version CURRENT names; for the fixture's own version, the walk its maker did
 * (REFS_BY_PRODUCT beside the store).
 */
export async function refsByProduct(storeRoot: string): Promise<Map<string, string[]>> {
  const version = readFileSync(join(storeRoot, CURRENT_FILE), 'utf8').trim();
  const made = await readFile(join(storeRoot, '..', REFS_BY_PRODUCT), 'utf8').then((t) => JSON.parse(t) as { version: string; refs: Record<string, string[]> }, () => null);
  if (made?.version === version) return new Map(Object.entries(made.refs));
  const out = new Map<string, string[]>();
  for await (const su of unitRecords(join(storeRoot, version))) for (const p of su.products) out.set(p, [...(out.get(p) ?? []), su.unit.ref]);
  for (const refs of out.values()) refs.sort();
  return out;
}

export interface TestServer extends RunningServer {
  base: string; // http://127.0.0.1:<port>/v1
  varDir: string;
  /** Where this server's ledger lives; pass `env: ledgerEnv` (and the same varDir) to restart on the same data. */
  ledgerSettings: LedgerSettings;
  ledgerEnv: Record<string, string>;
}

export async function startTestServer(fx: Fixture, opts: StartOptions & { env?: Record<string, string>; varDir?: string } = {}): Promise<TestServer> {
  const varDir = opts.varDir ?? (await mkdtemp(join(fx.root, 'var-')));
  // The ledger backend LDS_TEST_BACKEND names: LevelDB under varDir, or a fresh PostgreSQL database.
  const ledger = BACKEND === 'postgres' && !opts.env?.LDS_LEDGER_URL && !opts.env?.LDS_LEDGER_DIR ? { LDS_LEDGER_URL: await freshDatabase() } : {};
  const env = { LDS_DIST_DIR: fx.dist, LDS_STORE_DIR: fx.store, LDS_VAR_DIR: varDir, LDS_RATE_LIMIT_RPS: '0', ...ledger, ...(opts.env ?? {}) };
  const config = await loadConfig({ port: 0, host: '127.0.0.1' }, env);
  const running = await startServer(config, { logger: createLogger('silent'), env, ...opts });
  servedBuild(fx.catalogue);
  const ledgerSettings = { ledgerDir: config.ledgerDir, ledgerUrl: config.ledgerUrl };
  return { ...running, base: `${running.url}/v1`, varDir, ledgerSettings, ledgerEnv: ledgerEnv(ledgerSettings) };
}

export { bearer, postJson };

/** The official mppx client with the stripe method, minting a sandbox SPT. */
export function mppxClient(spt = 'spt_test_journey') {
  return Mppx.create({ polyfill: false, methods: [stripe.charge({ paymentMethod: 'pm_card_visa', createToken: async () => spt })] });
}

/** Tops up through MPP (402 challenge -> credential -> 200) with the service's own mppx client helper; returns the new balance token. */
export async function topUp(base: string, amount = '5.00', spt = 'spt_test_topup'): Promise<string> {
  const res = await payTopup(`${base}/lds/balance/topup`, amount, { spt });
  const body = (await res.json()) as { balance_token?: string };
  if (res.status !== 200 || !body.balance_token) throw new Error(`top-up failed: ${res.status} ${JSON.stringify(body)}`);
  return body.balance_token;
}

export async function balanceOf(base: string, token: string): Promise<string> {
  const res = await fetch(`${base}/lds/balance`, { headers: bearer(token) });
  if (res.status !== 200) throw new Error(`balance read failed: ${res.status}`);
  return ((await res.json()) as { balance: string }).balance;
}

/** "5.00" -> 500 without floating point. */
export function cents(amount: string): number {
  const [e, c = '00'] = amount.split('.');
  return Number(e) * 100 + Number(c.padEnd(2, '0'));
}
