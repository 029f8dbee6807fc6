// A bounded LRU of delivered units in front of the unit store. The store is immutable per
// store_version (a rebuild writes a new directory; the service opens one at start), so a cached
// unit can never be stale. Each entry keeps the unit as delivered and its RFC 8785 canonical JSON,
// so the receipt's units_sha256 costs one hash over cached strings instead of re-canonicalising
// every unit on every paid draw.
import canonicalizeModule from 'canonicalize';
import type { Unit, UnitStoreReader } from '../contract/store-format.ts';
import type { DeliveredUnit } from './draw-service.ts';

const canonicalize = canonicalizeModule as unknown as (v: unknown) => string;

export interface CachedUnit {
  unit: DeliveredUnit;
  canonical: string;
}

export class UnitCache {
  private readonly units = new Map<string, CachedUnit>();
  private readonly searches = new Map<string, string[]>();

  constructor(
    private readonly store: UnitStoreReader,
    private readonly deliver: (u: Unit) => DeliveredUnit,
    private readonly maxUnits = 5000,
    private readonly maxSearches = 1000,
  ) {}

  private remember<V>(map: Map<string, V>, key: string, value: V, max: number): void {
    map.set(key, value);
    if (map.size > max) map.delete(map.keys().next().value as string); // oldest first: Map keeps insertion order
  }

  private hit<V>(map: Map<string, V>, key: string): V | undefined {
    const v = map.get(key);
    if (v !== undefined) {
      map.delete(key); // move to the young end
      map.set(key, v);
    }
    return v;
  }

  private entry(productId: string, u: Unit): CachedUnit {
    const unit = this.deliver(u);
    const e = { unit, canonical: canonicalize(unit) };
    this.remember(this.units, `${productId}\n${u.ref}`, e, this.maxUnits);
    return e;
  }

  /** Units by reference within a product, in request order, plus the references not in it. */
  async getUnits(productId: string, refs: string[]): Promise<{ units: CachedUnit[]; unknown: string[] }> {
    const found = new Map<string, CachedUnit>();
    const missing: string[] = [];
    for (const r of refs) {
      const e = this.hit(this.units, `${productId}\n${r}`);
      if (e) found.set(r, e);
      else missing.push(r);
    }
    let unknown: string[] = [];
    if (missing.length) {
      const got = await this.store.getUnits(productId, missing);
      unknown = got.unknown;
      for (const u of got.units) found.set(u.ref, this.entry(productId, u));
    }
    return { units: refs.flatMap((r) => found.get(r) ?? []), unknown };
  }

  /** BM25 search; a repeated (product, query, limit) is answered from the cached ranking. */
  async search(productId: string, query: string, limit: number): Promise<CachedUnit[]> {
    const key = `${productId}\n${limit}\n${query}`;
    const refs = this.hit(this.searches, key);
    if (refs) {
      const got = await this.getUnits(productId, refs);
      if (got.unknown.length === 0) return got.units;
    }
    const units = await this.store.search(productId, query, limit);
    this.remember(this.searches, key, units.map((u) => u.ref), this.maxSearches);
    return units.map((u) => this.hit(this.units, `${productId}\n${u.ref}`) ?? this.entry(productId, u));
  }
}

/** SHA-256 input of a delivered unit list: exactly canonicalize(units) for an array of cached units. */
export function canonicalArray(units: readonly CachedUnit[]): string {
  return `[${units.map((u) => u.canonical).join(',')}]`;
}
