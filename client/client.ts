// The buyer's client: discovery, quote, draw (quote -> policy -> pay -> verify -> journal), top-up
// through MPP (the mppx client, client/mpp.ts), balance, statement, token rotation. Only fetch,
// node:crypto and the mppx client: no server code (contract/ holds what both sides share).
//
// Which API: the one of contract/catalogue.ts CATALOGUE_FORMAT, /v1; the base URL must end in it
// (a base without it would answer 404 to every call), and the package's major version is that number.
//
// Where it talks: every API call goes to the base URL it was given, and receipts are verified
// against the JWKS of that same origin (/.well-known/jwks.json), whatever addresses the published
// documents name: the keys a receipt is checked with come from the service that was paid, never from
// a link a document could point elsewhere. discover() reports the published addresses as they are.
import { createHash } from 'node:crypto';
import { isWellFormedToken, tokenHint } from '../contract/balance-token.ts';
import { CATALOGUE_FORMAT, type CatalogueDoc } from '../contract/catalogue.ts';
import { CURRENCY, formatCents, parseAmountCents } from '../contract/money.ts';
import { verifyReceipt, type Jwks } from '../contract/receipts.ts';
import { NetworkError, PolicyRefusal, ReceiptError, ServiceProblem, LdsError } from './errors.ts';
import { Journal, type JournalEntry } from './journal.ts';
import { DAY_MS, checkDayBudget, checkDraw, checkTopup, parsePolicy, type CentsPolicy, type SpendingPolicy } from './policy.ts';
import { redactDeep, tokenRedactor } from './redact.ts';
import { networkReason, retryAfterMs, sendWithRetry, type RetryEnv, type RetryOptions } from './retry.ts';
import type { DrawReceipt, DrawRequestBody, PaidDraw, Quote, StatementLine, TopupResult, Discovery } from './types.ts';
import { TOPUP_MINIMUM_CENTS, drawBoundsOf, drawFieldLengthsOf, type DrawBounds, type DrawFieldLengths } from '../contract/limits.ts';

/** The service API this client speaks: every base URL ends in it. */
export const API_VERSION = `v${CATALOGUE_FORMAT}` as const;

/**
 * The API base a client talks to, checked: an http(s) URL without credentials, query or fragment,
 * whose path ends in /v1 (the API this client speaks). Trailing slashes are dropped. Throws a
 * TypeError that says what is wrong and shows the right form, naming the value as `name`.
 */
export function apiBase(baseUrl: string, name = 'baseUrl'): { base: string; origin: string } {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`${name} must be the API base, e.g. https://example.org/${API_VERSION}; got ${JSON.stringify(baseUrl)}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`${name} must be an http or https URL, e.g. https://example.org/${API_VERSION}; got ${JSON.stringify(baseUrl)}`);
  if (url.username || url.password || url.search || url.hash) throw new TypeError(`${name} must be a plain API base: no credentials, query or fragment`);
  const path = url.pathname.replace(/\/+$/, '');
  if (!path.endsWith(`/${API_VERSION}`))
    throw new TypeError(`${name} must end in /${API_VERSION}, the API this client speaks (the catalogue's base_url): ${url.origin}${path}/${API_VERSION}, not ${JSON.stringify(baseUrl)}`);
  return { base: `${url.origin}${path}`, origin: url.origin };
}

/** Where a retried request went, for a progress line: origin and path, so the line names the host (no query). */
function retryTarget(url: string): string {
  const u = new URL(url);
  return `${u.origin}${u.pathname}`;
}

/** The hint of a balance token kept in the journal (never the token): `bal#` + 8 hex of its SHA-256. */
export function tokenHintOf(token: string): string {
  return tokenHint(createHash('sha256').update(token, 'utf8').digest('hex'));
}

export interface AutoTopup {
  /** what one automatic top-up adds (at least what the draw lacks, and never above policy.maxPerTopup) */
  amount: string;
}

export interface ClientOptions {
  /** the API base, e.g. https://example.org/v1 */
  baseUrl: string;
  /** the balance token (lds_bal_…); without one, a top-up opens a new balance */
  token?: string;
  policy?: SpendingPolicy<Quote>;
  /** opt-in: top up this much when a paid draw answers insufficient-balance, then pay the same quote */
  autoTopup?: AutoTopup;
  /** the Shared Payment Token of top-ups (a string, or a function minting one per challenge) */
  spt?: string | ((p: { amount: string; currency: string; networkId: string; expiresAt: number }) => Promise<string>);
  /** called with the token of a balance a top-up opened, before anything else uses it: save it */
  onNewToken?: (token: string) => void | Promise<void>;
  /** the receipts journal: a file path (created 0600) or an open Journal; default in memory */
  journal?: string | Journal;
  retry?: RetryOptions;
  /** a progress line for long operations (retries, top-ups); never holds the token */
  onProgress?: (line: string) => void;
  fetch?: typeof globalThis.fetch;
  /** for tests */
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export class LdsClient {
  readonly baseUrl: string;
  readonly origin: string;
  readonly journal: Journal;
  private token: string | undefined;
  private readonly policy: CentsPolicy<Quote>;
  private readonly o: ClientOptions;
  private readonly env: RetryEnv;
  private jwks: Jwks = { keys: [] };
  /** every token this client held (a rotated one too): no form of any may pass on from the service */
  private readonly held: string[] = [];
  private redactor: (s: string) => string = (s) => s;

  private constructor(o: ClientOptions, journal: Journal) {
    ({ base: this.baseUrl, origin: this.origin } = apiBase(o.baseUrl));
    // Named here, never echoed: a mistyped token would otherwise travel and come back as a 401.
    if (o.token !== undefined && !isWellFormedToken(o.token)) throw new TypeError('token is not a balance token (lds_bal_ followed by 43 base64url characters)');
    this.o = o;
    this.token = o.token;
    if (o.token) this.hold(o.token);
    this.policy = parsePolicy(o.policy);
    this.journal = journal;
    if (o.autoTopup && parseAmountCents(o.autoTopup.amount) === null) throw new TypeError(`autoTopup.amount must be an amount in EUR, e.g. "5.00"; got ${JSON.stringify(o.autoTopup.amount)}`);
    const progress = o.onProgress;
    this.env = {
      fetch: sameOriginFetch(o.fetch ?? globalThis.fetch, this.origin),
      sleep: o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms))),
      random: Math.random,
      onRetry: progress ? (i) => progress(this.redact(`${i.why} from ${retryTarget(i.url)}: retrying in ${(i.waitMs / 1000).toFixed(1)} s (attempt ${i.attempt + 1})`)) : undefined,
    };
  }

  /** Makes a client; opens the journal file when one is named. */
  static async create(o: ClientOptions): Promise<LdsClient> {
    apiBase(o.baseUrl); // a bad base URL is named before a journal file is made
    const journal = o.journal instanceof Journal ? o.journal : o.journal ? await Journal.open(o.journal) : Journal.memory();
    return new LdsClient(o, journal);
  }

  /** Whether the client holds a balance token (it never shows it). */
  get hasToken(): boolean {
    return !!this.token;
  }

  async close(): Promise<void> {
    if (!(this.o.journal instanceof Journal)) await this.journal.close();
  }

  /** Remembers a token the client holds, so that no form of it passes on from the service. */
  private hold(token: string): void {
    if (this.held.includes(token)) return;
    this.held.push(token);
    this.redactor = tokenRedactor(this.held);
  }

  /** `s` without any form of a token this client held (client/redact.ts). */
  private redact(s: string): string {
    return this.redactor(s);
  }

  /** A progress line, redacted (it may quote the service). */
  private progress(line: string): void {
    this.o.onProgress?.(this.redact(line));
  }

  /** Appends a journal line about this service and, when a token is held, its hint. */
  private record(entry: Omit<JournalEntry, 'v' | 'at' | 'base_url'>, check?: (journal: Journal) => void | Promise<void>): Promise<JournalEntry> {
    // The last guard before the disk: a line holds what the service said (reasons, receipts).
    const line = redactDeep({ kind: entry.kind, base_url: this.baseUrl, ...(this.token ? { token_hint: tokenHintOf(this.token) } : {}), ...entry }, this.redactor);
    return check ? this.journal.appendChecked(line, check) : this.journal.append(line);
  }

  private now(): number {
    return this.o.now?.() ?? Date.now();
  }

  // ---- HTTP ----

  private async send(what: string, path: string, init: { method: string; body?: unknown; auth?: boolean; idempotent: boolean }): Promise<{ res: Response; json: any }> {
    const url = path.startsWith('http') ? path : `${this.baseUrl}${path}`;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    if (init.auth && this.token) headers.authorization = `Bearer ${this.token}`;
    let res: Response;
    try {
      res = await sendWithRetry({ url, idempotent: init.idempotent, init: { method: init.method, headers, ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}) } }, this.env, this.o.retry);
    } catch (err) {
      throw new NetworkError(`${what}: no answer from ${url} (${networkReason(err)}); is the service running and the base URL right?`);
    }
    refuseRedirect(what, res, this.redactor);
    const text = await res.text();
    let json: any = undefined;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON: the caller reports the status */
    }
    // Every word of the service passes through the redactor before anyone sees it.
    return { res, json: redactDeep(json, this.redactor) };
  }

  private problem(what: string, res: Response, json: any): ServiceProblem {
    const p = json && typeof json === 'object' ? (json as Record<string, unknown>) : {};
    const type = typeof p.type === 'string' ? p.type.replace(/^.*\//, '') : '';
    return new ServiceProblem(res.status, type, p, what);
  }

  // ---- discovery and reading ----

  /** The machine index of the service's origin: catalogue, OpenAPI, JWKS, docs, MCP and A2A addresses. */
  async discover(): Promise<Discovery> {
    const { res, json } = await this.send('discovery', `${this.origin}/.well-known/svc-catalog.json`, { method: 'GET', idempotent: true });
    if (res.status !== 200 || !Array.isArray(json?.linkset)) throw this.problem('discovery (/.well-known/svc-catalog.json)', res, json);
    const contexts = json.linkset as Record<string, any>[];
    const all = contexts.flatMap((c) => Object.entries(c).filter(([k]) => k !== 'anchor').flatMap(([rel, targets]) => (Array.isArray(targets) ? targets.map((t: any) => ({ rel, ...t })) : [])));
    const find = (pred: (t: any) => boolean): string | undefined => all.find(pred)?.href;
    return {
      index: `${this.origin}/.well-known/svc-catalog.json`,
      api: find((t) => t.rel === 'item' && /\/v\d+$/.test(t.href)) ?? this.baseUrl,
      catalogue: find((t) => t.rel === 'service-meta' && /\/_catalog$/.test(t.href)),
      openapi: find((t) => t.rel === 'service-desc'),
      docs: find((t) => t.rel === 'service-doc'),
      jwks: find((t) => t.type === 'application/jwk-set+json'),
      agentCard: find((t) => /agent-card\.json$/.test(t.href)),
      mcp: find((t) => t.rel === 'item' && /MCP/.test(t.title ?? '')),
      a2a: find((t) => t.rel === 'item' && /A2A/.test(t.title ?? '')),
    };
  }

  /** The catalogue snapshot (products, live counts, prices). */
  async catalogue(): Promise<CatalogueDoc> {
    const { res, json } = await this.send('catalogue', '/lds/_catalog', { method: 'GET', idempotent: true });
    if (res.status !== 200) throw this.problem('catalogue', res, json);
    return json;
  }

  /**
   * The draw bounds the service states in its OpenAPI document ({base}/specification), which it
   * enforces: what a caller (an MCP tool's input schema) may ask of it.
   */
  async drawBounds(): Promise<DrawBounds & DrawFieldLengths> {
    const { res, json } = await this.send('OpenAPI document', '/specification', { method: 'GET', idempotent: true });
    if (res.status !== 200) throw this.problem('OpenAPI document (/specification)', res, json);
    try {
      return { ...drawBoundsOf(json), ...drawFieldLengthsOf(json) };
    } catch (err) {
      throw new LdsError(`OpenAPI document (${this.baseUrl}/specification): ${(err as Error).message}`);
    }
  }

  /** The balance (needs the token). */
  async balance(): Promise<{ balance: string; currency: string }> {
    this.requireToken('balance');
    const { res, json } = await this.send('balance', '/lds/balance?limit=1', { method: 'GET', auth: true, idempotent: true });
    if (res.status !== 200) throw this.problem('balance', res, json);
    return { balance: json.balance, currency: json.currency };
  }

  /** The statement, newest first, page by page (`limit` lines a page, from `after`). */
  async *statement(o: { after?: string; limit?: number } = {}): AsyncGenerator<StatementLine> {
    this.requireToken('statement');
    let after = o.after;
    for (;;) {
      const q = new URLSearchParams({ ...(o.limit ? { limit: String(o.limit) } : {}), ...(after ? { after } : {}) });
      const { res, json } = await this.send('statement', `/lds/balance${q.size ? `?${q}` : ''}`, { method: 'GET', auth: true, idempotent: true });
      if (res.status !== 200) throw this.problem('statement', res, json);
      yield* json.statement as StatementLine[];
      if (!json.next_after) return;
      after = json.next_after;
    }
  }

  /** One page of the statement as CSV (the service's format); `next` is the `after` of the next page. */
  async statementCsvPage(o: { after?: string; limit?: number } = {}): Promise<{ csv: string; next?: string }> {
    this.requireToken('statement');
    const q = new URLSearchParams({ format: 'csv', ...(o.limit ? { limit: String(o.limit) } : {}), ...(o.after ? { after: o.after } : {}) });
    const { res, json } = await this.sendText(`/lds/balance?${q}`);
    if (res.status !== 200) throw this.problem('statement', res, json);
    const next = /<[^>]*[?&]after=([^&>]+)[^>]*>;\s*rel="next"/.exec(res.headers.get('link') ?? '')?.[1];
    return { csv: json as string, ...(next ? { next: decodeURIComponent(next) } : {}) };
  }

  private async sendText(path: string): Promise<{ res: Response; json: any }> {
    const headers: Record<string, string> = this.token ? { authorization: `Bearer ${this.token}` } : {};
    let res: Response;
    try {
      res = await sendWithRetry({ url: `${this.baseUrl}${path}`, idempotent: true, init: { method: 'GET', headers } }, this.env, this.o.retry);
    } catch (err) {
      throw new NetworkError(`statement: no answer from ${this.baseUrl} (${networkReason(err)})`);
    }
    refuseRedirect('statement', res, this.redactor);
    const text = this.redact(await res.text());
    if (res.status === 200) return { res, json: text };
    try {
      return { res, json: JSON.parse(text) };
    } catch {
      return { res, json: undefined };
    }
  }

  /**
   * A new token for the same balance; the old one stops working at once. Not resent after a lost
   * answer (the service would have rotated: the resend's old token is refused, and the new token
   * would be lost), so a network failure here is reported as such: ask the operator if it happens.
   */
  async rotateToken(): Promise<string> {
    this.requireToken('rotate');
    const { res, json } = await this.send('token rotation', '/lds/balance/token', { method: 'POST', auth: true, idempotent: false });
    if (res.status !== 200 || typeof json?.balance_token !== 'string') throw this.problem('token rotation', res, json);
    // The old token's hint, then the new one: `receipts reconcile` follows the chain to one balance.
    await this.record({ kind: 'rotate', new_token_hint: tokenHintOf(json.balance_token) });
    this.token = json.balance_token;
    this.hold(json.balance_token);
    return json.balance_token;
  }

  private requireToken(what: string): void {
    if (!this.token) throw new LdsError(`${what}: no balance token; give the client one (LDS_BALANCE_TOKEN or --token-file for the command line), or top up to open a balance`);
  }

  // ---- receipts ----

  /** Fetches the JWKS of the service's origin and journals it. */
  private async refreshJwks(): Promise<void> {
    const { res, json } = await this.send('JWKS', `${this.origin}/.well-known/jwks.json`, { method: 'GET', idempotent: true });
    if (res.status !== 200 || !Array.isArray(json?.keys)) throw this.problem('JWKS (/.well-known/jwks.json)', res, json);
    const byKid = new Map(this.jwks.keys.map((k) => [k.kid, k]));
    for (const k of json.keys) byKid.set(k.kid, k);
    this.jwks = { keys: [...byKid.values()] };
    await this.record({ kind: 'jwks', jwks: json });
  }

  /** Verifies a receipt: the key of its kid from the cache, refetched once when the kid is unknown. */
  async verify(receipt: unknown): Promise<{ ok: true; kid: string } | { ok: false; reason: string }> {
    const kid = (receipt as { signature?: { kid?: unknown } } | null)?.signature?.kid;
    if (typeof kid === 'string' && !this.jwks.keys.some((k) => k.kid === kid)) await this.refreshJwks();
    return verifyReceipt(receipt, this.jwks);
  }

  // ---- paying ----

  /** A quote for a draw (402 from the service); nothing is paid. */
  async quote(req: DrawRequestBody): Promise<Quote> {
    const body = { product_id: req.product_id, ...(req.units ? { units: req.units } : {}), ...(req.query !== undefined ? { query: req.query } : {}), ...(req.limit !== undefined ? { limit: req.limit } : {}) };
    const { res, json } = await this.send('quote', '/lds/draw', { method: 'POST', body, auth: true, idempotent: true });
    if (res.status !== 402 || typeof json?.quote_id !== 'string') throw this.problem('quote', res, json);
    const q = json as Quote;
    if (q.product_id !== req.product_id) throw new LdsError(`quote: the service answered a quote for ${JSON.stringify(q.product_id)}, not the product asked for (${req.product_id}); nothing was paid`);
    return q;
  }

  /** Quote, check the policy, pay (topping up when allowed), verify the receipt, journal it. */
  async draw(req: DrawRequestBody): Promise<PaidDraw> {
    return this.pay(await this.quote(req));
  }

  /** Pays a quote (see draw). Throws PolicyRefusal before sending anything when the policy says no. */
  async pay(quote: Quote): Promise<PaidDraw> {
    let q = quote;
    let toppedUp = false;
    let checked = ''; // the quote the policy allowed (approve() is asked once per quote)
    for (let round = 0; ; round++) {
      const amount = parseAmountCents(q.amount);
      if (amount === null) throw new LdsError(`the quote's amount ${JSON.stringify(q.amount)} is not an amount`);
      // The policy's amounts are EUR: a quote in another currency is not one it can allow.
      if (q.currency !== CURRENCY) await this.refuseIf(() => refuseCurrency(q));
      // What is sent is the checked quote, never what the service asks to be sent (pay_with).
      const payBody = payRequestOf(q);
      if (q.pay_with !== undefined) {
        const differs = (['quote_id', 'product_id', 'currency'] as const).filter((f) => (q.pay_with as unknown as Record<string, unknown>)?.[f] !== payBody[f]);
        if (differs.length)
          throw new LdsError(`the quote's pay_with names another ${differs.join(', ')} (${differs.map((f) => `${JSON.stringify((q.pay_with as unknown as Record<string, unknown>)?.[f])} for ${JSON.stringify(payBody[f])}`).join(', ')}) than the quote: not sent, nothing was paid`);
      }
      // The whole policy (approval included) first, without holding the journal: approve() may take a
      // person's time. Then the day budget again, in the same locked turn as the pay line, so that
      // payments other processes recorded meanwhile count and none can slip in between.
      if (checked !== q.quote_id) await this.refuseIf(() => checkDraw(this.policy, q, amount, this.journal.spentSince(this.now() - DAY_MS)));
      checked = q.quote_id;
      if (!this.token) {
        if (!this.o.autoTopup) throw new LdsError('paying needs a balance token: give the client one, or allow an automatic top-up (autoTopup) to open a balance');
        await this.autoTopup(q, amount, 0);
        toppedUp = true;
      }
      const sent = q.quote_id;
      await this.refuseIf(() => this.record({ kind: 'pay', quote_id: sent, product_id: q.product_id, amount: q.amount, unit_count: q.unit_count }, (journal) => checkDayBudget(this.policy, q, amount, journal.spentSince(this.now() - DAY_MS))));
      this.progress(`paying ${q.amount} ${q.currency} for ${plural(q.unit_count, 'unit')} of ${q.product_id}`);
      let answer: { res: Response; json: any };
      try {
        answer = await this.send('paid draw', '/lds/draw', { method: 'POST', body: payBody, auth: true, idempotent: true });
      } catch (err) {
        await this.record({ kind: 'failure', action: 'draw', quote_id: sent, charged: true, reason: (err as Error).message });
        throw err;
      }
      const { res, json } = answer;
      if (res.status === 200) return this.accept(q, json);
      const err = this.problem('paid draw', res, json);
      // Nothing was charged for this quote on any of these answers.
      await this.record({ kind: 'failure', action: 'draw', quote_id: sent, charged: false, status: res.status, type: err.type, reason: err.message });
      if (round >= 2) throw err;
      if (err.type === 'quote-expired' && json?.quote?.quote_id) {
        q = json.quote as Quote; // a fresh quote for the same request: the policy checks it again
        continue;
      }
      if (err.type === 'insufficient-balance' && this.o.autoTopup && !toppedUp) {
        const balance = parseAmountCents(json?.balance) ?? 0;
        await this.autoTopup(q, amount, balance);
        toppedUp = true;
        continue;
      }
      throw err;
    }
  }

  private async autoTopup(q: Quote, amount: number, balance: number): Promise<void> {
    const wanted = parseAmountCents(this.o.autoTopup!.amount)!;
    const topup = Math.max(wanted, TOPUP_MINIMUM_CENTS, amount - balance);
    this.progress(`the balance (${formatCents(balance)} EUR) does not cover ${q.amount} EUR: topping up ${formatCents(topup)} EUR`);
    await this.topup(formatCents(topup));
  }

  /** Runs a policy check; a refusal is journaled, then thrown. */
  private async refuseIf(check: () => unknown): Promise<void> {
    try {
      await check();
    } catch (err) {
      if (err instanceof PolicyRefusal)
        await this.record({ kind: 'refused', action: err.action, limit: err.limit, limit_amount: err.limitAmount, asked: err.asked, ...(err.quoteId ? { quote_id: err.quoteId } : {}) });
      throw err;
    }
  }

  /** Checks a paid draw's receipt (signature, quote, amount); journals it either way. */
  private async accept(q: Quote, paid: PaidDraw): Promise<PaidDraw> {
    const receipt = paid?.receipt as DrawReceipt | undefined;
    const v = await this.verify(receipt);
    let reason = v.ok ? '' : v.reason;
    if (!reason && (receipt!.quote_id !== q.quote_id || receipt!.amount !== q.amount || receipt!.product_id !== q.product_id))
      reason = `it is for quote ${receipt!.quote_id} of ${receipt!.amount} EUR, not the quote paid (${q.quote_id}, ${q.amount} EUR)`;
    if (!reason && receipt!.currency !== q.currency) reason = `it is in ${JSON.stringify(receipt!.currency)}, not the quote's ${q.currency}`;
    if (!reason && (!Array.isArray(paid.units) || paid.units.length !== receipt!.unit_count)) reason = `it says ${plural(receipt!.unit_count, 'unit')}, the answer holds ${Array.isArray(paid.units) ? paid.units.length : 'none'}`;
    if (reason) {
      await this.record({ kind: 'failure', action: 'draw', quote_id: q.quote_id, charged: true, reason: `receipt: ${reason}`, receipt: receipt ?? null });
      throw new ReceiptError(reason, receipt, true, `paid draw of quote ${q.quote_id}`);
    }
    await this.record({ kind: 'draw', quote_id: q.quote_id, draw_id: receipt!.draw_id, product_id: q.product_id, amount: receipt!.amount, unit_count: receipt!.unit_count, kid: (v as { kid: string }).kid, receipt });
    return paid;
  }

  /**
   * Tops the balance up through MPP with the mppx client (402 challenge, credential with the
   * Shared Payment Token, 200), checked against policy.maxPerTopup first. Without a token it opens
   * a new balance: onNewToken gets the token before the client uses it.
   */
  async topup(amount: string): Promise<TopupResult> {
    const cents = parseAmountCents(amount);
    if (cents === null) throw new TypeError(`topup amount must be in EUR with at most two decimals, e.g. "5.00"; got ${JSON.stringify(amount)}`);
    await this.refuseIf(() => checkTopup(this.policy, cents));
    if (!this.o.spt) throw new LdsError('top-up: no Shared Payment Token (spt) given to the client');
    const { payTopup } = await import('./mpp.ts'); // the mppx client loads only when a top-up runs
    // The mppx client's requests go through the same retries: resending a credential is safe (the
    // service answers a credited challenge again, without crediting twice).
    const env = this.env;
    const retry = this.o.retry;
    // A credential the service is processing already (here or at another instance, e.g. a resend
    // that raced the first send) is answered 409 topup-in-progress with Retry-After: the money may be
    // moving, so that is no outcome. The same credential is sent again until one comes (200, or a
    // final refusal), for as long as the service's claim on it can last.
    const retryingFetch: typeof globalThis.fetch = async (input, init) => {
      const req = { url: typeof input === 'string' ? input : input instanceof URL ? input.href : input.url, init: (init ?? {}) as RequestInit & { body?: string }, idempotent: true };
      const started = this.now();
      for (;;) {
        const res = await sendWithRetry(req, env, retry);
        if (res.status !== 409 || !(await isInProgress(res))) return res;
        const waitMs = (retryAfterMs(res.headers.get('retry-after')) ?? 2000) + Math.round(env.random() * 250);
        if (this.now() - started + waitMs > IN_PROGRESS_PATIENCE_MS) return res;
        await res.arrayBuffer().catch(() => undefined);
        this.progress(`the service is processing this top-up's payment already: asking for its outcome again in ${(waitMs / 1000).toFixed(1)} s`);
        await env.sleep(waitMs);
      }
    };
    const url = `${this.baseUrl}/lds/balance/topup`;
    this.progress(`topping up ${formatCents(cents)} EUR`);
    let res: Response;
    try {
      res = await payTopup(url, formatCents(cents), { spt: this.o.spt, fetch: retryingFetch, ...(this.token ? { balanceToken: this.token } : {}) });
    } catch (err) {
      const reason = this.redact((err as Error).name === 'TypeError' && (err as { cause?: unknown }).cause ? `no answer from ${url} (${networkReason(err)})` : `the service asked for a payment this client cannot make: ${(err as Error).message}`);
      await this.record({ kind: 'failure', action: 'topup', amount: formatCents(cents), charged: false, reason });
      throw new NetworkError(`top-up: ${reason}`);
    }
    refuseRedirect('top-up', res, this.redactor);
    const text = await res.text();
    let json: any;
    try {
      json = JSON.parse(text);
    } catch {
      json = undefined;
    }
    // A new balance's token is the one string kept as sent; everything else is redacted with it.
    const opened = res.status === 200 && typeof json?.balance_token === 'string' ? (json.balance_token as string) : undefined;
    if (opened) this.hold(opened);
    json = redactDeep(json, this.redactor);
    if (opened) json.balance_token = opened;
    if (res.status !== 200) {
      const err = this.problem('top-up', res, json);
      await this.record({ kind: 'failure', action: 'topup', amount: formatCents(cents), charged: false, status: res.status, type: err.type, reason: err.message });
      throw err;
    }
    const { balance_token: newToken, ...rest } = json as TopupResult & { balance_token?: string };
    const receipt = rest.receipt;
    // A new balance's token first: whatever happens next, the money must stay reachable.
    if (newToken) {
      this.token = newToken;
      await this.o.onNewToken?.(newToken);
    }
    const v = await this.verify(receipt);
    const reason = !v.ok ? v.reason : receipt.amount !== formatCents(cents) ? `it is for ${receipt.amount} EUR, not the ${formatCents(cents)} EUR paid` : receipt.currency !== CURRENCY ? `it is in ${JSON.stringify(receipt.currency)}, not ${CURRENCY}` : '';
    if (reason) {
      await this.record({ kind: 'failure', action: 'topup', amount: formatCents(cents), charged: true, reason: `receipt: ${reason}`, receipt: receipt ?? null });
      throw new ReceiptError(reason, receipt, true, `top-up of ${formatCents(cents)} EUR`);
    }
    await this.record({ kind: 'topup', amount: receipt.amount, topup_id: receipt.topup_id, new_balance: !!newToken, kid: (v as { kid: string }).kid, receipt });
    return { ...rest, new_balance: !!newToken };
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The paying request of a quote, from the quote's own fields (contract/wire.ts PayRequest). */
function payRequestOf(q: Quote): DrawRequestBody & { quote_id: string; currency: string } {
  return { product_id: q.product_id, currency: q.currency, quote_id: q.quote_id, ...(q.units ? { units: q.units } : {}), ...(q.query !== undefined ? { query: q.query, ...(q.limit !== undefined ? { limit: q.limit } : {}) } : {}) };
}

/** A quote in a currency the policy is not written in. Throws PolicyRefusal. */
function refuseCurrency(q: Quote): never {
  throw new PolicyRefusal('currency', CURRENCY, `${q.amount} ${String(q.currency)}`, 'draw', `the quote is in ${JSON.stringify(q.currency)}; the spending policy is in ${CURRENCY} and pays nothing else`, q.quote_id);
}

/** Whether `status` is a redirect. */
const isRedirect = (status: number) => status >= 300 && status < 400 && status !== 304;

/**
 * A fetch that follows a redirect only within `origin` (at most 5): an API call sends a bearer
 * token and often a payment, and neither goes to a host the buyer did not name. A redirect to
 * another origin comes back as the 3xx answer itself, which the caller refuses (refuseRedirect).
 */
function sameOriginFetch(fetch: typeof globalThis.fetch, origin: string): typeof globalThis.fetch {
  return async (input, init) => {
    let url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    let opts: RequestInit = { ...init, redirect: 'manual' };
    for (let hop = 0; ; hop++) {
      const res = await fetch(url, opts);
      const location = res.headers.get('location');
      if (!isRedirect(res.status) || !location || hop >= 5) return res;
      const next = new URL(location, url);
      if (next.origin !== origin || new URL(url).origin !== origin) return res;
      await res.arrayBuffer().catch(() => undefined);
      // 303 (and 301/302 after a POST, as browsers do) become a GET without a body.
      if (res.status === 303 || ((res.status === 301 || res.status === 302) && opts.method && opts.method !== 'GET' && opts.method !== 'HEAD')) {
        const { body: _body, ...rest } = opts;
        const headers = { ...(rest.headers as Record<string, string> | undefined) };
        delete headers['content-type'];
        opts = { ...rest, method: 'GET', headers };
      }
      url = next.href;
    }
  };
}

/** Throws when the answer is a redirect the client did not follow (to another origin). */
function refuseRedirect(what: string, res: Response, redact: (s: string) => string): void {
  if (!isRedirect(res.status)) return;
  const location = res.headers.get('location') ?? '(no Location)';
  let where = location;
  try {
    where = new URL(location, res.url || undefined).origin;
  } catch {
    /* shown as sent */
  }
  throw new LdsError(`${what}: the service answered HTTP ${res.status}, a redirect to ${redact(where)}; API calls do not follow redirects to another origin (the token and any payment stay with the service named), so nothing was sent there`);
}

/**
 * How long a top-up keeps asking about a credential the service is processing: longer than the
 * service's claim on one (60 s, past its processor's 20 s timeout), so the answer is an outcome.
 */
const IN_PROGRESS_PATIENCE_MS = 90_000;

/** Whether a 409 is `topup-in-progress` (read from a copy: the caller may still read the body). */
async function isInProgress(res: Response): Promise<boolean> {
  try {
    const p = (await res.clone().json()) as { type?: unknown };
    return typeof p.type === 'string' && /(^|\/)topup-in-progress$/.test(p.type);
  } catch {
    return false;
  }
}
