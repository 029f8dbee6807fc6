// Operator endpoints, answered before the static site and the rate limit (a probe must never be
// refused for being frequent):
//   GET /healthz  the process is alive and its event loop answers (no I/O at all);
//   GET /readyz   ledger writable, unit store open, catalogue loaded, not draining (200 naming the
//                 serving catalogue_version and store_version); 503 problem `not-ready` naming
//                 what is not ready otherwise; on PostgreSQL both name the server in use
//                 (`ledger_server`: host:port, writable, standby);
//   GET /metrics  Prometheus text (payments/metrics.ts), only with `Authorization: Bearer
//                 <LDS_METRICS_TOKEN>` (the scraper's read-only token; the operator token, which
//                 moves money, is not accepted here); 401 problem otherwise.
import type { Middleware } from 'koa';
import type { Metrics } from '../metrics.ts';
import { Problem } from '../problem.ts';
import { isOperator, metricsTokenRequired } from './operator.ts';

export const OPS_PATHS = { health: '/healthz', ready: '/readyz', metrics: '/metrics' } as const;

export interface Readiness {
  ready: boolean;
  /** check name -> 'ok' or what is wrong (short, no internals) */
  checks: Record<string, string>;
  /** PostgreSQL: the server in use (host:port as LDS_LEDGER_URL names it) and whether it takes writes */
  ledger_server?: { server: string; writable: boolean; standby: boolean } | null;
}

export interface OpsOptions {
  metrics: Metrics;
  /** LDS_METRICS_TOKEN: the only token GET /metrics takes. */
  metricsToken: string;
  readiness: () => Promise<Readiness>;
  /** The release serving new quotes (it changes when a new build is published). */
  versions: () => { catalogue_version: string; store_version: string };
}


export function opsMiddleware(o: OpsOptions): Middleware {
  // The pass-through is not async: every other request (all of the API) costs no promise here.
  return (ctx, next) => {
    const path = ctx.path;
    if (path !== OPS_PATHS.health && path !== OPS_PATHS.ready && path !== OPS_PATHS.metrics) return next();
    return answer(ctx, path);
  };

  async function answer(ctx: Parameters<Middleware>[0], path: string): Promise<void> {
    ctx.state.route = path;
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      throw new Problem(405, 'method-not-allowed', 'Method not allowed', `${path} answers GET, HEAD.`);
    }
    ctx.set('Cache-Control', 'no-store');
    if (path === OPS_PATHS.health) {
      ctx.body = { status: 'ok' };
      return;
    }
    if (path === OPS_PATHS.ready) {
      const r = await o.readiness();
      o.metrics.setReady(r.ready);
      if (!r.ready) {
        const notReady = Object.entries(r.checks).filter(([, v]) => v !== 'ok').map(([k]) => k);
        const server = r.ledger_server !== undefined ? { ledger_server: r.ledger_server } : {};
        throw new Problem(503, 'not-ready', 'Not ready', `Not ready: ${notReady.join(', ')}. Send traffic to another instance; this one recovers by itself or is restarted by its supervisor.`, { not_ready: notReady, checks: r.checks, ...server });
      }
      ctx.body = { status: 'ready', checks: r.checks, ...(r.ledger_server !== undefined ? { ledger_server: r.ledger_server } : {}), ...o.versions() };
      return;
    }
    if (!isOperator(ctx.get('authorization'), o.metricsToken)) throw metricsTokenRequired();
    ctx.set('Content-Type', o.metrics.contentType);
    ctx.body = await o.metrics.text();
  }
}
