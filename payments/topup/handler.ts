// POST /v1/lds/balance/topup: fund a prepaid balance with an MPP payment (method `stripe`,
// intent `charge`, a Shared Payment Token), through the mppx server.
//
// Flow of one top-up:
//   1. The body is validated first ({"amount":"5.00","currency":"EUR"}): bad input is a 400 before
//      any challenge exists, so it can never charge anyone.
//   2. Without a credential, mppx answers 402 with `WWW-Authenticate: Payment …` (amount bound
//      into the HMAC-signed challenge, 5 minute expiry). With `Authorization: Bearer <balance
//      token>` the balance must exist, and the challenge asks for the credential in
//      `Payment-Authorization` (mppx `requiresAuth`), because `Authorization` carries the token.
//   3. With a credential, the challenge id is checked before any money moves: a challenge already
//      credited is answered again from the ledger when it is the very credential that paid (else
//      409), even while a dead instance's claim on it lasts; one being processed right now is 409.
//   4. mppx verifies the credential (HMAC, expiry, amount/currency binding) and charges the SPT
//      by creating a Stripe PaymentIntent (idempotency key `mpp_<challenge id>_<spt>`).
//   5. On success the ledger credits the balance in one synced batch that also claims the
//      challenge id and the PaymentIntent id, so each credits at most once; 200 carries the
//      balance (and the new token, shown only here) plus `Payment-Receipt`.
//   Recovery: if Stripe replays a PaymentIntent that succeeded earlier (our previous attempt died
//   between charge and credit, e.g. a timeout or a restart) and the ledger has no credit for that
//   challenge, the replay is credited now. A replay of an already credited challenge is refused.
import type { Context, Middleware } from 'koa';
import { randomBytes } from 'node:crypto';
import { Challenge, Credential, PaymentRequest, Receipt } from 'mppx';
import { Mppx } from 'mppx/server';
// The SPT charge method alone, not `stripe` from 'mppx/server': that namespace builds Stripe's
// crypto rails too (tempo, base), and importing it loaded viem and most of mppx, which every start
// parsed for nothing (~2.5 MB of JavaScript; `lds serve` from start to stopped took 1.25 CPU-s
// with it, 1.05 without). `stripe.charge` is this same function.
import { charge as stripeCharge } from 'mppx/stripe/server';
import { CURRENCY, formatCents, parseAmountCents } from '../../contract/money.ts';
import { LedgerUnavailableError, type Ledger, type LoggerLike } from '../ledger/ledger.ts';
import { Problem, PROBLEM_CONTENT_TYPE } from '../problem.ts';
import { observeCharges, redactTokens, type ChargeObservation } from '../processors/observe.ts';
import type { PaymentProcessor } from '../processors/types.ts';
import type { TopupRecord } from '../ledger/records.ts';
import type { ReceiptSigner } from '../receipts.ts';
import { bearerToken, hashesEqual, hashToken, newBalanceToken, openBalanceToken, sealBalanceToken, sha256Hex, tokenHint } from '../tokens.ts';
import { TOPUP_MAXIMUM_CENTS, TOPUP_MINIMUM_CENTS } from '../../contract/limits.ts';
import type { Currency, TopupReceipt } from '../../contract/wire.ts';

export const TOPUP_PATH = '/v1/lds/balance/topup';
export const TOPUP_CURRENCY = CURRENCY;

/** Problem `type` slugs of this endpoint (type = <docs_url>problems/<slug>, contract/problems.ts). */
export const TOPUP_PROBLEMS = {
  malformedBody: 'malformed-request', // 400, extra.field (same slug as the rest of the service)
  invalidAmount: 'invalid-amount', // 400, field amount: not a decimal string with at most two decimals
  belowMinimum: 'topup-below-minimum', // 400, extra.minimum
  aboveMaximum: 'topup-above-maximum', // 400, extra.maximum
  unsupportedCurrency: 'unsupported-currency', // 400, field currency
  bodyTooLarge: 'body-too-large', // 413
  invalidBalanceToken: 'invalid-balance-token', // 401: Bearer given but malformed or unknown
  balanceTokenRequired: 'balance-token-required', // 401: Payment-Authorization without the Bearer token it goes with
  revokedBalanceToken: 'balance-token-revoked', // 401: Bearer given but rotated or revoked
  paymentRequired: 'payment-required', // 402 with the MPP challenge
  credentialInvalid: 'payment-credential-invalid', // 402 with a fresh challenge: bad/expired/mismatched credential
  declined: 'payment-declined', // 402, final: the card was declined
  requiresAction: 'payment-requires-action', // 402, final: the PaymentIntent needs customer action
  notCompleted: 'payment-not-completed', // 402, final: any other non-succeeded PaymentIntent
  tokenRejected: 'payment-token-rejected', // 402, final: the processor does not accept the SPT
  alreadyCredited: 'topup-already-credited', // 409: this credential's challenge was credited before
  inProgress: 'topup-in-progress', // 409: the same credential is being processed right now
  processorUnavailable: 'payment-processor-unavailable', // 502: nothing credited; resending the same credential is safe
  ledgerUnavailable: 'ledger-unavailable', // 503
  internal: 'internal', // 500 (same slug as the rest of the service)
} as const;

export interface TopupHandlerOptions {
  ledger: Ledger;
  processor: PaymentProcessor;
  /** MPP realm, e.g. the public host name */
  realm: string;
  /** HMAC key binding challenges to this server (at least 32 bytes; payments/config.ts loads or makes it) */
  secretKey: string;
  logger?: LoggerLike;
  minimumCents?: number;
  maximumCents?: number;
  /** challenge lifetime; also the window in which a failed attempt can be resent (default 5) */
  challengeTtlMinutes?: number;
  /**
   * Tests and the simulator: the clock of the challenge's `expires` and of the check whether a resent
   * credential's challenge has expired - one clock for both, so they agree (production: Date.now).
   * mppx itself refuses a fresh credential whose `expires` has passed by the real clock; a test clock
   * ahead of the real one (the simulator's) therefore never makes mppx refuse one.
   */
  now?: () => number;
  /** Signs the receipt of every top-up (payments/receipts.ts). */
  receipts: ReceiptSigner;
}

export function topupReceipt(receipts: ReceiptSigner, t: TopupRecord): TopupReceipt {
  // The ledger refuses any other currency (ledger.ts assertCurrency): another one here is a bug.
  if (t.currency !== CURRENCY) throw new Error(`top-up ${t.topup_id} is in ${t.currency}, not ${CURRENCY}`);
  return receipts.sign({
    type: 'topup' as const,
    topup_id: t.topup_id,
    amount: formatCents(t.amount_cents),
    currency: CURRENCY,
    balance_after: formatCents(t.balance_after_cents),
    processor: t.processor,
    payment_ref: t.payment_ref,
    paid_at: t.at,
  });
}

/** 200 answer body. balance_token only when the top-up created the balance. */
export interface TopupAnswer {
  balance_token?: string;
  balance: string;
  currency: Currency;
  receipt: TopupReceipt;
}

const MAX_BODY_BYTES = 16 * 1024;
/**
 * How long a claim on a challenge holds while it is charged: longer than the processor's timeout
 * (20 s), so a slow charge is never overlapped; an instance that dies mid-charge blocks a resend of
 * the same credential for at most this long (the resend is then safe: same idempotency key).
 */
const CHALLENGE_CLAIM_MS = 60_000;
/** The Retry-After of `topup-in-progress`: a charge takes a second or two (at most the processor's 20 s timeout). */
const IN_PROGRESS_RETRY_S = 2;

export function createTopupHandler(options: TopupHandlerOptions): Middleware {
  const { ledger, processor, realm, secretKey, logger, receipts } = options;
  const minimum = options.minimumCents ?? TOPUP_MINIMUM_CENTS;
  const maximum = options.maximumCents ?? TOPUP_MAXIMUM_CENTS;
  const ttlMinutes = options.challengeTtlMinutes ?? 5;
  const now = options.now ?? Date.now;

  // The mppx server of one request, on the processor's client observed for that request so its
  // failures can be told apart (processors/observe.ts); ~0.1 ms, against a processor round trip.
  // The credential is in `Authorization`, or in `Payment-Authorization` when `Authorization`
  // carries a balance token (requiresAuth).
  // `challengeRealm`: the realm of a credential's challenge that our secret verified. Every instance
  // of one deployment shares the secret and the ledger, but each names its own host as the realm
  // (instances built for different addresses): a challenge another instance issued is this
  // deployment's all the same, and is charged and credited here exactly once (the ledger's claim),
  // rather than refused as "realm does not match" while the other instance charges it.
  const serverFor = (requiresAuth: boolean, challengeRealm?: string) => {
    const observed = observeCharges(processor.client);
    const method = stripeCharge({
      client: observed.client,
      networkId: processor.networkId,
      paymentMethodTypes: processor.paymentMethodTypes,
      currency: TOPUP_CURRENCY.toLowerCase(),
      decimals: 2,
    });
    return { server: Mppx.create({ methods: [method], realm: challengeRealm ?? realm, secretKey, ...(requiresAuth ? { requiresAuth: true } : {}) }), observation: observed.observation };
  };

  return async function topupHandler(ctx: Context): Promise<void> {
    ctx.set('Cache-Control', 'no-store');
    try {
      const cents = parseTopupBody(await readBody(ctx), minimum, maximum);

      // Whose balance: a new one, or the one named by the Bearer token.
      const bearer = bearerToken(ctx.get('Authorization') || undefined);
      if (bearer === 'malformed') throw invalidToken();
      let target: { hash: string; create: boolean };
      if (bearer) {
        // A rotated-in token names its balance; a rotated-out or revoked one is refused.
        const resolved = await ledger.resolveToken(hashToken(bearer));
        if (resolved.kind === 'revoked') throw new Problem(401, 'balance-token-revoked', 'Balance token no longer valid', 'this balance token was rotated or revoked; use the token that replaced it');
        const hash = resolved.balance;
        const bal = await ledger.getBalance(hash);
        if (!bal) throw invalidToken();
        if (bal.currency !== TOPUP_CURRENCY) throw new Problem(400, TOPUP_PROBLEMS.unsupportedCurrency, 'Unsupported currency', `this balance is held in ${bal.currency}`, { field: 'currency' });
        target = { hash, create: false };
      } else {
        // A credential in Payment-Authorization is for crediting the balance that Authorization
        // names; without that Bearer token we cannot tell which balance, so say so instead of
        // starting a new challenge (nothing is charged).
        if (ctx.get('Payment-Authorization')) throw balanceTokenMissing();
        target = { hash: '', create: true }; // the token is minted only once the money is in
      }
      const credentialHeader = bearer ? 'Payment-Authorization' : 'Authorization';

      // A credential whose challenge is already credited is answered from the ledger, before any
      // claim: an instance that died after crediting but before answering leaves its claim behind
      // for the lease, and the buyer's resend must still get the answer, not "in progress".
      const verified = verifiedChallenge(ctx.get(credentialHeader), secretKey);
      const challengeId = verified?.id ?? null;
      const credited = challengeId ? await ledger.findTopupByChallenge(challengeId) : null;
      if (credited) {
        await answerAgain(ctx, credited, target, ctx.get(credentialHeader), verified?.expires);
        return;
      }
      // Refuse a credential whose challenge is in flight (on any instance: the claim lives in the
      // ledger) or was credited meanwhile, before charging.
      const claim = challengeId ? await ledger.claimChallenge(challengeId, CHALLENGE_CLAIM_MS) : null;
      if (challengeId && !claim) throw new Problem(409, TOPUP_PROBLEMS.inProgress, 'Top-up in progress', `this payment credential is being processed (here or at another instance); resend it after Retry-After seconds to learn the outcome`, { retry_after: IN_PROGRESS_RETRY_S });
      try {
        const prior = challengeId ? await ledger.findTopupByChallenge(challengeId) : null;
        if (prior) {
          await answerAgain(ctx, prior, target, ctx.get(credentialHeader), verified?.expires);
          return;
        }
        // Every challenge carries a nonce of ours (mppx `meta`, sent as `opaque`): mppx's challenge id
        // is an HMAC over realm, request and `expires` alone, so without it two buyers asking for the
        // same amount in the same millisecond got one id - and the id credits at most once, so the
        // second was told 409 topup-already-credited for the first one's credit. With a credential,
        // the nonce is the one its (HMAC-verified) challenge carries, as mppx's binding check wants
        // (none for a challenge issued before nonces were: it stays valid until it expires).
        const nonce = verified ? verified.nonce : randomBytes(12).toString('base64url');
        const { server, observation } = serverFor(Boolean(bearer), verified?.realm);
        const handle = server.charge({ amount: formatCents(cents), description: `Prepaid balance top-up ${formatCents(cents)} ${TOPUP_CURRENCY}`, expires: new Date(now() + ttlMinutes * 60_000), ...(nonce ? { meta: { n: nonce } } : {}) });
        const result = await handle(toFetchRequest(ctx, credentialHeader));

        if (result.status === 200) {
          // mppx verified the payment; its receipt names the PaymentIntent.
          const receiptHeader = result.withReceipt(new Response(null)).headers.get('Payment-Receipt');
          if (!receiptHeader || !challengeId) throw new Error('mppx accepted a credential without a receipt or a verifiable challenge id');
          const receipt = Receipt.deserialize(receiptHeader);
          await credit(ctx, { cents, target, challengeId, paymentRef: receipt.reference, receiptHeader, credential: ctx.get(credentialHeader), expires: verified?.expires });
          return;
        }

        // A replayed, succeeded PaymentIntent that we never credited: finish the job now.
        const r = observation.result;
        if (challengeId && r && r.replayed && r.status === 'succeeded' && r.amount === cents && (r.currency ?? 'eur').toLowerCase() === 'eur') {
          logger?.warn({ challenge: short(challengeId), payment: r.id }, 'top-up: crediting an idempotent replay of an uncredited payment');
          const receiptHeader = Receipt.serialize(Receipt.from({ method: 'stripe', status: 'success', reference: r.id, timestamp: new Date().toISOString() }));
          await credit(ctx, { cents, target, challengeId, paymentRef: r.id, receiptHeader, credential: ctx.get(credentialHeader), expires: verified?.expires });
          return;
        }
        await refuse(ctx, result.challenge, observation, challengeId, cents, Boolean(ctx.get(credentialHeader)));
      } finally {
        await claim?.release();
      }
    } catch (e) {
      respondError(ctx, e, logger);
    }
  };

  async function credit(
    ctx: Context,
    p: { cents: number; target: { hash: string; create: boolean }; challengeId: string; paymentRef: string; receiptHeader: string; credential: string; expires: string | undefined },
  ): Promise<void> {
    // A new balance gets a random token. For the replay rule (answerAgain) the ledger keeps it
    // sealed under this credential until the challenge expires: only this credential opens it.
    const fresh = p.target.create ? newBalanceToken() : null;
    const expiresAt = p.expires ? Date.parse(p.expires) : NaN;
    const tokenSeal = fresh && Number.isSafeInteger(expiresAt) ? { sealed: sealBalanceToken(fresh.token, p.credential, p.challengeId), expiresAt } : undefined;
    const result = await ledger.creditTopup({
      ...(tokenSeal ? { tokenSeal } : {}),
      tokenHash: fresh ? fresh.hash : p.target.hash,
      createBalance: p.target.create,
      amountCents: p.cents,
      currency: TOPUP_CURRENCY,
      processor: processor.name,
      challengeId: p.challengeId,
      paymentRef: p.paymentRef,
      credentialSha256: sha256Hex(p.credential),
    });
    if (result.kind === 'already_credited') throw alreadyCredited();
    if (result.kind !== 'ok') {
      // Money was taken but cannot be credited as asked (cannot happen with random tokens and
      // balances that are never deleted). Log for reconciliation; the PaymentIntent id is the handle.
      logger?.error({ challenge: short(p.challengeId), payment: p.paymentRef, outcome: result.kind }, 'top-up: charged but not credited');
      throw new Problem(500, TOPUP_PROBLEMS.internal, 'Top-up not credited', `the payment ${p.paymentRef} was taken but could not be credited; quote this reference to support`);
    }
    logger?.info({ challenge: short(p.challengeId), payment: p.paymentRef, topup: result.topup.topup_id, balance: tokenHint(result.topup.token_hash), amount_cents: p.cents, processor: processor.name }, 'top-up credited');
    const body: TopupAnswer = {
      ...(fresh ? { balance_token: fresh.token } : {}),
      balance: formatCents(result.balanceAfterCents),
      currency: TOPUP_CURRENCY,
      receipt: topupReceipt(receipts, result.topup),
    };
    ctx.status = 200;
    ctx.set('Payment-Receipt', p.receiptHeader);
    ctx.set('Cache-Control', 'no-store, private');
    ctx.body = body;
  }

  /**
   * A credential whose challenge is already credited. One rule for both forms (with and without a
   * Bearer token), written down in the README and the OpenAPI document:
   *
   *   - the very credential that paid, resent in the same form while its challenge is still valid
   *     (the `expires` the challenge carries, 5 minutes): the buyer lost our 200 and resent it, as
   *     the 502/503 answers tell them to. Answer again - the same balance token (only if that top-up
   *     opened the balance), the current balance, the same receipt - and credit nothing. Until the
   *     challenge expires the credential is as good as the token anyway: had the buyer not sent it,
   *     whoever holds it could have redeemed it and received the token. So this window shows the
   *     token to no one who could not have had it. Not once that token was rotated or revoked: a
   *     dead token is no answer, and the buyer who rotated it had received it.
   *   - anything else (another credential for that challenge, another form or balance, or the same
   *     credential after its challenge expired): 409 `topup-already-credited`, saying the credit
   *     happened and the token is not shown again. A credential that leaks later is worth nothing.
   */
  async function answerAgain(ctx: Context, prior: TopupRecord, target: { hash: string; create: boolean }, credential: string, expires: string | undefined): Promise<void> {
    const same = prior.credential_sha256 !== undefined && hashesEqual(prior.credential_sha256, sha256Hex(credential));
    if (!same || prior.created_balance !== target.create || (!target.create && !hashesEqual(prior.token_hash, target.hash))) throw alreadyCredited();
    const until = expires ? Date.parse(expires) : NaN;
    if (!(until > now())) throw alreadyCredited();
    // The token of a balance this top-up opened: sealed in the ledger under this very credential
    // for the challenge's window (credit). Gone (the window closed, or a top-up credited before
    // tokens were sealed) or not opened by this credential: no token, so no answer.
    let token: { token: string; hash: string } | null = null;
    if (prior.created_balance) {
      const sealed = await ledger.findTokenSeal(prior.challenge_id, until);
      const opened = sealed ? openBalanceToken(sealed, credential, prior.challenge_id) : null;
      if (!opened || !hashesEqual(hashToken(opened), prior.token_hash)) throw alreadyCredited();
      token = { token: opened, hash: prior.token_hash };
    }
    // Rotated or revoked since: a dead token answers nothing (and whoever rotated it had the answer).
    if (token && (await ledger.resolveToken(token.hash)).kind === 'revoked') throw alreadyCredited();
    const bal = await ledger.getBalance(prior.token_hash);
    if (!bal) throw alreadyCredited();
    logger?.info({ challenge: short(prior.challenge_id), topup: prior.topup_id, balance: tokenHint(prior.token_hash) }, 'top-up: answered a resent credential again, nothing credited');
    const body: TopupAnswer = { ...(token ? { balance_token: token.token } : {}), balance: formatCents(bal.cents), currency: TOPUP_CURRENCY, receipt: topupReceipt(receipts, prior) };
    ctx.status = 200;
    ctx.set('Payment-Receipt', Receipt.serialize(Receipt.from({ method: 'stripe', status: 'success', reference: prior.payment_ref, timestamp: prior.at })));
    ctx.set('Cache-Control', 'no-store, private');
    ctx.body = body;
  }

  async function refuse(ctx: Context, challengeResponse: Response, obs: ChargeObservation, challengeId: string | null, cents: number, hadCredential: boolean): Promise<void> {
    const fresh = challengeResponse.headers.get('WWW-Authenticate');
    const mppxProblem = await readMppxProblem(challengeResponse);
    const log = (outcome: string, extra: object = {}) => logger?.info({ challenge: challengeId ? short(challengeId) : undefined, outcome, amount_cents: cents, processor: processor.name, ...extra }, 'top-up refused');
    let problem: Problem;
    let offerChallenge = false;
    if (obs.calls === 0) {
      if (challengeResponse.status >= 500) throw new Error(`mppx failed before charging: ${mppxProblem?.detail ?? challengeResponse.status}`);
      if (!hadCredential) {
        // no credential at all: the normal first leg
        problem = new Problem(402, TOPUP_PROBLEMS.paymentRequired, 'Payment required', `pay ${formatCents(cents)} ${TOPUP_CURRENCY} with the MPP challenge in WWW-Authenticate (method stripe, intent charge, a Shared Payment Token) and repeat this request with the credential`, { amount: formatCents(cents), currency: TOPUP_CURRENCY });
      } else {
        log('credential_invalid');
        problem = new Problem(402, TOPUP_PROBLEMS.credentialInvalid, 'Payment credential not accepted', redactTokens(mppxProblem?.detail ?? 'the credential does not match a valid challenge for this request'), { amount: formatCents(cents), currency: TOPUP_CURRENCY });
      }
      offerChallenge = true;
    } else if (obs.error?.kind === 'card_declined') {
      log('declined', { decline_code: obs.error.declineCode });
      problem = new Problem(402, TOPUP_PROBLEMS.declined, 'Payment declined', obs.error.message, { ...(obs.error.code ? { code: obs.error.code } : {}), ...(obs.error.declineCode ? { decline_code: obs.error.declineCode } : {}) });
    } else if (obs.error?.kind === 'invalid_request' && (obs.error.code === 'resource_missing' || /shared_payment|spt/i.test(obs.error.param ?? ''))) {
      log('token_rejected');
      problem = new Problem(402, TOPUP_PROBLEMS.tokenRejected, 'Payment token rejected', obs.error.message);
    } else if (obs.error) {
      logger?.error({ challenge: challengeId ? short(challengeId) : undefined, kind: obs.error.kind, code: obs.error.code, message: obs.error.message }, 'top-up: processor error');
      problem = new Problem(502, TOPUP_PROBLEMS.processorUnavailable, 'Payment processor unavailable', 'the payment could not be completed; nothing was credited. Resending the same request with the same credential before the challenge expires (5 minutes) is safe.');
    } else if (obs.result?.status === 'requires_action') {
      log('requires_action', { payment: obs.result.id });
      problem = new Problem(402, TOPUP_PROBLEMS.requiresAction, 'Payment requires action', 'the payment needs customer authentication (e.g. 3-D Secure) and was not completed; nothing was credited', { payment_status: 'requires_action' });
    } else if (obs.result?.replayed) {
      // replay of a payment whose outcome we cannot credit (amount differs, or already credited)
      throw alreadyCredited();
    } else {
      log('not_completed', { payment: obs.result?.id, status: obs.result?.status });
      problem = new Problem(402, TOPUP_PROBLEMS.notCompleted, 'Payment not completed', `the payment ended in status ${obs.result?.status ?? 'unknown'}; nothing was credited`, { payment_status: obs.result?.status ?? 'unknown' });
    }
    // Final refusals carry no challenge: the mppx client would otherwise pay again with the same
    // token. Credential problems do carry a fresh one, so the client can simply retry.
    if (offerChallenge && fresh) ctx.set('WWW-Authenticate', fresh);
    writeProblem(ctx, problem);
  }
}

// --------------------------------------------------------------------------- request parsing

/** Validates the top-up body and returns the amount in cents (throws a 400 Problem). */
export function parseTopupBody(body: unknown, minimumCents = TOPUP_MINIMUM_CENTS, maximumCents = TOPUP_MAXIMUM_CENTS): number {
  if (!body || typeof body !== 'object' || Array.isArray(body)) {
    throw new Problem(400, TOPUP_PROBLEMS.malformedBody, 'Malformed request body', 'the request body must be a JSON object such as {"amount": "5.00", "currency": "EUR"}', { field: '(body)' });
  }
  const { amount, currency } = body as Record<string, unknown>;
  // Currency codes are compared case-insensitively everywhere (the MPP challenge itself says `eur`).
  if (currency !== undefined && (typeof currency !== 'string' || currency.toUpperCase() !== TOPUP_CURRENCY)) {
    throw new Problem(400, TOPUP_PROBLEMS.unsupportedCurrency, 'Unsupported currency', `currency must be "${TOPUP_CURRENCY}" (in any case)${typeof currency === 'string' ? `; ${JSON.stringify(currency.slice(0, 16))} is not accepted` : ''}`, { field: 'currency' });
  }
  const cents = parseAmountCents(amount);
  if (cents === null) {
    throw new Problem(400, TOPUP_PROBLEMS.invalidAmount, 'Invalid amount', amountWanted(minimumCents, maximumCents), { field: 'amount' });
  }
  if (cents < minimumCents) {
    throw new Problem(400, TOPUP_PROBLEMS.belowMinimum, 'Top-up below the minimum', `the minimum top-up is ${formatCents(minimumCents)} ${TOPUP_CURRENCY}`, { field: 'amount', minimum: formatCents(minimumCents) });
  }
  if (cents > maximumCents) {
    throw new Problem(400, TOPUP_PROBLEMS.aboveMaximum, 'Top-up above the maximum', `the maximum top-up is ${formatCents(maximumCents)} ${TOPUP_CURRENCY}`, { field: 'amount', maximum: formatCents(maximumCents) });
  }
  return cents;
}

/** What a valid top-up amount is, in words (the same sentence the OpenAPI document's `x-lds-expected` gives). */
export function amountWanted(minimumCents = TOPUP_MINIMUM_CENTS, maximumCents = TOPUP_MAXIMUM_CENTS): string {
  return `amount must be a decimal string in ${TOPUP_CURRENCY} with up to two decimals and no sign or exponent, e.g. "5.00"; at least ${formatCents(minimumCents)} and at most ${formatCents(maximumCents)} (it is never rounded)`;
}

/** Uses the body a body parser left on ctx.request, else reads (bounded) and parses it here. */
async function readBody(ctx: Context): Promise<unknown> {
  const parsed = (ctx.request as { body?: unknown }).body;
  if (parsed !== undefined) return parsed;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new Problem(413, TOPUP_PROBLEMS.bodyTooLarge, 'Request body too large', `at most ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw new Problem(400, TOPUP_PROBLEMS.malformedBody, 'Malformed request body', 'the body is not valid JSON', { field: '(body)' });
  }
}

/**
 * The challenge id (and expiry) of a Payment credential, only if its HMAC proves we issued it (the
 * same check mppx makes), so an attacker cannot make us look up or lock arbitrary ids.
 */
function verifiedChallenge(header: string | undefined, secretKey: string): { id: string; realm: string; expires: string | undefined; nonce: string | undefined } | null {
  if (!header) return null;
  try {
    const payment = Credential.extractPaymentScheme(header);
    if (!payment) return null;
    const credential = Credential.deserialize(payment);
    const c = credential.challenge;
    if (!Challenge.verify(c, { secretKey })) return null;
    const meta = c.meta ?? (c.opaque ? (PaymentRequest.deserialize(c.opaque) as Record<string, unknown>) : undefined);
    return { id: c.id, realm: c.realm, expires: c.expires, nonce: typeof meta?.n === 'string' ? meta.n : undefined };
  } catch {
    return null; // malformed: mppx will answer it with a fresh challenge
  }
}

/** The mppx server takes a Fetch Request; it only reads the URL and the credential header. */
function toFetchRequest(ctx: Context, credentialHeader: string): Request {
  let url: URL;
  try {
    url = new URL(ctx.originalUrl || ctx.url, `${ctx.protocol}://${ctx.host || 'localhost'}`);
  } catch {
    url = new URL(TOPUP_PATH, 'http://localhost');
  }
  // Only the credential travels: never the Bearer balance token.
  const headers = new Headers();
  const credential = ctx.get(credentialHeader);
  if (credential) headers.set(credentialHeader, credential);
  return new Request(url, { method: 'POST', headers });
}

async function readMppxProblem(res: Response): Promise<{ detail?: string } | null> {
  try {
    const text = await res.text();
    return text ? (JSON.parse(text) as { detail?: string }) : null;
  } catch {
    return null;
  }
}

// --------------------------------------------------------------------------- responses

function invalidToken(): Problem {
  return new Problem(401, TOPUP_PROBLEMS.invalidBalanceToken, 'Invalid balance token', 'the Bearer token does not name a balance; omit it to open a new balance');
}

function alreadyCredited(): Problem {
  return new Problem(
    409,
    TOPUP_PROBLEMS.alreadyCredited,
    'Top-up already credited',
    'this payment credential was already credited to a balance; nothing was charged or credited now. The balance token of a new balance is shown once, in the answer to that credential (and again only to the same credential resent before its challenge expires), never after. To top up again, start over without a credential to get a new challenge.',
  );
}

function balanceTokenMissing(): Problem {
  return new Problem(
    401,
    TOPUP_PROBLEMS.balanceTokenRequired,
    'Balance token required',
    'a credential in Payment-Authorization credits the balance named by `Authorization: Bearer <BALANCE_TOKEN>`, and no Bearer token was sent. To credit an existing balance, send its token in Authorization with the credential in Payment-Authorization; to open a new balance, send the credential as `Authorization: Payment <credential>`. Nothing was charged.',
    { field: 'Authorization' },
  );
}

function writeProblem(ctx: Context, p: Problem): void {
  ctx.status = p.status;
  if (typeof p.extra.retry_after === 'number') ctx.set('Retry-After', String(p.extra.retry_after));
  if (p.status === 401) ctx.set('WWW-Authenticate', p.type.endsWith('/balance-token-required') ? 'Bearer realm="lds"' : 'Bearer error="invalid_token"');
  ctx.type = PROBLEM_CONTENT_TYPE;
  ctx.body = p.toJSON(ctx.path);
}

function respondError(ctx: Context, e: unknown, logger?: LoggerLike): void {
  if (e instanceof LedgerUnavailableError) {
    logger?.error({ err: e.reason }, 'top-up: ledger unavailable');
    const outcome = e.outcome === 'unknown' ? 'the credit of this payment was not confirmed in time: it may or may not have been made' : 'the balance ledger is not accepting changes';
    return writeProblem(ctx, new Problem(503, TOPUP_PROBLEMS.ledgerUnavailable, 'Ledger unavailable', `${outcome}; if you were charged, resend the same request with the same credential after Retry-After seconds, before the challenge expires (5 minutes), to get the answer: it is credited at most once`, e.extra));
  }
  if (e instanceof Problem) return writeProblem(ctx, e);
  logger?.error({ err: redactTokens(e instanceof Error ? e.message : String(e)) }, 'top-up: internal error');
  writeProblem(ctx, new Problem(500, TOPUP_PROBLEMS.internal, 'Internal error', 'the top-up failed; nothing was credited unless a later request with the same credential says so'));
}

function short(challengeId: string): string {
  return challengeId.slice(0, 12);
}
