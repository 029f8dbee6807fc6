// The Koa application: one process serves dist/, the draw and balance API, the top-up, and
// whatever the agent adapters mount (MCP, A2A). Order of the middleware stack, outermost first:
//
//   problems + access log + request metrics -> operator endpoints (/healthz, /readyz, /metrics; not
//   rate limited) -> static dist/ (GET/HEAD of published paths; not rate limited, a CDN could serve
//   them) -> rate limit per client address and per balance token -> API routes -> mounted adapters
//   -> 404/405.
//
// Every refusal is an RFC 9457 problem; anything unexpected is a logged 500 without internals.
import Koa, { type Context, type Middleware } from 'koa';
import Router from '@koa/router';
import type { Logger } from 'pino';
import type { DrawRequest, DrawService } from '../draw/service.ts';
import { paidDrawBody, quoteJson, type QuoteBody, type StoreDrawService } from '../draw/store-service.ts';
import { readJsonBody } from './body.ts';
import { rateLimitMiddleware } from './ratelimit.ts';
import { OPS_PATHS, opsMiddleware, type OpsOptions } from './ops.ts';
import type { Metrics, TopupOutcome } from '../metrics.ts';
import type { RequestValidator } from './openapi-validate.ts';
import { PROBLEM_CONTENT_TYPE, Problem } from '../problem.ts';
import { staticMiddleware, type StaticSite } from './static.ts';
import { balanceTokenOf } from '../tokens.ts';
import type { ReceiptSigner } from '../receipts.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { PaymentProcessor } from '../processors/types.ts';
import type { BalanceView } from '../draw/service.ts';
import { mountAdmin } from './admin.ts';
import { DEFAULT_MAX_ADJUSTMENT_CENTS } from '../config.ts';

const CSV_COLUMNS = ['at', 'kind', 'id', 'amount', 'currency', 'balance_after', 'quote_id', 'product_id', 'draw_id', 'topup_id', 'reason'] as const;

/** A plain decimal number such as `-0.47` or `12.00`: a spreadsheet reads it as a number, never as a formula. */
const CSV_NUMBER = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;
/** What a spreadsheet may take for the start of a formula (OWASP CSV injection). */
const CSV_FORMULA_START = /^[=+\-@\t\r]/;
/** Bidirectional embedding, override and isolate controls (U+202A–U+202E, U+2066–U+2069): they can make a cell read as something else. */
const BIDI_CONTROLS = /[\u202A-\u202E\u2066-\u2069]/g;

/**
 * One CSV field, safe to open in a spreadsheet: numbers as they are; any other text without bidi
 * controls and, when it starts like a formula, prefixed with `'` (shown as text, never evaluated);
 * then quoted per RFC 4180 when it holds a comma, quote or line break.
 */
export function csvCell(v: unknown): string {
  let t = v === undefined || v === null ? '' : String(v);
  if (!CSV_NUMBER.test(t)) {
    t = t.replace(BIDI_CONTROLS, '');
    if (CSV_FORMULA_START.test(t)) t = `'${t}`;
  }
  return /[",\r\n]/.test(t) ? `"${t.replaceAll('"', '""')}"` : t;
}

/** RFC 4180 CSV of a statement page: CRLF lines, fields quoted when they hold a comma, quote or line break, text cells neutralised (csvCell). */
export function statementCsv(view: BalanceView): string {
  const cell = csvCell;
  const rows = view.statement.map((l) => CSV_COLUMNS.map((c) => cell(c === 'currency' ? view.currency : (l as unknown as Record<string, unknown>)[c])).join(','));
  return [CSV_COLUMNS.join(','), ...rows].join('\r\n') + '\r\n';
}

/** Where the receipt keys are published (linked from the well-known index and the agent card). */
export const JWKS_PATH = '/.well-known/jwks.json';

/** What an adapter (MCP, A2A) gets to mount itself: add middleware with app.use or routes on router. */
export interface MountContext {
  app: Koa;
  router: Router;
  service: DrawService;
  site: StaticSite;
  logger: Logger;
  /** The public base path of the API (`/v1`) and base URL (`http://127.0.0.1:8080/v1`). */
  basePath: string;
  baseUrl: string;
  mcpUrl: string;
}

export type Mount = (m: MountContext) => void;

/** What the routes call: a StoreDrawService, or the live one that follows published builds (payments/release/releases.ts). */
export type AppDrawService = Pick<StoreDrawService, 'quote' | 'pay' | 'balance' | 'rotateToken' | 'catalogue' | 'drawUrl'>;

export interface AppOptions {
  service: AppDrawService;
  site: StaticSite;
  validator: RequestValidator;
  /** POST {base}/lds/balance/topup handler (payments/topup/handler.ts). */
  topup: Middleware;
  logger: Logger;
  /** Per client address, and per balance token (tokenPerSecond 0 or absent: no token limit). */
  rateLimit: { perSecond: number; burst: number; tokenPerSecond?: number; tokenBurst?: number };
  trustProxy?: boolean;
  /** /healthz, /readyz, /metrics and the request metrics (payments/http/ops.ts). */
  ops?: OpsOptions;
  /** Signs receipts; its public keys are served as the JWKS. */
  receipts: ReceiptSigner;
  /** Bearer token of the admin API (LDS_OPERATOR_TOKEN). */
  operatorToken: string;
  /** Largest single operator adjustment in cents (LDS_MAX_ADJUSTMENT; default the top-up maximum). */
  maxAdjustmentCents?: number;
  /** The ledger and processor the admin API corrects balances with. */
  ledger: Ledger;
  processor: () => Promise<PaymentProcessor>;
  /** Extension point for the MCP and A2A endpoints; called after the API routes, before the 404. */
  mount?: Mount | Mount[];
}

function sendProblem(ctx: Context, p: Problem): void {
  ctx.status = p.status;
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.set('Cache-Control', 'no-store');
  if (p.status === 401) ctx.set('WWW-Authenticate', 'Bearer realm="lds", error="invalid_token"');
  if (typeof p.extra.retry_after === 'number') ctx.set('Retry-After', String(p.extra.retry_after));
  ctx.body = p.toJSON(ctx.path);
}

const OPS_ROUTES: ReadonlySet<string> = new Set(Object.values(OPS_PATHS));

/**
 * The metrics label of a request: the route template the router matched, a label set on the way
 * (operator endpoints, the draw fast path, static documents), the path of a mounted adapter, or
 * `unmatched`. Never the raw path of a 404 (unbounded label values).
 */
function routeLabel(ctx: Context, routePaths: ReadonlySet<string>): string {
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  if (typeof matched === 'string') return matched;
  const st = ctx.state as { route?: string; adapter?: boolean };
  if (st.route) return st.route;
  if (routePaths.has(ctx.path)) return ctx.path; // refused before routing (429) on a route's exact path
  return st.adapter && ctx.status !== 404 && ctx.status !== 405 ? ctx.path : 'unmatched';
}

/** Outermost: turns thrown Problems into problem+json, anything else into a logged, opaque 500. */
function problems(logger: Logger, metrics: Metrics | undefined, routePaths: ReadonlySet<string>): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } catch (err) {
      answerError(ctx, err);
    } finally {
      const ms = performance.now() - started;
      metrics?.request(ctx.method, routeLabel(ctx, routePaths), ctx.status, ms / 1000);
      // Only method, path and status: never headers (Authorization), bodies or query strings.
      // Probes and scrapes are not logged: they come every few seconds and say nothing.
      const quiet = ctx.status < 400 && OPS_ROUTES.has((ctx.state as { route?: string }).route ?? '');
      if (logger.isLevelEnabled('info') && !quiet) {
        logger.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms }, 'request');
      }
    }
  };

  function answerError(ctx: Context, err: unknown): void {
    if (err instanceof Problem) {
      // A retry answer with Retry-After (quote-store-unavailable during a rolling publish) is expected: a warning.
      if (err.status >= 500) logger[err.extra.retry_after === undefined ? 'error' : 'warn']({ type: err.type, reason: (err as { reason?: string }).reason, method: ctx.method, path: ctx.path }, 'service unavailable');
      sendProblem(ctx, err);
      return;
    }
    // Koa's own http-errors (e.g. from a malformed URL) carry a safe status: keep 4xx ones.
    const status = (err as { status?: number; expose?: boolean }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) {
      sendProblem(ctx, new Problem(status, status === 413 ? 'body-too-large' : 'malformed-request', 'Bad request', (err as Error).message));
      return;
    }
    logger.error({ err, method: ctx.method, path: ctx.path }, 'unexpected error');
    sendProblem(ctx, new Problem(500, 'internal', 'Internal error', 'The request could not be completed. Retrying is safe: a paid draw is charged at most once per quote_id and a top-up credential at most once.'));
  }
}

/** How a top-up request ended, for lds_topups_total (bounded outcomes; never who or which credential). */
function topupOutcome(s: number, body: unknown): TopupOutcome {
  if (s === 200) return 'paid';
  if (s === 409) return 'repeated';
  const type = typeof body === 'object' && body !== null ? String((body as { type?: unknown }).type ?? '') : '';
  if (s === 402 && type.endsWith('/payment-required')) return 'challenged';
  return s >= 500 ? 'failed' : 'refused';
}

/**
 * HTTP/1.1 requires a Host header (RFC 9112 section 3.2). The server lets such requests through
 * (requireHostHeader: false, serve.ts) so the refusal is a problem like every other one.
 */
const requireHost: Middleware = (ctx, next) => {
  const req = ctx.req;
  if (req.headers.host === undefined && (req.httpVersionMajor > 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1))) {
    ctx.set('Connection', 'close');
    throw new Problem(400, 'malformed-request', 'Malformed request', 'An HTTP/1.1 request must carry a Host header naming the server, e.g. "Host: 127.0.0.1:8080" (RFC 9112, section 3.2).', { field: 'Host' });
  }
  return next();
};

/** The Link header that says "your balance can pay this": an absolute URL from base_url. */
function paymentLink(drawUrl: string): string {
  return `<${drawUrl}>; rel="payment"`;
}

/** What Koa writes for an object body; the draw route serialises its answers itself (same bytes). */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

function setQuoteHeaders(ctx: Context, quote: QuoteBody, drawUrl: string): void {
  ctx.set('Cache-Control', 'no-store');
  if (quote.payable_from_balance) ctx.set('Link', paymentLink(drawUrl));
}


export function createApp(o: AppOptions): { app: Koa; router: Router } {
  const app = new Koa();
  app.proxy = !!o.trustProxy;
  // Behind our proxy, trust only the address it appended: the leftmost X-Forwarded-For entries are
  // whatever the client sent, and would give every request a fresh rate-limit bucket.
  if (app.proxy) app.maxIpsCount = 1;
  app.silent = true; // errors are logged by the problems middleware, with redaction
  const catalogue = o.service.catalogue();
  const baseUrl = catalogue.base_url;
  const basePath = new URL(baseUrl).pathname.replace(/\/$/, '');
  const maxBody = o.validator.bounds.maxBodyBytes;
  const router = new Router({ prefix: basePath });

  const draw = async (ctx: Context): Promise<void> => {
    const body = await readJsonBody(ctx, maxBody);
    o.validator.body('draw', body);
    const req = body as DrawRequest & { quote_id?: string };
    const token = balanceTokenOf(ctx.get('authorization'));
    if (req.quote_id !== undefined) {
      try {
        const paid = await o.service.pay(req as DrawRequest & { quote_id: string }, token ?? '');
        ctx.status = 200;
        ctx.set('Cache-Control', 'no-store');
        ctx.set('Content-Type', JSON_CONTENT_TYPE);
        ctx.body = paidDrawBody(paid); // the bytes of JSON.stringify(paid); Content-Type as set above
      } catch (err) {
        // An expired quote answers with a fresh one: same headers as any quote.
        const fresh = err instanceof Problem ? (err.extra.quote as QuoteBody | undefined) : undefined;
        if (fresh && err instanceof Problem && err.status === 402) setQuoteHeaders(ctx, fresh, o.service.drawUrl);
        throw err;
      }
      return;
    }
    const quote = (await o.service.quote(req, token === 'malformed' ? undefined : token)) as QuoteBody;
    ctx.status = 402;
    setQuoteHeaders(ctx, quote, o.service.drawUrl);
    ctx.set('Content-Type', JSON_CONTENT_TYPE);
    ctx.body = quoteJson(quote);
  };
  router.post('/lds/draw', draw);
  // The hot path: POST of the exact draw path skips the router's per-request match and compose. Any
  // other spelling the router accepts (trailing slash, case) still reaches the route above.
  const drawPath = `${basePath}/lds/draw`;
  const drawFastPath: Middleware = (ctx, next) => {
    if (ctx.method !== 'POST' || ctx.path !== drawPath) return next();
    ctx.state.route = drawPath;
    return draw(ctx);
  };

  router.get('/lds/balance', async (ctx) => {
    const token = balanceTokenOf(ctx.get('authorization'));
    const q = ctx.query;
    const one = (name: string): string | undefined => {
      const v = q[name];
      if (Array.isArray(v)) throw new Problem(400, 'malformed-request', 'Malformed request', `give ${name} once`, { field: name });
      return v;
    };
    const format = one('format') ?? 'json';
    if (format !== 'json' && format !== 'csv') throw new Problem(400, 'malformed-request', 'Malformed request', 'format must be json or csv', { field: 'format' });
    const limitText = one('limit');
    if (limitText !== undefined && !/^[0-9]{1,4}$/.test(limitText)) throw new Problem(400, 'malformed-request', 'Malformed request', `limit must be a whole number from 1 to 1000 (got ${JSON.stringify(limitText.slice(0, 20))})`, { field: 'limit' });
    const view = await o.service.balance(token ?? '', { after: one('after'), limit: limitText === undefined ? undefined : Number(limitText) });
    ctx.set('Cache-Control', 'no-store');
    if (view.next_after) {
      const next = new URLSearchParams({ after: view.next_after, ...(limitText ? { limit: limitText } : {}), ...(format === 'csv' ? { format } : {}) });
      ctx.set('Link', `<${baseUrl}/lds/balance?${next}>; rel="next"`);
    }
    if (format === 'csv') {
      ctx.type = 'text/csv; charset=utf-8; header=present';
      ctx.set('Content-Disposition', 'attachment; filename="statement.csv"');
      ctx.body = statementCsv(view);
      return;
    }
    ctx.body = view;
  });

  // Rotation: Bearer the old token; the answer carries the new one (shown once).
  router.post('/lds/balance/token', async (ctx) => {
    const token = balanceTokenOf(ctx.get('authorization'));
    ctx.set('Cache-Control', 'no-store, private');
    ctx.body = await o.service.rotateToken(token ?? '');
  });

  mountAdmin(router, { ledger: o.ledger, processor: o.processor, operatorToken: o.operatorToken, maxBodyBytes: maxBody, logger: o.logger, maxAdjustmentCents: o.maxAdjustmentCents ?? DEFAULT_MAX_ADJUSTMENT_CENTS });

  router.post('/lds/balance/topup', async (ctx, next) => {
    try {
      // Validated against the OpenAPI document here; the handler then finds the parsed body on ctx.request.
      const body = await readJsonBody(ctx, maxBody);
      o.validator.body('topUp', body);
      (ctx.request as { body?: unknown }).body = body;
      await o.topup(ctx, next);
      o.ops?.metrics.topup(topupOutcome(ctx.status, ctx.body));
    } catch (err) {
      o.ops?.metrics.topup(topupOutcome(err instanceof Problem ? err.status : 500, err instanceof Problem ? { type: err.type } : undefined));
      throw err;
    }
  });

  // Published DCAT documents are answered by the static layer; reaching here means no such product.
  router.get('/dcat/catalog/:product_id', (ctx) => {
    o.validator.params('getProductDcat', { product_id: ctx.params.product_id });
    throw new Problem(404, 'unknown-product', 'Unknown product', `There is no product ${JSON.stringify(ctx.params.product_id.slice(0, 80))}; GET ${basePath}/lds/_catalog lists them.`, { field: 'product_id' });
  });

  const routePaths = new Set<string>(); // the router's literal paths, filled once every route is added
  app.use(problems(o.logger, o.ops?.metrics, routePaths));
  app.use(requireHost);
  if (o.ops) app.use(opsMiddleware(o.ops));
  app.use(staticMiddleware(o.site));
  // The public receipt keys (current and retired): a runtime secret's public half, so the service
  // serves it rather than dist/. Public, cacheable, not rate limited.
  const jwksBody = JSON.stringify(o.receipts.jwks);
  app.use((ctx, next) => {
    if (ctx.path !== JWKS_PATH) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      throw new Problem(405, 'method-not-allowed', 'Method not allowed', `${JWKS_PATH} answers GET, HEAD.`);
    }
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.type = 'application/jwk-set+json';
    ctx.body = jwksBody;
  });
  // 0 = no limit (for that bucket)
  app.use(
    rateLimitMiddleware({
      perSecond: o.rateLimit.perSecond,
      burst: o.rateLimit.burst,
      tokenPerSecond: o.rateLimit.tokenPerSecond ?? 0,
      tokenBurst: o.rateLimit.tokenBurst ?? 1,
      onRefused: (policy) => o.ops?.metrics.rateLimited(policy),
    }),
  );
  app.use(drawFastPath);
  app.use(router.routes());
  // Whatever passes the router unmatched is for the adapters: their paths are a fixed set.
  app.use((ctx, next) => {
    ctx.state.adapter = true;
    return next();
  });

  const mounts = o.mount === undefined ? [] : Array.isArray(o.mount) ? o.mount : [o.mount];
  for (const m of mounts) m({ app, router, service: o.service, site: o.site, logger: o.logger, basePath, baseUrl, mcpUrl: catalogue.mcp_url });

  // Fallback: 405 for a known path with another method, else 404.
  const known = new Map<string, string[]>();
  for (const l of router.stack) {
    const methods = l.methods.filter((m) => m !== 'HEAD');
    if (methods.length && typeof l.path === 'string') known.set(l.path, [...(known.get(l.path) ?? []), ...methods]);
    if (typeof l.path === 'string' && !l.path.includes(':')) routePaths.add(l.path);
  }
  for (const path of o.site.entries.keys()) known.set(path, ['GET', 'HEAD']);
  app.use(async (ctx) => {
    const allowed = known.get(ctx.path);
    if (allowed && !ctx.path.includes(':')) {
      ctx.set('Allow', [...new Set(allowed)].join(', '));
      throw new Problem(405, 'method-not-allowed', 'Method not allowed', `${ctx.path} answers ${[...new Set(allowed)].join(', ')}.`);
    }
    throw new Problem(404, 'not-found', 'Not found', `Nothing is published at ${ctx.path.slice(0, 200)}.`);
  });
  return { app, router };
}
