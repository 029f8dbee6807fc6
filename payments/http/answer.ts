// The one place HTTP answers a refusal: every thrown Problem becomes RFC 9457 problem+json with
// the headers its status needs, anything else a logged, opaque 500. The same outermost middleware
// times each request for the metrics and writes the access log (never headers, bodies or query
// strings).
import type { Context, Middleware } from 'koa';
import type { Logger } from 'pino';
import type { Metrics } from '../metrics.ts';
import { PROBLEM_CONTENT_TYPE, Problem } from '../problem.ts';
import { OPS_PATHS } from './ops.ts';

export function sendProblem(ctx: Context, p: Problem): void {
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
export function answerProblems(logger: Logger, metrics: Metrics | undefined, routePaths: ReadonlySet<string>): Middleware {
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
