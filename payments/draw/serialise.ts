// The bytes of the draw flow's answers, written from parts made once: a paid draw's body from
// each unit's cached JSON (most of its 40 KB), a quote's text from the lists its resolution
// already serialised, and the units' SHA-256 of a receipt fed unit by unit. Each equals what
// JSON.stringify would write (test/draw-quote-text checks the quote; the paid draw falls back to
// JSON.stringify for anything not built here or changed since).
import { createHash } from 'node:crypto';
import type { PaidDraw, Quote } from '../../contract/wire.ts';
import { unitBytes, type CachedUnit } from '../store/unit-cache.ts';

const OPEN = Buffer.from('[');
const COMMA = Buffer.from(',');
const CLOSE = Buffer.from(']');

/** SHA-256 (hex) of the RFC 8785 canonical JSON of the delivered units array (= canonicalArray(units)), fed unit by unit. */
export function unitsSha256(units: readonly CachedUnit[]): string {
  const h = createHash('sha256').update(OPEN);
  for (let i = 0; i < units.length; i++) {
    if (i > 0) h.update(COMMA);
    h.update(unitBytes(units[i]).canonical);
  }
  return h.update(CLOSE).digest('hex');
}

// ---- paid draws

/** Per paid draw built from cached units: those units, with each one's JSON text (CachedUnit.json). */
const unitTexts = new WeakMap<PaidDraw, readonly CachedUnit[]>();

/** Remembers that `paid.units` are the cached units `cached` (in order), so its body reuses their bytes. */
export function rememberUnitTexts(paid: PaidDraw, cached: readonly CachedUnit[]): PaidDraw {
  unitTexts.set(paid, cached);
  return paid;
}

/** The cached units behind `paid` when it is still exactly what was remembered (else undefined). */
function cachedUnitsOf(paid: PaidDraw): readonly CachedUnit[] | undefined {
  const cached = unitTexts.get(paid);
  if (!cached || !Array.isArray(paid.units) || paid.units.length !== cached.length || !paid.units.every((u, i) => u === cached[i].unit)) return undefined;
  const keys = Object.keys(paid);
  if (keys.length !== 3 || keys[0] !== 'units' || keys[1] !== 'attribution' || keys[2] !== 'receipt' || paid.attribution === undefined || paid.receipt === undefined) return undefined;
  return cached;
}

/**
 * JSON.stringify(paid), reusing the cached JSON text of its units instead of re-serialising them
 * on every draw (MCP and A2A answer text).
 */
export function paidDrawJson(paid: PaidDraw): string {
  const cached = cachedUnitsOf(paid);
  if (!cached) return JSON.stringify(paid);
  return `{"units":[${cached.map((u) => u.json).join(',')}],"attribution":${JSON.stringify(paid.attribution)},"receipt":${JSON.stringify(paid.receipt)}}`;
}

const UNITS_OPEN = Buffer.from('{"units":[');

/**
 * The bytes of paidDrawJson(paid) (UTF-8), put together from each unit's cached bytes: the HTTP
 * answer of a paid draw, without building and re-encoding a 40 KB string per draw.
 */
export function paidDrawBody(paid: PaidDraw): Buffer {
  const cached = cachedUnitsOf(paid);
  if (!cached) return Buffer.from(JSON.stringify(paid), 'utf8');
  const parts: Buffer[] = [UNITS_OPEN];
  for (let i = 0; i < cached.length; i++) {
    if (i > 0) parts.push(COMMA);
    parts.push(unitBytes(cached[i]).json);
  }
  parts.push(Buffer.from(`],"attribution":${JSON.stringify(paid.attribution)},"receipt":${JSON.stringify(paid.receipt)}}`, 'utf8'));
  return Buffer.concat(parts);
}

// ---- quotes

/** The JSON text of each quote, written with it (QuoteWriter). */
const quoteTexts = new WeakMap<Quote, string>();

/** JSON.stringify(quote): the text written when the quote was made, or a fresh serialisation. */
export function quoteJson(quote: Quote): string {
  return quoteTexts.get(quote) ?? JSON.stringify(quote);
}

/** The parts of a quote's text that its request's resolution serialised once (resolution.ts). */
export interface QuoteTextParts {
  /** `"units":[…]` or `"query":…,"limit":…`: the request's own fields. */
  requestJson: string;
  resolvedJson: string;
  breakdownJson: string;
}

/**
 * Writes a quote's text in the key order the draw service builds it (store-service.ts quoteView),
 * from the per-service constants serialised once and the resolution's parts, and remembers it for
 * quoteJson. `howToPay(payable, expires)` is split around its expiry time once, here.
 */
export class QuoteWriter {
  private readonly currencyJson: string;
  private readonly catalogueVersionJson: string;
  private readonly topupUrlJson: string;
  /** how_to_pay's JSON around its expiry time (payable, not payable). */
  private readonly howToPayJson: { payable: [string, string]; topUp: [string, string] };

  constructor(currency: string, catalogueVersion: string, topupUrl: string, howToPay: (payable: boolean, expires: string) => string) {
    this.currencyJson = JSON.stringify(currency);
    this.catalogueVersionJson = JSON.stringify(catalogueVersion);
    this.topupUrlJson = JSON.stringify(topupUrl);
    const around = (text: string): [string, string] => {
      const [before, after] = text.split('\u0000');
      return [JSON.stringify(before).slice(0, -1), JSON.stringify(after).slice(1)];
    };
    this.howToPayJson = { payable: around(howToPay(true, '\u0000')), topUp: around(howToPay(false, '\u0000')) };
  }

  /** Writes JSON.stringify(quote) from `parts` and remembers it for quoteJson(quote). */
  write(quote: Quote, parts: QuoteTextParts): void {
    const id = JSON.stringify(quote.quote_id);
    const product = JSON.stringify(quote.product_id);
    const expires = quote.expires_at;
    const [howBefore, howAfter] = quote.payable_from_balance ? this.howToPayJson.payable : this.howToPayJson.topUp;
    quoteTexts.set(
      quote,
      `{"quote_id":${id},"product_id":${product},${parts.requestJson},"resolved_units":${parts.resolvedJson},"unit_count":${quote.unit_count},` +
        `"amount":"${quote.amount}","currency":${this.currencyJson},"expires_at":"${expires}","breakdown":${parts.breakdownJson},` +
        `"store_version":${JSON.stringify(quote.store_version)},"catalogue_version":${this.catalogueVersionJson},"payable_from_balance":${quote.payable_from_balance},` +
        `"how_to_pay":${howBefore}${expires}${howAfter},"pay_with":{"product_id":${product},"currency":${this.currencyJson},${parts.requestJson},"quote_id":${id}},"topup_url":${this.topupUrlJson}}`,
    );
  }
}
