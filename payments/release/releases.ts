// Following the published build without a restart. A release is what one build published for the
// service: the unit store CURRENT names and the dist/ built against it (catalogue, OpenAPI document,
// every static document). The service serves one release for new quotes and keeps each previous one
// open until the last quote it issued has expired, so a quote is always paid with the store and
// catalogue it was made against, at its quoted price (the quote names its store and catalogue
// versions: `s` and `g` in its HMAC payload, payments/draw/quote.ts), and its receipt names that catalogue.
//
// When to look: on a change in the store root or in dist/'s parent folder (fs.watch), every
// LDS_RELEASE_CHECK_MS (watch events can be missed: network file systems, renames from another
// mount), on SIGHUP, and when a buyer pays a quote of a store version not held here. A build
// switches CURRENT before it swaps dist/ in (generator/build.ts), so a new CURRENT is served only
// once dist/'s catalogue names the same store version; until then the current release keeps serving.
// A store that does not open, a dist/ that does not load, or a dist/ built for other addresses than
// the served ones (own-addresses.ts: a local build for another port would send this service's buyers
// there) is refused (logged, counted in lds_release_refused_total) and not tried again until
// CURRENT or dist/ changes again or SIGHUP; a new CURRENT beside a dist/ refused for itself is the
// next build under way (its dist/ comes last) and waits for that dist/, uncounted.
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename, dirname } from 'node:path';
import type { Logger } from 'pino';
import type { CatalogueDoc } from '../../contract/catalogue.ts';
import { CURRENT_FILE, type UnitStoreReader } from '../../contract/store-format.ts';
import { readCurrentVersion } from '../../contract/store-current.ts';
import type { OtherVersions, StoreDrawService } from '../draw/store-service.ts';
import { problems } from '../draw/problems.ts';
import { createRequestValidator, type RequestValidator } from '../http/openapi-validate.ts';
import { loadStaticSite, type StaticSite } from '../http/static.ts';
import type { Metrics, ReleaseRefusal } from '../metrics.ts';
import { LiveDrawService } from './live-service.ts';
import { otherAddresses } from './own-addresses.ts';
import type { Release } from './release.ts';

export type { Release } from './release.ts';
import { StorePool } from './store-pool.ts';

export interface ReleaseSetOptions {
  distDir: string;
  storeRoot: string;
  logger: Logger;
  metrics: Metrics;
  openStore: (root: string, version?: string) => Promise<UnitStoreReader>;
  /** The draw service of a release; `otherVersions` lets it pay quotes of the releases kept open. */
  makeService: (r: { catalogue: CatalogueDoc; store: UnitStoreReader; validator: RequestValidator; otherVersions: OtherVersions }) => StoreDrawService;
  quoteTtlSeconds: number;
  /** 0: no periodic check and no watch (SIGHUP or check() only). */
  checkIntervalMs: number;
  now?: () => number;
}

export type CheckOutcome = 'unchanged' | 'switched' | 'waiting' | 'refused';

/** The whole of dist/ loaded: the site, its catalogue and the request validator of its OpenAPI document. */
export async function loadDist(distDir: string): Promise<{ site: StaticSite; catalogue: CatalogueDoc; validator: RequestValidator; basePath: string }> {
  const site = await loadStaticSite(distDir);
  const catalogPath = [...site.entries.keys()].find((p) => p.endsWith('/lds/_catalog'));
  if (!catalogPath) throw new Error(`${distDir} has no catalogue (…/lds/_catalog): build first (npm run build)`);
  const catalogue = site.json(catalogPath) as CatalogueDoc;
  const basePath = new URL(catalogue.base_url).pathname.replace(/\/$/, '');
  const validator = createRequestValidator(site.json(`${basePath}/specification`));
  return { site, catalogue, validator, basePath };
}

/** dist/'s identity: a build renames a new folder into place, so inode and mtime change with each build. */
async function distIdentity(distDir: string): Promise<string | null> {
  try {
    const s = await stat(distDir);
    return `${s.ino}:${s.mtimeMs}`;
  } catch {
    return null; // between the two renames of a swap: look again later
  }
}

export class ReleaseSet {
  private current!: Release;
  /** Previous releases kept for their quotes, oldest first, each with when it may close. */
  private retiring: { release: Release; closeAt: number }[] = [];
  private readonly pool: StorePool;
  private readonly now: () => number;
  private readonly log: Logger;
  private checking: Promise<CheckOutcome> | null = null;
  private again: { force: boolean } | null = null;
  private refusedKey: string | null = null;
  /**
   * The dist/ of the last build refused for its dist/ (did not load, or built for other addresses).
   * A build switches CURRENT first and dist/ last: a new CURRENT beside this dist/ is the next build
   * under way (or a store published alone), not a second refused build (issue 50, item 14).
   */
  private refusedDist: string | null = null;
  private waitingKey: string | null = null;
  private watchers: FSWatcher[] = [];
  private timer: NodeJS.Timeout | null = null;
  private debounce: NodeJS.Timeout | null = null;
  private closed = false;
  /** What a pay of an unheld version is told: retry after about one check interval. */
  readonly retryAfterSeconds: number;
  /** The releases' draw services see the others through this. */
  private readonly otherVersions: OtherVersions;
  /** The draw service every transport calls: new quotes from the serving release, pays by the quote's store version. */
  readonly service: LiveDrawService;
  /** dist/ as the serving release has it (static documents). */
  readonly site: StaticSite;
  /** The serving release's OpenAPI request validator. */
  readonly validator: RequestValidator;

  constructor(private readonly o: ReleaseSetOptions) {
    this.pool = new StorePool(o.storeRoot, o.openStore);
    this.now = o.now ?? Date.now;
    this.log = o.logger;
    this.retryAfterSeconds = Math.max(1, Math.ceil((o.checkIntervalMs || 2000) / 1000));
    this.otherVersions = {
      payerFor: (terms) => {
        const r = this.holding(terms.storeVersion, terms.catalogueVersion);
        if (!r) return null;
        return (req, token) => this.within(r, () => r.service.payHere(req, token));
      },
      missing: (version, expiresAt) => {
        // Another instance may have switched first: look for a new build now rather than at the next tick.
        void this.check().catch(() => {});
        return problems.storeUnavailable(version, expiresAt, this.retryAfterSeconds);
      },
    };
    const self = this;
    this.site = {
      get entries() {
        return self.current.site.entries;
      },
      json: (p) => self.current.site.json(p),
    };
    this.validator = {
      body: (id, b) => self.current.validator.body(id, b),
      params: (id, p) => self.current.validator.params(id, p),
      get bounds() {
        return self.current.validator.bounds;
      },
      get operations() {
        return self.current.validator.operations;
      },
      warm: () => self.current.validator.warm(),
    };
    this.service = new LiveDrawService(this);
  }

  /**
   * The release loaded at start (dist/ and the store CURRENT named, opened by the caller): a
   * catalogue built against another store is served, with a warning, as before.
   */
  async start(loaded: Awaited<ReturnType<typeof loadDist>>, store: UnitStoreReader, storeRoot: string): Promise<void> {
    const version = await readCurrentVersion(storeRoot);
    const dist = await distIdentity(this.o.distDir);
    const storeVersion = store.meta.store_version;
    this.pool.adopt(storeVersion, store);
    if (loaded.catalogue.store_version !== storeVersion) {
      this.log.warn({ catalogue_store: loaded.catalogue.store_version, store: storeVersion }, 'dist/ was built against another unit store version: counts in the catalogue may differ from what is sold');
    }
    this.current = this.makeRelease(loaded, store, `${version ?? storeVersion} ${dist}`);
    this.publishMetrics();
  }

  /** Starts watching for new builds (after the server listens). */
  watch(): void {
    if (this.o.checkIntervalMs <= 0 || this.closed) return;
    const poke = () => {
      if (this.debounce) return;
      // A build writes many files: look once things settle for a moment.
      this.debounce = setTimeout(() => {
        this.debounce = null;
        void this.check().catch(() => {});
      }, 100);
      this.debounce.unref();
    };
    for (const dir of new Set([this.o.storeRoot, dirname(this.o.distDir)])) {
      try {
        const w = watch(dir, { persistent: false }, (_event, name) => {
          const n = String(name ?? '');
          if (n === '' || n === CURRENT_FILE || n === basename(this.o.distDir)) poke();
        });
        w.on('error', () => w.close()); // the periodic check still runs
        this.watchers.push(w);
      } catch (err) {
        this.log.warn({ dir, err: (err as Error).message }, 'cannot watch for new builds; checking every interval only');
      }
    }
    this.timer = setInterval(() => void this.check().catch(() => {}), this.o.checkIntervalMs);
    this.timer.unref();
  }

  /** The serving release's versions (for /readyz and the logs). */
  versions(): { catalogue_version: string; store_version: string } {
    return { catalogue_version: this.current.catalogue.version, store_version: this.current.storeVersion };
  }

  serving(): Release {
    return this.current;
  }

  /** Versions of every open release, serving one first. */
  openVersions(): string[] {
    return [this.current.storeVersion, ...this.retiring.map((r) => r.release.storeVersion).reverse()];
  }

  /**
   * Looks for a newly published build and switches to it. One check at a time; a check asked for
   * while one runs runs once more after it. `force` (SIGHUP) also retries a build refused before.
   */
  check(force = false): Promise<CheckOutcome> {
    if (this.checking) {
      this.again = { force: force || !!this.again?.force };
      return this.checking;
    }
    const run = async (f: boolean): Promise<CheckOutcome> => {
      let outcome: CheckOutcome = 'unchanged';
      try {
        this.sweep();
        outcome = await this.checkOnce(f);
      } catch (err) {
        this.log.error({ err: (err as Error).message }, 'looking for a new build failed; still serving the current one');
      }
      this.o.metrics.releaseChecked(outcome);
      return outcome;
    };
    this.checking = run(force).finally(() => {
      this.checking = null;
      const next = this.again;
      this.again = null;
      if (next && !this.closed) void this.check(next.force);
    });
    return this.checking;
  }

  private async checkOnce(force: boolean): Promise<CheckOutcome> {
    if (this.closed) return 'unchanged';
    const version = await readCurrentVersion(this.o.storeRoot);
    const dist = await distIdentity(this.o.distDir);
    if (!version || !dist) return 'waiting';
    const key = `${version} ${dist}`;
    if (key === this.current.key) return 'unchanged';
    if (!force && key === this.refusedKey) return 'refused';
    if (!force && key === this.waitingKey) return 'waiting';
    if (!force && dist === this.refusedDist) {
      if (this.waitingKey !== key) {
        this.waitingKey = key;
        this.log.info({ store: version }, 'new unit store published beside the dist/ refused before; waiting for a new dist/ (still serving the current release)');
      }
      return 'waiting';
    }

    let store: UnitStoreReader;
    try {
      store = await this.pool.acquire(version);
    } catch (err) {
      return this.refuse(key, 'store', `unit store ${version} (named by ${CURRENT_FILE}) does not open`, err);
    }
    let loaded: Awaited<ReturnType<typeof loadDist>>;
    try {
      loaded = await loadDist(this.o.distDir);
    } catch (err) {
      await this.pool.release(version);
      return this.refuse(key, 'dist', `${this.o.distDir} does not load`, err, dist);
    }
    // Before pairing with a store: a build for other addresses is refused whatever store it names.
    const moved = otherAddresses(this.current.catalogue, loaded.catalogue, { distDir: this.o.distDir, storeRoot: this.o.storeRoot });
    if (moved) {
      await this.pool.release(version);
      return this.refuse(key, 'base_url', `the new build names other addresses than this service: ${moved}`, undefined, dist);
    }
    if (loaded.catalogue.store_version !== version) {
      await this.pool.release(version);
      if (this.waitingKey !== key) {
        this.waitingKey = key;
        this.log.info({ store: version, dist_store: loaded.catalogue.store_version, catalogue: loaded.catalogue.version }, 'new unit store published; waiting for the dist/ built against it (still serving the current release)');
      }
      return 'waiting';
    }
    const prev = this.current;
    if (loaded.catalogue.version === prev.catalogue.version && version === prev.storeVersion) {
      // The same build published again (copied anew): nothing to switch.
      await this.pool.release(version);
      prev.key = key;
      return 'unchanged';
    }
    const next = this.makeRelease(loaded, store, key);
    await next.validator.warm().catch(() => {}); // compile the request schemas before the first request needs them
    this.current = next;
    this.retiring.push({ release: prev, closeAt: this.now() + this.o.quoteTtlSeconds * 1000 + 1000 });
    // Closed by the periodic check, or by this when there is none (LDS_RELEASE_CHECK_MS=0).
    setTimeout(() => this.closed || this.sweep(), this.o.quoteTtlSeconds * 1000 + 1500).unref();
    this.refusedKey = null;
    this.refusedDist = null;
    this.waitingKey = null;
    this.o.metrics.releaseSwitched();
    this.publishMetrics();
    this.log.info(
      { catalogue: next.catalogue.version, store: version, previous_catalogue: prev.catalogue.version, previous_store: prev.storeVersion, previous_kept_s: this.o.quoteTtlSeconds },
      'serving a newly published build; the previous one stays open for its quotes',
    );
    return 'switched';
  }

  /** `dist`: the identity of the dist/ refused, when the refusal is about dist/ itself. */
  private refuse(key: string, reason: ReleaseRefusal, what: string, err?: unknown, dist?: string): CheckOutcome {
    this.refusedKey = key;
    this.refusedDist = dist ?? null;
    this.o.metrics.releaseRefused(reason);
    const cause = err === undefined ? undefined : (err as Error).message ?? String(err);
    this.log.error({ reason, cause, serving_catalogue: this.current.catalogue.version, serving_store: this.current.storeVersion }, `new build refused: ${what}; still serving the current release (fix the build and publish again, or send SIGHUP to retry)`);
    return 'refused';
  }

  private makeRelease(loaded: Awaited<ReturnType<typeof loadDist>>, store: UnitStoreReader, key: string): Release {
    const service = this.o.makeService({ catalogue: loaded.catalogue, store, validator: loaded.validator, otherVersions: this.otherVersions });
    return { catalogue: loaded.catalogue, site: loaded.site, validator: loaded.validator, store, service, storeVersion: store.meta.store_version, key, inFlight: 0 };
  }

  /** The newest open release of a store version, preferring one that also serves `catalogueVersion`. */
  private holding(version: string, catalogueVersion?: string): Release | null {
    const open = [this.current, ...this.retiring.map((r) => r.release).reverse()].filter((r) => r.storeVersion === version);
    return open.find((r) => r.catalogue.version === catalogueVersion) ?? open[0] ?? null;
  }

  /** Runs a call into a release, counted so the release is never closed under it. */
  async within<T>(r: Release, f: () => Promise<T>): Promise<T> {
    r.inFlight++;
    try {
      return await f();
    } finally {
      r.inFlight--;
    }
  }

  /** Closes previous releases whose quotes have all expired and that no call is using. */
  private sweep(): void {
    const now = this.now();
    const keep: typeof this.retiring = [];
    for (const r of this.retiring) {
      if (r.closeAt > now || r.release.inFlight > 0) {
        keep.push(r);
        continue;
      }
      this.log.info({ catalogue: r.release.catalogue.version, store: r.release.storeVersion }, 'previous release closed: its quotes have expired');
      void this.pool.release(r.release.storeVersion).catch((err) => this.log.warn({ err: (err as Error).message }, 'closing a previous unit store failed'));
    }
    if (keep.length !== this.retiring.length) {
      this.retiring = keep;
      this.publishMetrics();
    }
  }

  private publishMetrics(): void {
    const { catalogue } = this.current;
    this.o.metrics.release(catalogue.version, this.current.storeVersion, 1 + this.retiring.length, catalogue.products.map((p) => p.product_id));
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.watchers) w.close();
    if (this.timer) clearInterval(this.timer);
    if (this.debounce) clearTimeout(this.debounce);
    await this.checking?.catch(() => {});
    this.retiring = [];
    await this.pool.closeAll();
  }
}
