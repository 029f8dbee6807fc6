// The shape of a balance token, as both sides see it on the wire: `lds_bal_` followed by the 43
// base64url characters of 256 random bits. The service mints and hashes tokens (payments/tokens.ts);
// the buyer's client checks the shape before it sends one, so a mistyped token is named locally and
// never travels. A shape check says nothing about whether the token names a balance.

export const BALANCE_TOKEN_PREFIX = 'lds_bal_';
const TOKEN_RE = /^lds_bal_[A-Za-z0-9_-]{43}$/;

/** Shape check only (prefix + 43 base64url characters); says nothing about existence. */
export function isWellFormedToken(token: unknown): token is string {
  return typeof token === 'string' && TOKEN_RE.test(token);
}

/** A short, non-reversible hint safe for logs and journals: `bal#` + the first 8 hex of the token's SHA-256. */
export function tokenHint(hash: string): string {
  return `bal#${hash.slice(0, 8)}`;
}
