// Starting and stopping the service. `startServer(config)` is the programmatic entry (tests, the
// benchmark); `serveFromCli` is what `lds serve` / `npm start` runs: it loads the configuration,
// logs as JSON with pino (tokens and credentials redacted), and drains on SIGTERM/SIGINT before
// closing the ledger and the unit store, so an orderly stop never cuts a paid draw in half.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import pino, { type Logger } from 'pino';
import type { CatalogueDoc } from '../contract/catalogue.ts';
import type { UnitStoreReader } from '../contract/store-format.ts';
import { createApp, type Mount } from './http/app.ts';
import { loadConfig, type ServiceConfig } from './config.ts';
import { StoreDrawService } from './draw/store-service.ts';
import type { Ledger } from './ledger/ledger.ts';
import { openLedger } from './ledger/open.ts';
import { createRequestValidator } from './http/openapi-validate.ts';
import { loadStaticSite, staticFastPath } from './http/static.ts';
import { isLazy, lazyMiddleware } from './http/lazy.ts';

/** Never log these, wherever they appear in a log object. */
export const REDACT_PATHS = [
  'authorization',
  'Authorization',
  '*.authorization',
  '*.Authorization',
  'headers.authorization',
  '*.headers.authorization',
  '*.headers["payment-authorization"]',
  '*.headers.cookie',
  'token',
  '*.token',
  'balance_token',
  '*.balance_token',
  'balanceToken',
  '*.balanceToken',
  'spt',
  '*.spt',
  'credential',
  '*.credential',
  'secret',
  '*.secret',
];

export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const opts = { level, base: { service: 'lds' }, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(opts, destination as pino.DestinationStream) : pino(opts);
}

export interface StartOptions {
  logger?: Logger;
  /** MCP / A2A adapters (see MountContext in app.ts). */
  mount?: Mount | Mount[];
  /** Tests: a clock for quote expiry. */
  now?: () => number;
  /** Tests: a unit store other than the one under config.storeRoot. */
  openStore?: (root: string) => Promise<UnitStoreReader>;
  env?: NodeJS.ProcessEnv;
}

export interface RunningServer {
  url: string;
  server: Server;
  ledger: Ledger;
  service: StoreDrawService;
  /** Stops accepting, waits for in-flight requests (up to the grace period), closes the databases. */
  close(): Promise<void>;
}

async function defaultOpenStore(root: string): Promise<UnitStoreReader> {
  const { openUnitStore } = await import('./store/unit-store.ts');
  return openUnitStore(root);
}

export async function startServer(config: ServiceConfig, opts: StartOptions = {}): Promise<RunningServer> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const env = opts.env ?? process.env;

  // dist/ is read once: the catalogue, the OpenAPI contract and every published document.
  const site = await loadStaticSite(config.distDir);
  const catalogPath = [...site.entries.keys()].find((p) => p.endsWith('/lds/_catalog'));
  if (!catalogPath) throw new Error(`${config.distDir} has no catalogue (…/lds/_catalog): build first (npm run build)`);
  const catalogue = site.json(catalogPath) as CatalogueDoc;
  const basePath = new URL(catalogue.base_url).pathname.replace(/\/$/, '');
  const validator = createRequestValidator(site.json(`${basePath}/specification`));

  const store = await (opts.openStore ?? defaultOpenStore)(config.storeRoot);
  let ledger: Ledger;
  try {
    ledger = await openLedger(config, { logger });
  } catch (err) {
    await store.close();
    throw err;
  }
  // LevelDB: `ledger verify` / `ledger export` reach the running service over a socket (level/admin.ts).
  let admin: { close(): Promise<void> } | null = null;
  if (ledger.backend === 'level') {
    const { adminSocketPath, serveLedgerAdmin } = await import('./ledger/level/admin.ts');
    admin = await serveLedgerAdmin(ledger, adminSocketPath(config.ledgerDir));
  }
  if (catalogue.store_version !== store.meta.store_version) {
    logger.warn({ catalogue_store: catalogue.store_version, store: store.meta.store_version }, 'dist/ was built against another unit store version: counts in the catalogue may differ from what is sold');
  }

  const service = new StoreDrawService({
    catalogue,
    store,
    ledger,
    quoteSecret: config.quoteSecret,
    bounds: validator.bounds,
    quoteTtlSeconds: config.quoteTtlSeconds,
    logger,
    ...(opts.now ? { now: opts.now } : {}),
  });
  // Loaded after the server listens (lazy.ts): mppx, viem and the Stripe SDK are most of start-up
  // (measured: ~4 s -> ~0.8 s to "serving" on the loaded benchmark machine). Top-ups that arrive
  // meanwhile wait for it and are then answered together: each still gets its own challenge
  // (topup/handler.ts nextExpiry).
  const topup = lazyMiddleware(async () => {
    const [{ createSandboxProcessor, stripeProcessorFromEnv }, { createTopupHandler }] = await Promise.all([import('./processors/index.ts'), import('./topup/handler.ts')]);
    const processor = config.processor === 'sandbox' ? createSandboxProcessor({ env }) : stripeProcessorFromEnv(env);
    return createTopupHandler({ ledger, processor, realm: new URL(catalogue.base_url).host, secretKey: config.mppSecret, logger });
  });
  const { app } = createApp({
    service,
    site,
    validator,
    topup,
    logger,
    rateLimit: { perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst },
    trustProxy: config.trustProxy,
    ...(opts.mount ? { mount: opts.mount } : {}),
  });

  // Published documents are answered before Koa (static.ts staticFastPath); everything else is Koa's.
  const koa = app.callback();
  const fast = staticFastPath(site, logger.isLevelEnabled('info') ? (method, path, status, ms) => logger.info({ method, path, status, ms }, 'request') : undefined);
  const server = createServer((req, res) => {
    if (!fast(req, res)) void koa(req, res);
  });
  // Track requests in flight so a drain can wait for them and then cut idle keep-alive sockets.
  const active = new Map<Socket, number>();
  server.on('request', (req, res) => {
    const s = req.socket;
    active.set(s, (active.get(s) ?? 0) + 1);
    res.on('close', () => {
      const n = (active.get(s) ?? 1) - 1;
      if (n <= 0) active.delete(s);
      else active.set(s, n);
    });
  });
  server.headersTimeout = 20_000;
  server.requestTimeout = 30_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${host}:${addr.port}`;
  // Everything deferred at start (request schemas, top-up, agent endpoints) loads now, in the background.
  const warming = Promise.all([validator.warm(), topup.warm(), ...app.middleware.filter(isLazy).map((m) => m.warm())]).catch((err) => {
    logger.error({ err }, 'loading a deferred part failed; the requests that need it will retry and report it');
  });
  logger.info({ url, processor: config.processor, catalogue: catalogue.version, store: store.meta.store_version, ledger: `${ledger.backend} ${ledger.location}` }, 'listening');

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      await warming; // never close the ledger under a module still setting up
      const drained = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const grace = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), config.shutdownGraceMs).unref());
      // New requests on a kept-alive socket are refused by server.close(); idle sockets go now.
      const idleSweep = setInterval(() => server.closeIdleConnections(), 50);
      const outcome = await Promise.race([drained.then(() => 'drained' as const), grace]);
      clearInterval(idleSweep);
      if (outcome === 'timeout') {
        logger.warn({ in_flight: [...active.values()].reduce((a, b) => a + b, 0) }, 'shutdown grace period over: closing remaining connections');
        server.closeAllConnections();
      }
      await admin?.close();
      await ledger.close();
      await store.close();
      logger.info('stopped');
    })());
  return { url, server, ledger, service, close };
}

/** `lds serve`: configuration from flags and env, JSON logs, drain on SIGTERM/SIGINT. */
export async function serveFromCli(config: ServiceConfig): Promise<void> {
  const logger = createLogger(config.logLevel);
  const running = await startServer(config, { logger, mount: await agentMounts() });
  console.error(`serving ${running.url} (processor ${config.processor}; data under ${config.varDir})`);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'draining');
    running.close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/**
 * The MCP and A2A adapters (payments/agents/), loaded after the server listens (their SDKs and zod
 * are a large part of start-up): tests may start the API without them, or pass mountAgents itself.
 */
async function agentMounts(): Promise<Mount[]> {
  return [(m) => m.app.use(lazyMiddleware(async () => (await import('./agents/mount.ts')).agentMiddleware(m)))];
}

export { loadConfig };
