// Picks the ledger backend from the configuration: PostgreSQL when a URL is given
// (LDS_LEDGER_URL=postgres://..., one server or several), otherwise the embedded LevelDB under
// LDS_LEDGER_DIR.
import type { Ledger, LedgerHooks, LoggerLike } from './ledger.ts';
import type { FaultHooks } from '../faults.ts';
import type { TargetSessionAttrs } from './postgres/hosts.ts';

export interface LedgerSettings {
  /** postgres://… : the PostgreSQL ledger; unset: LevelDB in ledgerDir. */
  ledgerUrl?: string;
  ledgerDir: string;
  pgPoolSize?: number;
  pgStatementTimeoutMs?: number;
  pgQueryTimeoutMs?: number;
}

export function isPostgresUrl(url: string | undefined): url is string {
  return !!url && /^postgres(ql)?:\/\//i.test(url);
}

/**
 * Opens the configured ledger. `migrate: false` opens a PostgreSQL ledger without changing its
 * schema. `target`: the kind of server a multi-host URL without target_session_attrs settles on
 * (default read-write, what the service and every command that writes need; read-only commands pass
 * `any`, libpq's default).
 */
export async function openLedger(
  s: LedgerSettings,
  o: { logger?: LoggerLike; migrate?: boolean; hooks?: LedgerHooks; target?: TargetSessionAttrs; /** simulator only (payments/faults.ts) */ faults?: FaultHooks } = {},
): Promise<Ledger> {
  if (s.ledgerUrl) {
    if (!isPostgresUrl(s.ledgerUrl)) throw new Error('LDS_LEDGER_URL must be a postgres:// (or postgresql://) URL');
    const { PgLedger } = await import('./postgres/ledger.ts');
    return PgLedger.open({
      url: s.ledgerUrl,
      poolSize: s.pgPoolSize,
      statementTimeoutMs: s.pgStatementTimeoutMs,
      queryTimeoutMs: s.pgQueryTimeoutMs,
      logger: o.logger,
      migrate: o.migrate,
      ...(o.target ? { defaultTarget: o.target } : {}),
      ...(o.faults ? { faults: o.faults } : {}),
    });
  }
  const { LevelLedger } = await import('./level/ledger.ts');
  return LevelLedger.open(s.ledgerDir, { logger: o.logger, hooks: o.hooks, ...(o.faults ? { faults: o.faults } : {}) });
}
