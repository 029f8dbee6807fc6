// The PostgreSQL ledger's connections: which server they go to, how long a ledger call may take, and
// what a caller may assume when one fails. postgres/ledger.ts sends every statement through here.
//
// WHICH SERVER IS WRITABLE. The URL names one server or several (libpq's multi-host form, hosts.ts).
// One of them is "in use" at a time, with its own pool of connections. It is chosen as libpq chooses:
// the hosts in the order written (each DNS address of a name in turn), the first whose new
// connection passes the check target_session_attrs asks for - read-write: `transaction_read_only`
// is off (not a standby, default_transaction_read_only off); primary: not in recovery; read-only,
// standby, prefer-standby (standbys first, else any), any. Every later connection to it is checked
// the same way before its first use. The choice is dropped, and the next call walks the list again,
// when a connection breaks or times out, a statement is refused as read-only (25006), the server is
// shutting down or starting (57P01–57P03, 08*), or a check fails: so a standby promoted after the
// primary died is found by the first call after the old primary stopped answering, without a restart.
// The service asks for read-write (a URL without target_session_attrs gets it); a server only
// becomes writable by promotion, which the operator or the HA manager decides, never this code.
//
// BOUNDED WAITS. Every call (`call`) ends within the query timeout, measured here by a timer of the
// client's: the wait for a pool connection, connecting and checking a server, every statement and the
// commit - including a commit the server holds while it waits for a synchronous standby, which
// statement_timeout does not cut. When the timer fires during a statement, that connection is
// destroyed at once (its socket closed), never returned to the pool and never reused.
// The server's own bounds (statement_timeout, and idle_in_transaction_session_timeout in a
// transaction of several statements) are set by each transaction for itself (SET LOCAL, in the same
// message as its first statement: inline.ts says why), never at connection start nor per session:
// so they hold through a pooler in transaction mode, which hands each transaction any server connection.
//
// WHAT A CALLER MAY ASSUME after a failure (LedgerUnavailableError.outcome):
//   'none'     nothing changed: the call failed before a committing statement was sent, or the server
//              answered it with an error (the statement or transaction rolled back: 25006, 40001, 57014, …);
//   'unknown'  a committing statement (a one-statement change, or COMMIT) was sent and no answer came:
//              timed out, connection lost, server terminated mid-commit. It may have committed. Every
//              change of the ledger is keyed (quote_id, MPP challenge, payment, idempotency key), so
//              repeating the same request is safe: it finds the committed change, or makes it once.
// Serialization failures and deadlocks (40001, 40P01) are retried inside the call, within its bound.
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import pg from 'pg';
import { LedgerUnavailableError, type LoggerLike } from '../ledger.ts';
import { hostLabel, parsePgUrl, type HostPort, type TargetSessionAttrs } from './hosts.ts';
import { inlineParams, lastResult, localTimeouts } from './inline.ts';

export interface ConnectionsOptions {
  url: string;
  /** When the URL names no target_session_attrs. */
  defaultTarget: TargetSessionAttrs;
  /** Connections per server (LDS_PG_POOL_SIZE). */
  poolSize: number;
  /** The bound of every call, measured by the client (LDS_PG_QUERY_TIMEOUT_MS). */
  queryTimeoutMs: number;
  /** Server-side statement_timeout (LDS_PG_STATEMENT_TIMEOUT_MS): a slow statement ends with a known outcome first. */
  statementTimeoutMs: number;
  /** Safe to log (no password). */
  location: string;
  logger?: LoggerLike;
  /** Tests only: the addresses of a host name (default: the system resolver, every address). */
  resolve?: (host: string) => Promise<string[]>;
}

/** The server in use and what its last check found (GET /readyz, the metrics). */
export interface ServerInUse {
  server: string;
  writable: boolean;
  standby: boolean;
}

export interface QueryOptions {
  /** its answer says whether a change committed: a one-statement change, or COMMIT */
  commits?: boolean;
}

/** One statement of a call: runs within the call's bound, retried after 40001/40P01. */
export type Query = <R extends pg.QueryResultRow = Record<string, unknown>>(sql: string, params?: unknown[], o?: QueryOptions) => Promise<pg.QueryResult<R>>;

/** Retries of a statement or transaction rolled back by a serialization failure or deadlock. */
const MAX_ATTEMPTS = 8;
/** Connecting to one server and checking it, when the URL gives no connect_timeout. */
const DEFAULT_CONNECT_TIMEOUT_MS = 2000;
/** How long a readiness probe may take. */
const PROBE_TIMEOUT_MS = 2000;
const CHECK_SQL = "SELECT pg_is_in_recovery() AS standby, current_setting('transaction_read_only') = 'on' AS read_only";

/** Whether a server in this state is what `wanted` asks for (libpq's rules). */
function acceptable(wanted: TargetSessionAttrs, s: { standby: boolean; readOnly: boolean }): boolean {
  switch (wanted) {
    case 'any':
      return true;
    case 'read-write':
      return !s.readOnly;
    case 'read-only':
      return s.readOnly;
    case 'primary':
      return !s.standby;
    case 'standby':
    case 'prefer-standby':
      return s.standby;
  }
}

function describe(s: { standby: boolean; readOnly: boolean }): string {
  return s.standby ? 'a standby (in recovery)' : s.readOnly ? 'a primary with default_transaction_read_only on' : 'a writable primary';
}

class ServerRejected extends Error {}
/** The call's bound ran out while it waited (for a server, a connection, or an answer). */
class Expired extends Error {}

/**
 * Errors that came from the database or the driver (a statement, a connection attempt): only these
 * are classified below. Anything else a transaction's body or a session throws (a bug, an import
 * file's mistake) passes through unchanged.
 */
const fromDatabase = new WeakSet<object>();
function tagged(err: unknown): unknown {
  if (err && typeof err === 'object') fromDatabase.add(err);
  return err;
}
const isOurs = (err: unknown) => err instanceof Expired || err instanceof ServerRejected || (!!err && typeof err === 'object' && fromDatabase.has(err));
/** Connections whose socket broke (their 'error' event fired): never reused. */
const broken = new WeakSet<object>();

function sqlState(err: unknown): string | undefined {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** The connection itself is gone (no SQLSTATE: a socket error; or a FATAL / PANIC from the server). */
function connectionLost(err: unknown): boolean {
  if (!isOurs(err) || err instanceof ServerRejected) return false;
  if (sqlState(err) === undefined) return true;
  const severity = (err as { severity?: string }).severity;
  return severity === 'FATAL' || severity === 'PANIC';
}

/** pg-pool's own refusal when no connection came free within connectionTimeoutMillis (the pool is busy, not the server bad). */
function poolWaitTimedOut(err: unknown): boolean {
  return (err as Error)?.message === 'timeout exceeded when trying to connect';
}

/** Errors after which the server in use is dropped and the next call walks the host list again. */
function leavesServer(err: unknown): boolean {
  if (err instanceof Expired || err instanceof ServerRejected) return true;
  if (!isOurs(err) || poolWaitTimedOut(err)) return false;
  const code = sqlState(err);
  return connectionLost(err) || code === '25006' || code === '57P01' || code === '57P02' || code === '57P03' || code?.startsWith('08') === true;
}

/**
 * Whether an error means "the database cannot be used right now" (503): anything that leaves the
 * server, a busy pool, and the classes 53 (resources), 57 (operator intervention, statement timeout)
 * and 58 (system error). Anything else (a constraint, a bug) is not the database being unavailable.
 */
function unavailable(err: unknown): boolean {
  if (!isOurs(err)) return false;
  const code = sqlState(err);
  const cls = code?.slice(0, 2);
  return leavesServer(err) || poolWaitTimedOut(err) || cls === '53' || cls === '57' || cls === '58' || POOLER_MIXUPS.has(code!);
}

/**
 * A prepared statement that "does not exist" (26000) or "already exists" (42P05): the ledger prepares
 * none, but a pooler between it and the server may (PgBouncer with max_prepared_statements). The
 * statement did not run: nothing changed, and the request is safe to repeat (503, never a 500).
 */
const POOLER_MIXUPS = new Set(['26000', '42P05']);

function why(err: unknown): string {
  const code = sqlState(err);
  return `${(err as Error)?.message ?? String(err)}${code ? ` (SQLSTATE ${code})` : ''}`;
}

const swallow = () => {};

/** One server of the list (one address of one host) and its pool. */
class Server {
  readonly pool: pg.Pool;
  readonly label: string;
  state: { standby: boolean; readOnly: boolean } | null = null;

  constructor(
    host: HostPort,
    address: string,
    config: pg.PoolConfig,
    readonly wanted: TargetSessionAttrs,
    private readonly checkTimeoutMs: number,
    onIdleError: (err: Error) => void,
  ) {
    this.label = address === host.host ? hostLabel(host) : `${hostLabel(host)} (${address})`;
    this.pool = new pg.Pool({ ...config, onConnect: (client) => this.check(client) });
    // An idle connection that dies (a restart) is reported here; the pool drops it and opens a new
    // one on demand. Without a listener Node would treat it as an uncaught error.
    this.pool.on('error', onIdleError);
  }

  /** Every new connection, before its first use: is this server what the caller asked for? */
  private async check(client: pg.ClientBase): Promise<void> {
    client.on('error', () => broken.add(client)); // a checked-out connection that breaks fails its query instead
    const timer = setTimeout(() => destroy(client), this.checkTimeoutMs);
    try {
      const row = (await client.query<{ standby: boolean; read_only: boolean }>(CHECK_SQL)).rows[0]!;
      this.state = { standby: row.standby, readOnly: row.read_only };
    } finally {
      clearTimeout(timer);
    }
    if (!acceptable(this.wanted, this.state)) throw new ServerRejected(`is ${describe(this.state)}, not ${this.wanted}`);
  }

  private ending: Promise<void> | null = null;

  /** Closes the pool: idle connections now, the others as they come back. */
  end(): Promise<void> {
    return (this.ending ??= this.pool.end().catch(swallow));
  }
}

/** Closes a connection's socket now: whatever it was waiting for is abandoned, and it is never reused. */
function destroy(client: pg.ClientBase): void {
  (client as unknown as { connection: { stream: { destroy(): void } } }).connection.stream.destroy();
}

export class Connections {
  private readonly hosts: HostPort[];
  private readonly target: TargetSessionAttrs;
  private readonly loadBalance: boolean;
  private readonly connectTimeoutMs: number;
  private readonly clientConfig: (host: HostPort, address: string) => pg.ClientConfig;
  /** The server in use (null: the next call walks the host list). */
  current: Server | null = null;
  private walking: Promise<Server> | null = null;
  private closed = false;
  /** Running totals for the metrics (payments/metrics.ts). */
  readonly stats = { retries: 0, unavailable: 0, unknownOutcomes: 0, switches: 0 };
  private lastLabel: string | null = null;
  /** What every one-statement call sends first (its server-side bound), written once. */
  private readonly statementPrefix: string;

  constructor(private readonly o: ConnectionsOptions) {
    const parsed = parsePgUrl(o.url);
    this.hosts = parsed.hosts;
    this.target = parsed.targetSessionAttrs ?? o.defaultTarget;
    this.loadBalance = parsed.loadBalanceHosts === 'random';
    this.connectTimeoutMs = Math.min(parsed.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS, o.queryTimeoutMs);
    this.clientConfig = parsed.clientConfig;
    this.statementPrefix = localTimeouts(o.statementTimeoutMs);
  }

  /** The server in use, or null while none is (before the first call, after one was dropped). */
  inUse(): ServerInUse | null {
    const s = this.current;
    if (!s?.state) return null;
    return { server: s.label, writable: !s.state.readOnly, standby: s.state.standby };
  }

  /** Pool figures of the server in use, for the metrics. */
  poolFigures(): { total: number; idle: number; waiting: number; max: number } {
    const p = this.current?.pool;
    return { total: p?.totalCount ?? 0, idle: p?.idleCount ?? 0, waiting: p?.waitingCount ?? 0, max: this.o.poolSize };
  }

  /**
   * One ledger call: `fn` runs its statements through `query` (or one `transaction`), all within the
   * query timeout. Failures come out as LedgerUnavailableError with the outcome the caller may assume.
   */
  async call<T>(fn: (query: Query, transaction: <U>(body: (query: Query) => Promise<U>) => Promise<U>) => Promise<T>, o: { timeoutMs?: number; quiet?: boolean } = {}): Promise<T> {
    if (this.closed) throw new LedgerUnavailableError('ledger is closed');
    const call = new Call(this, o.timeoutMs ?? this.o.queryTimeoutMs, o.quiet === true, this.statementPrefix);
    try {
      return await fn(call.query, call.transaction);
    } finally {
      call.done();
    }
  }

  /**
   * A connection of the server in use, without the query timeout, for work that takes as long as it
   * takes (an export of the whole ledger, an import, migrations): still walks the host list first.
   */
  async session<T>(fn: (client: pg.PoolClient, pool: pg.Pool) => Promise<T>): Promise<T> {
    if (this.closed) throw new LedgerUnavailableError('ledger is closed');
    const server = await this.server();
    let client: pg.PoolClient;
    try {
      client = await server.pool.connect();
    } catch (err) {
      throw this.failure(server, tagged(err), { committing: false, timeoutMs: 0, quiet: false });
    }
    let lost: Error | undefined;
    try {
      return await fn(client, server.pool);
    } catch (err) {
      if (err instanceof pg.DatabaseError || broken.has(client)) tagged(err);
      if (connectionLost(err)) lost = err as Error;
      throw this.failure(server, err, { committing: false, timeoutMs: 0, quiet: false });
    } finally {
      client.release(lost);
    }
  }

  /**
   * Readiness: the server in use answers the check within 2 s and is what the target asks for (the
   * service: writable). Null when ready, else a short reason. A server found not to be what is asked
   * for is dropped, so the next call walks the list. Not counted as unavailability and not logged as
   * an error: a probe every few seconds while the database is down would only repeat itself.
   */
  async probe(): Promise<string | null> {
    if (this.closed) return 'ledger is closed';
    try {
      return await this.call(async (query) => {
        const row = (await query<{ standby: boolean; read_only: boolean }>(CHECK_SQL)).rows[0]!;
        const s = this.current;
        const state = { standby: row.standby, readOnly: row.read_only };
        if (s) s.state = state;
        if (acceptable(s?.wanted ?? this.target, state)) return null;
        if (s) this.leave(s, `it is now ${describe(state)}`);
        return row.standby ? 'database is a read-only standby' : `database is ${describe(state)}`;
      }, { timeoutMs: Math.min(PROBE_TIMEOUT_MS, this.o.queryTimeoutMs), quiet: true });
    } catch (err) {
      return err instanceof LedgerUnavailableError ? err.reason : `database: ${why(err)}`;
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    const s = this.current;
    this.current = null;
    await s?.end();
  }

  // ---------------------------------------------------------------- choosing a server

  /** The server in use, or the one a walk of the host list finds. */
  server(): Promise<Server> {
    if (this.current) return Promise.resolve(this.current);
    // One walk at a time: every call waiting for a server waits for the same one.
    return (this.walking ??= this.walk().finally(() => {
      this.walking = null;
    }));
  }

  private async walk(): Promise<Server> {
    const failures: string[] = [];
    // prefer-standby: a standby if any host has one, else any server (libpq's two passes).
    const passes: TargetSessionAttrs[] = this.target === 'prefer-standby' ? ['standby', 'any'] : [this.target];
    for (const wanted of passes) {
      for (const host of this.order()) {
        let addresses: string[];
        try {
          addresses = host.host.startsWith('/') || isIP(host.host) ? [host.host] : await (this.o.resolve ?? resolve)(host.host);
        } catch (err) {
          failures.push(`${hostLabel(host)}: ${(err as Error).message}`);
          continue;
        }
        for (const address of addresses) {
          if (this.closed) throw new LedgerUnavailableError('ledger is closed');
          const server = this.newServer(host, address, wanted);
          try {
            (await server.pool.connect()).release();
            if (this.closed) {
              await server.end();
              throw new LedgerUnavailableError('ledger is closed');
            }
            this.use(server);
            return server;
          } catch (err) {
            if (err instanceof LedgerUnavailableError) throw err;
            failures.push(`${server.label} ${err instanceof ServerRejected ? err.message : `did not connect: ${why(err)}`}`);
            void server.end();
          }
        }
      }
    }
    const what = this.target === 'any' ? 'reachable' : this.target === 'read-write' ? 'writable' : `${this.target}`;
    throw new LedgerUnavailableError(`no ${this.hosts.length > 1 ? `server of ${this.hosts.length}` : 'server'} is ${what}: ${failures.join('; ')}`);
  }

  private order(): HostPort[] {
    if (!this.loadBalance) return this.hosts;
    const list = [...this.hosts];
    for (let i = list.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [list[i], list[j]] = [list[j]!, list[i]!];
    }
    return list;
  }

  private newServer(host: HostPort, address: string, wanted: TargetSessionAttrs): Server {
    const config: pg.PoolConfig = {
      application_name: 'lds-payments',
      ...this.clientConfig(host, address),
      max: this.o.poolSize,
      connectionTimeoutMillis: this.connectTimeoutMs,
      idleTimeoutMillis: 30_000,
      // No statement_timeout or other setting at connection start: PgBouncer's default
      // configuration refuses them (08P01 "unsupported startup parameter"), and through a pooler
      // in transaction mode they would not stay with this client anyway. Each transaction sets its
      // own (Call below). application_name is one PgBouncer accepts and passes on.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
    };
    return new Server(host, address, config, wanted, this.connectTimeoutMs, (err) => this.o.logger?.warn({ err: err.message, ledger: this.o.location }, 'ledger: idle database connection lost'));
  }

  private use(server: Server): void {
    this.current = server;
    if (this.lastLabel !== null && this.lastLabel !== server.label) this.stats.switches++;
    if (this.lastLabel !== server.label) this.o.logger?.info({ ledger: this.o.location, server: server.label, state: server.state ? describe(server.state) : 'unchecked' }, 'ledger: using database server');
    this.lastLabel = server.label;
  }

  /** Drops a server: the next call walks the host list again. Its pool closes as its connections come back. */
  leave(server: Server, reason: string): void {
    if (this.current === server) {
      this.current = null;
      this.o.logger?.warn({ ledger: this.o.location, server: server.label, reason }, 'ledger: leaving database server; the next call looks for one again');
    }
    void server.end();
  }

  /**
   * The error a call throws for `err`, leaving the server when the error says it is unusable;
   * counted and logged unless `quiet` (the readiness probe).
   */
  failure(server: Server | null, err: unknown, o: { committing: boolean; timeoutMs: number; quiet: boolean }): unknown {
    if (!(err instanceof LedgerUnavailableError) && !unavailable(err)) return err;
    if (server && leavesServer(err)) this.leave(server, err instanceof Expired ? `no answer within ${o.timeoutMs} ms` : why(err));
    const outcome = err instanceof LedgerUnavailableError ? err.outcome : o.committing && (err instanceof Expired || connectionLost(err)) ? 'unknown' : 'none';
    const failed =
      err instanceof LedgerUnavailableError ? err : new LedgerUnavailableError(err instanceof Expired ? `no answer from the database within ${o.timeoutMs} ms` : `database: ${why(err)}`, { cause: err, outcome });
    if (o.quiet) return failed;
    this.stats.unavailable++;
    if (outcome === 'unknown') this.stats.unknownOutcomes++;
    this.o.logger?.error({ err: failed.reason, ledger: this.o.location, ...(server ? { server: server.label } : {}), outcome }, 'ledger: database unavailable');
    return failed;
  }

  retried(): void {
    this.stats.retries++;
  }
}

/** Every address of a host name, in the resolver's order (libpq tries each in turn). */
async function resolve(host: string): Promise<string[]> {
  const found = await lookup(host, { all: true });
  return [...new Set(found.map((a) => a.address))];
}

/**
 * One call's bound: a timer started when the call starts. When it fires, a wait in progress (for a
 * server or a connection) is abandoned and a statement in flight has its connection destroyed. A
 * call runs one statement at a time (the ledger awaits each), so one slot of each is enough.
 */
class Call {
  private readonly timer: NodeJS.Timeout;
  private expired = false;
  /** the connection a statement is running on now */
  private client: pg.PoolClient | null = null;
  private abortWait: ((err: Error) => void) | null = null;

  constructor(
    private readonly db: Connections,
    private readonly timeoutMs: number,
    private readonly quiet: boolean,
    /** `SET LOCAL statement_timeout = …; ` (or nothing) */
    private readonly statementPrefix: string,
  ) {
    this.timer = setTimeout(() => this.expire(), timeoutMs);
  }

  /** failure() with this call's bound and voice. */
  private failed(server: Server | null, err: unknown, committing: boolean): unknown {
    return this.db.failure(server, err, { committing, timeoutMs: this.timeoutMs, quiet: this.quiet });
  }

  done(): void {
    clearTimeout(this.timer);
  }

  private expire(): void {
    this.expired = true;
    if (this.client) destroy(this.client);
    this.abortWait?.(new Expired());
  }

  /**
   * `p`, unless the bound runs out first. What `p` gives too late is handed to `late`, or its error to
   * `lateError`: a connection goes back to its pool, a failed connection attempt still counts.
   */
  private wait<T>(p: Promise<T>, late?: (v: T) => void, lateError?: (err: unknown) => void): Promise<T> {
    if (this.expired) {
      p.then(late, lateError ?? swallow);
      return Promise.reject(new Expired());
    }
    return new Promise<T>((resolve, reject) => {
      this.abortWait = reject;
      p.then(
        (v) => {
          this.abortWait = null;
          if (this.expired) late?.(v);
          else resolve(v);
        },
        (err) => {
          this.abortWait = null;
          if (this.expired) lateError?.(err);
          else reject(err);
        },
      );
    });
  }

  /**
   * A connection of the server in use (walking the list when there is none), within the bound. Only
   * the bound running out while waiting does not drop the server (the pool is busy, or a walk is
   * under way); a connection attempt that fails, even after the bound, does.
   */
  private async acquire(): Promise<{ server: Server; client: pg.PoolClient }> {
    let server = this.db.current;
    if (!server) {
      try {
        server = await this.wait(this.db.server());
      } catch (err) {
        throw this.failed(null, tagged(err), false);
      }
    }
    try {
      const client = await this.wait(
        server.pool.connect(),
        releaseLate,
        (err) => void this.db.failure(server, tagged(err), { committing: false, timeoutMs: this.timeoutMs, quiet: true }),
      );
      return { server, client };
    } catch (err) {
      throw this.failed(err instanceof Expired ? null : server, tagged(err), false);
    }
  }

  /**
   * Sends `text` (one Query message: inline.ts) on `client`, within the bound; the answer of its
   * last statement. Its errors are tagged as the database's.
   */
  private async run<R extends pg.QueryResultRow>(client: pg.PoolClient, text: string): Promise<pg.QueryResult<R>> {
    if (this.expired) throw new Expired();
    this.client = client;
    try {
      return lastResult<R>(await client.query<R>(text));
    } catch (err) {
      throw this.expired ? new Expired() : tagged(err);
    } finally {
      this.client = null;
    }
  }

  readonly query: Query = async <R extends pg.QueryResultRow>(sql: string, params?: unknown[], o?: QueryOptions): Promise<pg.QueryResult<R>> => {
    for (let attempt = 1; ; attempt++) {
      const { server, client } = await this.acquire();
      try {
        // One statement, one implicit transaction that sets its own statement_timeout.
        const r = await this.run<R>(client, this.statementPrefix + inlineParams(sql, params));
        client.release();
        return r;
      } catch (err) {
        // A connection that broke, timed out or left a commit unanswered is never reused.
        client.release(connectionLost(err) || err instanceof Expired ? (err as Error) : undefined);
        if (retryable(err) && attempt < MAX_ATTEMPTS && !this.expired) {
          this.db.retried();
          await backoff(attempt);
          continue;
        }
        throw this.failed(server, err, o?.commits === true);
      }
    }
  };

  /**
   * One READ COMMITTED transaction on one connection: BEGIN, `body`, COMMIT. A unique violation (a
   * concurrent duplicate), serialization failure or deadlock rolls it back and runs it again, so the
   * retry reads what won. Only COMMIT can leave the outcome unknown: a connection lost before it
   * rolls the transaction back.
   */
  readonly transaction = async <U>(body: (query: Query) => Promise<U>): Promise<U> => {
    for (let attempt = 1; ; attempt++) {
      const { server, client } = await this.acquire();
      let committing = false;
      const onClient: Query = (sql, params) => this.run(client, inlineParams(sql, params));
      try {
        // A transaction idle longer than a whole call may last belongs to a call that gave up.
        await this.run(client, `BEGIN; ${this.statementPrefix}${localTimeouts(0, this.timeoutMs)}`);
        const out = await body(onClient);
        committing = true;
        await this.run(client, 'COMMIT');
        client.release();
        return out;
      } catch (err) {
        const lost = connectionLost(err) || err instanceof Expired;
        if (!lost && !committing) await client.query('ROLLBACK').catch(swallow);
        client.release(lost ? (err as Error) : undefined);
        const code = sqlState(err);
        if ((code === '23505' || retryable(err)) && attempt < MAX_ATTEMPTS && !this.expired && !committing) {
          this.db.retried();
          await backoff(attempt);
          continue;
        }
        throw this.failed(server, err, committing);
      }
    }
  };
}

/** A connection that came after its call gave up waiting goes back to its pool. */
const releaseLate = (c: pg.PoolClient) => c.release();

function retryable(err: unknown): boolean {
  const code = sqlState(err);
  return code === '40001' || code === '40P01';
}

/** Full jitter: 0..(5 ms × 2^attempt), capped at 200 ms. */
function backoff(attempt: number): Promise<void> {
  return new Promise((r) => setTimeout(r, Math.random() * Math.min(200, 5 * 2 ** attempt)));
}
