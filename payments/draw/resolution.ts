// What a draw request's units come to, and what they cost: a pure function of (product, request,
// unit store), which is immutable per store version, so it is remembered. A paid draw repeats its
// quote's request exactly, so the payment finds what the quote resolved; repeated quotes of the
// same units or query cost a look-up instead of a store read, two digests and the JSON of the
// lists. A remembered resolution is shared by every quote of that request: frozen.
import { drawPriceCents, formatMicros } from '../../contract/money.ts';
import type { Quote } from '../../contract/wire.ts';
import type { LoggerLike } from '../ledger/ledger.ts';
import { Lru, type CachedUnit, type UnitCache } from '../store/unit-cache.ts';
import { problems } from './problems.ts';
import { canonicalUnits, digest, requestDigest, unitsDigests, type QuoteMode } from './quote.ts';
import type { CheckedRequest } from './request.ts';
import type { QuoteTextParts } from './serialise.ts';

export interface Resolution extends QuoteTextParts {
  readonly units: readonly CachedUnit[];
  readonly resolvedRefs: readonly string[];
  /** What the payer must repeat (the quote's mode and request digest) and the digest of the sorted resolved refs. */
  readonly mode: QuoteMode;
  readonly requestDigest: string;
  readonly unitsDigest: string;
  readonly breakdown: Quote['breakdown'];
  /** The price of the units, in cents. */
  readonly cents: number;
  /** units_sha256 of the receipt, made by the first paid draw. */
  sha256?: string;
}

export class UnitResolver {
  private readonly memo: Lru<Resolution>;

  /**
   * `served`: per product, the sources that may be served (ruled, not held, with a unit kind).
   * `memoUnits`: how many units the remembered resolutions may hold (as many as the unit cache, so
   * the memo never keeps more than about twice the unit cache's units alive).
   */
  constructor(
    private readonly units: UnitCache,
    private readonly served: ReadonlyMap<string, ReadonlySet<string>>,
    private readonly defaultLimit: number,
    memoUnits: number,
    private readonly logger?: LoggerLike,
  ) {
    this.memo = new Lru(memoUnits, (r) => Math.max(1, r.units.length));
  }

  /**
   * The request's units, digests and the JSON of its lists, remembered per (product, request) for
   * this store version. Refusals (unknown units, no match) are not remembered.
   */
  async resolve(r: CheckedRequest): Promise<Resolution> {
    const key = r.units ? `u\n${r.product.product_id}\n${JSON.stringify(r.units)}` : `q\n${r.product.product_id}\n${r.limit}\n${r.query}`;
    const known = this.memo.get(key);
    if (known) return known;
    const units = await this.fetch(r);
    const resolvedRefs = units.map((u) => u.unit.ref);
    const bound = this.requestDigest(r);
    const want = r.units;
    // A unit list resolved to itself (request order, already de-duplicated): its sorted digest was made with the request digest.
    const unitsDigest = want && r.digests && resolvedRefs.length === want.length && resolvedRefs.every((ref, i) => ref === want[i]) ? r.digests.units : digest(canonicalUnits(resolvedRefs));
    const rate = r.product.pricing.draw_unit_price_micro_eur;
    const bySource = new Map<string, number>();
    for (const { unit: u } of units) bySource.set(u.source, (bySource.get(u.source) ?? 0) + 1);
    const breakdown = [...bySource].map(([source, n]) => Object.freeze({ source, unit_count: n, unit_price: formatMicros(rate), amount: formatMicros(n * rate) }));
    const resolution: Resolution = {
      units: Object.freeze(units),
      resolvedRefs: Object.freeze(resolvedRefs),
      mode: bound.mode,
      requestDigest: bound.digest,
      unitsDigest,
      breakdown: Object.freeze(breakdown) as Quote['breakdown'],
      cents: drawPriceCents(units.length, rate),
      requestJson: want ? `"units":${JSON.stringify(want)}` : `"query":${JSON.stringify(r.query)},"limit":${JSON.stringify(r.limit)}`,
      resolvedJson: JSON.stringify(resolvedRefs),
      breakdownJson: JSON.stringify(breakdown),
    };
    this.memo.set(key, resolution);
    return resolution;
  }

  /**
   * The request digest a quote binds. A unit-list request also keeps the digest of its (sorted,
   * unique) units on the checked request: its resolved units are that same set, so the quote's
   * units digest comes from the same sort (see resolve).
   */
  requestDigest(r: CheckedRequest): { mode: QuoteMode; digest: string } {
    if (r.units) {
      r.digests ??= unitsDigests(r.units);
      return { mode: 'u', digest: r.digests.request };
    }
    return requestDigest({ product_id: r.product.product_id, query: r.query, limit: r.limit }, this.defaultLimit);
  }

  /** The units of `refs` as the store holds them now (a replay re-reads what a draw delivered). */
  unitsByRef(productId: string, refs: readonly string[]): Promise<{ units: CachedUnit[]; unknown: string[] }> {
    return this.units.getUnits(productId, refs);
  }

  /** The units from the store: the named ones (all must exist) or the query's matches (at least one). */
  private async fetch(r: CheckedRequest): Promise<CachedUnit[]> {
    const id = r.product.product_id;
    let units: CachedUnit[];
    if (r.units) {
      const got = await this.units.getUnits(id, r.units);
      if (got.unknown.length) throw problems.unknownUnits(id, got.unknown);
      units = got.units;
    } else {
      units = await this.units.search(id, r.query, r.limit);
      if (units.length === 0) throw problems.noMatch(id);
    }
    // The store never holds held sources; if it ever did, refuse to sell them rather than trust it.
    const served = this.served.get(id);
    if (!served) throw new Error(`no served sources known for product ${id}: the resolver was built from another catalogue`);
    const leaked = units.filter(({ unit: u }) => !served.has(u.source) || !u.ref.startsWith(`${u.source}:`));
    if (leaked.length) {
      this.logger?.error({ product: id, refs: leaked.map((u) => u.unit.ref).slice(0, 10) }, 'unit store returned units of a held or foreign source; refused');
      if (r.units) throw problems.unknownUnits(id, leaked.map((u) => u.unit.ref));
      units = units.filter((u) => !leaked.includes(u));
      if (units.length === 0) throw problems.noMatch(id);
    }
    return units;
  }
}
