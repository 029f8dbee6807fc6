// The DrawService (payments/draw/service.ts) over the unit store and the ledger. HTTP, MCP and A2A
// all call this, so every check that protects money lives here, not in a transport: bounds, the
// product, the currency, the quote's signature and binding, expiry, held sources, exactly-once.
//
// Pay order matters: the quote is verified and bound to the request before anything else; an
// expired quote is first checked for an existing draw (so a paid quote replays forever) and only
// then answered with a fresh quote; the debit, draw record and ledger entries go in one synced
// batch inside the ledger (which also decides replay / other balance / insufficient).
import { createHash } from 'node:crypto';
import type { CatalogueDoc, CatalogueProduct } from '../../contract/catalogue.ts';
import { drawPriceCents, formatCents, formatMicros } from '../../contract/money.ts';
import type { Unit, UnitStoreReader } from '../../contract/store-format.ts';
import type { BalanceView, DeliveredUnit, DrawRequest, DrawService, PaidDraw, Quote, StatementPage } from './service.ts';
import type { DrawRecord, Ledger, LoggerLike } from '../ledger/ledger.ts';
import { Problem } from '../problem.ts';
import { QuoteSigner, canonicalUnits, digest, requestDigest, unitsDigests, type QuotePayload } from './quote.ts';
import { hashToken, hashesEqual, isWellFormedToken, newBalanceToken, tokenHint } from '../tokens.ts';
import { Lru, UnitCache, unitBytes, type CachedUnit } from '../store/unit-cache.ts';
import type { DrawBounds } from '../http/openapi-validate.ts';
import type { ReceiptSigner } from '../receipts.ts';

export const CURRENCY = 'EUR';

// ---- problems of the draw and balance flows (stable types; listed in the OpenAPI Problem schema) ----

export const problems = {
  malformed: (field: string, detail: string) => new Problem(400, 'malformed-request', 'Malformed request', detail, { field }),
  currency: (c: string) => new Problem(400, 'unsupported-currency', 'Unsupported currency', `currency must be "EUR" (in any case); ${JSON.stringify(c.slice(0, 16))} is not accepted.`, { field: 'currency' }),
  unknownProduct: (id: string) => new Problem(404, 'unknown-product', 'Unknown product', `There is no product ${JSON.stringify(id.slice(0, 80))}; GET /v1/lds/_catalog lists them.`, { field: 'product_id' }),
  unknownUnits: (productId: string, unknown: string[]) =>
    new Problem(404, 'unknown-units', 'Unknown units', `${unknown.length} unit reference${unknown.length > 1 ? 's are' : ' is'} not in ${productId}: ${unknown.slice(0, 5).join(', ')}${unknown.length > 5 ? ', …' : ''}`, { field: 'units', unknown }),
  unavailable: (p: CatalogueProduct) =>
    new Problem(
      404,
      'product-unavailable',
      'Product has no live units yet',
      `${p.product_id} is in the catalogue but has no live units to sell yet (launch state ${p.launch_state}): ${p._health?.rollup_reason || 'none of its sources serves rows yet'}. Nothing was quoted or charged; GET /v1/lds/_catalog shows live_unit_count per product.`,
      { field: 'product_id', product_id: p.product_id, live_unit_count: 0, reason: p._health?.rollup_reason ?? null },
    ),
  noMatch: (productId: string) => new Problem(404, 'no-matching-units', 'No matching units', `The query matched no unit of ${productId}.`, { field: 'query' }),
  tampered: (field: string, detail: string) => new Problem(400, 'quote-tampered', 'Quote does not match', detail, { field }),
  tokenRequired: () =>
    new Problem(401, 'balance-token-required', 'Balance token required', 'Send `Authorization: Bearer <BALANCE_TOKEN>`. Get a token with a top-up: POST /v1/lds/balance/topup.'),
  invalidToken: () => new Problem(401, 'invalid-balance-token', 'Unknown balance token', 'The balance token is not known. Top up to get one: POST /v1/lds/balance/topup.'),
  revokedToken: () =>
    new Problem(401, 'balance-token-revoked', 'Balance token no longer valid', 'This balance token was rotated or revoked and no longer works. Use the token that replaced it; if it was revoked, ask the operator.'),
  expired: (quote: Quote) => new Problem(402, 'quote-expired', 'Quote expired', 'The quote expired or the data changed; here is a fresh quote for the same request.', { quote }),
  insufficient: (quote: Quote, amountCents: number, balanceCents: number, topupUrl: string) =>
    new Problem(402, 'insufficient-balance', 'Insufficient balance', `The balance (${formatCents(balanceCents)} EUR) does not cover ${quote.amount} EUR.`, {
      balance: formatCents(balanceCents),
      currency: CURRENCY,
      quote,
      topup_url: topupUrl,
      how_to_pay: `Top up at least ${formatCents(Math.max(500, amountCents - balanceCents))} EUR (POST ${topupUrl}, minimum 5.00), then repeat the paid draw with the same quote_id.`,
    }),
  otherBalance: () => new Problem(409, 'quote-paid-by-another-balance', 'Quote already paid', 'This quote was paid from another balance. Ask for a new quote.'),
  /**
   * The quote names a unit store version this instance does not hold (another instance switched to
   * a new build first, or this one was restarted since): nothing was charged, and a retry reaches an
   * instance (or a moment) that holds it. Never answered with other units or another price.
   */
  storeUnavailable: (storeVersion: string, expiresAt: number, retryAfterSeconds: number) =>
    new Problem(
      503,
      'quote-store-unavailable',
      'Quote made against a unit store this instance does not hold',
      `The quote was made against unit store ${storeVersion}, which this instance does not hold right now (a new catalogue version is being rolled out). Nothing was charged. Repeat the same request in ${retryAfterSeconds} s: it is paid with exactly the quoted units and price by an instance that holds that store; once the quote expires (${new Date(expiresAt).toISOString()}) the answer is a fresh quote instead.`,
      { store_version: storeVersion, expires_at: new Date(expiresAt).toISOString(), retry_after: retryAfterSeconds },
    ),
};

/**
 * How a service with several releases open (payments/release/releases.ts) pays a quote made
 * against another unit store version than this service's own.
 */
export interface OtherVersions {
  /** The payer of a release that holds `storeVersion` (a previous one kept for its quotes), or null. */
  payerFor(storeVersion: string): ((req: DrawRequest & { quote_id: string }, balanceToken: string) => Promise<PaidDraw>) | null;
  /** An unexpired, unpaid quote of a version no release here holds: the problem to answer (a retry). */
  missing(storeVersion: string, expiresAt: number): Problem;
}

export interface DrawServiceOptions {
  catalogue: CatalogueDoc;
  store: UnitStoreReader;
  ledger: Ledger;
  quoteSecret: Buffer;
  bounds: DrawBounds;
  quoteTtlSeconds: number;
  logger?: LoggerLike;
  now?: () => number;
  /** Units kept decoded in memory (LRU; the store is immutable, so never stale). */
  unitCacheSize?: number;
  /** Signs every receipt (payments/receipts.ts). */
  receipts: ReceiptSigner;
  /** Told of every quote given, whichever transport asked (HTTP, MCP, A2A): the metrics count them. */
  onQuote?: (productId: string) => void;
  /** Other unit store versions open in this process (a live switch to a new build); none: only this one. */
  otherVersions?: OtherVersions;
}

/** The quote as sent: the interface's fields plus the ready-made paying request and the top-up address. */
export type QuoteBody = Quote & { pay_with: Record<string, unknown>; topup_url: string };

/** The resolved form of a draw request: validated, defaults applied. */
interface Resolved {
  product: CatalogueProduct;
  currency: string;
  units?: string[]; // de-duplicated, request order
  /** Digests of `units` (request and sorted set), computed once per request when needed. */
  digests?: { request: string; units: string };
  query?: string;
  limit?: number;
}

/** What the ledger keeps per draw (verbatim in its draw record) so a replay returns the same draw. */
interface StoredDraw {
  refs: string[];
  units_sha256: string;
  catalogue_version: string;
  store_version: string;
}

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

/** Per paid draw built from cached units: those units, with each one's JSON text (CachedUnit.json). */
const unitTexts = new WeakMap<PaidDraw, readonly CachedUnit[]>();

/**
 * JSON.stringify(paid), reusing the cached JSON text of its units (most of a paid draw's bytes)
 * instead of re-serialising them on every draw. Falls back to JSON.stringify for anything not built
 * by this service from cached units, or changed since.
 */
export function paidDrawJson(paid: PaidDraw): string {
  const cached = cachedUnitsOf(paid);
  if (!cached) return JSON.stringify(paid);
  return `{"units":[${cached.map((u) => u.json).join(',')}],"attribution":${JSON.stringify(paid.attribution)},"receipt":${JSON.stringify(paid.receipt)}}`;
}

/** The cached units behind `paid` when it is still exactly what paidDraw built (else undefined). */
function cachedUnitsOf(paid: PaidDraw): readonly CachedUnit[] | undefined {
  const cached = unitTexts.get(paid);
  if (!cached || !Array.isArray(paid.units) || paid.units.length !== cached.length || !paid.units.every((u, i) => u === cached[i].unit)) return undefined;
  const keys = Object.keys(paid);
  if (keys.length !== 3 || keys[0] !== 'units' || keys[1] !== 'attribution' || keys[2] !== 'receipt' || paid.attribution === undefined || paid.receipt === undefined) return undefined;
  return cached;
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

/**
 * What a draw request's units come to: a pure function of (product, request, unit store), which is
 * immutable per store version, so it is remembered (StoreDrawService.resolution). A paid draw
 * repeats its quote's request exactly, so the pay finds what the quote resolved; repeated quotes
 * of the same units or query cost a look-up instead of a store read, two digests and the JSON of
 * the lists. Shared by every quote of that request: frozen.
 */
interface Resolution {
  readonly units: readonly CachedUnit[];
  readonly resolvedRefs: readonly string[];
  /** The quote's `m` and `r` (what the payer must repeat) and `h` (the sorted resolved refs). */
  readonly mode: 'u' | 'q';
  readonly requestDigest: string;
  readonly unitsDigest: string;
  readonly breakdown: QuoteBody['breakdown'];
  /** The price of the units, in cents. */
  readonly cents: number;
  /** JSON of the request's own fields (`"units":[…]` or `"query":…,"limit":…`), of resolved_units and of breakdown. */
  readonly requestJson: string;
  readonly resolvedJson: string;
  readonly breakdownJson: string;
  /** units_sha256 of the receipt, made by the first paid draw. */
  sha256?: string;
}

/** The JSON text of each quote, written with it (StoreDrawService.quoteText). */
const quoteTexts = new WeakMap<QuoteBody, string>();

/** JSON.stringify(quote): the text written when the quote was made, or a fresh serialisation. */
export function quoteJson(quote: QuoteBody): string {
  return quoteTexts.get(quote) ?? JSON.stringify(quote);
}

/** Units as delivered: the stored unit plus a one-line citation. */
function deliver(u: Unit): DeliveredUnit {
  return { ...u, citation_text: `${u.citation.label}. ${u.licence.attribution}` };
}

export class StoreDrawService implements DrawService {
  private readonly signer: QuoteSigner;
  private readonly products: Map<string, CatalogueProduct>;
  /** Per product: sources that may be served (ruled, not held, with a unit kind). */
  private readonly served: Map<string, Set<string>>;
  private readonly now: () => number;
  private readonly units: UnitCache;
  readonly drawUrl: string;
  readonly topupUrl: string;
  private readonly currencyJson: string;
  private readonly catalogueVersionJson: string;
  private readonly topupUrlJson: string;
  private readonly resolutions: Lru<Resolution>;
  /** how_to_pay's JSON around its expiry time, written once (payable, not payable). */
  private readonly howToPayJson: { payable: [string, string]; topUp: [string, string] };

  constructor(private readonly o: DrawServiceOptions) {
    this.signer = new QuoteSigner(o.quoteSecret);
    this.products = new Map(o.catalogue.products.map((p) => [p.product_id, p]));
    this.served = new Map(
      o.catalogue.products.map((p) => {
        const held = new Set(p.licence_basis.filter((l) => l.verdict === 'held').map((l) => l.source));
        return [p.product_id, new Set(p.unit_definition.map((u) => u.source).filter((s) => !held.has(s)))];
      }),
    );
    this.now = o.now ?? Date.now;
    this.units = new UnitCache(o.store, deliver, o.unitCacheSize ?? 5000);
    this.drawUrl = `${o.catalogue.base_url}/lds/draw`;
    this.topupUrl = `${o.catalogue.base_url}/lds/balance/topup`;
    this.currencyJson = JSON.stringify(CURRENCY);
    this.catalogueVersionJson = JSON.stringify(o.catalogue.version);
    this.topupUrlJson = JSON.stringify(this.topupUrl);
    // Bounded by the units they hold (as many as the unit cache), so the memo never keeps more
    // than about twice the unit cache's units alive.
    this.resolutions = new Lru(o.unitCacheSize ?? 5000, (r) => Math.max(1, r.units.length));
    const around = (text: (expires: string) => string): [string, string] => {
      const [before, after] = text('\u0000').split('\u0000');
      return [JSON.stringify(before).slice(0, -1), JSON.stringify(after).slice(1)];
    };
    this.howToPayJson = { payable: around((e) => this.howToPay(true, e)), topUp: around((e) => this.howToPay(false, e)) };
  }

  private howToPay(payable: boolean, expires: string): string {
    return payable
      ? `Your balance covers this quote: repeat the request with "quote_id" and Authorization: Bearer <BALANCE_TOKEN> (POST ${this.drawUrl}) before ${expires}.`
      : `Top up a prepaid balance (minimum 5.00 EUR) with POST ${this.topupUrl} (Machine Payments Protocol, Stripe Shared Payment Token), then repeat this request with "quote_id" and Authorization: Bearer <BALANCE_TOKEN> before ${expires}.`;
  }

  catalogue(): CatalogueDoc {
    return this.o.catalogue;
  }

  // ---------------------------------------------------------------- quote

  async quote(req: DrawRequest, balanceToken?: string): Promise<Quote> {
    const r = this.resolveRequest(req);
    const q = await this.makeQuote(r, await this.resolution(r), balanceToken);
    this.o.onQuote?.(q.product_id);
    return q;
  }

  // ---------------------------------------------------------------- pay

  async pay(req: DrawRequest & { quote_id: string }, balanceToken: string): Promise<PaidDraw> {
    if (!balanceToken) throw problems.tokenRequired();
    if (!isWellFormedToken(balanceToken)) throw problems.invalidToken();
    // The quote's signed payload, read once. An unexpired quote of a release this process still
    // holds (kept for its quotes after a switch to a new build) is paid there, before anything is
    // checked against this release: with that release's catalogue and store, at the quoted price.
    const signed = typeof req?.quote_id === 'string' ? this.signer.verify(req.quote_id) : null;
    if (signed && signed.s !== this.o.store.meta.store_version && signed.e > this.now()) {
      const payer = this.o.otherVersions?.payerFor(signed.s);
      if (payer) return payer(req, balanceToken);
    }
    const r = this.resolveRequest(req);
    const q = this.verifyQuote(req.quote_id, r, signed);
    // The presented token's hash: the ledger's debit resolves it to its balance (a rotated-in token
    // names its balance's first token hash; a rotated-away or revoked one none) in the debit itself.
    const presented = hashToken(balanceToken);

    const now = this.now();
    const otherVersion = q.s !== this.o.store.meta.store_version;
    if (q.e <= now || otherVersion) {
      // A paid quote stays paid: replay it (or refuse another balance) before offering a new one.
      const balanceId = await this.balanceIdOf(balanceToken);
      const prior = await this.findDraw(req.quote_id);
      if (prior) return this.fromRecord(prior, balanceId, r);
      // Unexpired but of a store this process does not hold: a retry, never other units or another price.
      if (q.e > now && this.o.otherVersions) throw this.o.otherVersions.missing(q.s, q.e);
      throw problems.expired(await this.makeQuote(r, await this.resolution(r), balanceToken));
    }

    const res = await this.resolution(r);
    if (res.unitsDigest !== q.h) {
      // Same store version, different result: cannot happen for an honest quote; offer a fresh one.
      throw problems.expired(await this.makeQuote(r, res, balanceToken));
    }
    const units = res.units;
    res.sha256 ??= unitsSha256(units);
    const stored: StoredDraw = { refs: [...res.resolvedRefs], units_sha256: res.sha256, catalogue_version: this.o.catalogue.version, store_version: q.s };
    const debit = await this.o.ledger.debitDraw(presented, { quoteId: req.quote_id, amountCents: q.a, currency: q.c, productId: q.p, draw: stored });
    switch (debit.kind) {
      case 'ok':
        this.o.logger?.info({ draw: debit.draw.draw_id, product: q.p, units: units.length, amount_cents: q.a, balance: tokenHint(debit.draw.token_hash) }, 'draw paid');
        return this.paidDraw(debit.draw, units);
      case 'replay':
        return this.fromRecord(debit.draw, debit.draw.token_hash, r);
      case 'revoked':
        throw problems.revokedToken();
      case 'other_balance':
        throw await this.notThisBalance(await this.balanceIdOf(balanceToken));
      case 'insufficient':
        throw problems.insufficient(this.quoteView(r, res, req.quote_id, q, false), q.a, debit.balanceCents, this.topupUrl);
      case 'unknown_balance':
        throw problems.invalidToken();
      case 'currency_mismatch':
        throw problems.currency(q.c);
    }
  }

  // ---------------------------------------------------------------- balance

  async balance(balanceToken: string, page: StatementPage = {}): Promise<BalanceView> {
    const hash = await this.balanceIdOf(balanceToken);
    const limit = page.limit ?? 20;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1000) throw problems.malformed('limit', `limit must be a whole number from 1 to 1000 (got ${JSON.stringify(page.limit)})`);
    let before: number | undefined;
    if (page.after !== undefined) {
      if (!/^[1-9][0-9]{0,15}$/.test(page.after)) throw problems.malformed('after', 'after must be the next_after value of a previous page');
      before = Number(page.after);
    }
    const bal = await this.o.ledger.getBalance(hash);
    if (!bal) throw problems.invalidToken();
    // One line more than asked tells whether another page exists.
    const lines = await this.o.ledger.statement(hash, limit + 1, before);
    const more = lines.length > limit;
    const shown = lines.slice(0, limit);
    return {
      balance: formatCents(bal.cents),
      currency: CURRENCY,
      statement: shown.map((s) => ({
        kind: s.kind,
        id: s.id,
        amount: formatCents(s.kind === 'draw' || s.kind === 'debit' || s.kind === 'topup_refund' ? -s.amountCents : s.amountCents),
        balance_after: formatCents(s.balanceAfterCents),
        at: s.at,
        ...(s.quoteId !== undefined ? { quote_id: s.quoteId } : {}),
        ...(s.productId !== undefined ? { product_id: s.productId } : {}),
        ...(s.reason !== undefined ? { reason: s.reason } : {}),
        // A draw line names its own draw in draw_id (and a top-up line its top-up in topup_id), as
        // a refund line names the draw it refunds: the column means "the draw this line is about".
        ...(s.drawId !== undefined ? { draw_id: s.drawId } : s.kind === 'draw' ? { draw_id: s.id } : {}),
        ...(s.topupId !== undefined ? { topup_id: s.topupId } : s.kind === 'topup' ? { topup_id: s.id } : {}),
      })),
      ...(more ? { next_after: String(shown[shown.length - 1].seq) } : {}),
    };
  }

  /**
   * The balance id a balance token names (401 problems for none, a malformed, unknown, rotated or
   * revoked one). Read from the ledger on every call, so a rotation or revocation on any instance
   * takes effect at once.
   */
  async balanceIdOf(balanceToken: string): Promise<string> {
    if (!balanceToken) throw problems.tokenRequired();
    if (!isWellFormedToken(balanceToken)) throw problems.invalidToken();
    const r = await this.o.ledger.resolveToken(hashToken(balanceToken));
    if (r.kind === 'revoked') throw problems.revokedToken();
    return r.balance;
  }

  /**
   * Replaces a balance token with a new one (the buyer's `POST /v1/lds/balance/token`): the new
   * token is shown once, here; the old one stops working at once on every instance (the change is
   * in the ledger). Two concurrent rotations of one token: one wins, the other gets a 401.
   */
  async rotateToken(balanceToken: string): Promise<{ balance_token: string; balance: string; currency: 'EUR' }> {
    const balance = await this.balanceIdOf(balanceToken);
    const fresh = newBalanceToken();
    const r = await this.o.ledger.rotateToken(hashToken(balanceToken), fresh.hash);
    if (r.kind === 'revoked') throw problems.revokedToken();
    if (r.kind === 'unknown') throw problems.invalidToken();
    const bal = await this.o.ledger.getBalance(balance);
    this.o.logger?.info({ balance: tokenHint(balance) }, 'balance token rotated');
    return { balance_token: fresh.token, balance: formatCents(bal?.cents ?? 0), currency: CURRENCY };
  }

  /** Balance in cents for a token, or null (unknown, malformed or revoked token). Used for the 402 Link decision. */
  async balanceCents(balanceToken: string | undefined): Promise<number | null> {
    if (!balanceToken || !isWellFormedToken(balanceToken)) return null;
    const r = await this.o.ledger.resolveToken(hashToken(balanceToken));
    if (r.kind === 'revoked') return null;
    return (await this.o.ledger.getBalance(r.balance))?.cents ?? null;
  }

  // ---------------------------------------------------------------- internals

  /**
   * Validates what the HTTP layer's OpenAPI check also validates, because MCP and A2A call the
   * service directly. Bounds come from the same OpenAPI document.
   */
  private resolveRequest(req: DrawRequest): Resolved {
    const b = this.o.bounds;
    if (!req || typeof req !== 'object' || Array.isArray(req)) throw problems.malformed('(body)', 'the draw request must be a JSON object such as {"product_id": "svc-language-eu", "query": "data protection"}');
    if (typeof req.product_id !== 'string' || req.product_id === '') throw problems.malformed('product_id', 'product_id is required: a product id from the catalogue, e.g. "svc-language-eu"');
    const currency = req.currency ?? CURRENCY;
    if (typeof currency !== 'string') throw problems.malformed('currency', 'currency must be a three-letter currency code; only "EUR" (in any case) is accepted');
    if (currency.toUpperCase() !== CURRENCY) throw problems.currency(currency);
    const product = this.products.get(req.product_id);
    if (!product) throw problems.unknownProduct(req.product_id);
    // A product without live units can match nothing: say why (the catalogue knows) instead of a
    // no-matching-units that suggests the query was wrong.
    if (product.live_unit_count === 0) throw problems.unavailable(product);
    const hasUnits = req.units !== undefined;
    const hasQuery = req.query !== undefined;
    if (hasUnits === hasQuery) throw problems.malformed('units', 'give either `units` (unit references) or `query` (with an optional `limit`), not both');
    if (hasUnits) {
      if (req.limit !== undefined) throw problems.malformed('limit', '`limit` goes with `query`, not with `units`');
      const u = req.units;
      const unitsWanted = `a list of 1 to ${b.maxUnits} distinct unit references, e.g. ["eu.eurlex:32016R0679#p12"]`;
      if (!Array.isArray(u) || u.length < 1 || u.length > b.maxUnitItems) throw problems.malformed('units', `units must be ${unitsWanted}`);
      u.forEach((ref, i) => {
        if (typeof ref !== 'string' || ref.length < 3 || ref.length > 200 || !ref.includes(':'))
          throw problems.malformed(`units.${i}`, `units.${i} must be a unit reference <source>:<local id> of 3 to 200 characters, e.g. "eu.eurlex:32016R0679#p12"`);
      });
      // Duplicates count once: remove them first, then apply the limit on distinct references.
      const distinct = [...new Set(u)];
      if (distinct.length > b.maxUnits) throw problems.malformed('units', `units must be ${unitsWanted}; this request names ${distinct.length} distinct references`);
      return { product, currency: CURRENCY, units: distinct };
    }
    const query = req.query;
    if (typeof query !== 'string' || query.trim() === '' || query.length > b.maxQueryChars) throw problems.malformed('query', `query must be a search text of 1 to ${b.maxQueryChars} characters, e.g. "data protection"`);
    const limit = req.limit ?? b.defaultLimit;
    if (!Number.isInteger(limit) || limit < 1 || limit > b.maxLimit) throw problems.malformed('limit', `limit must be a whole number from 1 to ${b.maxLimit} (got ${JSON.stringify(limit)})`);
    return { product, currency: CURRENCY, query, limit };
  }

  private async resolveUnits(r: Resolved): Promise<CachedUnit[]> {
    const id = r.product.product_id;
    let units: CachedUnit[];
    if (r.units) {
      const got = await this.units.getUnits(id, r.units);
      if (got.unknown.length) throw problems.unknownUnits(id, got.unknown);
      units = got.units;
    } else {
      units = await this.units.search(id, r.query!, r.limit!);
      if (units.length === 0) throw problems.noMatch(id);
    }
    // The store never holds held sources; if it ever did, refuse to sell them rather than trust it.
    const served = this.served.get(id)!;
    const leaked = units.filter(({ unit: u }) => !served.has(u.source) || !u.ref.startsWith(`${u.source}:`));
    if (leaked.length) {
      this.o.logger?.error({ product: id, refs: leaked.map((u) => u.unit.ref).slice(0, 10) }, 'unit store returned units of a held or foreign source; refused');
      if (r.units) throw problems.unknownUnits(id, leaked.map((u) => u.unit.ref));
      units = units.filter((u) => !leaked.includes(u));
      if (units.length === 0) throw problems.noMatch(id);
    }
    return units;
  }

  /**
   * The request's units, digests and the JSON of its lists: remembered per (product, request) for
   * this store version (see Resolution). Refusals (unknown units, no match) are not remembered.
   */
  private async resolution(r: Resolved): Promise<Resolution> {
    const key = r.units ? `u\n${r.product.product_id}\n${JSON.stringify(r.units)}` : `q\n${r.product.product_id}\n${r.limit}\n${r.query}`;
    const known = this.resolutions.get(key);
    if (known) return known;
    const units = await this.resolveUnits(r);
    const resolvedRefs = units.map((u) => u.unit.ref);
    const rd = this.requestDigest(r);
    const want = r.units;
    // A unit list resolved to itself (request order, already de-duplicated): its sorted digest was made with the request digest.
    const unitsDigest = want && resolvedRefs.length === want.length && resolvedRefs.every((ref, i) => ref === want[i]) ? r.digests!.units : digest(canonicalUnits(resolvedRefs));
    const rate = r.product.pricing.draw_unit_price_micro_eur;
    const bySource = new Map<string, number>();
    for (const { unit: u } of units) bySource.set(u.source, (bySource.get(u.source) ?? 0) + 1);
    const breakdown = [...bySource].map(([source, n]) => Object.freeze({ source, unit_count: n, unit_price: formatMicros(rate), amount: formatMicros(n * rate) }));
    const requestJson = want ? `"units":${JSON.stringify(want)}` : `"query":${JSON.stringify(r.query)},"limit":${JSON.stringify(r.limit)}`;
    const resolvedJson = JSON.stringify(resolvedRefs);
    const res: Resolution = {
      units: Object.freeze(units),
      resolvedRefs: Object.freeze(resolvedRefs),
      mode: rd.mode,
      requestDigest: rd.digest,
      unitsDigest,
      breakdown: Object.freeze(breakdown) as QuoteBody['breakdown'],
      cents: drawPriceCents(units.length, rate),
      requestJson,
      resolvedJson,
      breakdownJson: JSON.stringify(breakdown),
    };
    this.resolutions.set(key, res);
    return res;
  }

  private async makeQuote(r: Resolved, res: Resolution, balanceToken?: string): Promise<Quote> {
    const payload: Omit<QuotePayload, 'v' | 'k'> = {
      p: r.product.product_id,
      m: res.mode,
      r: res.requestDigest,
      h: res.unitsDigest,
      n: res.units.length,
      a: res.cents,
      c: CURRENCY,
      s: this.o.store.meta.store_version,
      e: this.now() + this.o.quoteTtlSeconds * 1000,
    };
    const quoteId = this.signer.sign(payload);
    const balance = await this.balanceCents(balanceToken);
    return this.quoteView(r, res, quoteId, payload, balance !== null && balance >= res.cents);
  }

  private quoteView(r: Resolved, res: Resolution, quoteId: string, q: Omit<QuotePayload, 'v' | 'k'>, payable: boolean): QuoteBody {
    const fields = r.units ? { units: r.units } : { query: r.query, limit: r.limit };
    const expires = new Date(q.e).toISOString();
    const body: QuoteBody = {
      quote_id: quoteId,
      product_id: r.product.product_id,
      ...fields,
      resolved_units: res.resolvedRefs as string[],
      unit_count: res.units.length,
      amount: formatCents(q.a),
      currency: CURRENCY,
      expires_at: expires,
      breakdown: res.breakdown,
      store_version: q.s,
      catalogue_version: this.o.catalogue.version,
      payable_from_balance: payable,
      how_to_pay: this.howToPay(payable, expires),
      pay_with: { product_id: r.product.product_id, currency: CURRENCY, ...fields, quote_id: quoteId },
      topup_url: this.topupUrl,
    };
    quoteTexts.set(body, this.quoteText(body, res, expires));
    return body;
  }

  /**
   * JSON.stringify(body), written out in quoteView's key order from the parts the resolution
   * remembers (the unit lists and the breakdown, serialised once per request) and the per-service
   * constants serialised at start; test/draw-quote-text checks it equals JSON.stringify.
   */
  private quoteText(b: QuoteBody, res: Resolution, expires: string): string {
    const id = JSON.stringify(b.quote_id);
    const product = JSON.stringify(b.product_id);
    const [howBefore, howAfter] = b.payable_from_balance ? this.howToPayJson.payable : this.howToPayJson.topUp;
    return (
      `{"quote_id":${id},"product_id":${product},${res.requestJson},"resolved_units":${res.resolvedJson},"unit_count":${b.unit_count},` +
      `"amount":"${b.amount}","currency":${this.currencyJson},"expires_at":"${expires}","breakdown":${res.breakdownJson},` +
      `"store_version":${JSON.stringify(b.store_version)},"catalogue_version":${this.catalogueVersionJson},"payable_from_balance":${b.payable_from_balance},` +
      `"how_to_pay":${howBefore}${expires}${howAfter},"pay_with":{"product_id":${product},"currency":${this.currencyJson},${res.requestJson},"quote_id":${id}},"topup_url":${this.topupUrlJson}}`
    );
  }

  /**
   * The request digest a quote binds. A unit-list request also keeps the digest of its (sorted,
   * unique) units on the resolved request: its resolved units are that same set, so the quote's
   * `h` comes from the same sort (see resolution).
   */
  private requestDigest(r: Resolved): { mode: 'u' | 'q'; digest: string } {
    if (r.units) {
      r.digests ??= unitsDigests(r.units);
      return { mode: 'u', digest: r.digests.request };
    }
    return requestDigest({ product_id: r.product.product_id, query: r.query, limit: r.limit }, this.o.bounds.defaultLimit);
  }

  /** Verifies the quote's mac (unless `verified` is its payload, already verified) and that the request repeats exactly what was quoted. */
  private verifyQuote(quoteId: unknown, r: Resolved, verified: QuotePayload | null): QuotePayload {
    if (typeof quoteId !== 'string' || quoteId === '') throw problems.malformed('quote_id', 'quote_id is required to pay');
    const q = verified ?? this.signer.verify(quoteId);
    if (!q) throw problems.tampered('quote_id', 'The quote_id is not one this service issued (or it was altered).');
    if (q.p !== r.product.product_id) throw problems.tampered('product_id', 'product_id differs from the quoted product.');
    if (q.c !== r.currency) throw problems.tampered('currency', 'currency differs from the quote.');
    const rd = this.requestDigest(r);
    if (q.m !== rd.mode || q.r !== rd.digest) throw this.differingField(q, r);
    return q;
  }

  /**
   * The refusal of a request that does not repeat its quote, naming the field that differs. A
   * query quote binds query and limit in one digest; the limit is one of at most `maxLimit` values,
   * so trying the request's query with each of them (only here, on a refusal) tells whether only
   * the limit changed, and to what it was quoted.
   */
  private differingField(q: QuotePayload, r: Resolved): Problem {
    const again = 'repeat the quoted request exactly.';
    if (q.m === 'u') return problems.tampered('units', `The request's units differ from the quoted ones (as a set; order and repeats do not matter): ${again}`);
    if (r.units) return problems.tampered('query', `The quote was made for a query (with its limit), not for a list of units: ${again}`);
    for (let limit = 1; limit <= this.o.bounds.maxLimit; limit++) {
      if (limit !== r.limit && requestDigest({ product_id: q.p, query: r.query, limit }, this.o.bounds.defaultLimit).digest === q.r)
        return problems.tampered('limit', `limit is ${r.limit}, but the quote was made with limit ${limit}: ${again}`);
    }
    return problems.tampered('query', `The request's query differs from the quoted one: ${again}`);
  }

  /** One attribution line per delivered source, from the product's licence rulings. */
  private attribution(productId: string, units: DeliveredUnit[]): PaidDraw['attribution'] {
    const cat = this.o.catalogue;
    const rulings = new Map(this.products.get(productId)!.licence_basis.map((l) => [l.source, l]));
    const sources = new Map<string, DeliveredUnit>();
    for (const u of units) if (!sources.has(u.source)) sources.set(u.source, u);
    return [...sources.values()].map((u) => {
      const ruling = rulings.get(u.source);
      return {
        source: u.source,
        attribution: ruling?.attribution || u.licence.attribution,
        licence: u.licence.licence,
        licence_url: u.licence.licence === cat.licence.id ? cat.licence.url : u.licence.terms_url,
        terms_url: ruling?.terms_url || u.licence.terms_url,
        conditions: ruling?.conditions ?? '',
      };
    });
  }

  private paidDraw(d: DrawRecord, cached: readonly CachedUnit[]): PaidDraw {
    const stored = d.draw as StoredDraw;
    const units = cached.map((u) => u.unit);
    const paid: PaidDraw = {
      units,
      attribution: this.attribution(d.product_id ?? '', units),
      // Built from the stored draw record only, so a replay signs the same bytes (Ed25519 is deterministic).
      receipt: this.o.receipts.sign({
        type: 'draw' as const,
        draw_id: d.draw_id,
        quote_id: d.quote_id,
        product_id: d.product_id ?? '',
        unit_count: stored.refs.length,
        units_sha256: stored.units_sha256,
        amount: formatCents(d.amount_cents),
        currency: CURRENCY as 'EUR',
        balance_after: formatCents(d.balance_after_cents),
        catalogue_version: stored.catalogue_version,
        paid_at: d.at,
      }),
    };
    unitTexts.set(paid, cached);
    return paid;
  }

  /** A replay: the draw as first delivered, re-read from the store by its recorded refs. */
  private async fromRecord(d: DrawRecord, tokenHash: string, r: Resolved): Promise<PaidDraw> {
    if (!hashesEqual(d.token_hash, tokenHash)) throw await this.notThisBalance(tokenHash);
    const stored = d.draw as StoredDraw;
    const got = await this.units.getUnits(r.product.product_id, stored.refs);
    if (got.unknown.length || unitsSha256(got.units) !== stored.units_sha256) {
      // The store was rebuilt since the draw: the receipt still describes what was delivered then.
      this.o.logger?.warn({ draw: d.draw_id }, 'replayed draw: the unit store changed since delivery; returning the current versions');
    }
    return this.paidDraw(d, got.units);
  }

  /**
   * The quote was paid from a balance other than this token's: 409 for a real balance, but 401 for
   * a token that names no balance at all (the ledger checks the quote claim before the balance).
   */
  private async notThisBalance(tokenHash: string): Promise<Problem> {
    return (await this.o.ledger.getBalance(tokenHash)) ? problems.otherBalance() : problems.invalidToken();
  }

  /** The draw that paid a quote, if any (pending or durable). */
  private findDraw(quoteId: string): Promise<DrawRecord | null> {
    return this.o.ledger.findDrawByQuote(quoteId);
  }

}
