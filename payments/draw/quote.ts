// Stateless quotes. A quote_id is `q1.<payload>.<mac>`: the payload (base64url JSON) binds the
// product, the canonical unit list (by digest), the request that produced it, the amount, the
// currency, the unit store version, the catalogue version and the expiry; the mac is HMAC-SHA256
// over it with the service's quote secret. An unpaid draw therefore writes nothing, and any service
// instance holding the secret can verify a quote. A random nonce makes every quote distinct, so two
// buyers asking for the same units at the same moment never share a quote (and never collide on its
// exactly-once claim).
import { createHmac, hash, randomBytes, timingSafeEqual } from 'node:crypto';

/** How a quote's units were asked for: 'u' an explicit unit list, 'q' a query resolved at quote time. */
export type QuoteMode = 'u' | 'q';

/** What a quote binds, by name: the draw service reads and writes only these. */
export interface QuoteTerms {
  productId: string;
  mode: QuoteMode;
  /** digest of the request fields the payer must repeat (units as a set, or query + limit) */
  requestDigest: string;
  /** digest of the canonical (sorted, unique) resolved unit list */
  unitsDigest: string;
  unitCount: number;
  amountCents: number;
  currency: string;
  /** the unit store version the units were resolved against */
  storeVersion: string;
  /** the catalogue version the quote was made on (the receipt names it); absent in quotes of earlier releases */
  catalogueVersion?: string;
  /** ms since the epoch */
  expiresAt: number;
}

/** The signed payload: QuoteTerms under one-letter keys (a short quote_id), plus a version and a nonce. */
interface QuotePayload {
  v: 1;
  /** product_id */
  p: string;
  m: QuoteMode;
  /** digest of the request fields the payer must repeat (units as a set, or query + limit) */
  r: string;
  /** digest of the canonical (sorted, unique) resolved unit list */
  h: string;
  /** unit count */
  n: number;
  /** amount in cents */
  a: number;
  /** currency */
  c: string;
  /** unit store version the units were resolved against */
  s: string;
  /** catalogue version the quote was made on (absent in quotes of earlier releases) */
  g?: string;
  /** expiry, ms since the epoch */
  e: number;
  /** nonce */
  k: string;
}

export interface QuoteRequestShape {
  product_id: string;
  units?: string[];
  query?: string;
  limit?: number;
}

const PREFIX = 'q1';

/** Longest quote_id accepted anywhere (OpenAPI, MCP, A2A); the ledger keys claims on it. Issued ones are ~300. */
export const QUOTE_ID_MAX_LENGTH = 512;
const BASE64URL = /^[A-Za-z0-9_-]+$/;
const MAC_TEXT = /^[A-Za-z0-9_-]{43}$/; // 32 bytes of HMAC-SHA256, unpadded

const b64 = (b: Buffer | string) => Buffer.from(b).toString('base64url');

/** Sorted, de-duplicated unit references: the form a quote binds and a receipt describes. */
export function canonicalUnits(refs: readonly string[]): string[] {
  return [...new Set(refs)].sort();
}

/** The hashed text of one part: length-prefixed so no two different lists hash the same text. */
const framed = (p: string) => `${Buffer.byteLength(p)}:${p}\n`;

/** 128 bits of SHA-256 over framed text, base64url (one-shot hash: no Hash object per call). */
const digestOfText = (text: string) => hash('sha256', text, 'buffer').subarray(0, 16).toString('base64url');

export function digest(parts: readonly string[]): string {
  // Length-prefix each part so no two different lists hash the same text.
  let text = '';
  for (const p of parts) text += framed(p);
  // 128 bits: the binding is protected by the HMAC; a shorter quote_id stays well under the ledger's key limit.
  return digestOfText(text);
}

/** What the paying request must repeat. Units count as a set (order and repeats do not matter). */
export function requestDigest(req: QuoteRequestShape, defaultLimit: number): { mode: QuoteMode; digest: string } {
  if (req.units !== undefined) return { mode: 'u', digest: digest(['units', ...canonicalUnits(req.units)]) };
  return { mode: 'q', digest: digest(['query', req.query ?? '', String(req.limit ?? defaultLimit)]) };
}

/**
 * For a unit-list request whose resolved units are exactly the requested set: the request digest
 * (`requestDigest(...).digest`) and the resolved-units digest (`digest(canonicalUnits(refs))`)
 * from one sort and one framing of the list.
 */
export function unitsDigests(refs: readonly string[]): { request: string; units: string } {
  let text = '';
  for (const p of canonicalUnits(refs)) text += framed(p);
  // A pure function of the text, remembered for the next time the same set is asked for (a paid
  // draw repeats its quote's units exactly): a Map look-up instead of two SHA-256 calls.
  // Lists of up to 4 KB of text only, so the memo stays within a few MB.
  let d = text.length <= 4096 ? unitsDigestMemo.get(text) : undefined;
  if (d === undefined) {
    d = { request: digestOfText(framed('units') + text), units: digestOfText(text) };
    if (text.length > 4096) return d;
    unitsDigestMemo.set(text, d);
    if (unitsDigestMemo.size > UNITS_DIGEST_MEMO) unitsDigestMemo.delete(unitsDigestMemo.keys().next().value as string); // oldest first
  }
  return d;
}

const UNITS_DIGEST_MEMO = 2000;
const unitsDigestMemo = new Map<string, { readonly request: string; readonly units: string }>();

export class QuoteSigner {
  // Nonce = random per-process prefix + counter: unique across quotes, restarts and instances,
  // without a call into the CSPRNG per quote (it does not need to be secret, only distinct).
  private readonly noncePrefix = randomBytes(8).toString('base64url');
  private counter = 0;

  constructor(private readonly key: Buffer) {
    if (key.length < 32) throw new Error('the quote secret must be at least 32 bytes');
  }

  private mac(body: string): Buffer {
    return createHmac('sha256', this.key).update(`${PREFIX}.${body}`).digest();
  }

  sign(t: QuoteTerms): string {
    // Field by field: the same key order, so the same JSON, for every quote (an undefined g is left out).
    const full: QuotePayload = { v: 1, p: t.productId, m: t.mode, r: t.requestDigest, h: t.unitsDigest, n: t.unitCount, a: t.amountCents, c: t.currency, s: t.storeVersion, g: t.catalogueVersion, e: t.expiresAt, k: `${this.noncePrefix}${(this.counter++).toString(36)}` };
    const body = b64(JSON.stringify(full));
    return `${PREFIX}.${body}.${b64(this.mac(body))}`;
  }

  /** The terms of a genuine quote_id, or null if it is malformed or its mac does not verify. */
  verify(quoteId: string): QuoteTerms | null {
    if (typeof quoteId !== 'string' || quoteId.length > QUOTE_ID_MAX_LENGTH) return null;
    const parts = quoteId.split('.');
    if (parts.length !== 3 || parts[0] !== PREFIX) return null;
    const [, body, mac] = parts;
    // Only the exact encoding we issue: Node's base64url decoder ignores stray characters and the
    // unused low bits of the last one, so "<mac>=" or a changed last character would decode to the
    // same MAC while being a different string - a different key for the ledger's exactly-once claim.
    if (!BASE64URL.test(body) || !MAC_TEXT.test(mac)) return null;
    const given = Buffer.from(mac, 'base64url');
    if (given.toString('base64url') !== mac) return null;
    const expected = this.mac(body);
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) return null;
    try {
      const p = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as QuotePayload;
      // The mac proves we wrote it; the shape check guards against our own older formats.
      if (p.v !== 1 || typeof p.p !== 'string' || !Number.isSafeInteger(p.a) || !Number.isSafeInteger(p.e) || !Number.isSafeInteger(p.n)) return null;
      return { productId: p.p, mode: p.m, requestDigest: p.r, unitsDigest: p.h, unitCount: p.n, amountCents: p.a, currency: p.c, storeVersion: p.s, ...(typeof p.g === 'string' ? { catalogueVersion: p.g } : {}), expiresAt: p.e };
    } catch {
      return null;
    }
  }
}
