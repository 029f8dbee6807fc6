// A token bucket per client address: `perSecond` tokens refill each second up to `burst`. Cheap
// enough to sit in front of every API request; the map is swept when it grows so a scan from many
// addresses cannot exhaust memory (a full bucket carries no information and can be forgotten).
import type { Middleware } from 'koa';
import { Problem } from '../problem.ts';

interface Bucket {
  tokens: number;
  at: number; // ms of the last refill
}

export interface RateLimiter {
  /** ms to wait before a token is available, or 0 if one was taken now. */
  take(client: string, now?: number): number;
  readonly size: number;
}

const MAX_CLIENTS = 50_000;

export function createRateLimiter(perSecond: number, burst: number): RateLimiter {
  const buckets = new Map<string, Bucket>();
  const refill = (b: Bucket, now: number) => {
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
  };
  return {
    get size() {
      return buckets.size;
    },
    take(client, now = Date.now()) {
      let b = buckets.get(client);
      if (!b) {
        if (buckets.size >= MAX_CLIENTS) {
          for (const [k, v] of buckets) {
            refill(v, now);
            if (v.tokens >= burst) buckets.delete(k);
          }
        }
        b = { tokens: burst, at: now };
        buckets.set(client, b);
      } else refill(b, now);
      if (b.tokens >= 1) {
        b.tokens -= 1;
        return 0;
      }
      return Math.ceil(((1 - b.tokens) / perSecond) * 1000);
    },
  };
}

/** 429 with Retry-After when the client's bucket is empty. perSecond 0 disables the limit. */
export function rateLimitMiddleware(perSecond: number, burst: number): Middleware {
  if (perSecond <= 0) return (_ctx, next) => next();
  const limiter = createRateLimiter(perSecond, burst);
  return async (ctx, next) => {
    const wait = limiter.take(ctx.ip || 'unknown');
    if (wait > 0) {
      ctx.set('Retry-After', String(Math.max(1, Math.ceil(wait / 1000))));
      throw new Problem(429, 'rate-limited', 'Too many requests', `Slow down: at most ${perSecond} requests per second (bursts of ${burst}) per client.`);
    }
    return next();
  };
}
