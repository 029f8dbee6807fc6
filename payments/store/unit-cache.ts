// A bounded LRU of delivered units in front of the unit store. The store is immutable per
// store_version (a rebuild writes a new directory; the service opens one at start), so a cached
// unit can never be stale. Each entry keeps the unit as delivered and its RFC 8785 canonical JSON,
// so the receipt's units_sha256 costs one hash over cached strings instead of re-canonicalising
// every unit on every paid draw.
import canonicalizeModule from 'canonicalize';
import type { Unit, UnitStoreReader } from '../../contract/store-format.ts';
import type { DeliveredUnit } from '../draw/service.ts';

const canonicalize = canonicalizeModule as unknown as (v: unknown) => string;

export interface CachedUnit {
  unit: DeliveredUnit;
  canonical: string;
  /** JSON.stringify(unit): the unit as it appears in a paid draw's answer (see paidDrawJson). */
  json: string;
  /**
   * UTF-8 of `canonical` and of `json`, made on first use by a paid draw (unitBytes): hashing and
   * sending a 40 KB draw from per-unit bytes skips joining the strings and encoding them again on
   * every draw (measured: ~260 µs -> ~100 µs for the hash of 10 units).
   */
  canonicalBytes?: Buffer;
  jsonBytes?: Buffer;
}

/** The UTF-8 bytes of a cached unit's canonical JSON and answer JSON (made once, then kept with it). */
export function unitBytes(u: CachedUnit): { canonical: Buffer; json: Buffer } {
  const canonical = (u.canonicalBytes ??= Buffer.from(u.canonical, 'utf8'));
  const json = (u.jsonBytes ??= u.json === u.canonical ? canonical : Buffer.from(u.json, 'utf8'));
  return { canonical, json };
}

/** A map entry with the tick at which it last moved to the young end, and its weight. */
interface Slot<V> {
  value: V;
  tick: number;
  weight: number;
}

/**
 * An LRU on a Map (insertion order = age), bounded by the total weight of its entries (1 each
 * unless `weigh` says otherwise). A hit moves the entry to the young end only when it has aged by
 * more than half the capacity since its last move: an entry used within the last max/2 moves has
 * at least max/2 entries behind it, so it cannot be the next evicted, and hot entries cost a Map
 * lookup instead of a delete and a re-insert on every hit.
 */
export class Lru<V> {
  private readonly map = new Map<string, Slot<V>>();
  private tick = 0;
  private total = 0;
  constructor(
    private readonly max: number,
    private readonly weigh: (v: V) => number = () => 1,
  ) {}

  get(key: string): V | undefined {
    const s = this.map.get(key);
    if (s === undefined) return undefined;
    if (this.tick - s.tick > this.max >> 1) {
      this.map.delete(key); // move to the young end
      this.map.set(key, s);
      s.tick = ++this.tick;
    }
    return s.value;
  }

  set(key: string, value: V): void {
    const old = this.map.get(key);
    if (old) {
      this.map.delete(key);
      this.total -= old.weight;
    }
    const weight = this.weigh(value);
    this.map.set(key, { value, tick: ++this.tick, weight });
    this.total += weight;
    // Oldest first, but never the entry just added.
    while (this.total > this.max && this.map.size > 1) {
      const [k, s] = this.map.entries().next().value as [string, Slot<V>];
      this.map.delete(k);
      this.total -= s.weight;
    }
  }

  get size(): number {
    return this.map.size;
  }
}

export class UnitCache {
  private readonly units: Lru<CachedUnit>;
  private readonly searches: Lru<string[]>;

  constructor(
    private readonly store: UnitStoreReader,
    private readonly deliver: (u: Unit) => DeliveredUnit,
    maxUnits = 5000,
    maxSearches = 1000,
  ) {
    this.units = new Lru(maxUnits);
    this.searches = new Lru(maxSearches);
  }

  private entry(productId: string, u: Unit): CachedUnit {
    const unit = this.deliver(u);
    const canonical = canonicalize(unit);
    const json = JSON.stringify(unit);
    const e = { unit, canonical, json: json === canonical ? canonical : json };
    this.units.set(`${productId}\n${u.ref}`, e);
    return e;
  }

  /** Units by reference within a product, in request order, plus the references not in it. */
  async getUnits(productId: string, refs: readonly string[]): Promise<{ units: CachedUnit[]; unknown: string[] }> {
    // Fast path: every reference cached (the common case for a hot set) needs no map of results.
    const hits: CachedUnit[] = [];
    let i = 0;
    for (; i < refs.length; i++) {
      const e = this.units.get(`${productId}\n${refs[i]}`);
      if (e === undefined) break;
      hits.push(e);
    }
    if (i === refs.length) return { units: hits, unknown: [] };
    const found = new Map<string, CachedUnit>();
    const missing: string[] = [];
    for (let j = 0; j < i; j++) found.set(refs[j], hits[j]);
    for (; i < refs.length; i++) {
      const r = refs[i];
      const e = this.units.get(`${productId}\n${r}`);
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
    const refs = this.searches.get(key);
    if (refs) {
      const got = await this.getUnits(productId, refs);
      if (got.unknown.length === 0) return got.units;
    }
    const units = await this.store.search(productId, query, limit);
    this.searches.set(key, units.map((u) => u.ref));
    return units.map((u) => this.units.get(`${productId}\n${u.ref}`) ?? this.entry(productId, u));
  }
}

/** SHA-256 input of a delivered unit list: exactly canonicalize(units) for an array of cached units. */
export function canonicalArray(units: readonly CachedUnit[]): string {
  return `[${units.map((u) => u.canonical).join(',')}]`;
}
