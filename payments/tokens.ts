// Balance tokens: bearer secrets that name a prepaid balance.
//
// A token is 256 random bits, shown to the buyer exactly once (in the top-up answer). The service
// keeps only its SHA-256, so a copy of the ledger cannot be used to spend anyone's balance, and the
// hash doubles as the balance id inside the ledger. Tokens never go into logs or URLs: callers log
// at most `tokenHint(hash)`.
import { createCipheriv, createDecipheriv, hash, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';

import { BALANCE_TOKEN_PREFIX, isWellFormedToken, tokenHint } from '../contract/balance-token.ts';

export { BALANCE_TOKEN_PREFIX, isWellFormedToken, tokenHint };
const TOKEN_BYTES = 32; // 256 bits: base64url without padding, 43 characters (contract/balance-token.ts)
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
 * Sealing the token of a balance opened by a top-up, for the replay rule (topup/handler.ts): the
 * very credential that paid, resent before its challenge expires, gets the same answer with the
 * same token. The token itself is random (newBalanceToken); what the ledger keeps for the replay is
 * the token encrypted (AES-256-GCM) under a key derived (HKDF-SHA-256) from the whole MPP
 * credential, which carries the buyer's Shared Payment Token. So only a resend of that credential
 * opens it: no server secret, ledger copy or public datum (the challenge id is public) yields a
 * token, and the SHA-256 of the credential the ledger also keeps is not the key (HKDF is keyed
 * differently). The ledger drops the sealed token once the challenge's window has closed.
 */
const SEAL_SALT = 'lds balance token seal v1';
const SEAL_IV_BYTES = 12;
const SEAL_TAG_BYTES = 16;

function sealKey(credential: string, challengeId: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(credential, 'utf8'), SEAL_SALT, `challenge ${challengeId}`, 32));
}

/** base64url(iv ‖ tag ‖ ciphertext) of the token, bound to the challenge id (as associated data). */
export function sealBalanceToken(token: string, credential: string, challengeId: string): string {
  const iv = randomBytes(SEAL_IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', sealKey(credential, challengeId), iv);
  cipher.setAAD(Buffer.from(challengeId, 'utf8'));
  const ct = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), ct]).toString('base64url');
}

/** The token sealed by sealBalanceToken, or null when this credential (or challenge) did not seal it. */
export function openBalanceToken(sealed: string, credential: string, challengeId: string): string | null {
  try {
    const raw = Buffer.from(sealed, 'base64url');
    if (raw.length <= SEAL_IV_BYTES + SEAL_TAG_BYTES) return null;
    const decipher = createDecipheriv('aes-256-gcm', sealKey(credential, challengeId), raw.subarray(0, SEAL_IV_BYTES));
    decipher.setAAD(Buffer.from(challengeId, 'utf8'));
    decipher.setAuthTag(raw.subarray(SEAL_IV_BYTES, SEAL_IV_BYTES + SEAL_TAG_BYTES));
    const token = Buffer.concat([decipher.update(raw.subarray(SEAL_IV_BYTES + SEAL_TAG_BYTES)), decipher.final()]).toString('utf8');
    return isWellFormedToken(token) ? token : null;
  } catch {
    return null; // another credential: the tag does not verify
  }
}

/** Hex SHA-256 of a UTF-8 string: how secrets (tokens, payment credentials) are kept. */
export function sha256Hex(text: string): string {
  return hash('sha256', text, 'hex'); // one-shot: no Hash object per call (every paid draw hashes its token)
}

/** Hex SHA-256 of a token string. */
export function hashToken(token: string): string {
  return sha256Hex(token);
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

/**
 * The balance token from `Authorization: Bearer <token>`, read as the HTTP API reads it: absent →
 * undefined; present but not a well-formed token → 'malformed', which the service refuses as an
 * unknown balance token (401) when paying, and ignores when quoting.
 */
export function balanceTokenOf(header: string | undefined): string | undefined {
  const t = bearerToken(header || undefined);
  return t === null ? undefined : t;
}
