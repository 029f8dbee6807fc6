// The last middleware: 405 (with Allow) for a path the API or the published site answers with
// other methods, else 404. Built once every route and mount is in place.
import type { Middleware } from 'koa';
import type Router from '@koa/router';
import { problems } from '../draw/problems.ts';
import type { StaticSite } from './static.ts';

export function fallback(router: Router, site: StaticSite): Middleware {
  const known = new Map<string, string[]>();
  for (const layer of router.stack) {
    const methods = layer.methods.filter((m) => m !== 'HEAD');
    if (methods.length && typeof layer.path === 'string') known.set(layer.path, [...(known.get(layer.path) ?? []), ...methods]);
  }
  for (const path of site.entries.keys()) known.set(path, ['GET', 'HEAD']);
  return async (ctx) => {
    const allowed = known.get(ctx.path);
    if (allowed && !ctx.path.includes(':')) {
      const methods = [...new Set(allowed)];
      ctx.set('Allow', methods.join(', '));
      throw problems.methodNotAllowed(ctx.path, methods);
    }
    throw problems.notFound(ctx.path);
  };
}

/** The router's literal paths (no parameters): a request refused before routing is labelled with one. */
export function literalPaths(router: Router): Set<string> {
  return new Set(router.stack.map((l) => l.path).filter((p): p is string => typeof p === 'string' && !p.includes(':')));
}
