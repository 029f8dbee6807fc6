// The simulator's driver: runs one history (a list of generated operations, sim/model.ts) against
// real service instances (sim/cluster.ts) over a real ledger, compares every answer with the model,
// and after every step checks the invariants on the ledger's own records:
//   - money is conserved: all entries sum to zero, and so does each transaction;
//   - no balance below zero, and every balance and the revenue (draws less refunds) equal the model's;
//   - each quote debited at most once, each challenge and each PaymentIntent credited at most once;
//   - every 200 the client saw is in the ledger (draw ids, credited challenges), and nothing else is -
//     also after a failover (PostgreSQL with a synchronous standby: the primary killed mid-draw, the
//     standby promoted; the instances must follow without a restart and a retried quote pay once);
//   - the statement a buyer reads equals the model's lines (read steps), and `ledger verify` (which
//     also rebuilds every statement from the entries) is clean every `verifyEvery` steps, after every
//     restart and at the end.
// A violation carries the step; shrink() then looks for the shortest history that still fails.
import { mkdtemp, rm } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Challenge, Credential } from 'mppx';
import { Mppx, stripe } from 'mppx/client';
import { build } from '../generator/build.ts';
import { localAddresses } from '../generator/addresses.ts';
import { CURRENT_FILE } from '../contract/store-format.ts';
import { unitRecords } from '../contract/unit-records.ts';
import { drawPriceCents } from '../contract/money.ts';
import { hashToken, isWellFormedToken } from '../payments/tokens.ts';
import { generateReceiptKey, ReceiptSigner, verifyReceipt, type Jwks } from '../payments/receipts.ts';
import { exportLedgerAt, verifyLedgerAt } from '../payments/ledger/ops.ts';
import { writeExport } from '../payments/ledger/transfer.ts';
import type { Ledger } from '../payments/ledger/ledger.ts';
import { openLedger, type LedgerSettings } from '../payments/ledger/open.ts';
import type { Violation as LedgerViolation } from '../payments/ledger/verify.ts';
import { Instance, instanceDir, ProcPool, REPO, type Built } from './cluster.ts';
import { Model, cents, money, type MCredential, type MQuote, type Op, type PayExpectation } from './model.ts';

export type Backend = 'level' | 'postgres';

const TTL_SECONDS = 900;
/** A top-up challenge's lifetime (payments/topup/handler.ts, 5 minutes), by the simulated clock. */
const CHALLENGE_TTL_MS = 5 * 60_000;
const CLOCK_START = Date.UTC(2030, 0, 1);
/** The reason every simulated refund gives; the buyer's statement shows it. */
const REFUND_REASON = 'simulated refund';
/** How long a killed instance's last statement may take to finish on the server (a synchronous commit waits for the standby). */
const SETTLE_MS = 30_000;

export interface ProductInfo {
  id: string;
  priceMicro: number;
  refs: string[];
  words: string[];
}

/** What every history of one simulator run shares: the build, store copies, and PostgreSQL. */
export interface SimEnv {
  backend: Backend;
  built: Built;
  products: ProductInfo[];
  /** distinct unit references a draw may name (duplicates are removed first) */
  maxUnits: number;
  /** entries the `units` list itself may have */
  maxUnitItems: number;
  /** one unit-store copy per instance slot, reused by every history (one opener at a time) */
  stores: string[];
  pg?: SimPg;
  /** warm service processes, reused from history to history (each history gets a fresh server and ledger) */
  instances: Instance[];
  close(): Promise<void>;
}

/**
 * The simulator's PostgreSQL: a server it was given, the embedded one it started (restartable), or
 * - for failovers - a primary with a synchronous standby (test/helpers/pg-cluster.ts, Debian's
 * PostgreSQL) that the instances reach through the multi-host URL of both.
 */
export interface SimPg {
  restartable: boolean;
  /** a new, empty database for one history: the URL its instances use */
  createDatabase(): Promise<string>;
  /** Runs SQL as the administrator, on the server that takes writes (database `postgres`). */
  adminSql(text: string, params: unknown[]): Promise<Record<string, unknown>[]>;
  /** stop and start the server that takes writes */
  stopOnly?(): Promise<void>;
  startOnly?(): Promise<void>;
  /** the primary killed, the standby promoted (the runbook of docs/operations.md) */
  failover?(): Promise<void>;
  describe: string;
  stop(): Promise<void>;
}

export interface RunOptions {
  seed: number;
  instances: number;
  faults: boolean;
  maxRestarts: number;
  maxPgRestarts: number;
  /** failovers per history at most (PostgreSQL with a standby only) */
  maxFailovers: number;
  verifyEvery: number;
  breakLedger: boolean;
  log?: (line: string) => void;
}

export interface RunResult {
  ok: boolean;
  /** steps executed (including the failing one) */
  steps: number;
  violation?: { step: number; check: string; message: string };
  restarts: number;
  pgRestarts: number;
  failovers: number;
  skipped: number;
  counts: Record<string, number>;
  /** wall time per operation kind (ms), the invariant checks ('check') and the start ('start') */
  timing: Record<string, number>;
  ms: number;
}

export class SimViolation extends Error {
  constructor(
    readonly check: string,
    message: string,
  ) {
    super(message);
  }
}

// ------------------------------------------------------------------------------------- environment

export async function prepareEnv(backend: Backend, o: { instances: number; /** the catalog-src to build (default: the repository's own) */ srcDir?: string; pgUrl?: string; /** host:port of a pooler (PgBouncer) in front of pgUrl's server: the instances and ledger commands connect through it */ pooler?: string; ownPg?: boolean; /** PostgreSQL: a primary with a synchronous standby, for failovers (default: when Debian's PostgreSQL is installed) */ cluster?: boolean }): Promise<SimEnv> {
  const root = await mkdtemp(join(tmpdir(), 'lds-sim-'));
  const dist = join(root, 'dist');
  const store = join(root, 'store');
  await build({ srcDir: o.srcDir ?? join(REPO, 'catalog-src'), outDir: dist, storeRoot: store, addresses: localAddresses('http://127.0.0.1:8080', 'https://publisher.example'), sourceDateEpoch: 1767225600 });
  const catalogue = JSON.parse(readFileSync(join(dist, 'v1/lds/_catalog'), 'utf8'));
  const spec = JSON.parse(readFileSync(join(dist, 'v1/specification'), 'utf8'));
  const bounds = findUnitBounds(spec);
  const maxUnits = Number(bounds.distinct ?? 100);
  const maxUnitItems = Number(bounds.items ?? maxUnits);
  const products = await readProducts(store, catalogue);
  const built: Built = { root, dist, store };
  const n = backend === 'level' ? 1 : o.instances;
  const stores: string[] = [];
  for (let i = 0; i < n; i++) stores.push(join(await instanceDir(built, i), 'store'));
  const pg = backend === 'postgres' ? await simPostgres(o) : undefined;
  const pool = new ProcPool(1);
  const instances = Array.from({ length: n }, (_, i) => new Instance(i, pool));
  pool.fill();
  return {
    backend,
    built,
    products,
    maxUnits,
    maxUnitItems,
    stores,
    pg,
    instances,
    async close() {
      await Promise.all(instances.map((i) => i.stop()));
      await pool.close();
      // The embedded server's process is unref'd: keep the loop alive until it has stopped.
      const keep = setInterval(() => {}, 1000);
      try {
        await pg?.stop();
      } finally {
        clearInterval(keep);
      }
      await rm(root, { recursive: true, force: true });
    },
  };
}

async function simPostgres(o: { pgUrl?: string; pooler?: string; ownPg?: boolean; cluster?: boolean }): Promise<SimPg> {
  const { freshDatabase, sql, startEmbeddedPostgres } = await import('../test/helpers/pg.ts');
  const given = o.pgUrl ?? process.env.LDS_TEST_PG_URL;
  // Databases are made on the server itself; the ledger's URL names the pooler instead.
  const through = (url: string) => (o.pooler ? url.replace(/@[^/]+\//, `@${o.pooler}/`) : url);
  if (given && !o.ownPg) return { restartable: false, createDatabase: async () => through(await freshDatabase({ url: given, port: 0, stop: async () => {} })), adminSql: (text, params) => sql(given, text, params), describe: `the PostgreSQL at ${given.replace(/:[^:@/]*@/, ':***@')}`, stop: async () => {} };
  const { locate, POSTGRES_SERVER } = await import('../test/helpers/programs.ts');
  if (o.cluster ?? 'path' in locate(POSTGRES_SERVER)) {
    const { startPgCluster } = await import('../test/helpers/pg-cluster.ts');
    const cluster = await startPgCluster({ standbys: 1, synchronous: true });
    // After a failover the killed server comes back as the new primary's synchronous standby when
    // it is next needed (a new history, another failover): not at once, so a run that ends there
    // does not pay for a base backup nobody uses.
    const whole = async () => {
      const dead = cluster.nodes.find((x) => !x.running());
      if (dead) await cluster.rebuildStandby(dead);
    };
    return {
      restartable: true,
      createDatabase: async () => {
        await whole();
        return cluster.url(await cluster.createDatabase());
      },
      adminSql: (text, params) => cluster.writer().sql(text, params),
      stopOnly: () => cluster.writer().stop(),
      // Back once its standby streams again: until then a synchronous commit would wait for it.
      startOnly: async () => {
        await cluster.writer().start();
        await cluster.streaming();
      },
      failover: async () => {
        await whole();
        await cluster.failover();
      },
      describe: 'a primary with a synchronous standby (failovers possible)',
      stop: () => cluster.stop(),
    };
  }
  const srv = await startEmbeddedPostgres();
  return { restartable: true, createDatabase: () => freshDatabase(srv), adminSql: (text, params) => sql(srv.url, text, params), stopOnly: srv.stopOnly, startOnly: srv.startOnly, describe: 'one embedded server (no standby: failovers are skipped)', stop: srv.stop };
}

/** The draw request's unit bounds from the built OpenAPI document: distinct references, and list entries. */
function findUnitBounds(spec: any): { distinct?: number; items?: number } {
  const schemas = spec?.components?.schemas ?? {};
  for (const s of Object.values<any>(schemas)) {
    const u = s?.properties?.units;
    if (u?.maxItems) return { distinct: u['x-lds-max-distinct'] ?? u.maxItems, items: u.maxItems };
  }
  return {};
}

async function readProducts(storeRoot: string, catalogue: any): Promise<ProductInfo[]> {
  const version = readFileSync(join(storeRoot, CURRENT_FILE), 'utf8').trim();
  const refs = new Map<string, string[]>();
  const words = new Map<string, Set<string>>();
  {
    for await (const su of unitRecords(join(storeRoot, version))) {
      const text = `${su.unit.title ?? ''} ${su.unit.rows?.[0]?.text?.slice(0, 200) ?? ''}`;
      const ws = (text.match(/[A-Za-z]{6,}/g) ?? []).slice(0, 3).map((w) => w.toLowerCase());
      for (const p of su.products) {
        // appended in place: the real catalogue has a million units (a copy per unit was quadratic)
        const list = refs.get(p);
        if (list) list.push(su.unit.ref);
        else refs.set(p, [su.unit.ref]);
        const set = words.get(p) ?? new Set<string>();
        for (const w of ws) if (set.size < 40) set.add(w);
        words.set(p, set);
      }
    }
  }
  return (catalogue.products as any[])
    .filter((p) => (refs.get(p.product_id) ?? []).length > 0)
    .map((p) => ({ id: p.product_id, priceMicro: p.pricing.draw_unit_price_micro_eur, refs: [...refs.get(p.product_id)!].sort(), words: [...(words.get(p.product_id) ?? ['law'])].sort() }));
}

// ------------------------------------------------------------------------------------- HTTP

interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

class NetworkError extends Error {}

async function http(url: string, init: RequestInit): Promise<Answer> {
  let res: Response;
  try {
    res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  } catch (err) {
    throw new NetworkError(`${(err as Error).message}: ${String((err as { cause?: unknown }).cause ?? '')}`);
  }
  const text = await res.text().catch((err) => {
    throw new NetworkError(String(err));
  });
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body, headers: res.headers };
}

const post = (url: string, body: unknown, headers: Record<string, string> = {}) =>
  http(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

const slug = (a: Answer) => (typeof a.body?.type === 'string' ? a.body.type.replace(/^.*\//, '') : undefined);
const show = (a: Answer) => `${a.status} ${(typeof a.body === 'string' ? a.body : JSON.stringify(a.body) ?? '').slice(0, 160)}`;

/** The official mppx client with the stripe method, minting the given sandbox SPT. */
function mppxClient(spt: string) {
  return Mppx.create({ polyfill: false, methods: [stripe.charge({ paymentMethod: 'pm_card_visa', createToken: async () => spt })] });
}

// ------------------------------------------------------------------------------------- one history

interface Snapshot {
  accounts: { token_hash: string; cents: number }[];
  draws: { draw_id: string; quote_id: string; token_hash: string; amount_cents: number }[];
  topups: { topup_id: string; challenge_id: string; payment_ref: string; processor: string; token_hash: string; amount_cents: number }[];
  entries: { seq: number; txn: string; account: string; cents: number; currency: string }[];
}

function parseExport(text: string): Snapshot {
  const s: Snapshot = { accounts: [], draws: [], topups: [], entries: [] };
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(line);
    if (r.type === 'account') s.accounts.push(r);
    else if (r.type === 'draw') s.draws.push(r);
    else if (r.type === 'topup') s.topups.push(r);
    else if (r.type === 'entry') s.entries.push(r);
  }
  return s;
}

export async function runHistory(env: SimEnv, ops: Op[], o: RunOptions): Promise<RunResult> {
  const t0 = Date.now();
  const log = o.log ?? (() => {});
  // Every instance of a deployment shares its secrets and its receipt key (a replay on another
  // instance must answer the very same signed receipt).
  const receiptKeys = [generateReceiptKey()];
  const jwks: Jwks = ReceiptSigner.fromJwks(receiptKeys).jwks;
  const secrets = {
    LDS_QUOTE_SECRET: randomBytes(32).toString('hex'),
    MPP_SECRET_KEY: randomBytes(32).toString('hex'),
    LDS_RECEIPT_KEYS: JSON.stringify(receiptKeys),
    LDS_OPERATOR_TOKEN: randomBytes(24).toString('hex'),
  };
  const pg = env.pg;
  let settings: LedgerSettings;
  if (env.backend === 'postgres') settings = { ledgerDir: '/nonexistent', ledgerUrl: await pg!.createDatabase() };
  else settings = { ledgerDir: join(await mkdtemp(join(env.built.root, 'ledger-')), 'ledger') };

  const nInst = env.instances.length;
  const instances = env.instances;
  const serveEnv: Record<string, string>[] = [];
  for (let i = 0; i < nInst; i++) {
    const varDir = await mkdtemp(join(env.built.root, `var-${i}-`));
    serveEnv.push({
      LDS_DIST_DIR: env.built.dist,
      LDS_STORE_DIR: env.stores[i]!,
      LDS_VAR_DIR: varDir,
      ...(settings.ledgerUrl ? { LDS_LEDGER_URL: settings.ledgerUrl } : { LDS_LEDGER_DIR: settings.ledgerDir }),
      ...secrets,
      // Rate limits off (per address and per balance token): histories hammer a few balances.
      LDS_RATE_LIMIT_RPS: '0',
      LDS_RATE_LIMIT_TOKEN_RPS: '0',
      LDS_QUOTE_TTL_SECONDS: String(TTL_SECONDS),
      LDS_PG_POOL_SIZE: '4',
      LDS_PG_QUERY_TIMEOUT_MS: '3000',
      LDS_SHUTDOWN_GRACE_MS: '2000',
      PAYMENT_PROCESSOR: 'sandbox',
      LOG_LEVEL: 'fatal',
      NODE_ENV: 'test',
      ...(o.breakLedger ? { SIM_BREAK: 'skip-balance-check' } : {}),
    });
  }
  const model = new Model(CLOCK_START);
  const result: RunResult = { ok: true, steps: 0, restarts: 0, pgRestarts: 0, failovers: 0, skipped: 0, counts: {}, timing: {}, ms: 0 };
  const timed = async <T>(k: string, f: () => Promise<T>): Promise<T> => {
    const t = Date.now();
    try {
      return await f();
    } finally {
      result.timing[k] = (result.timing[k] ?? 0) + Date.now() - t;
    }
  };
  let pgDown = false;
  let reader: Ledger | null = null; // PostgreSQL: the driver's own connection for snapshots

  const I = (k: number) => instances[k % nInst]!;
  const fail = (check: string, message: string): never => {
    throw new SimViolation(check, message);
  };
  const expectProblem = (a: Answer, status: number, type: string, what: string) => {
    if (a.status !== status || slug(a) !== type) fail('answer', `${what}: expected ${status} ${type}, got ${show(a)}`);
  };

  async function snapshot(): Promise<Snapshot> {
    let text = '';
    if (reader) await reader.readSnapshot((records) => writeExport(records, (line) => void (text += line)));
    else await exportLedgerAt(settings, (c) => void (text += c));
    return parseExport(text);
  }

  async function verify(when: string): Promise<void> {
    const v: LedgerViolation[] = reader ? await reader.verify() : await verifyLedgerAt(settings);
    if (v.length) fail('ledger-verify', `ledger verify (${when}) found ${v.length} violation(s): ${v.slice(0, 3).map((x) => `${x.code}: ${x.message}`).join('; ')}`);
  }

  async function checkInvariants(): Promise<void> {
    const s = await snapshot();
    const totals = new Map<string, number>();
    const txns = new Map<string, number>();
    for (const e of s.entries) {
      totals.set(e.currency, (totals.get(e.currency) ?? 0) + e.cents);
      txns.set(e.txn, (txns.get(e.txn) ?? 0) + e.cents);
    }
    for (const [c, t] of totals) if (t !== 0) fail('conservation', `entries in ${c} sum to ${t}, not 0`);
    for (const [txn, t] of txns) if (t !== 0) fail('conservation', `transaction ${txn} sums to ${t}, not 0`);
    for (const a of s.accounts) if (a.cents < 0) fail('negative-balance', `balance ${a.token_hash.slice(0, 8)}… is ${a.cents}`);
    const quotes = new Set<string>();
    for (const d of s.draws) {
      if (quotes.has(d.quote_id)) fail('quote-once', `quote ${d.quote_id.slice(0, 24)}… debited twice`);
      quotes.add(d.quote_id);
    }
    const challenges = new Set<string>();
    const payments = new Set<string>();
    for (const t of s.topups) {
      if (challenges.has(t.challenge_id)) fail('challenge-once', `challenge ${t.challenge_id} credited twice`);
      challenges.add(t.challenge_id);
      const p = `${t.processor}:${t.payment_ref}`;
      if (payments.has(p)) fail('payment-once', `payment ${p} credited twice`);
      payments.add(p);
    }
    // Every 200 the client saw is in the ledger, and the ledger holds nothing the model does not.
    const drawByQuote = new Map(s.draws.map((d) => [d.quote_id, d]));
    for (const [q, drawId] of model.draws) {
      const d = drawByQuote.get(q);
      if (!d || d.draw_id !== drawId) fail('seen-in-ledger', `draw ${drawId} (answered 200) is not in the ledger for its quote`);
    }
    if (s.draws.length !== model.draws.size) fail('model', `the ledger holds ${s.draws.length} draws, the model ${model.draws.size}`);
    const topupByChallenge = new Map(s.topups.map((t) => [t.challenge_id, t]));
    for (const [c, bi] of model.credited) {
      const t = topupByChallenge.get(c);
      if (!t || t.token_hash !== model.balances[bi]!.hash) fail('seen-in-ledger', `top-up of challenge ${c} (answered 200) is not in the ledger for its balance`);
    }
    if (s.topups.length !== model.credited.size) fail('model', `the ledger holds ${s.topups.length} top-ups, the model ${model.credited.size}`);
    const byHash = new Map(s.accounts.map((a) => [a.token_hash, a.cents]));
    if (s.accounts.length !== model.balances.length) fail('model', `the ledger holds ${s.accounts.length} balances, the model ${model.balances.length}`);
    model.balances.forEach((b, i) => {
      if (byHash.get(b.hash) !== b.cents) fail('model', `balance #${i} is ${byHash.get(b.hash)} in the ledger, ${b.cents} in the model`);
    });
    const revenue = s.entries.filter((e) => e.account === 'revenue').reduce((x, e) => x + e.cents, 0);
    if (revenue !== model.revenue) fail('model', `revenue is ${revenue} in the ledger, ${model.revenue} in the model`);
  }

  async function setClock(ms: number): Promise<void> {
    model.clock = ms;
    await Promise.all(instances.map((i) => i.tell({ type: 'clock', now: ms })));
  }

  /**
   * Once an instance killed at a commit point is gone for good: LevelDB at once (the process held the
   * ledger); PostgreSQL when no session on the history's database is running a statement or holding a
   * transaction. A statement the instance handed over before it died still completes on the server
   * (with a synchronous standby, once the standby confirms) and is only then visible: a snapshot taken
   * before it would miss a top-up or draw that lands a moment later, and the retry would then find it.
   */
  async function killed(inst: Instance): Promise<void> {
    await inst.exited;
    if (!settings.ledgerUrl) return;
    const database = /\/([^/?]+)(?:\?|$)/.exec(settings.ledgerUrl.slice(settings.ledgerUrl.lastIndexOf('@') + 1))![1]!;
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const [row] = await pg!.adminSql("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND backend_type = 'client backend' AND state <> 'idle'", [decodeURIComponent(database)]);
      if (row!.n === 0) return;
      if (Date.now() > deadline) fail('availability', `${row!.n} session(s) on the ledger still busy ${SETTLE_MS / 1000} s after instance ${inst.index} was killed`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async function restart(inst: Instance): Promise<void> {
    await inst.exited;
    await inst.serve(serveEnv[inst.index]!, model.clock);
    result.restarts++;
    await verify(`after restarting instance ${inst.index}`);
  }

  // ---- top-up helpers

  let sptCounter = 0;
  const spt = () => `spt_sim_${o.seed}_${sptCounter++}`;
  const bearerOf = (b: number | 'new'): Record<string, string> => (b === 'new' ? {} : { Authorization: `Bearer ${model.balances[b]!.token}` });

  /** First leg (402 + challenge) and the buyer's credential for it. */
  async function credentialFor(inst: Instance, amount: string, b: number | 'new', token: string, currency = 'EUR') {
    // The simulated clock stands still between steps: challenges for the same amount and form are
    // issued at the same instant, which once gave them one id (a defect this simulator found: see
    // sim/histories/same-instant-challenges.json and the nonce in payments/topup/handler.ts).
    const first = await post(`${inst.base}/lds/balance/topup`, { amount, currency }, bearerOf(b));
    expectProblem(first, 402, 'payment-required', 'top-up without a credential');
    const response = new Response(JSON.stringify(first.body), { status: 402, headers: first.headers });
    const headerName: 'Authorization' | 'Payment-Authorization' = (Challenge.fromResponse(response).header as 'Payment-Authorization' | undefined) ?? 'Authorization';
    const header = await mppxClient(token).createCredential(response);
    const challenge = Credential.deserialize(Credential.extractPaymentScheme(header)!).challenge;
    const challengeId = challenge.id;
    // The challenge's expiry is set by the same (simulated) clock that decides later whether a
    // resent credential is answered again.
    const expiresAt = Date.parse(challenge.expires ?? '');
    if (expiresAt !== model.clock + CHALLENGE_TTL_MS) fail('answer', `challenge expires ${challenge.expires}, expected ${new Date(model.clock + CHALLENGE_TTL_MS).toISOString()} (the simulated clock + 5 minutes)`);
    const headers: Record<string, string> = { ...bearerOf(b), [headerName]: header };
    return { header, headerName, challengeId, headers, expiresAt };
  }

  /** A receipt must verify against the deployment's key; returns its JSON (the same answer twice = the same text). */
  function checkReceipt(receipt: unknown, what: string): string {
    const v = verifyReceipt(receipt, jwks);
    if (!v.ok) fail('receipt', `${what}: the receipt does not verify: ${v.reason}`);
    return JSON.stringify(receipt);
  }

  function checkTopupOk(a: Answer, b: number | 'new', amountCents: number, challengeId: string, what: string): string {
    if (a.status !== 200) fail('answer', `${what}: expected 200, got ${show(a)}`);
    const before = b === 'new' ? 0 : model.balances[b]!.cents;
    if (a.body.balance !== money(before + amountCents)) fail('answer', `${what}: balance ${a.body.balance}, expected ${money(before + amountCents)}`);
    // A new balance's token is random (nothing predicts it): well-formed when a balance was opened, else absent.
    if (b === 'new' ? !isWellFormedToken(a.body.balance_token) : a.body.balance_token !== undefined) fail('answer', `${what}: balance_token ${a.body.balance_token ? 'present' : 'absent'}, expected ${b === 'new' ? 'a new token' : 'none'}`);
    const r = a.body.receipt;
    if (r?.type !== 'topup' || r.amount !== money(amountCents) || r.balance_after !== money(before + amountCents)) fail('answer', `${what}: receipt ${JSON.stringify({ type: r?.type, amount: r?.amount, balance_after: r?.balance_after })}, expected a top-up of ${money(amountCents)} leaving ${money(before + amountCents)}`);
    return checkReceipt(r, what);
  }

  /** The balance token a 200 top-up answer opened, with its hash. */
  const openedBy = (a: Answer): { token: string; hash: string } | undefined => (isWellFormedToken(a.body?.balance_token) ? { token: a.body.balance_token, hash: hashToken(a.body.balance_token) } : undefined);

  /**
   * Records a credit in the model. A new balance needs the token it opened: from the answer, or -
   * when the answer was lost - its hash from the ledger and the token '' until the buyer's resend
   * of the same credential shows it (resendCredited).
   */
  function credit(b: number | 'new', amountCents: number, c: { header: string; headerName: 'Authorization' | 'Payment-Authorization'; challengeId: string; expiresAt: number }, receipt?: string, opened?: { token: string; hash: string }): number {
    if (b === 'new' && !opened) fail('answer', `a new balance for challenge ${c.challengeId.slice(0, 12)}… without its token`);
    const i = model.applyCredit({ challengeId: c.challengeId, cents: amountCents, balance: b, ...(b === 'new' ? opened : {}) });
    model.credentials.push({ header: c.header, headerName: c.headerName, challengeId: c.challengeId, cents: amountCents, balance: i, createdBalance: b === 'new', expiresAt: c.expiresAt, ...(b !== 'new' ? { bearer: model.balances[i]!.token } : {}), ...(receipt ? { receipt } : {}) });
    return i;
  }

  /**
   * A credited challenge's credential sent again (TOPUP_REPLAY_RULE): in its own form while the
   * challenge is valid, the same answer - 200, the current balance, the same balance token if it
   * opened the balance, the very same signed receipt - and nothing credited; otherwise 409.
   */
  async function resendCredited(inst: Instance, c: MCredential, sameForm: boolean, what: string): Promise<void> {
    const bal = model.balances[c.balance]!;
    let headers: Record<string, string>;
    if (sameForm) headers = { ...(c.bearer ? { Authorization: `Bearer ${c.bearer}` } : {}), [c.headerName]: c.header };
    else if (c.bearer) headers = { Authorization: c.header }; // without the Bearer token it went with
    else headers = { Authorization: `Bearer ${bal.token}`, 'Payment-Authorization': c.header }; // with the Bearer of the balance it opened
    const a = await post(`${inst.base}/lds/balance/topup`, { amount: money(c.cents), currency: 'EUR' }, headers);
    const exp = model.expectResend(c, sameForm);
    const outcome = exp.status === 200 ? 'resent: answered again' : `resent: ${exp.status} (${exp.why})`;
    result.counts[outcome] = (result.counts[outcome] ?? 0) + 1;
    if (exp.status !== 200) {
      expectProblem(a, exp.status, exp.type, `${what} (${exp.why})`);
      const text = JSON.stringify(a.body);
      if (/lds_bal_/.test(text) || (bal.token && text.includes(bal.token)) || (bal.opened && text.includes(bal.opened))) fail('answer', `${what}: a ${exp.status} showed a balance token`);
      return;
    }
    if (a.status !== 200) fail('answer', `${what}: expected 200 (answered again), got ${show(a)}`);
    if (a.body.balance !== money(bal.cents)) fail('answer', `${what}: balance ${a.body.balance}, expected ${money(bal.cents)} (nothing credited again)`);
    if (c.createdBalance && bal.opened === '') {
      // The first answer was lost: this is where the buyer learns the token; it must be the balance's.
      const opened = openedBy(a);
      if (!opened || opened.hash !== bal.hash) fail('answer', `${what}: the resent credential did not get the token of the balance it opened`);
      bal.token = bal.opened = opened!.token;
    } else if (a.body.balance_token !== (c.createdBalance ? bal.token : undefined)) fail('answer', `${what}: not the same balance token`);
    const receipt = checkReceipt(a.body.receipt, what);
    if (c.receipt === undefined) c.receipt = receipt;
    else if (receipt !== c.receipt) fail('answer', `${what}: another receipt than the first answer's`);
  }

  /** A top-up's target: an existing balance, or (the index past the last) a new one. */
  const targetOf = (target: number, _new: true): number | 'new' => {
    const n = model.balances.length;
    return target % (n + 1) === n ? 'new' : target % (n + 1);
  };
  /** An existing balance, or null when there is none yet. */
  const balanceAt = (target: number): number | null => (model.balances.length === 0 ? null : target % model.balances.length);

  // ---- draw helpers

  function drawBody(q: MQuote, extra: Record<string, unknown> = {}) {
    return { product_id: q.productId, ...q.request, quote_id: q.id, ...extra };
  }

  async function quote(inst: Instance, product: (typeof env.products)[number], request: MQuote['request'], b: number): Promise<MQuote | null> {
    const a = await post(`${inst.base}/lds/draw`, { product_id: product.id, ...request }, b >= 0 ? bearerOf(b) : {});
    if (request.query !== undefined && a.status === 404 && slug(a) === 'no-matching-units') return null;
    if (a.status !== 402 || typeof a.body?.quote_id !== 'string') fail('answer', `quote: expected 402 with a quote, got ${show(a)}`);
    const c = cents(a.body.amount);
    // Duplicates count once: the price is that of the distinct references.
    const unitCount = request.units ? new Set(request.units).size : undefined;
    if (unitCount !== undefined && c !== drawPriceCents(unitCount, product.priceMicro)) fail('answer', `quote of ${unitCount} distinct units (${request.units!.length} listed): amount ${a.body.amount}`);
    const expiresAt = model.clock + TTL_SECONDS * 1000;
    if (a.body.expires_at !== new Date(expiresAt).toISOString()) fail('answer', `quote expires_at ${a.body.expires_at}, expected ${new Date(expiresAt).toISOString()} (the simulated clock)`);
    const payable = b >= 0 && model.balances[b]!.cents >= c;
    if (a.body.payable_from_balance !== payable) fail('answer', `quote payable_from_balance ${a.body.payable_from_balance}, expected ${payable}`);
    const q: MQuote = { id: a.body.quote_id, productId: product.id, request, cents: c, expiresAt, askedBy: b, ...(unitCount !== undefined ? { unitCount } : {}) };
    model.quotes.push(q);
    return q;
  }

  function checkPay(a: Answer, exp: PayExpectation, q: MQuote, what: string): string | null {
    if (exp.status !== 200) {
      expectProblem(a, exp.status, exp.type, what);
      return null;
    }
    if (a.status !== 200) fail('answer', `${what}: expected 200 (${exp.kind}), got ${show(a)}`);
    const r = a.body.receipt;
    if (r?.quote_id !== q.id || r.amount !== money(q.cents) || r.balance_after !== money(exp.after)) fail('answer', `${what}: receipt ${JSON.stringify({ amount: r?.amount, balance_after: r?.balance_after })}, expected amount ${money(q.cents)}, balance_after ${money(exp.after)}`);
    if (exp.kind === 'replay' && r.draw_id !== exp.drawId) fail('answer', `${what}: replay answered draw ${r.draw_id}, first paid as ${exp.drawId}`);
    if (q.unitCount !== undefined && r.unit_count !== q.unitCount) fail('answer', `${what}: receipt unit_count ${r.unit_count}, expected ${q.unitCount} distinct units`);
    // Signed, and a replay (or a concurrent copy) answers the very same receipt as the first answer.
    const receipt = checkReceipt(r, what);
    if (q.receipt === undefined) q.receipt = receipt;
    else if (receipt !== q.receipt) fail('answer', `${what}: another receipt than the first answer for draw ${r.draw_id}`);
    return r.draw_id as string;
  }

  const pickQuote = (q: number): MQuote | null => (model.quotes.length ? model.quotes[model.quotes.length - 1 - (q % model.quotes.length)]! : null);

  // ---- the steps

  async function step(op: Op): Promise<'done' | 'skipped'> {
    switch (op.t) {
      case 'topup': {
        const b = targetOf(op.target, true);
        const inst = I(op.inst);
        if (op.amount === 'below') {
          const amount = op.extra % 2 ? '4.99' : '0.01';
          const a = await post(`${inst.base}/lds/balance/topup`, { amount, currency: 'EUR' }, bearerOf(b));
          expectProblem(a, 400, 'topup-below-minimum', `top-up of ${amount}`);
          if (a.headers.get('www-authenticate')) fail('answer', 'a top-up below the minimum offered a challenge');
          return 'done';
        }
        const c = op.amount === 'min' ? 500 : 500 + op.extra;
        // The currency code is case-insensitive: now and then the buyer writes it in lower case.
        const currency = Math.floor(op.extra / 2) % 3 === 0 ? 'eur' : 'EUR';
        const cred = await credentialFor(inst, money(c), b, spt(), currency);
        const a = await post(`${inst.base}/lds/balance/topup`, { amount: money(c), currency }, cred.headers);
        const receipt = checkTopupOk(a, b, c, cred.challengeId, `top-up of ${money(c)} ${currency}`);
        credit(b, c, cred, receipt, openedBy(a));
        return 'done';
      }
      case 'declined': {
        const b = targetOf(op.target, true);
        const inst = I(op.inst);
        const cred = await credentialFor(inst, '5.00', b, 'spt_sandbox_decline');
        const a = await post(`${inst.base}/lds/balance/topup`, { amount: '5.00', currency: 'EUR' }, cred.headers);
        expectProblem(a, 402, 'payment-declined', 'declined top-up');
        return 'done';
      }
      case 'resend': {
        if (!model.credentials.length) return 'skipped';
        const c = model.credentials[op.k % model.credentials.length]!;
        const sameForm = Math.floor(op.k / 100) % 4 !== 3;
        await resendCredited(I(op.inst), c, sameForm, sameForm ? 'resent credential' : 'resent credential in the other form');
        return 'done';
      }
      case 'topupDup': {
        const b = targetOf(op.target, true);
        const c = 500 + (op.target % 700);
        const cred = await credentialFor(I(op.inst), money(c), b, spt());
        const answers = await Promise.all(Array.from({ length: op.copies }, (_, k) => post(`${I(op.inst + k).base}/lds/balance/topup`, { amount: money(c), currency: 'EUR' }, cred.headers)));
        const oks = answers.filter((a) => a.status === 200);
        if (!oks.length) fail('answer', `one credential sent ${op.copies} times at once: no 200 (${answers.map(show).join(' | ')})`);
        for (const a of answers) if (a.status !== 200 && !(a.status === 409 && ['topup-in-progress', 'topup-already-credited'].includes(slug(a)!))) fail('answer', `duplicate credential: ${show(a)}`);
        const receipts = new Set(oks.map((a) => checkTopupOk(a, b, c, cred.challengeId, 'duplicate credential')));
        if (receipts.size !== 1) fail('answer', `one credential sent ${op.copies} times at once: ${receipts.size} different receipts`);
        if (new Set(oks.map((a) => a.body.balance_token)).size !== 1) fail('answer', `one credential sent ${op.copies} times at once: different balance tokens`);
        credit(b, c, cred, [...receipts][0], openedBy(oks[0]!));
        return 'done';
      }
      case 'timeout': {
        const b = targetOf(op.target, true);
        const inst = I(op.inst);
        const c = 500 + (op.target % 300);
        const cred = await credentialFor(inst, money(c), b, spt());
        await inst.tell({ type: 'arm-processor-timeout' });
        const a = await post(`${inst.base}/lds/balance/topup`, { amount: money(c), currency: 'EUR' }, cred.headers);
        expectProblem(a, 502, 'payment-processor-unavailable', 'processor timed out after charging');
        await checkInvariants(); // nothing credited yet
        const again = await post(`${I(op.inst2).base}/lds/balance/topup`, { amount: money(c), currency: 'EUR' }, cred.headers);
        credit(b, c, cred, checkTopupOk(again, b, c, cred.challengeId, 'credential resent after the processor timed out'), openedBy(again));
        return 'done';
      }
      case 'quote': {
        const product = env.products[op.product % env.products.length]!;
        const b = op.withToken ? (balanceAt(op.target) ?? -1) : -1;
        let request: MQuote['request'];
        const n = Math.min(op.size, env.maxUnits, product.refs.length);
        if (op.mode === 'units') {
          const units = Array.from({ length: n }, (_, k) => product.refs[(op.start + k) % product.refs.length]!);
          // Now and then the list names some references twice: they count once (and fit the list bound).
          const dups = op.limit > 14 ? units.slice(0, Math.min(op.limit - 14, env.maxUnitItems - units.length)) : [];
          request = { units: [...units, ...dups] };
        }
        else request = { query: product.words[op.start % product.words.length]!, limit: op.limit };
        await quote(I(op.inst), product, request, b);
        return 'done';
      }
      case 'pay':
      case 'payDup': {
        const q = pickQuote(op.q);
        const fallback = balanceAt(op.target);
        if (!q || fallback === null) return 'skipped';
        const b = op.same && q.askedBy >= 0 ? q.askedBy : fallback;
        const exp = model.expectPay(q, b);
        const copies = op.t === 'pay' ? 1 : op.copies;
        const answers = await Promise.all(Array.from({ length: copies }, (_, k) => post(`${I(op.inst + k).base}/lds/draw`, drawBody(q), bearerOf(b))));
        const ids = answers.map((a) => checkPay(a, exp, q, copies > 1 ? `paid draw sent ${copies} times at once` : 'paid draw'));
        if (exp.status === 200 && exp.kind === 'fresh') {
          if (new Set(ids).size !== 1) fail('quote-once', `one quote paid ${copies} times at once gave draws ${[...new Set(ids)].join(', ')}`);
          model.applyDraw(q, b, ids[0]!);
        }
        return 'done';
      }
      case 'tamper': {
        const q = pickQuote(op.q);
        const b = balanceAt(op.target);
        if (!q || b === null) return 'skipped';
        let body: Record<string, unknown>;
        let field: string;
        if (op.how === 'mac') {
          const last = q.id.at(-2) === 'A' ? 'B' : 'A';
          body = drawBody(q, { quote_id: q.id.slice(0, -2) + last + q.id.at(-1) });
          field = 'quote_id';
        } else if (op.how === 'product') {
          const other = env.products.find((p) => p.id !== q.productId)!;
          body = drawBody(q, { product_id: other.id });
          field = 'product_id';
        } else if (q.request.units) {
          const p = env.products.find((x) => x.id === q.productId)!;
          const extra = p.refs.find((r) => !q.request.units!.includes(r));
          const u = [...new Set(q.request.units)]; // a change of duplicates only is no change: units are a set
          const changed = extra && u.length < env.maxUnits ? [...u, extra] : u.length > 1 ? u.slice(1) : extra ? [extra] : null;
          if (!changed) return 'skipped';
          body = drawBody(q, { units: changed });
          field = 'units';
        } else {
          body = drawBody(q, { query: `${q.request.query} x` });
          field = 'query';
        }
        const a = await post(`${I(op.inst).base}/lds/draw`, body, bearerOf(b));
        expectProblem(a, 400, 'quote-tampered', `tampered ${op.how}`);
        if (a.body.field !== field) fail('answer', `tampered ${op.how}: the problem names field ${a.body.field}, expected ${field}`);
        return 'done';
      }
      case 'drain': {
        const b = balanceAt(op.target);
        if (b === null) return 'skipped';
        const big = env.products.filter((p) => p.refs.length >= 50);
        const product = (big.length ? big : env.products)[op.product % (big.length || env.products.length)]!;
        const n = Math.min(env.maxUnits, product.refs.length);
        for (let k = 0; k < 25; k++) {
          const q = await quote(I(op.inst + k), product, { units: Array.from({ length: n }, (_, j) => product.refs[(op.start + k + j) % product.refs.length]!) }, b);
          if (!q) return 'done';
          const exp = model.expectPay(q, b);
          const a = await post(`${I(op.inst + k).base}/lds/draw`, drawBody(q), bearerOf(b));
          const id = checkPay(a, exp, q, `draw ${k + 1} spending balance #${b} down`);
          if (!id) return 'done'; // refused as the model expected (insufficient funds)
          model.applyDraw(q, b, id);
        }
        return 'done';
      }
      case 'expire':
        await setClock(model.clock + (TTL_SECONDS + 1) * 1000);
        return 'done';
      case 'read': {
        const b = balanceAt(op.target);
        if (b === null) return 'skipped';
        await read(I(op.inst), b);
        return 'done';
      }
      case 'rotate': {
        const b = balanceAt(op.target);
        if (b === null) return 'skipped';
        const old = model.balances[b]!.token;
        const balance = money(model.balances[b]!.cents);
        const a = await http(`${I(op.inst).base}/lds/balance/token`, { method: 'POST', headers: bearerOf(b) });
        const fresh = a.body?.balance_token;
        if (a.status !== 200 || !isWellFormedToken(fresh) || fresh === old || a.body.balance !== balance) fail('answer', `token rotation: expected 200 with a new token and balance ${balance}, got ${show(a)}`);
        model.rotate(b, fresh);
        // At once, on another instance: the old token is refused, the new one reads the balance and statement.
        const stale = await http(`${I(op.inst2).base}/lds/balance`, { headers: { Authorization: `Bearer ${old}` } });
        expectProblem(stale, 401, 'balance-token-revoked', 'balance read with the rotated-away token');
        await read(I(op.inst2), b);
        return 'done';
      }
      case 'stale': {
        if (!model.retired.size) return 'skipped';
        const old = [...model.retired][op.k % model.retired.size]!;
        const product = env.products[op.product % env.products.length]!;
        const q = await quote(I(op.inst), product, { units: [product.refs[op.pick % product.refs.length]!] }, -1);
        if (!q) return 'skipped';
        const a = await post(`${I(op.inst).base}/lds/draw`, drawBody(q), { Authorization: `Bearer ${old}` });
        expectProblem(a, 401, 'balance-token-revoked', 'paid draw with a rotated-away token'); // nothing debited: the invariants check the ledger
        return 'done';
      }
      case 'refund': {
        const paid = model.quotes.filter((x) => x.drawId !== undefined);
        if (!paid.length) return 'skipped';
        const q = paid[paid.length - 1 - (op.q % paid.length)]!;
        const left = q.cents - (q.refunded ?? 0);
        if (left === 0 && op.how !== 'over') return 'skipped';
        const amount = op.how === 'all' ? undefined : op.how === 'part' ? 1 + (op.part % left) : left + 1 + (op.part % 50);
        const body = { draw_id: q.drawId, ...(amount !== undefined ? { amount: money(amount) } : {}), reason: REFUND_REASON };
        const headers = { Authorization: `Bearer ${secrets.LDS_OPERATOR_TOKEN}`, 'Idempotency-Key': `sim-refund-${result.steps}-${model.clock}` };
        const what = `refund of ${amount === undefined ? 'all that is left' : money(amount)} (${money(left)} left) of draw ${q.drawId}`;
        const a = await post(`${I(op.inst).base}/lds/admin/refunds`, body, headers);
        const outcome = op.how === 'over' ? 'refund: 422 (more than is left)' : `refund: ${op.how === 'all' ? 'all that is left' : 'a part'}`;
        result.counts[outcome] = (result.counts[outcome] ?? 0) + 1;
        if (op.how === 'over') {
          expectProblem(a, 422, 'refund-exceeds-payment', what);
          if (a.body.available !== money(left)) fail('answer', `${what}: available ${a.body.available}, expected ${money(left)}`);
          return 'done';
        }
        const cents = amount ?? left;
        const after = model.balances[q.paidBy!]!.cents + cents;
        if (a.status !== 201 || a.body.kind !== 'refund' || a.body.amount !== money(cents) || a.body.balance_after !== money(after) || a.body.balance_id !== model.balances[q.paidBy!]!.hash) fail('answer', `${what}: expected 201 refunding ${money(cents)} to ${money(after)}, got ${show(a)}`);
        model.applyRefund(q, cents, a.body.correction_id);
        // The operator resends it with the same key at another instance: the same correction, applied once.
        const again = await post(`${I(op.inst2).base}/lds/admin/refunds`, body, headers);
        if (again.status !== 200 || again.body.correction_id !== a.body.correction_id || again.body.balance_after !== money(after)) fail('answer', `${what}, resent with its key: expected 200 with correction ${a.body.correction_id}, got ${show(again)}`);
        return 'done';
      }
      case 'crash':
        return crash(op);
      case 'pgRestart': {
        if (!pg?.restartable || result.pgRestarts >= o.maxPgRestarts) return 'skipped';
        result.pgRestarts++;
        pgDown = true;
        await pg.stopOnly!();
        const b = balanceAt(op.inst);
        if (b !== null) {
          const a = await http(`${I(op.inst).base}/lds/balance`, { headers: bearerOf(b) });
          expectProblem(a, 503, 'ledger-unavailable', 'balance read while PostgreSQL is down');
        }
        await pg.startOnly!();
        pgDown = false;
        if (b !== null) await read(I(op.inst), b);
        await verify('after restarting PostgreSQL');
        return 'done';
      }
      case 'failover':
        return failover(op);
    }
  }

  /**
   * The primary dies while a paid draw is in flight and the synchronous standby is promoted. Nothing
   * acknowledged is lost (the invariants: every 200 so far is on the promoted server); the draw in
   * flight is a 200 (then it is there) or a 503 ledger-unavailable; the buyer's retry of the same
   * quote at another instance pays it exactly once (or replays it); every instance follows without a
   * restart. (The dead server returns as the new primary's standby before the next history.)
   */
  async function failover(op: Extract<Op, { t: 'failover' }>): Promise<'done' | 'skipped'> {
    if (!pg?.failover || result.failovers >= o.maxFailovers) return 'skipped';
    const b = balanceAt(op.target);
    if (b === null) return 'skipped';
    const inst = I(op.inst);
    const product = env.products[op.product % env.products.length]!;
    const q = await quote(inst, product, { units: [product.refs[op.pick % product.refs.length]!] }, b);
    if (!q || model.balances[b]!.cents < q.cents) return 'skipped';
    result.failovers++;
    const exp = model.expectPay(q, b);
    const inFlight = post(`${inst.base}/lds/draw`, drawBody(q), bearerOf(b)).catch((err: unknown) => {
      if (err instanceof NetworkError) return null;
      throw err;
    });
    await new Promise((r) => setTimeout(r, op.delayMs));
    await pg.failover();
    const answered = await inFlight;
    let paid = answered?.status === 200;
    if (paid) model.applyDraw(q, b, checkPay(answered!, exp, q, 'paid draw answered across the failover')!);
    else if (answered) expectProblem(answered, 503, 'ledger-unavailable', 'paid draw in flight when the primary died');
    // The driver's own connection follows the promotion like the instances do.
    await reader?.close().catch(() => {});
    reader = await openLedger(settings, { migrate: false });
    if (answered?.status !== 200) {
      // Not acknowledged: committed or not (outcome unknown), but never changed after saying "none".
      const d = (await snapshot()).draws.find((x) => x.quote_id === q.id);
      if (d && answered?.body?.outcome === 'none') fail('failover', `a 503 said nothing changed (outcome none), yet draw ${d.draw_id} of its quote is in the ledger`);
      if (d) model.applyDraw(q, b, d.draw_id);
      paid = !!d;
    }
    await checkInvariants(); // every draw acknowledged before (and across) the failover is on the promoted server
    const retried = await untilLedgerAnswers(() => post(`${I(op.inst2).base}/lds/draw`, drawBody(q), bearerOf(b)), 'the retried paid draw after the failover');
    const id = checkPay(retried, model.expectPay(q, b), q, 'paid draw retried after the failover'); // a replay once paid
    if (!paid && id) model.applyDraw(q, b, id);
    for (const i of instances) {
      await untilLedgerAnswers(() => http(`${i.base}/lds/balance`, { headers: bearerOf(b) }), `a balance read at instance ${i.index} after the failover`);
      await read(i, b); // the instance has followed: its answer must be the model's
    }
    await verify('after a failover');
    return 'done';
  }

  /**
   * Repeats a request while it answers 503 ledger-unavailable (an instance finds the promoted server
   * on its next call after the old one failed it), for at most 30 s; then that answer stands.
   */
  async function untilLedgerAnswers(send: () => Promise<Answer>, what: string): Promise<Answer> {
    const end = Date.now() + 30_000;
    for (;;) {
      const a = await send();
      if (a.status !== 503 || slug(a) !== 'ledger-unavailable') return a;
      if (Date.now() > end) fail('failover', `${what}: still 503 ledger-unavailable 30 s after the promotion`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async function read(inst: Instance, b: number): Promise<void> {
    const a = await http(`${inst.base}/lds/balance`, { headers: bearerOf(b) });
    const bal = model.balances[b]!;
    if (a.status !== 200) fail('answer', `balance read: expected 200, got ${show(a)}`);
    if (a.body.balance !== money(bal.cents)) fail('answer', `balance read: ${a.body.balance}, model ${money(bal.cents)}`);
    const want = bal.lines.slice(-20).reverse();
    const got = a.body.statement as any[];
    const same =
      got.length === want.length &&
      want.every((l, i) => {
        const g = got[i];
        if (g.kind !== l.kind || g.amount !== (l.kind === 'draw' ? `-${money(l.cents)}` : money(l.cents))) return false;
        if (l.kind === 'draw') return g.quote_id === l.quoteId && g.id === l.drawId && g.draw_id === l.drawId;
        if (l.kind === 'refund') return g.id === l.correctionId && g.draw_id === l.drawId && g.reason === REFUND_REASON;
        return true;
      });
    if (!same) fail('statement', `statement of balance #${b}: ${JSON.stringify(got.map((s) => [s.kind, s.amount]))}, model ${JSON.stringify(want.map((l) => [l.kind, l.cents]))}`);
  }

  /** Kill an instance at a commit point, see what the ledger kept, restart it, and let the buyer retry. */
  async function crash(op: Extract<Op, { t: 'crash' }>): Promise<'done' | 'skipped'> {
    if (result.restarts >= o.maxRestarts) return 'skipped';
    const inst = I(op.inst);
    if (op.op === 'debit') {
      const b = balanceAt(op.target);
      if (b === null) return 'skipped';
      const product = env.products[op.product % env.products.length]!;
      const q = await quote(inst, product, { units: [product.refs[op.pick % product.refs.length]!] }, b);
      if (!q || model.balances[b]!.cents < q.cents) return 'skipped';
      const exp = model.expectPay(q, b);
      await inst.armCommit(op.point, 'debit', op.delayMs);
      let answered: Answer | null = null;
      try {
        answered = await post(`${inst.base}/lds/draw`, drawBody(q), bearerOf(b));
      } catch (err) {
        if (!(err instanceof NetworkError)) throw err;
      }
      if (answered && op.point !== 'during-commit') fail('fault', `the ${op.point} fault of a debit never fired; the draw was answered ${show(answered)}`);
      // during-commit dies a moment after the write was handed over: the answer may beat the kill.
      if (answered) model.applyDraw(q, b, checkPay(answered, exp, q, 'paid draw answered just before a crash')!);
      await killed(inst);
      const s = await snapshot(); // LevelDB: the ledger is free now; PostgreSQL: our own connection
      const d = s.draws.find((x) => x.quote_id === q.id);
      if (op.point === 'before-commit' && d) fail('crash', 'killed before the commit, yet the draw is in the ledger');
      if (op.point === 'after-commit' && !d) fail('crash', 'killed after the commit, yet the draw is not in the ledger');
      if (d && !answered) model.applyDraw(q, b, d.draw_id);
      await checkInvariants();
      await restart(inst);
      // The buyer never got an answer and retries the same paid draw.
      const a = await post(`${inst.base}/lds/draw`, drawBody(q), bearerOf(b));
      const id = checkPay(a, model.expectPay(q, b), q, `paid draw retried after a crash ${op.point}`);
      if (!d && id) model.applyDraw(q, b, id);
      return 'done';
    }
    const b = targetOf(op.target, true);
    const c = 500 + (op.pick % 500);
    const cred = await credentialFor(inst, money(c), b, spt());
    await inst.armCommit(op.point, 'credit', op.delayMs);
    let answered: Answer | null = null;
    try {
      answered = await post(`${inst.base}/lds/balance/topup`, { amount: money(c), currency: 'EUR' }, cred.headers);
    } catch (err) {
      if (!(err instanceof NetworkError)) throw err;
    }
    if (answered && op.point !== 'during-commit') fail('fault', `the ${op.point} fault of a credit never fired; the top-up was answered ${show(answered)}`);
    if (answered) credit(b, c, cred, checkTopupOk(answered, b, c, cred.challengeId, 'top-up answered just before a crash'), openedBy(answered));
    await killed(inst);
    const s = await snapshot();
    const t = s.topups.find((x) => x.challenge_id === cred.challengeId);
    if (op.point === 'before-commit' && t) fail('crash', 'killed before the commit, yet the top-up is in the ledger');
    if (op.point === 'after-commit' && !t) fail('crash', 'killed after the commit, yet the top-up is not in the ledger');
    if (t && !answered) credit(b, c, cred, undefined, b === 'new' ? { token: '', hash: t.token_hash } : undefined);
    await checkInvariants();
    await restart(inst);
    // The buyer resends the same credential.
    if (t) {
      // Answered again from the ledger (its challenge is still valid: the clock has not moved),
      // nothing credited twice - even while the dead instance's claim on the challenge lasts (PostgreSQL).
      await resendCredited(inst, model.credentials.find((x) => x.challengeId === cred.challengeId)!, true, `credential resent after a crash ${op.point} (credited)`);
      return 'done';
    }
    const a = await post(`${inst.base}/lds/balance/topup`, { amount: money(c), currency: 'EUR' }, cred.headers);
    if (env.backend === 'postgres') {
      // The dead instance holds the claim on the challenge for its lease: "in progress", nothing credited.
      expectProblem(a, 409, 'topup-in-progress', `credential resent after a crash ${op.point}`);
    } else {
      credit(b, c, cred, checkTopupOk(a, b, c, cred.challengeId, `credential resent after a crash ${op.point} (not credited)`), openedBy(a));
    }
    return 'done';
  }

  // ---- run

  let stepNo = 0;
  try {
    await timed('start', () => Promise.all(instances.map((i) => i.serve(serveEnv[i.index]!, model.clock))));
    if (settings.ledgerUrl) reader = await openLedger(settings, { migrate: false });
    for (stepNo = 0; stepNo < ops.length; stepNo++) {
      const op = ops[stepNo]!;
      const outcome = await timed(op.t, () => step(op));
      if (outcome === 'skipped') result.skipped++;
      else result.counts[op.t] = (result.counts[op.t] ?? 0) + 1;
      await timed('check', () => checkInvariants());
      if (o.verifyEvery > 0 && (stepNo + 1) % o.verifyEvery === 0) await timed('verify', () => verify(`step ${stepNo}`));
      result.steps = stepNo + 1;
    }
    await verify('end of history');
  } catch (err) {
    result.ok = false;
    result.steps = stepNo + 1;
    const check = err instanceof SimViolation ? err.check : err instanceof NetworkError ? 'availability' : 'error';
    result.violation = { step: stepNo, check, message: err instanceof Error ? err.message : String(err) };
    const dead = instances.filter((i) => !i.alive && i.log.trim());
    for (const i of dead) log(`instance ${i.index} log:\n${i.log.slice(-2000)}`);
  } finally {
    await reader?.close().catch(() => {});
    if (pg?.restartable && pgDown) await pg.startOnly!().catch(() => {}); // a failure while it was down
  }
  result.ms = Date.now() - t0;
  return result;
}

// ------------------------------------------------------------------------------------- shrinking

/**
 * The shortest failing history it can find within a budget: drops chunks of operations (halves,
 * quarters, ... single steps), keeping any removal after which the history still fails, and cuts
 * everything after the failing step. Every attempt is a full replay on fresh instances and a fresh
 * ledger, so the budget is counted in replays.
 */
export async function shrink(env: SimEnv, ops: Op[], failStep: number, o: RunOptions, budget: { runs: number; ms: number }): Promise<{ ops: Op[]; result: RunResult; runs: number }> {
  const t0 = Date.now();
  let cur = ops.slice(0, failStep + 1);
  let best: RunResult | null = null;
  let runs = 0;
  const out = () => runs >= budget.runs || Date.now() - t0 > budget.ms;
  let chunk = Math.max(1, Math.floor(cur.length / 2));
  while (!out()) {
    let removed = false;
    for (let i = 0; i < cur.length && !out(); ) {
      const cand = [...cur.slice(0, i), ...cur.slice(i + chunk)];
      if (cand.length === 0) {
        i += chunk;
        continue;
      }
      runs++;
      const r = await runHistory(env, cand, { ...o, log: () => {} });
      if (!r.ok && r.violation) {
        cur = cand.slice(0, r.violation.step + 1);
        best = r;
        removed = true;
      } else i += chunk;
    }
    if (!removed) {
      if (chunk === 1) break;
      chunk = Math.max(1, Math.floor(chunk / 2));
    }
  }
  if (!best) best = await runHistory(env, cur, { ...o, log: () => {} });
  return { ops: cur, result: best, runs };
}
