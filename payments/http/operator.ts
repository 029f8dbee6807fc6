// The operator token (LDS_OPERATOR_TOKEN): `Authorization: Bearer <token>` on the operator
// endpoints (the admin API). Compared in constant time over SHA-256 digests, so neither the
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
