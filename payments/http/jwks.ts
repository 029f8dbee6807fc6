// The public receipt keys (current and retired) at /.well-known/jwks.json: a runtime secret's
// public half, so the service serves it rather than dist/. Public, cacheable, not rate limited.
import type { Middleware } from 'koa';
import { problems } from '../draw/problems.ts';
import type { ReceiptSigner } from '../receipts.ts';

/** Where the receipt keys are published (linked from the well-known index and the agent card). */
export const JWKS_PATH = '/.well-known/jwks.json';

export function jwksMiddleware(receipts: ReceiptSigner): Middleware {
  const body = JSON.stringify(receipts.jwks);
  return (ctx, next) => {
    if (ctx.path !== JWKS_PATH) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      throw problems.methodNotAllowed(JWKS_PATH, ['GET', 'HEAD']);
    }
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.set('Access-Control-Allow-Origin', '*');
    ctx.type = 'application/jwk-set+json';
    ctx.body = body;
  };
}
