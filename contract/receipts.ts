// The verifying half of signed receipts, shared by the service (payments/receipts.ts signs) and the
// buyer's client (client/): the receipt format, the RFC 7638 key id, the RFC 8785 bytes that are
// signed, and the check against a JWKS. Only node:crypto and canonicalize, so a buyer's program
// imports it without the server. The format is described in payments/receipts.ts.
import { createHash, createPublicKey, verify } from 'node:crypto';
import canonicalizeModule from 'canonicalize';

const canonicalize = canonicalizeModule as unknown as (v: unknown) => string | undefined;

export interface PublicJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  x: string;
  kid: string;
  alg: 'EdDSA';
  use: 'sig';
}

export interface Jwks {
  keys: PublicJwk[];
}

export interface ReceiptSignature {
  alg: 'EdDSA';
  kid: string;
  value: string;
}

export type Signed<T> = T & { signature: ReceiptSignature };

/** RFC 7638 thumbprint of an OKP key: SHA-256 of {"crv","kty","x"} in that (lexicographic) order, base64url. */
export function jwkThumbprint(jwk: { crv: string; kty: string; x: string }): string {
  const text = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x });
  return createHash('sha256').update(text, 'utf8').digest('base64url');
}

/** The RFC 8785 canonical JSON of a receipt without its `signature` member: the bytes that are signed. */
export function signedBytes(receipt: Record<string, unknown>): Buffer {
  const { signature: _omit, ...rest } = receipt;
  const text = flatCanonical(rest) ?? canonicalize(rest);
  if (text === undefined) throw new TypeError('receipt is not JSON');
  return Buffer.from(text, 'utf8');
}

/** String.prototype.isWellFormed (ES2024; in every Node this runs on, not yet in our TypeScript lib). */
const wellFormed = (t: string): boolean => (t as unknown as { isWellFormed(): boolean }).isWellFormed();

/**
 * RFC 8785 of an object whose members are all strings, finite numbers or booleans (every receipt
 * this service signs): members in the order of their names' UTF-16 code units, values as
 * JSON.stringify writes them, which is what RFC 8785 prescribes for these types. Undefined for
 * anything else (the library then does it). Every paid draw signs a receipt, and the generic
 * library walk was ~2 % of its event-loop time. test/service-units pins these bytes to the
 * library's (escapes, key order, a lone surrogate); test/service-money verifies receipts with an
 * independent verifier.
 */
function flatCanonical(o: Record<string, unknown>): string | undefined {
  const keys = Object.keys(o).sort();
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    const v = o[keys[i]];
    if (typeof v !== 'string' && typeof v !== 'boolean' && !(typeof v === 'number' && Number.isFinite(v))) return undefined;
    // A lone surrogate is not Unicode: RFC 8785 (and the library) refuse it.
    if ((typeof v === 'string' && !wellFormed(v)) || !wellFormed(keys[i])) return undefined;
    out += `${i > 0 ? ',' : ''}${JSON.stringify(keys[i])}:${JSON.stringify(v)}`;
  }
  return `${out}}`;
}

export type VerifyResult = { ok: true; kid: string } | { ok: false; reason: string };

/** Checks a receipt against a JWKS: the key named by `kid`, Ed25519 over the canonical JSON without `signature`. */
export function verifyReceipt(receipt: unknown, jwks: unknown): VerifyResult {
  if (!receipt || typeof receipt !== 'object' || Array.isArray(receipt)) return { ok: false, reason: 'the receipt is not a JSON object' };
  const sig = (receipt as { signature?: Partial<ReceiptSignature> }).signature;
  if (!sig || typeof sig !== 'object') return { ok: false, reason: 'the receipt has no signature member' };
  if (sig.alg !== 'EdDSA') return { ok: false, reason: `unsupported signature alg ${JSON.stringify(sig.alg)}` };
  if (typeof sig.kid !== 'string' || typeof sig.value !== 'string') return { ok: false, reason: 'the signature has no kid or value' };
  const keys = (jwks as { keys?: unknown })?.keys;
  if (!Array.isArray(keys)) return { ok: false, reason: 'the JWKS has no keys array' };
  const jwk = keys.find((k) => k && (k as { kid?: string }).kid === sig.kid) as Record<string, string> | undefined;
  if (!jwk) return { ok: false, reason: `no key with kid ${sig.kid} in the JWKS` };
  if (jwk.kty !== 'OKP' || jwk.crv !== 'Ed25519' || typeof jwk.x !== 'string') return { ok: false, reason: `key ${sig.kid} is not an Ed25519 key` };
  if (jwkThumbprint({ crv: jwk.crv, kty: jwk.kty, x: jwk.x }) !== sig.kid) return { ok: false, reason: `key ${sig.kid}: its kid is not its RFC 7638 thumbprint` };
  let ok = false;
  try {
    const key = createPublicKey({ key: { kty: 'OKP', crv: 'Ed25519', x: jwk.x }, format: 'jwk' });
    ok = verify(null, signedBytes(receipt as Record<string, unknown>), key, Buffer.from(sig.value, 'base64url'));
  } catch {
    ok = false;
  }
  return ok ? { ok: true, kid: sig.kid } : { ok: false, reason: 'the signature does not match the receipt (altered, or signed by another key)' };
}
