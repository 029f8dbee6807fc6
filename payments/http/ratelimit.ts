// Rate limits: a token bucket per client address and one per balance token. `perSecond` tokens
// refill each second up to `burst`. Cheap enough to sit in front of every API request; the maps are
// swept when they grow so a scan from many addresses (or made-up tokens) cannot exhaust memory (a
// full bucket carries no information and can be forgotten).
//
// A request takes one from each bucket that applies; an adapter whose body carries several calls
// (an MCP JSON-RPC batch) takes the rest with callLimitOf, so a batch costs what its calls would.
//
// The limits are per instance (in memory). Several instances behind one proxy each allow the full
// rate; the fleet-wide cap is nginx's `limit_req` at the edge (README, "Operations").
//
// Every limited answer carries the IETF headers of draft-ietf-httpapi-ratelimit-headers (-09, the
// structured-field form):
//   RateLimit-Policy: "addr";q=40;w=2, "token";q=40;w=2
//   RateLimit: "addr";r=39;t=1, "token";r=39;t=1
// A bucket is described as its quota q = burst per window w = burst / perSecond seconds (the time
// it takes to refill): a client that spends at most q per w is never refused. r is what is left
// now (whole requests), t the seconds until the bucket is full again. A 429 also has Retry-After:
// the seconds until one request is allowed.
import type { Context, Middleware } from 'koa';
import { Problem } from '../problem.ts';
import { balanceTokenOf, hashToken, isWellFormedToken } from '../tokens.ts';

interface Bucket {
  tokens: number;
  at: number; // ms of the last refill
}

export interface Take {
  /** ms to wait before a token is available, or 0 if one was taken now. */
  wait: number;
  /** whole requests left after this one */
  remaining: number;
  /** seconds until the bucket is full again */
  resetSeconds: number;
}

export interface RateLimiter {
  /** ms to wait before a token is available, or 0 if one was taken now. */
  take(client: string, now?: number): number;
  /** The same, with what is left (for the RateLimit header). */
  takeInfo(client: string, now?: number): Take;
  readonly size: number;
}

const MAX_CLIENTS = 50_000;

export function createRateLimiter(perSecond: number, burst: number): RateLimiter {
  const buckets = new Map<string, Bucket>();
  const refill = (b: Bucket, now: number) => {
    b.tokens = Math.min(burst, b.tokens + ((now - b.at) / 1000) * perSecond);
    b.at = now;
  };
  const takeInfo = (client: string, now = Date.now()): Take => {
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
    let wait = 0;
    if (b.tokens >= 1) b.tokens -= 1;
    else wait = Math.ceil(((1 - b.tokens) / perSecond) * 1000);
    return { wait, remaining: Math.floor(b.tokens), resetSeconds: Math.ceil((burst - b.tokens) / perSecond) };
  };
  return {
    get size() {
      return buckets.size;
    },
    take: (client, now) => takeInfo(client, now).wait,
    takeInfo,
  };
}

export interface RateLimitSettings {
  /** per client address (ctx.ip: the socket address, or the proxy's X-Forwarded-For entry with LDS_TRUST_PROXY) */
  perSecond: number;
  burst: number;
  /** per balance token (Authorization: Bearer); 0 disables */
  tokenPerSecond?: number;
  tokenBurst?: number;
  /** called once per refusal with the policy that refused ('addr' or 'token') */
  onRefused?: (policy: 'addr' | 'token') => void;
}

/** Window of a bucket in whole seconds: the time to refill it from empty (at least 1). */
const windowOf = (perSecond: number, burst: number) => Math.max(1, Math.ceil(burst / perSecond));

/**
 * 429 with Retry-After and the RateLimit headers when the address's or the token's bucket is empty.
 * A request takes from both buckets that apply. Limits of 0 disable that bucket.
 */
export function rateLimitMiddleware(settings: RateLimitSettings | number, legacyBurst?: number): Middleware {
  const s: RateLimitSettings = typeof settings === 'number' ? { perSecond: settings, burst: legacyBurst ?? settings } : settings;
  const policies: { name: 'addr' | 'token'; limiter: RateLimiter; perSecond: number; burst: number; key: (ctx: Context) => string | undefined }[] = [];
  if (s.perSecond > 0) policies.push({ name: 'addr', limiter: createRateLimiter(s.perSecond, s.burst), perSecond: s.perSecond, burst: s.burst, key: (ctx) => ctx.ip || 'unknown' });
  const tps = s.tokenPerSecond ?? 0;
  const tburst = s.tokenBurst ?? tps * 2;
  if (tps > 0) {
    policies.push({
      name: 'token',
      limiter: createRateLimiter(tps, tburst),
      perSecond: tps,
      burst: tburst,
      // Keyed by the token's hash: the raw token is never kept, not even in memory here.
      key: (ctx) => {
        const t = balanceTokenOf(ctx.get('authorization'));
        return t && t !== 'malformed' ? hashToken(t) : undefined;
      },
    });
  }
  if (policies.length === 0) return (_ctx, next) => next();
  const policyHeader = (names: string[]) =>
    policies
      .filter((p) => names.includes(p.name))
      .map((p) => `"${p.name}";q=${p.burst};w=${windowOf(p.perSecond, p.burst)}`)
      .join(', ');
  const headerCache = new Map<string, string>();
  const tokenPolicy = policies.find((p) => p.name === 'token');
  const refusal = (p: (typeof policies)[number], wait: number, ctx: Context): Problem => {
    s.onRefused?.(p.name);
    const retry = Math.max(1, Math.ceil(wait / 1000));
    ctx.set('Retry-After', String(retry));
    const per = p.name === 'addr' ? 'client address' : 'balance token';
    return new Problem(429, 'rate-limited', 'Too many requests', `Slow down: at most ${p.perSecond} requests per second (bursts of ${p.burst}) per ${per}. Retry-After says when to retry; RateLimit and RateLimit-Policy describe the limits.`, { policy: p.name, retry_after: retry });
  };
  /**
   * Takes `count` requests from every bucket that applies to this request (its address, its
   * Bearer token), sets the RateLimit header to what is left, and throws the 429 problem when a
   * bucket runs dry. A refused count keeps what it took: every call was made.
   */
  const take = (ctx: Context, count: number): void => {
    const applied: string[] = [];
    const states: string[] = [];
    let refused: (typeof policies)[number] | undefined;
    let wait = 0;
    for (const p of policies) {
      const key = p.key(ctx);
      if (key === undefined) continue;
      let t = p.limiter.takeInfo(key);
      for (let i = 1; i < count && t.wait === 0; i++) t = p.limiter.takeInfo(key);
      applied.push(p.name);
      states.push(`"${p.name}";r=${t.remaining};t=${t.resetSeconds}`);
      if (t.wait > wait) {
        wait = t.wait;
        refused = p;
      }
    }
    const names = applied.join(',');
    let ph = headerCache.get(names);
    if (ph === undefined) headerCache.set(names, (ph = policyHeader(applied)));
    ctx.set('RateLimit-Policy', ph);
    ctx.set('RateLimit', states.join(', '));
    if (refused) throw refusal(refused, wait, ctx);
  };
  return async (ctx, next) => {
    const state = ctx.state as RateLimitState;
    if (tokenPolicy) {
      // A balance token can also arrive in a body (an MCP tool argument, an A2A data part): the
      // adapter hands it here once read, and it takes from the very bucket a Bearer token takes
      // from - unless it is the Bearer token of this request, already counted above.
      // (The Bearer key is worked out again only when a body token comes: the hot path hashes once.)
      state.limitToken = (token) => {
        if (!isWellFormedToken(token)) return;
        const key = hashToken(token);
        if (key === tokenPolicy.key(ctx)) return;
        const t = tokenPolicy.limiter.takeInfo(key);
        if (t.wait > 0) throw refusal(tokenPolicy, t.wait, ctx);
      };
    }
    // One HTTP request may carry several calls (a JSON-RPC batch): the adapter takes the rest.
    state.take = take;
    take(ctx, 1);
    return next();
  };
}

/** Takes one request from a balance token's bucket; throws the 429 problem when it is empty. */
export type TokenLimit = (token: string) => void;
/** Takes `count` more requests from this request's address and Bearer token buckets; throws the 429 problem when one is empty. */
export type CallLimit = (count: number) => void;
interface RateLimitState {
  limitToken?: TokenLimit;
  take?: (ctx: Context, count: number) => void;
}

/** The token limit of this request (a no-op when no token limit is configured). */
export function tokenLimitOf(ctx: Context): TokenLimit {
  return (ctx.state as RateLimitState).limitToken ?? (() => {});
}

/** The call limit of this request, for a body that carries several calls (a no-op without rate limits). */
export function callLimitOf(ctx: Context): CallLimit {
  const take = (ctx.state as RateLimitState).take;
  return (count) => {
    if (take && count > 0) take(ctx, count);
  };
}
