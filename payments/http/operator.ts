// The operator credentials, each `Authorization: Bearer <token>`: LDS_OPERATOR_TOKEN on the admin
// API, LDS_METRICS_TOKEN on GET /metrics (payments/http/ops.ts) - two tokens, so the scraper's
// cannot move money. Compared in constant time over SHA-256 digests, so neither the
// length nor a prefix of the token leaks through timing; never logged.
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import { Problem } from '../problem.ts';

const digest = (s: string) => createHash('sha256').update(s, 'utf8').digest();

/** Whether `Authorization` carries exactly the operator token as a Bearer credential. */
export function isOperator(authorization: string | undefined, operatorToken: string): boolean {
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization ?? '');
  if (!m || !operatorToken) return false;
  return timingSafeEqual(digest(m[1]), digest(operatorToken));
}

/** /metrics without the scrape token (LDS_METRICS_TOKEN); the operator token is not it. */
export function metricsTokenRequired(): Problem {
  return new Problem(401, 'metrics-token-required', 'Metrics token required', 'GET /metrics takes the scrape token: send `Authorization: Bearer <LDS_METRICS_TOKEN>` (the operator token is for the admin API only).');
}

export function operatorRequired(): Problem {
  return new Problem(401, 'operator-token-required', 'Operator token required', 'This is an operator endpoint: send `Authorization: Bearer <LDS_OPERATOR_TOKEN>`.');
}

/** Koa guard: refuses (401 problem) any request without the operator token. */
export function requireOperator(operatorToken: string): Middleware {
  return async (ctx: Context, next) => {
    if (!isOperator(ctx.get('authorization'), operatorToken)) throw operatorRequired();
    await next();
  };
}
