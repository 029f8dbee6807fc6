// Starting and stopping the service. `startServer(config)` is the programmatic entry (tests, the
// benchmark); `serveFromCli` is what `lds serve` / `npm start` runs: it loads the configuration,
// logs as JSON with pino (tokens and credentials redacted), and drains on SIGTERM/SIGINT before
// closing the ledger and the unit store, so an orderly stop never cuts a paid draw in half.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import pino, { type Logger } from 'pino';
import { CURRENT_FILE, type UnitStoreReader } from '../contract/store-format.ts';
import { createApp, type Mount } from './http/app.ts';
import { loadConfig, type ServiceConfig } from './config.ts';
import { StoreDrawService } from './draw/store-service.ts';
import type { Ledger, LedgerHooks } from './ledger/ledger.ts';
import { meteredLedger } from './ledger/metered.ts';
import { createMetrics, type Metrics, type PoolStats } from './metrics.ts';
import type { Readiness } from './http/ops.ts';
import type { FaultHooks } from './faults.ts';
import { openLedger } from './ledger/open.ts';
import type { PaymentProcessor } from './processors/types.ts';
import { stripeOptionsFromEnv } from './processors/stripe-options.ts';
import { staticFastPath, type StaticSite } from './http/static.ts';
import { loadDist, ReleaseSet } from './release/releases.ts';
import { readCurrentVersion } from '../contract/store-current.ts';
import type { LiveDrawService } from './release/live-service.ts';
import { isLazy, lazyMiddleware } from './http/lazy.ts';
import { Problem, rawProblemResponse, useProblemBase } from './problem.ts';
import { ReceiptSigner } from './receipts.ts';
import { openReceiptLog } from './receipt-log.ts';

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
  /** Tests and the simulator: a clock for quote expiry. */
  now?: () => number;
  /** The simulator only (sim/instance.ts): fault hooks in the money path (payments/faults.ts). Never set in production. */
  faults?: FaultHooks;
  /** Tests: a unit store other than the one under config.storeRoot (`version`: that one, else the one CURRENT names). */
  openStore?: (root: string, version?: string) => Promise<UnitStoreReader>;
  env?: NodeJS.ProcessEnv;
  /**
   * A LevelDB ledger write failed and the ledger stopped (fail-stop). `lds serve` exits (status 75)
   * so its supervisor restarts it; without this option the server stays up answering 503 and
   * /readyz reports the ledger not ready.
   */
  onLedgerFatal?: (err: Error) => void;
  /** Tests only: fault injection into the ledger (LedgerHooks.failWrite). The CLI never sets it. */
  ledgerFaults?: Pick<LedgerHooks, 'failWrite'>;
}

export interface RunningServer {
  url: string;
  server: Server;
  ledger: Ledger;
  /** Quotes from the serving release; pays with the release the quote names. */
  service: LiveDrawService;
  /** The published builds this server holds; `check()` looks for a new one now (SIGHUP does). */
  releases: ReleaseSet;
  metrics: Metrics;
  /** What GET /readyz answers. */
  readiness(): Promise<Readiness>;
  /** Stops accepting, waits for in-flight requests (up to the grace period), closes the databases. */
  close(): Promise<void>;
}

function defaultOpenStore(config: ServiceConfig): NonNullable<StartOptions['openStore']> {
  return async (root, version) => {
    const { openUnitStore } = await import('./store/unit-store.ts');
    return openUnitStore(root, { version, searchThreads: config.searchThreads });
  };
}

/**
 * The unit store dist/ was built against. A build switches the store's CURRENT first and dist/ last
 * (generator/build.ts), so after a build killed between the two, CURRENT names a store no dist/
 * was built for yet: the published pair is the one dist/ names, while that store is still there
 * (a build keeps the previous one). Otherwise (a dist/ built without a store, a store removed by
 * hand) the store CURRENT names, served with a warning by the release set.
 */
async function openPublishedStore(openStore: NonNullable<StartOptions['openStore']>, root: string, distStoreVersion: string | null, logger: Logger): Promise<UnitStoreReader> {
  if (distStoreVersion === null) return openStore(root);
  let paired: UnitStoreReader;
  try {
    paired = await openStore(root, distStoreVersion);
  } catch {
    return openStore(root);
  }
  const current = await readCurrentVersion(root);
  if (current !== null && current !== distStoreVersion) {
    logger.warn({ dist_store: distStoreVersion, current_store: current }, `${CURRENT_FILE} names a unit store no dist/ was built against yet (a build stopped before it switched dist/): serving the store dist/ names until a build completes`);
  }
  return paired;
}

/**
 * Starts the service: the published build, the ledger, the releases that follow new builds, the
 * Koa app, then the HTTP server. Each step is a function below; the order matters only where one
 * needs what another made.
 */
export async function startServer(config: ServiceConfig, opts: StartOptions = {}): Promise<RunningServer> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const env = opts.env ?? process.env;
  const processor = lazyProcessor(config, env, opts.faults);
  // First: a receipt log that cannot be opened stops the start before anything else is open.
  const receiptLog = config.receiptLog ? openReceiptLog(config.receiptLog, logger) : null;
  // The published build: dist/ (the catalogue, the OpenAPI contract and every published document,
  // read into memory) and the unit store CURRENT names; followed without a restart (releases.ts).
  const first = await loadDist(config.distDir);
  const { catalogue } = first;
  // Problem types point at the problem pages this very build published under its docs_url.
  useProblemBase(catalogue.docs_url);
  const openStore = opts.openStore ?? defaultOpenStore(config);
  const store = await openPublishedStore(openStore, config.storeRoot, catalogue.store_version, logger);
  const metrics = createMetrics({ backend: config.ledgerUrl ? 'postgres' : 'level', products: catalogue.products.map((p) => p.product_id) });
  let opened: OpenedLedger;
  try {
    opened = await openServiceLedger(config, opts, logger, metrics);
  } catch (err) {
    await store.close();
    throw err;
  }
  const { ledger } = opened;
  const receipts = ReceiptSigner.fromJwks(config.receiptKeys, receiptLog ? { onSigned: (r) => receiptLog.append(r) } : {});
  const releases = releaseSet(config, opts, { ledger, logger, metrics, openStore, receipts });
  await releases.start(first, store, config.storeRoot);
  const { service, site, validator } = releases;
  const state = { draining: false, storeOpen: true };
  const readiness = readinessCheck(ledger, releases, logger, opened.fatal, state);
  metrics.watchReadiness(async () => (await readiness()).ready);
  // Loaded after the server listens (lazy.ts): mppx and viem are a large part of start-up. Top-ups
  // that arrive meanwhile wait for it and are then answered together: each still gets its own
  // challenge (a nonce of ours in each one, topup/handler.ts).
  const topup = lazyMiddleware(async () => {
    const { createTopupHandler } = await import('./topup/handler.ts');
    return createTopupHandler({ ledger, processor: await processor(), realm: new URL(catalogue.base_url).host, secretKey: config.mppSecret, logger, receipts, ...(opts.now ? { now: opts.now } : {}) });
  });
  const { app } = createApp({
    service,
    site,
    validator,
    topup,
    logger,
    receipts,
    operatorToken: config.operatorToken,
    maxAdjustmentCents: config.maxAdjustmentCents,
    ledger,
    processor,
    rateLimit: { perSecond: config.rateLimitPerSecond, burst: config.rateLimitBurst, tokenPerSecond: config.rateLimitTokenPerSecond, tokenBurst: config.rateLimitTokenBurst },
    trustProxy: config.trustProxy,
    listenHost: config.host,
    ops: { metrics, metricsToken: config.metricsToken, readiness, versions: () => releases.versions() },
    ...(opts.mount ? { mount: opts.mount } : {}),
  });
  const { server, inFlight } = httpServer(config, app.callback(), site, metrics, logger);
  const url = await listen(server, config);
  // Everything deferred at start (request schemas, top-up, agent endpoints) loads now, in the background.
  const warming = Promise.all([validator.warm(), topup.warm(), ...app.middleware.filter(isLazy).map((m) => m.warm())]).catch((err) => {
    logger.error({ err }, 'loading a deferred part failed; the requests that need it will retry and report it');
  });
  logger.info({ url, processor: config.processor, catalogue: catalogue.version, store: store.meta.store_version, ledger: `${ledger.backend} ${ledger.location}`, release_check_ms: config.releaseCheckMs }, 'listening');
  releases.watch();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      state.draining = true;
      metrics.setReady(false);
      await warming; // never close the ledger under a module still setting up
      await drain(server, config.shutdownGraceMs, inFlight, logger);
      await opened.admin?.close();
      await ledger.close();
      receiptLog?.close();
      state.storeOpen = false;
      await releases.close();
      logger.info('stopped');
    })());
  return { url, server, ledger, service, releases, metrics, readiness, close };
}

/** The published builds the server follows (release/releases.ts): a draw service per release, all on the one ledger. */
function releaseSet(config: ServiceConfig, opts: StartOptions, deps: { ledger: Ledger; logger: Logger; metrics: Metrics; openStore: NonNullable<StartOptions['openStore']>; receipts: ReceiptSigner }): ReleaseSet {
  const { ledger, logger, metrics, openStore, receipts } = deps;
  return new ReleaseSet({
    distDir: config.distDir,
    storeRoot: config.storeRoot,
    logger,
    metrics,
    openStore,
    quoteTtlSeconds: config.quoteTtlSeconds,
    checkIntervalMs: config.releaseCheckMs,
    ...(opts.now ? { now: opts.now } : {}),
    makeService: (r) =>
      new StoreDrawService({
        receipts,
        catalogue: r.catalogue,
        store: r.store,
        ledger,
        quoteSecret: config.quoteSecret,
        bounds: r.validator.bounds,
        quoteTtlSeconds: config.quoteTtlSeconds,
        logger,
        onQuote: (productId) => metrics.quote(productId),
        otherVersions: r.otherVersions,
        ...(opts.now ? { now: opts.now } : {}),
      }),
  });
}

/**
 * The payment processor, built on first use: the Stripe SDK is ~130 ms of start-up, so it loads
 * after the server listens, with the top-up it serves. Its settings are read and checked now, so
 * bad ones still stop the start. A failed load is tried again by the next request that needs it.
 */
function lazyProcessor(config: ServiceConfig, env: NodeJS.ProcessEnv, faults: FaultHooks | undefined): () => Promise<PaymentProcessor> {
  const stripeOptions = config.processor === 'stripe' ? stripeOptionsFromEnv(env) : null;
  let load: Promise<PaymentProcessor> | undefined;
  return () =>
    (load ??= import('./processors/index.ts')
      .then((p) => (stripeOptions ? p.createStripeProcessor(stripeOptions) : p.createSandboxProcessor({ env, ...(faults ? { faults } : {}) })))
      .catch((err: unknown) => {
        load = undefined;
        throw err;
      }));
}

interface OpenedLedger {
  ledger: Ledger;
  /** LevelDB: the socket `ledger verify` / `ledger export` reach the running service on (level/admin.ts). */
  admin: { close(): Promise<void> } | null;
  /** The error of a failed LevelDB write after which the ledger stopped (fail-stop), else null. */
  fatal(): Error | null;
}

/** The ledger of the configuration, metered, with its fail-stop hook and (LevelDB) its admin socket. */
async function openServiceLedger(config: ServiceConfig, opts: StartOptions, logger: Logger, metrics: Metrics): Promise<OpenedLedger> {
  let fatal: Error | null = null;
  const hooks: LedgerHooks = {
    onBatch: (ops, seconds, changes) => metrics.groupCommit(ops, seconds, changes),
    onFatal: (err) => {
      fatal = err;
      metrics.setReady(false);
      if (opts.onLedgerFatal) opts.onLedgerFatal(err);
      else logger.error({ err: err.message }, 'ledger stopped after a failed write: not ready until restarted');
    },
    ...(opts.ledgerFaults?.failWrite ? { failWrite: opts.ledgerFaults.failWrite } : {}),
  };
  const ledger = meteredLedger(await openLedger(config, { logger, hooks, ...(opts.faults ? { faults: opts.faults } : {}) }), metrics);
  const pgStats = (ledger as { poolStats?: () => PoolStats }).poolStats;
  if (pgStats) metrics.watchPool(() => pgStats.call(ledger));
  let admin: OpenedLedger['admin'] = null;
  if (ledger.backend === 'level') {
    const { adminSocketPath, serveLedgerAdmin } = await import('./ledger/level/admin.ts');
    try {
      admin = await serveLedgerAdmin(ledger, adminSocketPath(config.ledgerDir));
    } catch (err) {
      await ledger.close(); // a failed start leaves nothing open (and the process free to exit)
      throw err;
    }
  }
  return { ledger, admin, fatal: () => fatal };
}

/** What GET /readyz answers: every check `ok`, or which one is not; a change of the ledger's state is logged once. */
function readinessCheck(ledger: Ledger, releases: ReleaseSet, logger: Logger, fatal: () => Error | null, state: { draining: boolean; storeOpen: boolean }): () => Promise<Readiness> {
  let lastLedgerReason: string | null = null;
  return async () => {
    const reason = await ledger.ready();
    if (reason !== lastLedgerReason) {
      if (reason) logger.warn({ reason }, 'not ready: ledger');
      else if (lastLedgerReason) logger.info('ready again: ledger');
      lastLedgerReason = reason;
    }
    const checks: Record<string, string> = {
      ledger: reason === null ? 'ok' : fatal() ? 'stopped after a failed write (restart the service)' : 'unavailable',
      unit_store: state.storeOpen ? 'ok' : 'closed',
      catalogue: releases.versions().catalogue_version ? 'ok' : 'not loaded',
      server: state.draining ? 'draining' : 'ok',
    };
    const inUse = (ledger as { serverInUse?: () => Readiness['ledger_server'] }).serverInUse;
    return { ready: Object.values(checks).every((v) => v === 'ok'), checks, ...(inUse ? { ledger_server: inUse.call(ledger) } : {}) };
  };
}

/**
 * The HTTP server: published documents are answered before Koa (static.ts staticFastPath), counted
 * and logged like every request; everything else is Koa's. `inFlight.n` counts the requests not
 * answered yet, for the drain's log line.
 */
function httpServer(config: ServiceConfig, koa: (req: IncomingMessage, res: ServerResponse) => unknown, site: StaticSite, metrics: Metrics, logger: Logger): { server: Server; inFlight: InFlight } {
  const logRequests = logger.isLevelEnabled('info');
  const fast = staticFastPath(site, (method, path, status, ms) => {
    metrics.request(method, 'static', status, ms / 1000);
    if (logRequests) logger.info({ method, path, status, ms }, 'request');
  });
  // requireHostHeader: false - a request without Host reaches the app, which answers it with a
  // problem (app.ts) instead of Node's bare 400. The timeouts bound slow and truncated requests;
  // the check runs every second so the 408 comes promptly (Node's default interval is 30 s).
  const server = createServer(
    {
      requireHostHeader: false,
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.min(1000, config.headersTimeoutMs),
    },
    (req, res) => {
      if (!fast(req, res)) void koa(req, res);
    },
  );
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => answerClientError(err, socket));
  // One counter and one shared listener: nothing allocated per request.
  const inFlight: InFlight = { n: 0 };
  const answered = () => void inFlight.n--;
  server.on('request', (_req, res) => {
    inFlight.n++;
    res.once('close', answered);
  });
  return { server, inFlight };
}

/** Listens on the configured address; the URL it is reached at. */
async function listen(server: Server, config: ServiceConfig): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return `http://${host}:${addr.port}`;
}

/** Requests received and not answered yet (a response closes once it is sent or its socket is gone). */
interface InFlight {
  n: number;
}

/**
 * Stops accepting and waits for the requests in flight, up to the grace period; idle keep-alive
 * sockets are closed at once (and every 50 ms), the rest when the grace period is over.
 */
async function drain(server: Server, graceMs: number, inFlight: InFlight, logger: Logger): Promise<void> {
  const drained = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const grace = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), graceMs).unref());
  // New requests on a kept-alive socket are refused by server.close(); idle sockets go now.
  const idleSweep = setInterval(() => server.closeIdleConnections(), 50);
  const outcome = await Promise.race([drained.then(() => 'drained' as const), grace]);
  clearInterval(idleSweep);
  if (outcome === 'timeout') {
    logger.warn({ in_flight: inFlight.n }, 'shutdown grace period over: closing remaining connections');
    server.closeAllConnections();
  }
}

/**
 * Node's HTTP parser refused a request before the app saw it (or the request took too long):
 * answer as a problem where HTTP still allows an answer - the socket is writable and no response
 * for this connection has started - then close the connection.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Socket): void {
  const started = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage?.headersSent;
  if (err.code === 'ECONNRESET' || !socket.writable || started) {
    socket.destroy();
    return;
  }
  let problem: Problem;
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    problem = new Problem(408, 'request-timeout', 'Request timeout', 'The request (headers and body) was not received in time; the connection is closed. Send the whole request at once and retry.');
  } else if (err.code === 'HPE_HEADER_OVERFLOW') {
    problem = new Problem(431, 'request-header-fields-too-large', 'Request header fields too large', 'The request headers are too large; send only the headers this API documents.');
  } else {
    problem = new Problem(400, 'malformed-request', 'Malformed request', 'The request is not valid HTTP/1.1 (request line or headers could not be parsed).', { field: '(request)' });
  }
  socket.end(rawProblemResponse(problem));
  socket.destroySoon?.();
}

/** Exit status after a failed ledger write (EX_TEMPFAIL): the supervisor restarts the service. */
export const LEDGER_FAILURE_EXIT = 75;

/**
 * `lds serve`: configuration from flags and env, JSON logs, drain on SIGTERM/SIGINT. A second
 * signal exits at once without draining (one that arrives within 500 ms of the first is the same
 * stop: npm and a terminal both deliver one Ctrl-C). A failed LevelDB ledger write exits with
 * status 75 after answering what is in flight (503), so a supervisor restarts a clean process.
 * `extra` is for tests (fault injection); the CLI passes nothing.
 */
export async function serveFromCli(config: ServiceConfig, extra: Pick<StartOptions, 'ledgerFaults'> = {}): Promise<void> {
  const logger = createLogger(config.logLevel);
  let stop: (signal: string, code?: number) => void = () => {};
  const running = await startServer(config, {
    logger,
    mount: await agentMounts(),
    ...extra,
    onLedgerFatal: (err) => {
      logger.fatal({ err: err.message, exit_status: LEDGER_FAILURE_EXIT }, 'ledger write failed: exiting so the supervisor restarts the service; the ledger reloads from disk and no acknowledged change is lost');
      stop('ledger-failure', LEDGER_FAILURE_EXIT);
    },
  });
  console.error(`serving ${running.url} (processor ${config.processor}; data under ${config.varDir})`);
  let stopping: { signal: string; at: number } | null = null;
  let exitCode = 0;
  stop = (signal: string, code = 0) => {
    if (code !== 0) exitCode = code; // a ledger failure during a drain still exits 75
    if (stopping) {
      if (signal === 'ledger-failure' || Date.now() - stopping.at < 500) return;
      logger.warn({ signal }, 'second signal: exiting now without draining');
      process.exit(exitCode || (signal === 'SIGINT' ? 130 : 143));
    }
    stopping = { signal, at: Date.now() };
    logger.info({ signal }, 'draining');
    // After a failed write nothing in flight can succeed: do not wait the whole grace period.
    if (code !== 0) setTimeout(() => process.exit(exitCode), Math.min(config.shutdownGraceMs, 5000) + 1000).unref();
    running.close().then(
      () => process.exit(exitCode),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(exitCode || 1);
      },
    );
  };
  // SIGHUP: look for a newly published build now (a build refused before is tried again).
  process.on('SIGHUP', () => {
    logger.info('SIGHUP: looking for a newly published build');
    void running.releases.check(true);
  });
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
