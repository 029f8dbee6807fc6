// The DrawService (service.ts) over the unit store and the ledger. HTTP, MCP and A2A all call
// this, so every check that protects money lives here, not in a transport: bounds, the product,
// the currency, the quote's signature and binding, expiry, held sources, exactly-once. Its parts:
// request.ts checks a request, resolution.ts finds and prices its units, quote.ts signs the quote,
// binding.ts checks that a payment repeats it, delivery.ts builds what a paid draw delivers,
// statement.ts pages the statement, serialise.ts writes the bytes, problems.ts the refusals.
//
// Pay order matters: the quote is verified and bound to the request before anything else; an
// expired quote is first checked for an existing draw (so a paid quote replays forever) and only
// then answered with a fresh quote; the debit, draw record and ledger entries go in one synced
// batch inside the ledger (which also decides replay / other balance / insufficient).
import type { CatalogueDoc, CatalogueProduct } from '../../contract/catalogue.ts';
import { TOPUP_MINIMUM_CENTS, type DrawBounds } from '../../contract/limits.ts';
import { CURRENCY, formatCents } from '../../contract/money.ts';
import type { UnitStoreReader } from '../../contract/store-format.ts';
import type { BalanceView, DrawRequest, PaidDraw, PayRequest, Quote, RotatedToken } from '../../contract/wire.ts';
import type { DrawRecord, Ledger, LoggerLike } from '../ledger/ledger.ts';
import type { Problem } from '../problem.ts';
import type { ReceiptSigner } from '../receipts.ts';
import { UnitCache } from '../store/unit-cache.ts';
import { hashToken, hashesEqual, isWellFormedToken, newBalanceToken, tokenHint } from '../tokens.ts';
import { checkBinding } from './binding.ts';
import { deliver, paidDraw, type StoredDraw } from './delivery.ts';
import { problems } from './problems.ts';
import { QuoteSigner, type QuoteTerms } from './quote.ts';
import { checkDrawRequest, type CheckedRequest } from './request.ts';
import { UnitResolver, type Resolution } from './resolution.ts';
import { QuoteWriter, unitsSha256 } from './serialise.ts';
import type { DrawService } from './service.ts';
import { checkStatementPage, statementView, type StatementPage } from './statement.ts';

/**
 * How a service with several releases open (payments/release/releases.ts) pays a quote made
 * against another unit store version or another catalogue than this service's own.
 */
export interface OtherVersions {
  /**
   * The payer of the release that made a quote of these terms (a previous one kept for its
   * quotes): the one holding both its store and catalogue versions, else the newest holding its
   * store version, else null. The payer pays there (StoreDrawService.payHere), never routing again.
   */
  payerFor(terms: QuoteTerms): ((req: PayRequest, balanceToken: string) => Promise<PaidDraw>) | null;
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

export class StoreDrawService implements DrawService {
  readonly drawUrl: string;
  readonly topupUrl: string;
  private readonly products: Map<string, CatalogueProduct>;
  private readonly storeVersion: string;
  private readonly now: () => number;
  private readonly signer: QuoteSigner;
  private readonly resolver: UnitResolver;
  private readonly quoteWriter: QuoteWriter;

  constructor(private readonly options: DrawServiceOptions) {
    const { catalogue } = options;
    this.products = new Map(catalogue.products.map((p) => [p.product_id, p]));
    this.storeVersion = options.store.meta.store_version;
    this.now = options.now ?? Date.now;
    this.signer = new QuoteSigner(options.quoteSecret);
    this.drawUrl = `${catalogue.base_url}/lds/draw`;
    this.topupUrl = `${catalogue.base_url}/lds/balance/topup`;
    // Per product, the sources that may be served: ruled, not held, with a unit kind.
    const served = new Map(
      catalogue.products.map((p) => {
        const held = new Set(p.licence_basis.filter((l) => l.verdict === 'held').map((l) => l.source));
        return [p.product_id, new Set(p.unit_definition.map((u) => u.source).filter((s) => !held.has(s)))];
      }),
    );
    const cacheSize = options.unitCacheSize ?? 5000;
    this.resolver = new UnitResolver(new UnitCache(options.store, deliver, cacheSize), served, options.bounds.defaultLimit, cacheSize, options.logger);
    this.quoteWriter = new QuoteWriter(CURRENCY, catalogue.version, this.topupUrl, (payable, expires) => this.howToPay(payable, expires));
  }

  catalogue(): CatalogueDoc {
    return this.options.catalogue;
  }

  // ---------------------------------------------------------------- quote

  async quote(req: DrawRequest, balanceToken?: string): Promise<Quote> {
    const request = this.check(req);
    const quote = await this.makeQuote(request, await this.resolver.resolve(request), balanceToken);
    this.options.onQuote?.(quote.product_id);
    return quote;
  }

  // ---------------------------------------------------------------- pay

  pay(req: PayRequest, balanceToken: string): Promise<PaidDraw> {
    return this.payWith(req, balanceToken, true);
  }

  /** Pays with this release's catalogue and store, the quote having been routed here (OtherVersions.payerFor). */
  payHere(req: PayRequest, balanceToken: string): Promise<PaidDraw> {
    return this.payWith(req, balanceToken, false);
  }

  private async payWith(req: PayRequest, balanceToken: string, route: boolean): Promise<PaidDraw> {
    if (!balanceToken) throw problems.tokenRequired();
    if (!isWellFormedToken(balanceToken)) throw problems.invalidToken();
    // The quote's terms, read once. An unexpired quote of a release this process still holds
    // (kept for its quotes after a switch to a new build, even one with the same store) is paid
    // there, before anything is checked against this release: with that release's catalogue and
    // store, at the quoted price.
    const signed = typeof req?.quote_id === 'string' ? this.signer.verify(req.quote_id) : null;
    if (route && signed && signed.expiresAt > this.now() && (signed.storeVersion !== this.storeVersion || (signed.catalogueVersion !== undefined && signed.catalogueVersion !== this.options.catalogue.version))) {
      const payer = this.options.otherVersions?.payerFor(signed);
      if (payer) return payer(req, balanceToken);
    }
    const request = this.check(req);
    const terms = checkBinding(req.quote_id, signed, request, this.resolver, this.options.bounds);
    if (terms.expiresAt <= this.now() || terms.storeVersion !== this.storeVersion) return this.payStale(req.quote_id, terms, request, balanceToken);
    const resolution = await this.resolver.resolve(request);
    // Same store version, different result: cannot happen for an honest quote; offer a fresh one.
    if (resolution.unitsDigest !== terms.unitsDigest) throw problems.expired(await this.makeQuote(request, resolution, balanceToken));
    return this.debit(req.quote_id, terms, request, resolution, balanceToken);
  }

  /**
   * A quote that expired, or was made against a unit store this service does not hold. A paid
   * quote stays paid: its draw is replayed (or another balance refused) before anything else;
   * an unpaid one of a store another release may hold is a retry, never other units or another
   * price; an expired one gets a fresh quote.
   */
  private async payStale(quoteId: string, terms: QuoteTerms, request: CheckedRequest, balanceToken: string): Promise<PaidDraw> {
    const balanceId = await this.balanceIdOf(balanceToken);
    const prior = await this.options.ledger.findDrawByQuote(quoteId);
    if (prior) return this.replay(prior, balanceId, request);
    if (terms.expiresAt > this.now() && this.options.otherVersions) throw this.options.otherVersions.missing(terms.storeVersion, terms.expiresAt);
    throw problems.expired(await this.makeQuote(request, await this.resolver.resolve(request), balanceToken));
  }

  /** The debit, draw record and ledger entries in one synced batch; the ledger decides the outcome. */
  private async debit(quoteId: string, terms: QuoteTerms, request: CheckedRequest, resolution: Resolution, balanceToken: string): Promise<PaidDraw> {
    const { units } = resolution;
    resolution.sha256 ??= unitsSha256(units);
    // The receipt names the catalogue the quote was made on, whichever release pays it.
    const stored: StoredDraw = { refs: [...resolution.resolvedRefs], units_sha256: resolution.sha256, catalogue_version: terms.catalogueVersion ?? this.options.catalogue.version, store_version: terms.storeVersion };
    // The presented token's hash: the ledger resolves it to its balance (a rotated-in token names
    // its balance's first token hash; a rotated-away or revoked one none) in the debit itself.
    const debit = await this.options.ledger.debitDraw(hashToken(balanceToken), { quoteId, amountCents: terms.amountCents, currency: terms.currency, productId: terms.productId, draw: stored });
    switch (debit.kind) {
      case 'ok':
        this.options.logger?.info({ draw: debit.draw.draw_id, product: terms.productId, units: units.length, amount_cents: terms.amountCents, balance: tokenHint(debit.draw.token_hash) }, 'draw paid');
        return paidDraw(debit.draw, request.product, this.options.catalogue, units, this.options.receipts);
      case 'replay':
        return this.replay(debit.draw, debit.draw.token_hash, request);
      case 'revoked':
        throw problems.revokedToken();
      case 'other_balance':
        throw await this.notThisBalance(await this.balanceIdOf(balanceToken));
      case 'insufficient':
        throw problems.insufficient(this.quoteView(request, resolution, quoteId, terms, false), terms.amountCents, debit.balanceCents, this.topupUrl);
      case 'unknown_balance':
        throw problems.invalidToken();
      case 'currency_mismatch':
        throw problems.currency(terms.currency);
    }
  }

  /** A replay: the draw as first delivered, re-read from the store by its recorded refs. */
  private async replay(record: DrawRecord, balanceId: string, request: CheckedRequest): Promise<PaidDraw> {
    if (!hashesEqual(record.token_hash, balanceId)) throw await this.notThisBalance(balanceId);
    const stored = record.draw as StoredDraw;
    const got = await this.resolver.unitsByRef(request.product.product_id, stored.refs);
    if (got.unknown.length || unitsSha256(got.units) !== stored.units_sha256) {
      // The store was rebuilt since the draw: the receipt still describes what was delivered then.
      this.options.logger?.warn({ draw: record.draw_id }, 'replayed draw: the unit store changed since delivery; returning the current versions');
    }
    return paidDraw(record, request.product, this.options.catalogue, got.units, this.options.receipts);
  }

  /**
   * The quote was paid from a balance other than this token's: 409 for a real balance, but 401 for
   * a token that names no balance at all (the ledger checks the quote claim before the balance).
   */
  private async notThisBalance(balanceId: string): Promise<Problem> {
    return (await this.options.ledger.getBalance(balanceId)) ? problems.otherBalance() : problems.invalidToken();
  }

  // ---------------------------------------------------------------- balance

  async balance(balanceToken: string, page: StatementPage = {}): Promise<BalanceView> {
    if (!balanceToken) throw problems.tokenRequired();
    if (!isWellFormedToken(balanceToken)) throw problems.invalidToken();
    const held = await this.options.ledger.tokenBalance(hashToken(balanceToken));
    if (held.kind === 'revoked') throw problems.revokedToken();
    const { limit, before } = checkStatementPage(page);
    if (!held.info) throw problems.invalidToken();
    // One line more than asked tells whether another page exists.
    return statementView(held.info.cents, await this.options.ledger.statement(held.balance, limit + 1, before), limit);
  }

  /**
   * The balance id a balance token names (401 problems for none, a malformed, unknown, rotated or
   * revoked one). Read from the ledger on every call, so a rotation or revocation on any instance
   * takes effect at once.
   */
  async balanceIdOf(balanceToken: string): Promise<string> {
    if (!balanceToken) throw problems.tokenRequired();
    if (!isWellFormedToken(balanceToken)) throw problems.invalidToken();
    const resolved = await this.options.ledger.resolveToken(hashToken(balanceToken));
    if (resolved.kind === 'revoked') throw problems.revokedToken();
    return resolved.balance;
  }

  /**
   * Replaces a balance token with a new one (the buyer's `POST /v1/lds/balance/token`): the new
   * token is shown once, here; the old one stops working at once on every instance (the change is
   * in the ledger). Two concurrent rotations of one token: one wins, the other gets a 401.
   */
  async rotateToken(balanceToken: string): Promise<RotatedToken> {
    const balanceId = await this.balanceIdOf(balanceToken);
    const fresh = newBalanceToken();
    const rotated = await this.options.ledger.rotateToken(hashToken(balanceToken), fresh.hash);
    if (rotated.kind === 'revoked') throw problems.revokedToken();
    if (rotated.kind === 'unknown') throw problems.invalidToken();
    const balance = await this.options.ledger.getBalance(balanceId);
    this.options.logger?.info({ balance: tokenHint(balanceId) }, 'balance token rotated');
    return { balance_token: fresh.token, balance: formatCents(balance?.cents ?? 0), currency: CURRENCY };
  }

  /** Balance in cents for a token, or null (unknown, malformed or revoked token). Used for the 402 Link decision. */
  async balanceCents(balanceToken: string | undefined): Promise<number | null> {
    if (!balanceToken || !isWellFormedToken(balanceToken)) return null;
    // One ledger read (on PostgreSQL one statement): the token resolved and its balance.
    const held = await this.options.ledger.tokenBalance(hashToken(balanceToken));
    return held.kind === 'revoked' ? null : (held.info?.cents ?? null);
  }

  // ---------------------------------------------------------------- quotes

  private check(req: DrawRequest): CheckedRequest {
    return checkDrawRequest(req, this.products, this.options.bounds, this.options.catalogue.base_url);
  }

  private async makeQuote(request: CheckedRequest, resolution: Resolution, balanceToken?: string): Promise<Quote> {
    const terms: QuoteTerms = {
      productId: request.product.product_id,
      mode: resolution.mode,
      requestDigest: resolution.requestDigest,
      unitsDigest: resolution.unitsDigest,
      unitCount: resolution.units.length,
      amountCents: resolution.cents,
      currency: CURRENCY,
      storeVersion: this.storeVersion,
      catalogueVersion: this.options.catalogue.version,
      expiresAt: this.now() + this.options.quoteTtlSeconds * 1000,
    };
    const balance = await this.balanceCents(balanceToken);
    return this.quoteView(request, resolution, this.signer.sign(terms), terms, balance !== null && balance >= resolution.cents);
  }

  /** The quote as sent (its text written with it, serialise.ts), for a new quote_id or one being paid. */
  private quoteView(request: CheckedRequest, resolution: Resolution, quoteId: string, terms: QuoteTerms, payable: boolean): Quote {
    const fields = request.units ? { units: request.units } : { query: request.query, limit: request.limit };
    const expires = new Date(terms.expiresAt).toISOString();
    const product_id = request.product.product_id;
    const quote: Quote = {
      quote_id: quoteId,
      product_id,
      ...fields,
      resolved_units: resolution.resolvedRefs as string[],
      unit_count: resolution.units.length,
      amount: formatCents(terms.amountCents),
      currency: CURRENCY,
      expires_at: expires,
      breakdown: resolution.breakdown,
      store_version: terms.storeVersion,
      catalogue_version: terms.catalogueVersion ?? this.options.catalogue.version,
      payable_from_balance: payable,
      how_to_pay: this.howToPay(payable, expires),
      pay_with: { product_id, currency: CURRENCY, ...fields, quote_id: quoteId },
      topup_url: this.topupUrl,
    };
    this.quoteWriter.write(quote, resolution);
    return quote;
  }

  private howToPay(payable: boolean, expires: string): string {
    return payable
      ? `Your balance covers this quote: repeat the request with "quote_id" and Authorization: Bearer <BALANCE_TOKEN> (POST ${this.drawUrl}) before ${expires}.`
      : `Top up a prepaid balance (minimum ${formatCents(TOPUP_MINIMUM_CENTS)} ${CURRENCY}) with POST ${this.topupUrl} (Machine Payments Protocol, Stripe Shared Payment Token), then repeat this request with "quote_id" and Authorization: Bearer <BALANCE_TOKEN> before ${expires}.`;
  }
}
