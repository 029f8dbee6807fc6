// Prometheus metrics (GET /metrics, operator token): one prom-client Registry per running server,
// never the library's global one, so several servers in one process (tests, the benchmark) keep
// their own counts. Labels are bounded sets only: route templates (never raw paths), status codes,
// product ids from the catalogue, outcomes. Nothing names a buyer: no balance token, token hash,
// address or quote id ever becomes a label.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** PostgreSQL pool figures a ledger can report (payments/ledger/postgres/ledger.ts). */
export interface PoolStats {
  total: number;
  idle: number;
  waiting: number;
  max: number;
  retries: number;
  unavailable: number;
  /** calls that failed with their change's outcome unknown (connections.ts) */
  unknownOutcomes: number;
  /** changes of the server in use (a failover followed) */
  switches: number;
  /** the server in use and what its last check found; null while none is chosen */
  server: { server: string; writable: boolean; standby: boolean } | null;
}

/** How a top-up request ended: paid (200), repeated (409: already credited or in progress), challenged (the 402 MPP challenge), refused (other 4xx), failed (5xx). */
export type TopupOutcome = 'paid' | 'repeated' | 'challenged' | 'refused' | 'failed';

export interface Metrics {
  readonly registry: Registry;
  /** One answered HTTP request; `route` is a template (`/v1/lds/draw`, `static`, `unmatched`). */
  request(method: string, route: string, status: number, seconds: number): void;
  quote(productId: string): void;
  paidDraw(productId: string, units: number, cents: number, currency: string): void;
  topup(outcome: TopupOutcome): void;
  /** A top-up the ledger credited (exactly once per payment, whichever request carried it). */
  topupCredited(cents: number, currency: string): void;
  /** One ledger state change (debit or credit) as the service saw it: call to durable answer. */
  ledgerCommit(op: 'debit' | 'credit', outcome: 'ok' | 'error', seconds: number): void;
  /**
   * One synced LevelDB write of the group committer: `ops` key writes, `changes` state changes in
   * it when the caller knows them, `seconds` the write + fsync. The commit path calls this.
   */
  groupCommit(ops: number, seconds: number, changes?: number): void;
  rateLimited(policy: 'addr' | 'token'): void;
  /**
   * The release now serving new quotes (payments/release/releases.ts), how many releases are open
   * (it and the previous ones kept for their quotes) and its product ids, which become label values
   * from now on (a product a switch added is counted under its own id, not `other`).
   */
  release(catalogueVersion: string, storeVersion: string, open: number, products: readonly string[]): void;
  /** A switch to a newly published build. */
  releaseSwitched(): void;
  /** A published build refused (the previous one keeps serving): `store` did not open, `dist` did not load, `base_url` moved. */
  releaseRefused(reason: ReleaseRefusal): void;
  /** A look for a newly published build ended (watch event, periodic check, SIGHUP), with what it found. */
  releaseChecked(outcome: 'unchanged' | 'switched' | 'waiting' | 'refused'): void;
  /** Scraped from the pool at each collection. */
  watchPool(stats: () => PoolStats): void;
  /** 1 when ready, 0 when not, set by /readyz and at each scrape. */
  setReady(ready: boolean): void;
  /** How a scrape checks readiness (the same checks as /readyz). */
  watchReadiness(probe: () => Promise<boolean>): void;
  text(): Promise<string>;
  readonly contentType: string;
}

/** Why a published build was refused (bounded label values). */
export type ReleaseRefusal = 'store' | 'dist' | 'base_url';

export interface MetricsOptions {
  backend: string;
  /** The catalogue's product ids: any other id is counted as `other` (bounded label values); each release adds its own (`release`). */
  products: readonly string[];
  /** Default process metrics (CPU, memory, event loop lag, handles). */
  processMetrics?: boolean;
}

const LATENCY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** One set of label values of a counter: add to `value`. */
interface CounterCell {
  value: number;
}

type Sample = { labels: Record<string, string | number>; value: number; metricName?: string };

/**
 * Counters and histograms for the paths every request or draw takes, kept in plain cells:
 * `cell(...labelValues)` is a Map look-up, and counting is an addition. prom-client's labelled
 * children validate and hash their label object on every call instead (the two a request took,
 * a count and a duration, were 8 % of a 304's CPU, BENCHMARKS.md). The registry reads these at scrape time through the
 * interface its own metrics have (name, help, type, aggregator, get, reset) and formats them the
 * same way, default labels included. Label values are bounded sets, so the cells are too.
 */
class CellMetrics {
  constructor(private readonly registry: Registry) {}

  counter(name: string, help: string, labelNames: readonly string[]): (...values: string[]) => CounterCell {
    const cells = new Map<string, { labels: Record<string, string>; cell: CounterCell }>();
    this.register(name, help, 'counter', cells, () => [...cells.values()].map(({ labels, cell }) => ({ labels, value: cell.value })));
    return this.lookup(cells, labelNames, () => ({ value: 0 }));
  }

  /**
   * A histogram; with `counted`, also a counter of its observations under that name, read from the
   * same cells (its value is the histogram's count), so counting both takes one look-up.
   */
  histogram(name: string, help: string, labelNames: readonly string[], bounds: readonly number[], counted?: { name: string; help: string }): (...values: string[]) => HistogramCell {
    const cells = new Map<string, { labels: Record<string, string>; cell: HistogramCell }>();
    if (counted) this.register(counted.name, counted.help, 'counter', cells, () => [...cells.values()].map(({ labels, cell }) => ({ labels, value: cell.count })));
    this.register(name, help, 'histogram', cells, () =>
      [...cells.values()].flatMap(({ labels, cell }) => {
        let acc = 0;
        return [
          ...bounds.map((le, i) => ({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: (acc += cell.buckets[i]) })),
          { metricName: `${name}_bucket`, labels: { ...labels, le: '+Inf' }, value: cell.count },
          { metricName: `${name}_sum`, labels, value: cell.sum },
          { metricName: `${name}_count`, labels, value: cell.count },
        ];
      }),
    );
    return this.lookup(cells, labelNames, () => new HistogramCell(bounds));
  }

  private lookup<C>(cells: Map<string, { labels: Record<string, string>; cell: C }>, labelNames: readonly string[], make: () => C): (...values: string[]) => C {
    return (...values) => {
      const key = values.join('\n');
      let entry = cells.get(key);
      if (entry === undefined) {
        const labels: Record<string, string> = {};
        labelNames.forEach((n, i) => (labels[n] = values[i]));
        cells.set(key, (entry = { labels, cell: make() }));
      }
      return entry.cell;
    };
  }

  private register(name: string, help: string, type: 'counter' | 'histogram', cells: Map<string, unknown>, values: () => Sample[]): void {
    const metric = { name, help, type, aggregator: 'sum', get: async () => ({ name, help, type, aggregator: 'sum', values: values() }), reset: () => cells.clear() };
    // The registry's parameter type is the union of prom-client's classes; it calls only what `metric` has.
    this.registry.registerMetric(metric as unknown as Counter);
  }
}

/** One set of label values of a histogram: counts per bucket (not cumulative: the export sums them), sum and count. */
class HistogramCell {
  readonly buckets: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly bounds: readonly number[]) {
    this.buckets = new Float64Array(bounds.length);
  }

  observe(v: number): void {
    this.sum += v;
    this.count++;
    const { bounds } = this;
    for (let i = 0; i < bounds.length; i++) {
      if (v <= bounds[i]) {
        this.buckets[i]++;
        return;
      }
    }
  }
}

const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];

export function createMetrics(o: MetricsOptions): Metrics {
  const registry = new Registry();
  registry.setDefaultLabels({ service: 'lds', ledger_backend: o.backend });
  if (o.processMetrics !== false) collectDefaultMetrics({ register: registry, prefix: 'lds_' });
  const products = new Set(o.products);
  const product = (id: string) => (products.has(id) ? id : 'other');
  const registers = [registry];

  const cells = new CellMetrics(registry);
  const requests = cells.histogram('lds_http_request_duration_seconds', 'HTTP request duration, by route template and status.', ['method', 'route', 'status'], LATENCY_BUCKETS, {
    name: 'lds_http_requests_total',
    help: 'HTTP requests answered, by route template and status.',
  });
  const quotes = cells.counter('lds_quotes_total', 'Quotes given (402 answers of POST /lds/draw), by product.', ['product']);
  const draws = cells.counter('lds_paid_draws_total', 'Paid draws delivered (first delivery; replays of a paid quote are not counted), by product.', ['product']);
  const units = cells.counter('lds_units_sold_total', 'Units delivered by paid draws, by product.', ['product']);
  const centsSold = cells.counter('lds_sold_cents_total', 'Money taken by paid draws, in cents, by product and currency.', ['product', 'currency']);
  const topups = new Counter({ name: 'lds_topups_total', help: 'Top-up requests by outcome: paid (200), repeated (409), challenged (the 402 MPP challenge), refused (other 4xx), failed (5xx).', labelNames: ['outcome'], registers });
  const credited = new Counter({ name: 'lds_topups_credited_total', help: 'Top-ups credited by the ledger (once per payment), by currency.', labelNames: ['currency'], registers });
  const topupCents = new Counter({ name: 'lds_topup_cents_total', help: 'Money credited by top-ups, in cents, by currency.', labelNames: ['currency'], registers });
  const commit = cells.histogram('lds_ledger_commit_seconds', 'Ledger state changes (draw debits, top-up credits) from call to durable answer.', ['op', 'outcome'], LATENCY_BUCKETS);
  const batchOps = new Histogram({ name: 'lds_ledger_group_commit_ops', help: 'LevelDB group commit: key writes per synced batch.', buckets: BATCH_BUCKETS, registers });
  const batchChanges = new Histogram({ name: 'lds_ledger_group_commit_changes', help: 'LevelDB group commit: state changes per synced batch (when the committer reports them).', buckets: BATCH_BUCKETS, registers });
  const batchSeconds = new Histogram({ name: 'lds_ledger_group_commit_seconds', help: 'LevelDB group commit: write + fsync time per batch.', buckets: LATENCY_BUCKETS, registers });
  const limited = new Counter({ name: 'lds_rate_limited_total', help: 'Requests refused with 429, by the policy that refused them (addr: per client address; token: per balance token).', labelNames: ['policy'], registers });
  const releaseInfo = new Gauge({ name: 'lds_release_info', help: 'The release serving new quotes: 1, labelled with its catalogue and unit store versions (only the serving one is present).', labelNames: ['catalogue_version', 'store_version'], registers });
  const releasesOpen = new Gauge({ name: 'lds_releases_open', help: 'Releases open: the serving one plus previous ones kept until their quotes expire.', registers });
  const switches = new Counter({ name: 'lds_release_switches_total', help: 'Switches to a newly published build without a restart.', registers });
  const checks = new Counter({ name: 'lds_release_checks_total', help: 'Looks for a newly published build, by outcome: unchanged, switched, waiting (CURRENT and dist/ do not match yet), refused. A count that stops growing means the service no longer looks (LDS_RELEASE_CHECK_MS=0 looks on SIGHUP only).', labelNames: ['outcome'], registers });
  const refused = new Counter({ name: 'lds_release_refused_total', help: 'Published builds refused (the previous release kept serving), by reason: store (did not open), dist (did not load), base_url (moved).', labelNames: ['reason'], registers });
  // The alert rules (deploy/prometheus/alerts.yml) ask for increase() of these: a series that first
  // appears at 1 has no increase in Prometheus, so the first failed top-up or refused build of a
  // process would never fire. Every outcome and reason is exported from the start, at 0.
  for (const outcome of ['paid', 'repeated', 'challenged', 'refused', 'failed'] satisfies TopupOutcome[]) topups.labels({ outcome }).inc(0);
  for (const reason of ['store', 'dist', 'base_url'] satisfies ReleaseRefusal[]) refused.labels({ reason }).inc(0);
  for (const policy of ['addr', 'token'] as const) limited.labels({ policy }).inc(0);
  let readyProbe: (() => Promise<boolean>) | undefined;
  const ready = new Gauge({
    name: 'lds_ready',
    help: '1 when GET /readyz answers 200 (checked again at every scrape).',
    registers,
    async collect() {
      if (readyProbe) this.set((await readyProbe()) ? 1 : 0);
    },
  });
  ready.set(1);

  let pool: (() => PoolStats) | undefined;
  new Gauge({
    name: 'lds_pg_pool_connections',
    help: 'PostgreSQL pool connections: total open, idle, clients waiting for one, and the pool size.',
    labelNames: ['state'],
    registers,
    collect() {
      if (!pool) return;
      const s = pool();
      this.set({ state: 'total' }, s.total);
      this.set({ state: 'idle' }, s.idle);
      this.set({ state: 'waiting' }, s.waiting);
      this.set({ state: 'max' }, s.max);
    },
  });
  new Gauge({
    name: 'lds_pg_server',
    help: 'The PostgreSQL server in use (one of LDS_LEDGER_URL\'s hosts): 1, labelled with it and whether it takes writes; absent while none is chosen (the next ledger call looks for one).',
    labelNames: ['server', 'writable', 'standby'],
    registers,
    collect() {
      this.reset();
      const s = pool?.().server;
      if (s) this.set({ server: s.server, writable: String(s.writable), standby: String(s.standby) }, 1);
    },
  });
  // Counters fed from the ledger's own running totals at scrape time.
  const totalFromPool = (name: string, help: string, read: (s: PoolStats) => number) => {
    let seen = 0;
    new Counter({
      name,
      help,
      registers,
      collect() {
        if (!pool) return;
        const n = read(pool());
        if (n > seen) this.inc(n - seen);
        seen = n;
      },
    });
  };
  totalFromPool('lds_pg_retries_total', 'PostgreSQL statements retried after a serialization failure or deadlock (40001, 40P01).', (s) => s.retries);
  totalFromPool('lds_pg_unavailable_total', 'PostgreSQL ledger calls that failed because the database could not be used (answered 503).', (s) => s.unavailable);
  totalFromPool('lds_pg_outcome_unknown_total', 'PostgreSQL ledger changes sent without an answer (timed out, connection lost): answered 503 saying the outcome is unknown; a retry with the same key is safe.', (s) => s.unknownOutcomes);
  totalFromPool('lds_pg_server_switches_total', 'Changes of the PostgreSQL server in use (a failover followed without a restart).', (s) => s.switches);

  return {
    registry,
    contentType: registry.contentType,
    request: (method, route, status, seconds) => requests(method, route, String(status)).observe(seconds),
    quote: (id) => void quotes(product(id)).value++,
    paidDraw(id, n, cents, currency) {
      const p = product(id);
      draws(p).value++;
      units(p).value += n;
      centsSold(p, currency).value += cents;
    },
    topup: (outcome) => topups.inc({ outcome }),
    topupCredited(cents, currency) {
      credited.inc({ currency });
      topupCents.inc({ currency }, cents);
    },
    ledgerCommit: (op, outcome, seconds) => commit(op, outcome).observe(seconds),
    groupCommit(ops, seconds, changes) {
      batchOps.observe(ops);
      batchSeconds.observe(seconds);
      if (changes !== undefined) batchChanges.observe(changes);
    },
    rateLimited: (policy) => limited.inc({ policy }),
    release(catalogueVersion, storeVersion, open, ids) {
      // Kept once seen: a previous release still pays its quotes, and the ids of every build this
      // process served stay a bounded set.
      for (const id of ids) products.add(id);
      releaseInfo.reset();
      releaseInfo.set({ catalogue_version: catalogueVersion, store_version: storeVersion }, 1);
      releasesOpen.set(open);
    },
    releaseSwitched: () => switches.inc(),
    releaseRefused: (reason) => refused.inc({ reason }),
    releaseChecked: (outcome) => checks.inc({ outcome }),
    watchPool(stats) {
      pool = stats;
    },
    setReady: (r) => ready.set(r ? 1 : 0),
    watchReadiness(probe) {
      readyProbe = probe;
    },
    text: () => registry.metrics(),
  };
}
