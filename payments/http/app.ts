// The Koa application: one process serves dist/, the draw and balance API, the top-up, and
// whatever the agent adapters mount (MCP, A2A). Order of the middleware stack, outermost first:
//
//   problems + access log + request metrics -> operator endpoints (/healthz, /readyz, /metrics; not
//   rate limited) -> static dist/ (GET/HEAD of published paths; not rate limited, a CDN could serve
//   them) -> rate limit per client address and per balance token -> DSP catalog and the negotiated
//   DCAT-AP catalogue (dsp.ts) -> API routes -> mounted adapters
//   -> 404/405.
//
// Every refusal is an RFC 9457 problem; anything unexpected is a logged 500 without internals.
import Koa, { type Middleware } from 'koa';
import Router from '@koa/router';
import type { Logger } from 'pino';
import { DEFAULT_MAX_ADJUSTMENT_CENTS } from '../../contract/limits.ts';
import { problems } from '../draw/problems.ts';
import type { DrawService } from '../draw/service.ts';
import type { Ledger } from '../ledger/ledger.ts';
import type { PaymentProcessor } from '../processors/types.ts';
import type { ReceiptSigner } from '../receipts.ts';
import { mountAdmin } from './admin.ts';
import { answerProblems } from './answer.ts';
import { addBuyerRoutes, type AppDrawService } from './buyer-routes.ts';
import { fallback, literalPaths } from './fallback.ts';
import { jwksMiddleware } from './jwks.ts';
import type { RequestValidator } from './openapi-validate.ts';
import { opsMiddleware, type OpsOptions } from './ops.ts';
import { rateLimitMiddleware } from './ratelimit.ts';
import { dspMiddleware } from './dsp.ts';
import { staticMiddleware, type StaticSite } from './static.ts';

export type { AppDrawService };

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
  /** The address the server listens on (`--host`), for the agent endpoints' check of Host and Origin. */
  listenHost?: string;
}

export type Mount = (m: MountContext) => void;

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
  /** The address the server listens on (config.host), handed to the mounts. */
  listenHost?: string;
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

/**
 * HTTP/1.1 requires a Host header (RFC 9112 section 3.2). The server lets such requests through
 * (requireHostHeader: false, serve.ts) so the refusal is a problem like every other one.
 */
const requireHost: Middleware = (ctx, next) => {
  const req = ctx.req;
  if (req.headers.host === undefined && (req.httpVersionMajor > 1 || (req.httpVersionMajor === 1 && req.httpVersionMinor >= 1))) {
    ctx.set('Connection', 'close');
    throw problems.malformed('Host', 'An HTTP/1.1 request must carry a Host header naming the server, e.g. "Host: 127.0.0.1:8080" (RFC 9112, section 3.2).');
  }
  return next();
};

/** Koa's settings: behind our proxy, trust only the address it appended (the leftmost X-Forwarded-For entries are whatever the client sent, and would give every request a fresh rate-limit bucket). */
function newKoa(trustProxy: boolean): Koa {
  const app = new Koa();
  app.proxy = trustProxy;
  if (app.proxy) app.maxIpsCount = 1;
  app.silent = true; // errors are logged by answerProblems, with redaction
  return app;
}

function rateLimit(o: AppOptions): Middleware {
  // 0 = no limit (for that bucket)
  return rateLimitMiddleware({
    perSecond: o.rateLimit.perSecond,
    burst: o.rateLimit.burst,
    tokenPerSecond: o.rateLimit.tokenPerSecond ?? 0,
    tokenBurst: o.rateLimit.tokenBurst ?? 1,
    onRefused: (policy) => o.ops?.metrics.rateLimited(policy),
  });
}

/** The application, in the order of the stack described at the top of this file. */
export function createApp(o: AppOptions): { app: Koa; router: Router } {
  const app = newKoa(!!o.trustProxy);
  const catalogue = o.service.catalogue();
  const baseUrl = catalogue.base_url;
  const basePath = new URL(baseUrl).pathname.replace(/\/$/, '');
  const router = new Router({ prefix: basePath });
  const drawFastPath = addBuyerRoutes(router, { service: o.service, validator: o.validator, topup: o.topup, basePath, baseUrl, ...(o.ops ? { metrics: o.ops.metrics } : {}) });
  mountAdmin(router, { ledger: o.ledger, processor: o.processor, operatorToken: o.operatorToken, maxBodyBytes: o.validator.bounds.maxBodyBytes, logger: o.logger, maxAdjustmentCents: o.maxAdjustmentCents ?? DEFAULT_MAX_ADJUSTMENT_CENTS });

  const routePaths = new Set<string>(); // the router's literal paths, filled once every route is added
  app.use(answerProblems(o.logger, o.ops?.metrics, routePaths));
  app.use(requireHost);
  if (o.ops) app.use(opsMiddleware(o.ops));
  app.use(staticMiddleware(o.site));
  app.use(jwksMiddleware(o.receipts));
  app.use(rateLimit(o));
  // The DSP catalog and the negotiated address of the whole DCAT-AP catalogue: public, rate limited per address.
  app.use(dspMiddleware({ site: o.site, basePath, docsUrl: catalogue.docs_url }));
  app.use(drawFastPath);
  app.use(router.routes());
  // Whatever passes the router unmatched is for the adapters: their paths are a fixed set.
  app.use((ctx, next) => {
    ctx.state.adapter = true;
    return next();
  });
  const mounts = o.mount === undefined ? [] : Array.isArray(o.mount) ? o.mount : [o.mount];
  for (const m of mounts) m({ app, router, service: o.service, site: o.site, logger: o.logger, basePath, baseUrl, mcpUrl: catalogue.mcp_url, ...(o.listenHost !== undefined ? { listenHost: o.listenHost } : {}) });
  for (const path of literalPaths(router)) routePaths.add(path);
  app.use(fallback(router, o.site));
  return { app, router };
}
