// A middleware whose module is loaded on first use: the top-up (mppx, viem and its curve tables, the
// Stripe SDK) and the agent endpoints (the MCP and A2A SDKs, zod) are most of what a start would
// otherwise load and set up before serving. startServer calls
// `warm()` on every such middleware right after the server listens, so they load in the background
// and the first request that needs one waits only for whatever is still loading.
import type { Middleware } from 'koa';

export type LazyMiddleware = Middleware & { warm(): Promise<void> };

export function lazyMiddleware(build: () => Promise<Middleware>): LazyMiddleware {
  let loaded: Middleware | undefined;
  let loading: Promise<Middleware> | undefined;
  const load = () =>
    (loading ??= build().then(
      (mw) => (loaded = mw),
      (err) => {
        loading = undefined; // a failed load is retried by the next request (and reported to it)
        throw err;
      },
    ));
  const mw = ((ctx, next) => (loaded ? loaded(ctx, next) : load().then((m) => m(ctx, next)))) as LazyMiddleware;
  mw.warm = () => load().then(() => undefined);
  return mw;
}

export function isLazy(mw: unknown): mw is LazyMiddleware {
  return typeof mw === 'function' && typeof (mw as Partial<LazyMiddleware>).warm === 'function';
}
