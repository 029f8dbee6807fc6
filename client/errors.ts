// The errors a buyer's program catches. Every message says what happened and what to do, and none
// of them ever holds the balance token (errors are built from the service's problem documents and
// from URLs, never from request headers).

/** Anything the client refuses or the service refused. */
export class LdsError extends Error {
  override name = 'LdsError';
}

/** The limit of the spending policy that refused a payment. */
export type PolicyLimit = 'max_per_draw' | 'max_per_day' | 'max_per_topup' | 'approval' | 'currency';

/**
 * A payment the local spending policy refused before anything was sent: nothing was paid, nothing
 * was topped up. `limit` names the rule, `limitAmount` its amount (EUR, "0.50"), `asked` what the
 * payment would have cost. For `currency` (a quote not in EUR, the policy's currency),
 * `limitAmount` is the policy's currency and `asked` the quote's amount with its currency.
 */
export class PolicyRefusal extends LdsError {
  override name = 'PolicyRefusal';
  constructor(
    readonly limit: PolicyLimit,
    readonly limitAmount: string,
    readonly asked: string,
    readonly action: 'draw' | 'topup',
    detail: string,
    readonly quoteId?: string,
  ) {
    super(`refused by the spending policy (${limit === 'currency' ? `currency ${limitAmount}` : `${limit} ${limitAmount} EUR`}): ${detail}; nothing was paid`);
  }
}

/** An RFC 9457 problem the service answered (after any retries), with its status and type. */
export class ServiceProblem extends LdsError {
  override name = 'ServiceProblem';
  constructor(
    readonly status: number,
    /** the problem type's last segment, e.g. `insufficient-balance` */
    readonly type: string,
    readonly problem: Record<string, unknown>,
    what: string,
  ) {
    super(`${what}: HTTP ${status}${type ? ` [${type}]` : ''}${problem.title || problem.detail ? `: ${[problem.title, problem.detail].filter(Boolean).join(': ')}` : ''}`);
  }
}

/**
 * A receipt that does not verify against the service's JWKS, or does not match what was paid. The
 * answer is not a result: the client raises this and journals it. For a draw the service may have
 * charged the quote (`charged`); the journal keeps the receipt as served, as evidence.
 */
export class ReceiptError extends LdsError {
  override name = 'ReceiptError';
  constructor(
    readonly reason: string,
    readonly receipt: unknown,
    readonly charged: boolean,
    what: string,
  ) {
    super(`${what}: the receipt does not verify (${reason})${charged ? '; the service may have charged it: keep the journal as evidence and contact the operator' : ''}`);
  }
}

/** The service could not be reached (after the retries the request allows). */
export class NetworkError extends LdsError {
  override name = 'NetworkError';
}
