// Starting and stopping the service. `startServer(config)` is the programmatic entry (tests, the
// benchmark); `serveFromCli` is what `lds serve` / `npm start` runs: it loads the configuration,
// logs as JSON with pino (tokens and credentials redacted), and drains on SIGTERM/SIGINT before
// closing the ledger and the unit store, so an orderly stop never cuts a paid draw in half.
import { createServer, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import pino, { type Logger } from 'pino';
import type { UnitStoreReader } from '../contract/store-format.ts';
import { createApp, type Mount } from './http/app.ts';
import { loadConfig, type ServiceConfig } from './config.ts';
import { StoreDrawService } from './draw/store-service.ts';
import type { DebitDrawInput, Ledger, LedgerHooks } from './ledger/ledger.ts';
import { createMetrics, type Metrics } from './metrics.ts';
import type { Readiness } from './http/ops.ts';
import type { FaultHooks } from './faults.ts';
import { openLedger } from './ledger/open.ts';
import type { PaymentProcessor } from './processors/types.ts';
import { stripeOptionsFromEnv } from './processors/stripe-options.ts';
import { staticFastPath } from './http/static.ts';
import { loadDist, ReleaseSet } from './release/releases.ts';
import type { LiveDrawService } from './release/live-service.ts';
import { isLazy, lazyMiddleware } from './http/lazy.ts';
import { Problem, rawProblemResponse, useProblemBase } from './problem.ts';
import { ReceiptSigner } from './receipts.ts';

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

async function defaultOpenStore(root: string, version?: string): Promise<UnitStoreReader> {
  const { openUnitStore } = await import('./store/unit-store.ts');
  return openUnitStore(root, version === undefined ? {} : { version });
}

export async function startServer(config: ServiceConfig, opts: StartOptions = {}): Promise<RunningServer> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const env = opts.env ?? process.env;


  // The processor is built after the server listens, with the top-up it serves: the Stripe SDK is
  // ~130 ms of start-up. Its settings are read and checked now, so bad ones still stop the start.
  const stripeOptions = config.processor === 'stripe' ? stripeOptionsFromEnv(env) : null;
  let processorLoad: Promise<PaymentProcessor> | undefined;
  const processor = () =>
    (processorLoad ??= import('./processors/index.ts').then((p) =>
      stripeOptions ? p.createStripeProcessor(stripeOptions) : p.createSandboxProcessor({ env, ...(opts.faults ? { faults: opts.faults } : {}) }),
    ).catch((err: unknown) => {
      processorLoad = undefined; // a failed load is tried again by the next request that needs it
      throw err;
    }));
  // The published build: dist/ (the catalogue, the OpenAPI contract and every published document,
  // read into memory) and the unit store CURRENT names; followed without a restart (releases.ts).
  const first = await loadDist(config.distDir);
  const { catalogue } = first;
  // Problem types point at the problem pages this very build published under its docs_url.
  useProblemBase(catalogue.docs_url);
  const openStore = opts.openStore ?? defaultOpenStore;
  const store = await openStore(config.storeRoot);
  const metrics = createMetrics({ backend: config.ledgerUrl ? 'postgres' : 'level', products: catalogue.products.map((p) => p.product_id) });
  let ledgerFatal: Error | null = null;
  const hooks: LedgerHooks = {
    onBatch: (ops, seconds, changes) => metrics.groupCommit(ops, seconds, changes),
    onFatal: (err) => {
      ledgerFatal = err;
      metrics.setReady(false);
      if (opts.onLedgerFatal) opts.onLedgerFatal(err);
      else logger.error({ err: err.message }, 'ledger stopped after a failed write: not ready until restarted');
    },
    ...(opts.ledgerFaults?.failWrite ? { failWrite: opts.ledgerFaults.failWrite } : {}),
  };
  let ledger: Ledger;
  try {
    ledger = instrumentLedger(await openLedger(config, { logger, hooks, ...(opts.faults ? { faults: opts.faults } : {}) }), metrics);
  } catch (err) {
    await store.close();
    throw err;
  }
  const pgStats = (ledger as { poolStats?: () => import('./metrics.ts').PoolStats }).poolStats;
  if (pgStats) metrics.watchPool(() => pgStats.call(ledger));
  // LevelDB: `ledger verify` / `ledger export` reach the running service over a socket (level/admin.ts).
  let admin: { close(): Promise<void> } | null = null;
  if (ledger.backend === 'level') {
    const { adminSocketPath, serveLedgerAdmin } = await import('./ledger/level/admin.ts');
    admin = await serveLedgerAdmin(ledger, adminSocketPath(config.ledgerDir));
  }
  const receipts = ReceiptSigner.fromJwks(config.receiptKeys);
  const releases = new ReleaseSet({
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
  await releases.start(first, store, config.storeRoot);
  const { service, site, validator } = releases;

  let draining = false;
  let storeOpen = true;
  let lastLedgerReason: string | null = null;
  const readiness = async (): Promise<Readiness> => {
    const reason = await ledger.ready();
    if (reason !== lastLedgerReason) {
      if (reason) logger.warn({ reason }, 'not ready: ledger');
      else if (lastLedgerReason) logger.info('ready again: ledger');
      lastLedgerReason = reason;
    }
    const checks: Record<string, string> = {
      ledger: reason === null ? 'ok' : ledgerFatal ? 'stopped after a failed write (restart the service)' : 'unavailable',
      unit_store: storeOpen ? 'ok' : 'closed',
      catalogue: releases.versions().catalogue_version ? 'ok' : 'not loaded',
      server: draining ? 'draining' : 'ok',
    };
    return { ready: Object.values(checks).every((v) => v === 'ok'), checks };
  };
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
    ops: { metrics, operatorToken: config.operatorToken, readiness, versions: () => releases.versions() },
    ...(opts.mount ? { mount: opts.mount } : {}),
  });

  // Published documents are answered before Koa (static.ts staticFastPath), counted and logged
  // like every request; everything else is Koa's.
  const koa = app.callback();
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
  logger.info({ url, processor: config.processor, catalogue: catalogue.version, store: store.meta.store_version, ledger: `${ledger.backend} ${ledger.location}`, release_check_ms: config.releaseCheckMs }, 'listening');
  releases.watch();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      draining = true;
      metrics.setReady(false);
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
      storeOpen = false;
      await releases.close();
      logger.info('stopped');
    })());
  return { url, server, ledger, service, releases, metrics, readiness, close };
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

/**
 * The ledger as the service uses it, timed for the metrics: every state change (call to durable
 * answer, both backends) and what paid draws sold. Counted here, below every transport, so a draw
 * paid over MCP or A2A is counted like one over HTTP, and a replay (nothing debited) is not.
 */
function instrumentLedger(ledger: Ledger, metrics: Metrics): Ledger {
  const debitDraw: Ledger['debitDraw'] = async (tokenHash, input: DebitDrawInput) => {
    const started = performance.now();
    try {
      const r = await ledger.debitDraw(tokenHash, input);
      metrics.ledgerCommit('debit', 'ok', (performance.now() - started) / 1000);
      if (r.kind === 'ok') {
        const refs = (input.draw as { refs?: unknown[] } | null)?.refs;
        metrics.paidDraw(input.productId ?? 'other', Array.isArray(refs) ? refs.length : 0, input.amountCents, input.currency);
      }
      return r;
    } catch (err) {
      metrics.ledgerCommit('debit', 'error', (performance.now() - started) / 1000);
      throw err;
    }
  };
  const creditTopup: Ledger['creditTopup'] = async (input) => {
    const started = performance.now();
    try {
      const r = await ledger.creditTopup(input);
      metrics.ledgerCommit('credit', 'ok', (performance.now() - started) / 1000);
      if (r.kind === 'ok') metrics.topupCredited(input.amountCents, input.currency);
      return r;
    } catch (err) {
      metrics.ledgerCommit('credit', 'error', (performance.now() - started) / 1000);
      throw err;
    }
  };
  // Every other member is the ledger's own; methods are bound once, not on every call.
  const bound = new Map<PropertyKey, unknown>([
    ['debitDraw', debitDraw],
    ['creditTopup', creditTopup],
  ]);
  return new Proxy(ledger, {
    get(target, prop) {
      const b = bound.get(prop);
      if (b !== undefined) return b;
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const f = v.bind(target);
      bound.set(prop, f);
      return f;
    },
  });
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
