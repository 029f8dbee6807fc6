// The Koa application: one process serves dist/, the draw and balance API, the top-up, and
// whatever the agent adapters mount (MCP, A2A). Order of the middleware stack, outermost first:
//
//   problems + access log -> static dist/ (GET/HEAD of published paths; not rate limited, a CDN
//   could serve them) -> per-client rate limit -> API routes -> mounted adapters -> 404/405.
//
// Every refusal is an RFC 9457 problem; anything unexpected is a logged 500 without internals.
import Koa, { type Context, type Middleware } from 'koa';
import Router from '@koa/router';
import type { Logger } from 'pino';
import type { DrawRequest, DrawService } from '../draw/service.ts';
import { paidDrawBody, quoteJson, type QuoteBody, type StoreDrawService } from '../draw/store-service.ts';
import { readJsonBody } from './body.ts';
import { rateLimitMiddleware } from './ratelimit.ts';
import type { RequestValidator } from './openapi-validate.ts';
import { PROBLEM_CONTENT_TYPE, Problem } from '../problem.ts';
import { staticMiddleware, type StaticSite } from './static.ts';
import { balanceTokenOf } from '../tokens.ts';

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

export interface AppOptions {
  service: StoreDrawService;
  site: StaticSite;
  validator: RequestValidator;
  /** POST {base}/lds/balance/topup handler (payments/topup/handler.ts). */
  topup: Middleware;
  logger: Logger;
  rateLimit: { perSecond: number; burst: number };
  trustProxy?: boolean;
  /** Extension point for the MCP and A2A endpoints; called after the API routes, before the 404. */
  mount?: Mount | Mount[];
}

function sendProblem(ctx: Context, p: Problem): void {
  ctx.status = p.status;
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.set('Cache-Control', 'no-store');
  if (p.status === 401) ctx.set('WWW-Authenticate', 'Bearer realm="lds", error="invalid_token"');
  ctx.body = p.toJSON(ctx.path);
}

/** Outermost: turns thrown Problems into problem+json, anything else into a logged, opaque 500. */
function problems(logger: Logger): Middleware {
  return async (ctx, next) => {
    const started = performance.now();
    try {
      await next();
    } catch (err) {
      if (err instanceof Problem) {
        if (err.status >= 500) logger.error({ type: err.type, reason: (err as { reason?: string }).reason, method: ctx.method, path: ctx.path }, 'service unavailable');
        sendProblem(ctx, err);
      }
      else {
        // Koa's own http-errors (e.g. from a malformed URL) carry a safe status: keep 4xx ones.
        const status = (err as { status?: number; expose?: boolean }).status;
        if (typeof status === 'number' && status >= 400 && status < 500) sendProblem(ctx, new Problem(status, status === 413 ? 'body-too-large' : 'malformed-request', 'Bad request', (err as Error).message));
        else {
          logger.error({ err, method: ctx.method, path: ctx.path }, 'unexpected error');
          sendProblem(ctx, new Problem(500, 'internal', 'Internal error', 'The request could not be completed. Retrying is safe: a paid draw is charged at most once per quote_id and a top-up credential at most once.'));
        }
      }
    }
    // Only method, path and status: never headers (Authorization), bodies or query strings.
    if (logger.isLevelEnabled('info')) {
      logger.info({ method: ctx.method, path: ctx.path, status: ctx.status, ms: performance.now() - started }, 'request');
    }
  };
}

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
  const drawFastPath: Middleware = (ctx, next) => (ctx.method === 'POST' && ctx.path === drawPath ? draw(ctx) : next());

  router.get('/lds/balance', async (ctx) => {
    const token = balanceTokenOf(ctx.get('authorization'));
    const view = await o.service.balance(token ?? '');
    ctx.set('Cache-Control', 'no-store');
    ctx.body = view;
  });

  router.post('/lds/balance/topup', async (ctx, next) => {
    // Validated against the OpenAPI document here; the handler then finds the parsed body on ctx.request.
    const body = await readJsonBody(ctx, maxBody);
    o.validator.body('topUp', body);
    (ctx.request as { body?: unknown }).body = body;
    await o.topup(ctx, next);
  });

  // Published DCAT documents are answered by the static layer; reaching here means no such product.
  router.get('/dcat/catalog/:product_id', (ctx) => {
    o.validator.params('getProductDcat', { product_id: ctx.params.product_id });
    throw new Problem(404, 'unknown-product', 'Unknown product', `There is no product ${JSON.stringify(ctx.params.product_id.slice(0, 80))}; GET ${basePath}/lds/_catalog lists them.`, { field: 'product_id' });
  });

  app.use(problems(o.logger));
  app.use(staticMiddleware(o.site));
  if (o.rateLimit.perSecond > 0) app.use(rateLimitMiddleware(o.rateLimit.perSecond, o.rateLimit.burst)); // 0 = no limit
  app.use(drawFastPath);
  app.use(router.routes());

  const mounts = o.mount === undefined ? [] : Array.isArray(o.mount) ? o.mount : [o.mount];
  for (const m of mounts) m({ app, router, service: o.service, site: o.site, logger: o.logger, basePath, baseUrl, mcpUrl: catalogue.mcp_url });

  // Fallback: 405 for a known path with another method, else 404.
  const known = new Map<string, string[]>();
  for (const l of router.stack) {
    const methods = l.methods.filter((m) => m !== 'HEAD');
    if (methods.length && typeof l.path === 'string') known.set(l.path, [...(known.get(l.path) ?? []), ...methods]);
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
