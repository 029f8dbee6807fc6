// The service's bounds, written once: both halves use them. The generator writes them into the
// OpenAPI document and the docs; the service enforces them (payments/draw, payments/http,
// payments/topup); the client checks them before it sends anything (client/). Money amounts are
// integer cents (contract/money.ts).

/** Lines of a balance statement per page: `limit` when none is given, and the largest `limit`. */
export const STATEMENT_PAGE = { defaultLines: 20, maxLines: 1000 } as const;

/** The smallest top-up: 5.00 EUR (card fees make smaller payments a loss). */
export const TOPUP_MINIMUM_CENTS = 500;
/** The largest top-up: 10,000.00 EUR, a sanity bound, not a business rule. */
export const TOPUP_MAXIMUM_CENTS = 1_000_000;
/** The default ceiling of one operator adjustment (LDS_MAX_ADJUSTMENT): the top-up maximum. */
export const DEFAULT_MAX_ADJUSTMENT_CENTS = TOPUP_MAXIMUM_CENTS;

/**
 * The bounds of a draw request. Their values live in the OpenAPI document the build publishes
 * (the DrawRequest schema and `x-lds-limits`, read by payments/http/openapi-validate.ts), so the
 * document, the HTTP check and the draw service (which MCP and A2A reach without HTTP) agree.
 */
export interface DrawBounds {
  /** Distinct unit references per draw (duplicates are removed before this applies). */
  maxUnits: number;
  /** Entries of the `units` list as sent, duplicates included. */
  maxUnitItems: number;
  maxLimit: number;
  defaultLimit: number;
  maxQueryChars: number;
  maxBodyBytes: number;
}
