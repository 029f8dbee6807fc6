// One HTTP request with the retries it can safely take:
//   - 429: wait as the service says (Retry-After, or the RateLimit header's t when a bucket is at
//     r=0), then resend;
//   - 503 (the service did nothing: ledger unavailable, shedding load), and 502/504 from a proxy
//     for a resendable request: exponential backoff with jitter (Retry-After when sent), resend;
//   - a network failure: resend when the request is resendable (`idempotent`: a quote, a paid draw
//     with its quote_id, a top-up credential, a read), or when it never left (connection refused).
// At most `maxAttempts` sends, and never a wait longer than `maxWaitMs`: past that the last answer
// (or the network error) is the caller's. The body must be a string so it can be resent as is.
// Pure in its clock and randomness (sleep, random) so the test can follow it.

export interface RetryOptions {
  /** sends in all, the first included (default 5) */
  maxAttempts?: number;
  /** the longest single wait the client accepts, ms (default 30 000) */
  maxWaitMs?: number;
  /** first backoff step, ms (default 250); doubles each attempt, capped at 8 s */
  baseDelayMs?: number;
}

export interface RetryEnv {
  fetch: typeof globalThis.fetch;
  sleep: (ms: number) => Promise<void>;
  random: () => number;
  /** told before each wait, e.g. to print a progress line */
  onRetry?: (info: { attempt: number; waitMs: number; why: string; url: string }) => void;
}

export const DEFAULT_RETRY: Required<RetryOptions> = { maxAttempts: 5, maxWaitMs: 30_000, baseDelayMs: 250 };

/** Seconds of a Retry-After header (delta-seconds or an HTTP date), as ms; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/**
 * The wait a RateLimit header (draft-ietf-httpapi-ratelimit-headers, structured-field form:
 * `"addr";r=0;t=2, "token";r=5;t=1`) implies: the longest t among exhausted (r=0) buckets, as ms.
 */
export function rateLimitWaitMs(value: string | null): number | undefined {
  if (!value) return undefined;
  let wait: number | undefined;
  for (const item of value.split(',')) {
    const r = /;\s*r=(\d+)/.exec(item);
    const t = /;\s*t=(\d+)/.exec(item);
    if (r && t && Number(r[1]) === 0) wait = Math.max(wait ?? 0, Number(t[1]) * 1000);
  }
  return wait;
}

/** Exponential backoff with "equal jitter": half the step, plus a random part of the other half. */
export function backoffMs(attempt: number, baseMs: number, random: () => number): number {
  const step = Math.min(8000, baseMs * 2 ** (attempt - 1));
  return Math.round(step / 2 + random() * (step / 2));
}

/** Did the request certainly not reach the server? (then resending is always safe) */
function neverSent(err: unknown): boolean {
  const code = (err as { cause?: { code?: string } }).cause?.code;
  return code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'UND_ERR_CONNECT_TIMEOUT';
}

/** Why a request got no answer, in a few words (fetch hides it in `cause`). */
export function networkReason(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}

export interface RetriedRequest {
  url: string;
  init: RequestInit & { body?: string };
  idempotent: boolean;
}

/**
 * Sends `req`, retrying as above. Returns the final response (which may still be a 429/503 when
 * the attempts ran out); throws the last network error when no answer came.
 */
export async function sendWithRetry(req: RetriedRequest, env: RetryEnv, options: RetryOptions = {}): Promise<Response> {
  const o = { ...DEFAULT_RETRY, ...options };
  for (let attempt = 1; ; attempt++) {
    let res: Response;
    try {
      res = await env.fetch(req.url, req.init);
    } catch (err) {
      if ((err as Error).name === 'AbortError') throw err;
      const resend = req.idempotent || neverSent(err);
      if (!resend || attempt >= o.maxAttempts) throw err;
      const waitMs = backoffMs(attempt, o.baseDelayMs, env.random);
      env.onRetry?.({ attempt, waitMs, why: `no answer (${networkReason(err)})`, url: req.url });
      await env.sleep(waitMs);
      continue;
    }
    const s = res.status;
    const retryable = s === 429 || s === 503 || ((s === 502 || s === 504) && req.idempotent);
    if (!retryable || attempt >= o.maxAttempts) return res;
    const told = Math.max(retryAfterMs(res.headers.get('retry-after')) ?? 0, s === 429 ? (rateLimitWaitMs(res.headers.get('ratelimit')) ?? 0) : 0);
    const waitMs = told > 0 ? told + Math.round(env.random() * 100) : backoffMs(attempt, o.baseDelayMs, env.random);
    if (waitMs > o.maxWaitMs) return res; // the service asks for longer than the caller allows
    await res.arrayBuffer().catch(() => undefined); // free the connection
    env.onRetry?.({ attempt, waitMs, why: `HTTP ${s}`, url: req.url });
    await env.sleep(waitMs);
  }
}
