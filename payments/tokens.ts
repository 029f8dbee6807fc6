// Balance tokens: bearer secrets that name a prepaid balance.
//
// A token is 256 random bits, shown to the buyer exactly once (in the top-up answer). The service
// keeps only its SHA-256, so a copy of the ledger cannot be used to spend anyone's balance, and the
// hash doubles as the balance id inside the ledger. Tokens never go into logs or URLs: callers log
// at most `tokenHint(hash)`.
import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';

export const BALANCE_TOKEN_PREFIX = 'lds_bal_';
const TOKEN_BYTES = 32; // 256 bits
// base64url without padding of 32 bytes is 43 characters.
const TOKEN_RE = /^lds_bal_[A-Za-z0-9_-]{43}$/;
const HASH_RE = /^[0-9a-f]{64}$/;

export interface NewToken {
  /** The secret; hand it to the buyer once and forget it. */
  token: string;
  /** Hex SHA-256 of the token: what the ledger stores. */
  hash: string;
}

export function newBalanceToken(): NewToken {
  const token = BALANCE_TOKEN_PREFIX + randomBytes(TOKEN_BYTES).toString('base64url');
  return { token, hash: hashToken(token) };
}

/**
 * The token of a balance created by a top-up: an HMAC of the MPP challenge id under the server's
 * secret. Without the secret it is as unguessable as 256 random bits; with it the service can give a
 * buyer who lost the 200 answer the same token again when they resend the very same credential
 * (see topup.ts), instead of stranding money they paid. Domain-separated from the challenge MAC.
 */
export function balanceTokenForChallenge(secret: string, challengeId: string): NewToken {
  const token = BALANCE_TOKEN_PREFIX + createHmac('sha256', secret).update(`lds balance token\0${challengeId}`).digest('base64url');
  return { token, hash: hashToken(token) };
}

/** Hex SHA-256 of a UTF-8 string: how secrets (tokens, payment credentials) are kept. */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex'); // one-shot: no Hash object per call (every paid draw hashes its token)
}

/** Hex SHA-256 of a token string. */
export function hashToken(token: string): string {
  return sha256Hex(token);
}

/** Shape check only (prefix + 43 base64url characters); says nothing about existence. */
export function isWellFormedToken(token: unknown): token is string {
  return typeof token === 'string' && TOKEN_RE.test(token);
}

export function isTokenHash(hash: unknown): hash is string {
  return typeof hash === 'string' && HASH_RE.test(hash);
}

/**
 * Constant-time comparison of two hex hashes. Lookups are by hash already, so this is the
 * belt-and-braces check after a lookup; it never short-circuits on the first differing byte.
 */
export function hashesEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a, 'utf8');
  const bb = Buffer.from(b, 'utf8');
  if (ba.length !== bb.length) return false;
  return timingSafeEqual(ba, bb);
}

/**
 * Reads `Authorization: Bearer <token>`. Returns null when there is no Bearer credential (absent
 * header or another scheme such as `Payment`), and 'malformed' for a Bearer value that cannot be a
 * balance token, so callers can refuse it without ever echoing it.
 */
export function bearerToken(header: string | undefined | null): string | null | 'malformed' {
  if (!header) return null;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  if (!m) return /^Bearer\b/i.test(header) ? 'malformed' : null;
  return isWellFormedToken(m[1]) ? m[1] : 'malformed';
}

/** A short, non-reversible hint safe for logs: the first 8 hex chars of the token hash. */
export function tokenHint(hash: string): string {
  return `bal#${hash.slice(0, 8)}`;
}

/**
 * The balance token from `Authorization: Bearer <token>`, read as the HTTP API reads it: absent →
 * undefined; present but not a well-formed token → 'malformed', which the service refuses as an
 * unknown balance token (401) when paying, and ignores when quoting.
 */
export function balanceTokenOf(header: string | undefined): string | undefined {
  const t = bearerToken(header || undefined);
  return t === null ? undefined : t;
}
