// Service configuration (the README's table): each setting from a flag, then the environment, then
// a default. Secrets are never defaults: a local start generates them once under
// var/secrets (mode 0600) so restarts keep quotes and MPP challenges valid; production
// (NODE_ENV=production) must supply them and may not use the sandbox processor.
import { randomBytes } from 'node:crypto';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { privateDir } from '../contract/private-dir.ts';
import { join, resolve } from 'node:path';
import { isPostgresUrl } from './ledger/open.ts';
import { parsePgUrl } from './ledger/postgres/hosts.ts';
import { DEFAULT_QUERY_TIMEOUT_MS, defaultStatementTimeoutMs } from './ledger/postgres/defaults.ts';
import { generateReceiptKey, ReceiptKeyError, ReceiptSigner } from './receipts.ts';
import { parseAmountCents } from '../contract/money.ts';
import { DEFAULT_MAX_ADJUSTMENT_CENTS } from '../contract/limits.ts';
import { defaultSearchThreads } from './store/search-settings.ts';

export type ProcessorName = 'sandbox' | 'stripe';

export interface ServiceConfig {
  port: number;
  host: string;
  production: boolean;
  distDir: string;
  varDir: string;
  storeRoot: string;
  ledgerDir: string;
  /** postgres://… : the PostgreSQL ledger (any number of instances); unset: LevelDB in ledgerDir. */
  ledgerUrl?: string;
  /** PostgreSQL connections per instance. */
  pgPoolSize: number;
  /**
   * Every PostgreSQL ledger call ends within this, measured by the service (pool wait, connecting,
   * statements, the commit - also one waiting for a synchronous standby); then 503.
   */
  pgQueryTimeoutMs: number;
  /** PostgreSQL statement timeout (server side, below the query timeout): a slow statement fails with a known outcome first. */
  pgStatementTimeoutMs: number;
  secretsDir: string;
  /** HMAC key of stateless quotes (>= 32 bytes). */
  quoteSecret: Buffer;
  /** mppx server secret key: binds MPP challenges to this service (>= 32 bytes). */
  mppSecret: string;
  processor: ProcessorName;
  quoteTtlSeconds: number;
  /**
   * How often the service looks for a newly published build (a new store named by CURRENT and its
   * dist/), besides watching both folders; 0: only on SIGHUP (payments/release/releases.ts).
   */
  releaseCheckMs: number;
  /** Threads one search may use, the serving one included (LDS_SEARCH_THREADS; default 2 where there are 2 cores; payments/store/search-threads.ts). */
  searchThreads?: number;
  /** Token bucket per client address on the API routes: refill per second and capacity. 0 disables. */
  rateLimitPerSecond: number;
  rateLimitBurst: number;
  /** Token bucket per balance token (a second bucket beside the address one). 0 disables. */
  rateLimitTokenPerSecond: number;
  rateLimitTokenBurst: number;
  trustProxy: boolean;
  logLevel: string;
  /** How long SIGTERM waits for in-flight requests before closing anyway. */
  shutdownGraceMs: number;
  /** A client must finish sending the request headers within this time (slow-header attacks). */
  headersTimeoutMs: number;
  /** ... and the whole request, body included, within this time; else 408 and the connection closes. */
  requestTimeoutMs: number;
  /** Bearer token of the admin API (credits, refunds, revocations): at least 32 bytes. */
  operatorToken: string;
  /** Bearer token of GET /metrics alone (the scraper's, read-only): at least 32 bytes, never the operator token in production. */
  metricsToken: string;
  /** Ed25519 JWKs of signed receipts: the first signs, the rest are retired keys still published (payments/receipts.ts). */
  receiptKeys: unknown[];
  /** Where this instance appends every receipt it signs (payments/receipt-log.ts); unset: no log. */
  receiptLog?: string;
  /** Largest single operator adjustment (credit or debit), in cents (LDS_MAX_ADJUSTMENT; default the top-up maximum). */
  maxAdjustmentCents: number;
}

export const MIN_SECRET_BYTES = 32;

export class ConfigError extends Error {}


/** An amount setting such as "10000.00" (EUR, at most two decimals, > 0), in cents. */
function amountSetting(env: NodeJS.ProcessEnv, name: string, dflt: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const cents = parseAmountCents(raw);
  if (cents === null || cents <= 0) throw new ConfigError(`${name} must be a positive amount in EUR with at most two decimals, e.g. "10000.00": ${raw}`);
  return cents;
}

function intSetting(env: NodeJS.ProcessEnv, name: string, dflt: number, min: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min) throw new ConfigError(`${name} must be an integer >= ${min}: ${raw}`);
  return n;
}

/** A secret is its string's bytes as given (a generated one is 64 hex characters); at least 32 bytes. */
export function decodeSecret(name: string, raw: string): Buffer {
  const buf = Buffer.from(raw.trim(), 'utf8');
  if (buf.length < MIN_SECRET_BYTES) throw new ConfigError(`${name} must be at least ${MIN_SECRET_BYTES} bytes; got ${buf.length}`);
  return buf;
}

/** Reads a local secret, creating it (32 random bytes, hex, mode 0600) on first start; its folder is made owner-only. */
/** The file under the secrets folder holding the operator token a local start generated (`lds admin` reads it too). */
export const OPERATOR_TOKEN_FILE = 'operator.token';
/** The file under the secrets folder holding the scrape token (GET /metrics) a local start generated. */
export const METRICS_TOKEN_FILE = 'metrics.token';

async function localSecret(dir: string, file: string): Promise<Buffer> {
  const path = join(dir, file);
  await privateDir(dir);
  try {
    return decodeSecret(path, await readFile(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const secret = Buffer.from(randomBytes(MIN_SECRET_BYTES).toString('hex'), 'utf8');
  // 'wx': if two processes start at once, one wins and the other reads the winner's secret.
  try {
    await writeFile(path, secret.toString('utf8') + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return decodeSecret(path, await readFile(path, 'utf8'));
    throw err;
  }
  await chmod(path, 0o600);
  return secret;
}

/**
 * The receipt signing keys: LDS_RECEIPT_KEYS (a JSON array of Ed25519 JWKs, the first signs), or
 * the file LDS_RECEIPT_KEYS_FILE holding that array; production must give one of them; a local
 * start generates one key in <secrets>/receipt-keys.json (mode 0600) and keeps it across restarts.
 */
async function receiptKeys(env: NodeJS.ProcessEnv, production: boolean, dir: string): Promise<unknown[]> {
  const parse = (name: string, text: string): unknown[] => {
    let list: unknown;
    try {
      list = JSON.parse(text);
    } catch {
      throw new ConfigError(`${name} must hold a JSON array of Ed25519 JWKs`);
    }
    try {
      ReceiptSigner.fromJwks(list); // refuse a bad key at start, not at the first receipt
    } catch (err) {
      if (err instanceof ReceiptKeyError) throw new ConfigError(`${name}: ${err.message}`);
      throw err;
    }
    return list as unknown[];
  };
  if (env.LDS_RECEIPT_KEYS) return parse('LDS_RECEIPT_KEYS', env.LDS_RECEIPT_KEYS);
  if (env.LDS_RECEIPT_KEYS_FILE) return parse('LDS_RECEIPT_KEYS_FILE', await readFile(env.LDS_RECEIPT_KEYS_FILE, 'utf8'));
  if (production) throw new ConfigError('NODE_ENV=production requires LDS_RECEIPT_KEYS or LDS_RECEIPT_KEYS_FILE (a JSON array of Ed25519 JWKs; `npx lds receipt keygen` makes one)');
  const path = join(dir, 'receipt-keys.json');
  await privateDir(dir);
  try {
    return parse(path, await readFile(path, 'utf8'));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  try {
    await writeFile(path, JSON.stringify([generateReceiptKey()]) + '\n', { mode: 0o600, flag: 'wx' });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  return parse(path, await readFile(path, 'utf8'));
}

export interface ConfigFlags {
  port?: number;
  host?: string;
}

/**
 * Where the build output and the data live. One rule for the service, `serve`'s build-if-missing,
 * `build`'s defaults and `ledger verify`, so they all find the same folders.
 */
export function dataPaths(env: NodeJS.ProcessEnv = process.env) {
  const varDir = resolve(env.LDS_VAR_DIR || 'var');
  return {
    distDir: resolve(env.LDS_DIST_DIR || 'dist'),
    varDir,
    storeRoot: resolve(env.LDS_STORE_DIR || join(varDir, 'store')),
    ledgerDir: resolve(env.LDS_LEDGER_DIR || join(varDir, 'ledger')),
    ledgerUrl: env.LDS_LEDGER_URL || undefined,
    secretsDir: resolve(env.LDS_SECRETS_DIR || join(varDir, 'secrets')),
  };
}

/**
 * Request timeouts. Every request body here is at most 16 KiB, so an honest client, even on a
 * slow mobile link, sends headers and body within a second or two: 10 s for the headers and 15 s
 * for the whole request leave wide room for that while bounding how long a slow or truncated
 * request can hold a connection (the server checks once a second, so a 408 comes within a second
 * of the limit). Node requires the header limit not to exceed the request limit.
 */
export function requestTimeouts(env: NodeJS.ProcessEnv): { headersTimeoutMs: number; requestTimeoutMs: number } {
  const requestTimeoutMs = intSetting(env, 'LDS_REQUEST_TIMEOUT_MS', 15_000, 100);
  const headersTimeoutMs = intSetting(env, 'LDS_HEADERS_TIMEOUT_MS', Math.min(10_000, requestTimeoutMs), 100);
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError(`LDS_HEADERS_TIMEOUT_MS (${headersTimeoutMs}) must not exceed LDS_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`);
  return { headersTimeoutMs, requestTimeoutMs };
}

/**
 * The service's PostgreSQL URL: libpq's form, one server or several; the service writes, so it may
 * settle only on a server that takes writes (target_session_attrs read-write - the default -,
 * primary, or any).
 */
function checkLedgerUrl(url: string): void {
  if (!isPostgresUrl(url)) throw new ConfigError('LDS_LEDGER_URL must be a postgres:// (or postgresql://) URL');
  let attrs: string | undefined;
  try {
    attrs = parsePgUrl(url).targetSessionAttrs;
  } catch (err) {
    throw new ConfigError(`LDS_LEDGER_URL: ${(err as Error).message}`);
  }
  if (attrs === 'read-only' || attrs === 'standby' || attrs === 'prefer-standby') throw new ConfigError(`LDS_LEDGER_URL: target_session_attrs=${attrs} would settle on a server that refuses writes; the service writes: use read-write (the default when it is left out), primary or any`);
}

/** The service's bound of a ledger call, and the server's statement timeout below it (postgres/defaults.ts says why). */
export function pgTimeouts(env: NodeJS.ProcessEnv): { pgQueryTimeoutMs: number; pgStatementTimeoutMs: number } {
  const pgQueryTimeoutMs = intSetting(env, 'LDS_PG_QUERY_TIMEOUT_MS', DEFAULT_QUERY_TIMEOUT_MS, 200);
  const pgStatementTimeoutMs = intSetting(env, 'LDS_PG_STATEMENT_TIMEOUT_MS', defaultStatementTimeoutMs(pgQueryTimeoutMs), 100);
  if (pgStatementTimeoutMs >= pgQueryTimeoutMs) throw new ConfigError(`LDS_PG_STATEMENT_TIMEOUT_MS (${pgStatementTimeoutMs}) must be below LDS_PG_QUERY_TIMEOUT_MS (${pgQueryTimeoutMs}): the database should end a slow statement (a known outcome) before the service stops waiting for it (an unknown one)`);
  return { pgQueryTimeoutMs, pgStatementTimeoutMs };
}

/**
 * The two operator credentials: the admin API's (moves money) and the scraper's (reads /metrics).
 * Least privilege: a Prometheus server, its configuration and its backups hold only the second, so
 * production refuses one token for both.
 */
async function operatorTokens(secret: (name: string, file: string) => Promise<Buffer>, production: boolean): Promise<{ operatorToken: string; metricsToken: string }> {
  const operatorToken = (await secret('LDS_OPERATOR_TOKEN', OPERATOR_TOKEN_FILE)).toString('utf8').trim();
  const metricsToken = (await secret('LDS_METRICS_TOKEN', METRICS_TOKEN_FILE)).toString('utf8').trim();
  if (production && metricsToken === operatorToken) {
    throw new ConfigError('LDS_METRICS_TOKEN must differ from LDS_OPERATOR_TOKEN: the scraper reads /metrics with it, and the operator token moves money (the admin API); generate another (openssl rand -hex 32)');
  }
  return { operatorToken, metricsToken };
}

export async function loadConfig(flags: ConfigFlags = {}, env: NodeJS.ProcessEnv = process.env): Promise<ServiceConfig> {
  const production = env.NODE_ENV === 'production';
  const paths = dataPaths(env);
  const { secretsDir } = paths;
  if (paths.ledgerUrl) checkLedgerUrl(paths.ledgerUrl);
  // Unset: sandbox for a local start, stripe under NODE_ENV=production (never silently fake payments).
  const processor = (env.PAYMENT_PROCESSOR || (production ? 'stripe' : 'sandbox')) as ProcessorName;
  if (processor !== 'sandbox' && processor !== 'stripe') throw new ConfigError(`PAYMENT_PROCESSOR must be sandbox or stripe: ${processor}`);
  if (production && processor === 'sandbox') throw new ConfigError('NODE_ENV=production refuses the sandbox payment processor: set PAYMENT_PROCESSOR=stripe, STRIPE_SECRET_KEY and STRIPE_NETWORK_ID');
  if (processor === 'stripe' && !env.STRIPE_SECRET_KEY) throw new ConfigError('PAYMENT_PROCESSOR=stripe needs STRIPE_SECRET_KEY');

  const secret = async (name: string, file: string): Promise<Buffer> => {
    const raw = env[name];
    if (raw) return decodeSecret(name, raw);
    if (production) throw new ConfigError(`NODE_ENV=production requires ${name} (at least ${MIN_SECRET_BYTES} bytes)`);
    return localSecret(secretsDir, file);
  };

  const port = flags.port ?? intSetting(env, 'PORT', 8080, 0);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ConfigError(`port must be 0..65535: ${port}`);
  return {
    port,
    host: flags.host ?? (env.HOST || '127.0.0.1'),
    production,
    ...paths,
    pgPoolSize: intSetting(env, 'LDS_PG_POOL_SIZE', 10, 1),
    ...pgTimeouts(env),
    quoteSecret: await secret('LDS_QUOTE_SECRET', 'quote-hmac.key'),
    mppSecret: (await secret('MPP_SECRET_KEY', 'mpp-secret.key')).toString('utf8'),
    processor,
    quoteTtlSeconds: intSetting(env, 'LDS_QUOTE_TTL_SECONDS', 900, 1),
    releaseCheckMs: intSetting(env, 'LDS_RELEASE_CHECK_MS', 2000, 0),
    searchThreads: intSetting(env, 'LDS_SEARCH_THREADS', defaultSearchThreads(), 1),
    rateLimitPerSecond: intSetting(env, 'LDS_RATE_LIMIT_RPS', 20, 0),
    rateLimitBurst: intSetting(env, 'LDS_RATE_LIMIT_BURST', 40, 1),
    // LDS_RATE_LIMIT_RPS=0 (rate limiting off) also turns the token limit off unless it is set itself.
    rateLimitTokenPerSecond: intSetting(env, 'LDS_RATE_LIMIT_TOKEN_RPS', env.LDS_RATE_LIMIT_RPS === '0' ? 0 : 20, 0),
    rateLimitTokenBurst: intSetting(env, 'LDS_RATE_LIMIT_TOKEN_BURST', 40, 1),
    ...(await operatorTokens(secret, production)),
    trustProxy: env.LDS_TRUST_PROXY === 'true' || env.LDS_TRUST_PROXY === '1',
    logLevel: env.LOG_LEVEL || 'info',
    shutdownGraceMs: intSetting(env, 'LDS_SHUTDOWN_GRACE_MS', 10_000, 0),
    ...requestTimeouts(env),
    receiptKeys: await receiptKeys(env, production, secretsDir),
    ...(env.LDS_RECEIPT_LOG ? { receiptLog: resolve(env.LDS_RECEIPT_LOG) } : {}),
    maxAdjustmentCents: amountSetting(env, 'LDS_MAX_ADJUSTMENT', DEFAULT_MAX_ADJUSTMENT_CENTS),
  };
}
