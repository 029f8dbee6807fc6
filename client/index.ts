// lds-catalogue/client: the buyer's client library (README, "Buying from code").
export { LdsClient, type ClientOptions, type AutoTopup } from './client.ts';
export { LdsError, NetworkError, PolicyRefusal, ReceiptError, ServiceProblem, type PolicyLimit } from './errors.ts';
export { Journal, verifyJournal, parseJournal, type JournalEntry, type JournalReport } from './journal.ts';
export type { SpendingPolicy } from './policy.ts';
export type { RetryOptions } from './retry.ts';
export type { Discovery, DrawReceipt, DrawRequestBody, PaidDraw, Quote, StatementLine, TopupReceipt, TopupResult } from './types.ts';
export { verifyReceipt, type Jwks } from '../contract/receipts.ts';
