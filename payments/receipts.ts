// Signed receipts. Every paid draw and every top-up answer carries a receipt; its member
// `signature` is
//   { "alg": "EdDSA", "kid": "<RFC 7638 JWK thumbprint>", "value": base64url(Ed25519 signature) }
// over the RFC 8785 canonical JSON of the receipt WITHOUT its `signature` member. A buyer verifies
// one with nothing but the service's JWKS (GET /.well-known/jwks.json): pick the key whose `kid`
// matches, canonicalize the receipt minus `signature`, check the Ed25519 signature (any JOSE or
// Ed25519 library; `lds receipt verify FILE` does it offline).
//
// Ed25519 (RFC 8032) is deterministic, and the receipt is built only from stored ledger data, so
// a replay of the same draw or top-up returns the very same receipt, byte for byte, as long as the
// signing key is the same; after a rotation a replay is signed by the new key (still verifiable).
//
// Keys (LDS_RECEIPT_KEYS, or the file LDS_RECEIPT_KEYS_FILE): a JSON array of Ed25519 JWKs
// (kty OKP, crv Ed25519). The FIRST one signs and must hold its private part `d`; the others are
// retired keys, published (public part only) so receipts they signed keep verifying. Rotate by
// putting a new key first and keeping the old one after it for as long as its receipts matter.
// A local start generates one key under var/secrets/receipt-keys.json; production must supply them.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { jwkThumbprint, signedBytes, type Jwks, type PublicJwk, type Signed } from '../contract/receipts.ts';

// The format and the verification live in contract/receipts.ts (the buyer's client uses them too).
export { jwkThumbprint, signedBytes, verifyReceipt, type Jwks, type PublicJwk, type ReceiptSignature, type Signed, type VerifyResult } from '../contract/receipts.ts';

export class ReceiptKeyError extends Error {}

/** RFC 8410 DER of Ed25519 keys: a fixed prefix, then the 32-byte seed (PKCS #8) or public key (SPKI). */
const ED25519_PKCS8_PREFIX = '302e020100300506032b657004220420';
const ED25519_SPKI_PREFIX = '302a300506032b6570032100';

/**
 * A new Ed25519 key as a private JWK (what a local start writes, and `lds receipt keygen` prints).
 * The key pair comes out of generateKeyPairSync already encoded (DER), never as a KeyObject that is
 * then exported as JWK: on Node 20 that export can deadlock the process for good when a garbage
 * collection runs inside it (the finished generation job's destructor waits on the key's lock, which
 * the export holds) - about one fresh `lds serve` in 100 hung silently before listening
 * (test/receipts-keygen.test.ts).
 */
export function generateReceiptKey(): Record<string, string> {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519', {
    privateKeyEncoding: { format: 'der', type: 'pkcs8' },
    publicKeyEncoding: { format: 'der', type: 'spki' },
  });
  const raw = (der: Buffer, prefix: string): string => {
    if (der.length !== prefix.length / 2 + 32 || der.subarray(0, prefix.length / 2).toString('hex') !== prefix) throw new Error('unexpected Ed25519 DER encoding from node:crypto');
    return der.subarray(-32).toString('base64url');
  };
  const jwk = { kty: 'OKP', crv: 'Ed25519', x: raw(publicKey, ED25519_SPKI_PREFIX), d: raw(privateKey, ED25519_PKCS8_PREFIX) };
  privateKey.fill(0);
  return jwk;
}

export class ReceiptSigner {
  readonly kid: string;
  readonly jwks: Jwks;
  private readonly key: KeyObject;
  /** Told of every receipt signed (the instance's receipt log, payments/receipt-log.ts). */
  private readonly onSigned: ((receipt: object) => void) | undefined;

  private constructor(key: KeyObject, kid: string, jwks: Jwks, onSigned?: (receipt: object) => void) {
    this.key = key;
    this.kid = kid;
    this.jwks = jwks;
    this.onSigned = onSigned;
  }

  /** From the configured JWK array: the first signs, all are published (public parts only). */
  static fromJwks(list: unknown, o: { onSigned?: (receipt: object) => void } = {}): ReceiptSigner {
    if (!Array.isArray(list) || list.length === 0) throw new ReceiptKeyError('receipt keys must be a non-empty JSON array of Ed25519 JWKs (the first one signs)');
    const keys: PublicJwk[] = [];
    list.forEach((k, i) => {
      const j = k as Record<string, unknown>;
      if (!j || j.kty !== 'OKP' || j.crv !== 'Ed25519' || typeof j.x !== 'string' || !/^[A-Za-z0-9_-]{43}$/.test(j.x)) throw new ReceiptKeyError(`receipt key ${i} is not an Ed25519 JWK (kty OKP, crv Ed25519, x)`);
      const kid = jwkThumbprint({ crv: 'Ed25519', kty: 'OKP', x: j.x });
      if (keys.some((p) => p.kid === kid)) throw new ReceiptKeyError(`receipt key ${i} is listed twice`);
      keys.push({ kty: 'OKP', crv: 'Ed25519', x: j.x, kid, alg: 'EdDSA', use: 'sig' });
    });
    const first = list[0] as Record<string, string>;
    if (typeof first.d !== 'string') throw new ReceiptKeyError('the first receipt key signs and must include its private part "d"');
    let key: KeyObject;
    try {
      key = createPrivateKey({ key: { kty: 'OKP', crv: 'Ed25519', x: first.x, d: first.d }, format: 'jwk' });
    } catch (err) {
      throw new ReceiptKeyError(`the first receipt key cannot be loaded: ${(err as Error).message}`);
    }
    // The private part must belong to the public part that is published.
    const x = (createPublicKey(key).export({ format: 'jwk' }) as { x: string }).x;
    if (x !== first.x) throw new ReceiptKeyError('the first receipt key: "d" does not match "x"');
    return new ReceiptSigner(key, keys[0].kid, { keys }, o.onSigned);
  }

  /** The receipt with its `signature` member (any existing one is replaced). */
  sign<T extends Record<string, unknown>>(receipt: T): Signed<Omit<T, 'signature'>> {
    const { signature: _old, ...body } = receipt;
    const value = sign(null, signedBytes(body), this.key).toString('base64url');
    const signed = { ...body, signature: { alg: 'EdDSA', kid: this.kid, value } } as Signed<Omit<T, 'signature'>>;
    this.onSigned?.(signed);
    return signed;
  }
}

