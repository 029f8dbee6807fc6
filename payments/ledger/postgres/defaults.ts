// The PostgreSQL ledger's time bounds by default, read by the configuration (payments/config.ts)
// and by a ledger opened without one (postgres/ledger.ts). A module of its own, so the configuration
// does not load the driver.

/** LDS_PG_QUERY_TIMEOUT_MS: every ledger call ends within this, measured by the service. */
export const DEFAULT_QUERY_TIMEOUT_MS = 5000;
/**
 * LDS_PG_STATEMENT_TIMEOUT_MS unset: the server's statement_timeout, below the query timeout so a
 * slow statement ends on the server (rolled back: a known outcome) before the service stops waiting
 * for it (an unknown one): 4 s, or 80 % of a query timeout below 5 s.
 */
export function defaultStatementTimeoutMs(queryTimeoutMs: number): number {
  return Math.min(4000, Math.floor(queryTimeoutMs * 0.8));
}
