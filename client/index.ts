// lds-catalogue-client: the buyer's client library of the LDS catalogue's draw service (README.md
// beside this file). One concept per module: the client (client.ts), the spending policy
// (policy.ts), the receipts journal and its lock (journal.ts, lock.ts), its reconciliation with the
// service's statement (reconcile.ts), retries (retry.ts), the mppx top-up (mpp.ts), errors.
// What the wire shares with the service (money, receipts, token shape, JSON types) is the
// repository's contract/ folder, compiled into this package: it imports nothing of the server.
export { LdsClient, API_VERSION, apiBase, tokenHintOf, type ClientOptions, type AutoTopup } from './client.ts';
export { LdsError, NetworkError, PolicyRefusal, ReceiptError, ServiceProblem, type PolicyLimit } from './errors.ts';
export { Journal, JournalError, verifyJournal, parseJournal, type JournalEntry, type JournalReport, type VerifyJournalOptions } from './journal.ts';
export { LockTimeout } from './lock.ts';
export { reconcileJournal, type Reconciliation, type ReconcileOptions } from './reconcile.ts';
export type { SpendingPolicy } from './policy.ts';
export type { RetryOptions } from './retry.ts';
export type { CatalogueDoc, CatalogueProduct, Discovery, DrawReceipt, DrawRequestBody, PaidDraw, Quote, StatementLine, TopupReceipt, TopupResult } from './types.ts';
export { verifyReceipt, jwkThumbprint, type Jwks, type PublicJwk } from '../contract/receipts.ts';
export { isWellFormedToken } from '../contract/balance-token.ts';
export { formatCents, parseAmountCents } from '../contract/money.ts';
export { DRAW_BOUNDS, STATEMENT_PAGE, type DrawBounds } from '../contract/limits.ts';
