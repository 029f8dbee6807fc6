// The buyer's API over HTTP: the draw (402 quote, or a paid draw with the quote_id), the balance
// and its statement (JSON or CSV), token rotation, the top-up, and the DCAT address of an unknown
// product. Each route checks its body or parameters against the OpenAPI document, calls the draw
// service (or the top-up handler) and writes the answer; refusals are thrown as Problems.
import type { Context, Middleware } from 'koa';
import type Router from '@koa/router';
import { STATEMENT_PAGE } from '../../contract/limits.ts';
import type { DrawRequest, PayRequest, Quote } from '../../contract/wire.ts';
import { problems } from '../draw/problems.ts';
import { paidDrawBody, quoteJson } from '../draw/serialise.ts';
import type { StoreDrawService } from '../draw/store-service.ts';
import type { Metrics, TopupOutcome } from '../metrics.ts';
import { Problem } from '../problem.ts';
import { balanceTokenOf } from '../tokens.ts';
import { readJsonBody } from './body.ts';
import type { RequestValidator } from './openapi-validate.ts';
import { statementCsv } from './statement-csv.ts';

/** What the routes call: a StoreDrawService, or the live one that follows published builds (payments/release/releases.ts). */
export type AppDrawService = Pick<StoreDrawService, 'quote' | 'pay' | 'balance' | 'rotateToken' | 'catalogue' | 'drawUrl'>;

export interface BuyerRoutesOptions {
  service: AppDrawService;
  validator: RequestValidator;
  /** POST {base}/lds/balance/topup handler (payments/topup/handler.ts). */
  topup: Middleware;
  metrics?: Metrics;
  /** The API's base path (`/v1`) and base URL. */
  basePath: string;
  baseUrl: string;
}

/** What Koa writes for an object body; the draw route serialises its answers itself (same bytes). */
const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** Adds the routes to `router`; returns the draw's fast path (mounted before the router: the hot path). */
export function addBuyerRoutes(router: Router, o: BuyerRoutesOptions): Middleware {
  const draw = drawHandler(o);
  router.post('/lds/draw', draw);
  router.get('/lds/balance', balanceHandler(o));
  // Rotation: Bearer the old token; the answer carries the new one (shown once).
  router.post('/lds/balance/token', async (ctx) => {
    const token = balanceTokenOf(ctx.get('authorization'));
    ctx.set('Cache-Control', 'no-store, private');
    ctx.body = await o.service.rotateToken(token ?? '');
  });
  router.post('/lds/balance/topup', topupHandler(o));
  // Published DCAT documents are answered by the static layer; reaching here means no such product.
  router.get('/dcat/catalog/:product_id', (ctx) => {
    o.validator.params('getProductDcat', { product_id: ctx.params.product_id });
    throw problems.unknownProduct(ctx.params.product_id, o.baseUrl);
  });
  // The hot path: POST of the exact draw path skips the router's per-request match and compose. Any
  // other spelling the router accepts (trailing slash, case) still reaches the route above.
  const drawPath = `${o.basePath}/lds/draw`;
  return (ctx, next) => {
    if (ctx.method !== 'POST' || ctx.path !== drawPath) return next();
    ctx.state.route = drawPath;
    return draw(ctx);
  };
}

/** The Link header that says "your balance can pay this", and no caching: the headers of every quote. */
function setQuoteHeaders(ctx: Context, quote: Quote, drawUrl: string): void {
  ctx.set('Cache-Control', 'no-store');
  if (quote.payable_from_balance) ctx.set('Link', `<${drawUrl}>; rel="payment"`);
}

function drawHandler(o: BuyerRoutesOptions): (ctx: Context) => Promise<void> {
  const maxBody = o.validator.bounds.maxBodyBytes;
  return async (ctx) => {
    const body = await readJsonBody(ctx, maxBody);
    o.validator.body('draw', body);
    const req = body as DrawRequest & { quote_id?: string }; // checked against the OpenAPI document above
    const token = balanceTokenOf(ctx.get('authorization'));
    if (!isPayRequest(req)) {
      const quote = await o.service.quote(req, token === 'malformed' ? undefined : token);
      ctx.status = 402;
      setQuoteHeaders(ctx, quote, o.service.drawUrl);
      ctx.set('Content-Type', JSON_CONTENT_TYPE);
      ctx.body = quoteJson(quote);
      return;
    }
    try {
      const paid = await o.service.pay(req, token ?? '');
      ctx.status = 200;
      ctx.set('Cache-Control', 'no-store');
      ctx.set('Content-Type', JSON_CONTENT_TYPE);
      ctx.body = paidDrawBody(paid); // the bytes of JSON.stringify(paid); Content-Type as set above
    } catch (err) {
      // An expired quote answers with a fresh one: same headers as any quote.
      const fresh = err instanceof Problem && err.status === 402 ? (err.extra.quote as Quote | undefined) : undefined;
      if (fresh) setQuoteHeaders(ctx, fresh, o.service.drawUrl);
      throw err;
    }
  };
}

/** A draw request that carries its quote_id pays it; without one it asks for a quote. */
function isPayRequest(req: DrawRequest & { quote_id?: string }): req is PayRequest {
  return req.quote_id !== undefined;
}

function balanceHandler(o: BuyerRoutesOptions): (ctx: Context) => Promise<void> {
  return async (ctx) => {
    const token = balanceTokenOf(ctx.get('authorization'));
    const one = (name: string): string | undefined => {
      const v = ctx.query[name];
      if (Array.isArray(v)) throw problems.malformed(name, `give ${name} once`);
      return v;
    };
    const format = one('format') ?? 'json';
    if (format !== 'json' && format !== 'csv') throw problems.malformed('format', 'format must be json or csv');
    const limitText = one('limit');
    if (limitText !== undefined && !/^[0-9]{1,4}$/.test(limitText))
      throw problems.malformed('limit', `limit must be a whole number from 1 to ${STATEMENT_PAGE.maxLines} (got ${JSON.stringify(limitText.slice(0, 20))})`);
    const view = await o.service.balance(token ?? '', { after: one('after'), limit: limitText === undefined ? undefined : Number(limitText) });
    ctx.set('Cache-Control', 'no-store');
    if (view.next_after) {
      const next = new URLSearchParams({ after: view.next_after, ...(limitText ? { limit: limitText } : {}), ...(format === 'csv' ? { format } : {}) });
      ctx.set('Link', `<${o.baseUrl}/lds/balance?${next}>; rel="next"`);
    }
    if (format === 'csv') {
      ctx.type = 'text/csv; charset=utf-8; header=present';
      ctx.set('Content-Disposition', 'attachment; filename="statement.csv"');
      ctx.body = statementCsv(view);
      return;
    }
    ctx.body = view;
  };
}

function topupHandler(o: BuyerRoutesOptions): Middleware {
  const maxBody = o.validator.bounds.maxBodyBytes;
  return async (ctx, next) => {
    try {
      // Validated against the OpenAPI document here; the handler then finds the parsed body on ctx.request.
      const body = await readJsonBody(ctx, maxBody);
      o.validator.body('topUp', body);
      (ctx.request as { body?: unknown }).body = body;
      await o.topup(ctx, next);
      o.metrics?.topup(topupOutcome(ctx.status, ctx.body));
    } catch (err) {
      o.metrics?.topup(topupOutcome(err instanceof Problem ? err.status : 500, err instanceof Problem ? { type: err.type } : undefined));
      throw err;
    }
  };
}

/** How a top-up request ended, for lds_topups_total (bounded outcomes; never who or which credential). */
function topupOutcome(s: number, body: unknown): TopupOutcome {
  if (s === 200) return 'paid';
  if (s === 409) return 'repeated';
  const type = typeof body === 'object' && body !== null ? String((body as { type?: unknown }).type ?? '') : '';
  if (s === 402 && type.endsWith('/payment-required')) return 'challenged';
  return s >= 500 ? 'failed' : 'refused';
}
