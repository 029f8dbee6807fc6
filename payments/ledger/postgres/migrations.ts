// The PostgreSQL ledger schema, as versioned migrations applied at start (and by `ledger migrate`).
//
// The tables mirror the records of ../records.ts one to one, so verify and export read the same
// shapes from either backend. Exactly-once lives in the schema, not in Node:
//   - lds_draws.quote_id UNIQUE             a quote is debited at most once
//   - lds_topups.challenge_id UNIQUE        an MPP challenge is credited at most once
//   - lds_topups (processor, payment_ref)   a processor payment is credited at most once
//   - lds_balances.cents CHECK (>= 0)       a balance can never go negative, whatever the SQL above it
//   - lds_corrections.idempotency_key UNIQUE  an operator's refund or adjustment applies at most once
//
// Portability (PostgreSQL-wire distributed databases such as CockroachDB and YugabyteDB): plain
// tables, a SEQUENCE, data-modifying CTEs, ON CONFLICT, row-value comparison. PostgreSQL-specific
// and kept on purpose: `COLLATE "C"` on text keys, so keys sort bytewise as LevelDB sorts them
// (export order; CockroachDB already compares strings bytewise - drop the clause there), and
// transactional DDL in migrations (each migration and its version row commit together).
import type pg from 'pg';

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

const KEY = 'TEXT COLLATE "C" NOT NULL';

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: 'double-entry ledger: balances, top-ups, draws, entries, statements, challenge claims',
    statements: [
      `CREATE SEQUENCE lds_entry_seq`,
      `CREATE TABLE lds_balances (
        token_hash ${KEY} PRIMARY KEY,
        currency TEXT NOT NULL,
        cents BIGINT NOT NULL CONSTRAINT lds_balance_never_negative CHECK (cents >= 0),
        created_at TEXT NOT NULL
      )`,
      `CREATE TABLE lds_topups (
        topup_id ${KEY} PRIMARY KEY,
        token_hash ${KEY} REFERENCES lds_balances (token_hash),
        amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
        currency TEXT NOT NULL,
        processor ${KEY},
        challenge_id ${KEY} CONSTRAINT lds_topup_challenge_once UNIQUE,
        payment_ref ${KEY},
        created_balance BOOLEAN NOT NULL,
        balance_after_cents BIGINT NOT NULL CHECK (balance_after_cents >= 0),
        at TEXT NOT NULL,
        credential_sha256 TEXT,
        CONSTRAINT lds_topup_payment_once UNIQUE (processor, payment_ref)
      )`,
      `CREATE TABLE lds_draws (
        draw_id ${KEY} PRIMARY KEY,
        quote_id ${KEY} CONSTRAINT lds_draw_quote_once UNIQUE,
        token_hash ${KEY} REFERENCES lds_balances (token_hash),
        amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
        currency TEXT NOT NULL,
        product_id TEXT,
        balance_after_cents BIGINT NOT NULL CHECK (balance_after_cents >= 0),
        at TEXT NOT NULL,
        draw TEXT NOT NULL
      )`,
      `CREATE TABLE lds_entries (
        seq BIGINT PRIMARY KEY,
        txn ${KEY},
        account ${KEY},
        cents BIGINT NOT NULL,
        currency TEXT NOT NULL,
        at TEXT NOT NULL
      )`,
      `CREATE TABLE lds_statement (
        token_hash ${KEY},
        seq BIGINT NOT NULL,
        kind TEXT NOT NULL,
        id TEXT NOT NULL,
        amount_cents BIGINT NOT NULL,
        currency TEXT NOT NULL,
        balance_after_cents BIGINT NOT NULL,
        at TEXT NOT NULL,
        quote_id TEXT,
        product_id TEXT,
        PRIMARY KEY (token_hash, seq)
      )`,
      // Not money: who is charging an MPP challenge right now (Ledger.claimChallenge). Not exported.
      `CREATE TABLE lds_challenge_claims (
        challenge_id ${KEY} PRIMARY KEY,
        holder TEXT NOT NULL,
        expires_at BIGINT NOT NULL
      )`,
    ],
  },
  {
    version: 2,
    name: 'operator corrections (refunds, adjustments) with idempotency keys; rotated and revoked balance tokens; statement reasons',
    statements: [
      `CREATE TABLE lds_corrections (
        correction_id ${KEY} PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('refund', 'credit', 'debit', 'topup_refund')),
        idempotency_key ${KEY} CONSTRAINT lds_correction_key_once UNIQUE,
        request_sha256 TEXT NOT NULL,
        token_hash ${KEY} REFERENCES lds_balances (token_hash),
        amount_cents BIGINT NOT NULL CHECK (amount_cents > 0),
        currency TEXT NOT NULL,
        reason TEXT NOT NULL,
        balance_after_cents BIGINT NOT NULL CHECK (balance_after_cents >= 0),
        at TEXT NOT NULL,
        draw_id TEXT COLLATE "C" REFERENCES lds_draws (draw_id),
        topup_id TEXT COLLATE "C" REFERENCES lds_topups (topup_id),
        processor TEXT
      )`,
      `CREATE INDEX lds_corrections_draw ON lds_corrections (draw_id) WHERE draw_id IS NOT NULL`,
      `CREATE INDEX lds_corrections_topup ON lds_corrections (topup_id) WHERE topup_id IS NOT NULL`,
      `CREATE TABLE lds_tokens (
        token_hash ${KEY} PRIMARY KEY,
        balance ${KEY} REFERENCES lds_balances (token_hash),
        created_at TEXT NOT NULL,
        revoked_at TEXT,
        revoked_reason TEXT CHECK (revoked_reason IN ('rotated', 'revoked'))
      )`,
      `ALTER TABLE lds_statement ADD COLUMN reason TEXT, ADD COLUMN draw_id TEXT, ADD COLUMN topup_id TEXT`,
    ],
  },
  {
    version: 3,
    name: 'random balance tokens: the token of a balance a top-up opened, sealed under the paying credential for its replay window',
    statements: [
      // Not money and not exported: a row lives for the minutes of its challenge's window and is
      // deleted by the next credit after that (ledger.ts creditSql). Tokens issued before this
      // migration are untouched: balances and tokens are kept as SHA-256, whatever made the token.
      // No foreign key to lds_topups: a row is written in the same statement as its top-up, and a
      // constraint on lds_topups.challenge_id must stay droppable (ledger-verify's corruption tests).
      `CREATE TABLE lds_token_seals (
        challenge_id ${KEY} PRIMARY KEY,
        sealed TEXT NOT NULL,
        expires_at BIGINT NOT NULL
      )`,
      `CREATE INDEX lds_token_seals_expiry ON lds_token_seals (expires_at)`,
    ],
  },
];

export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1].version;

/** SQLSTATEs that mean "someone else created it first" when two instances migrate at once. */
const RACE_CODES = new Set(['23505', '42P07', '42710']);

/**
 * Applies every migration not yet applied, each in its own transaction with its version row, so a
 * crash leaves a whole migration or none. Several instances starting at once serialise on the
 * version row's primary key: the loser rolls back and finds the work done. Returns the versions
 * applied now; refuses a database whose schema is newer than this code.
 */
export async function migrate(pool: pg.Pool, log: (msg: string) => void = () => {}): Promise<number[]> {
  try {
    await pool.query(`CREATE TABLE IF NOT EXISTS lds_schema_migrations (version INT PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)`);
  } catch (err) {
    if (!RACE_CODES.has((err as { code?: string }).code ?? '')) throw err;
  }
  const applied = new Set((await pool.query<{ version: number }>('SELECT version FROM lds_schema_migrations')).rows.map((r) => Number(r.version)));
  const newest = Math.max(0, ...applied);
  if (newest > SCHEMA_VERSION) throw new Error(`the ledger database has schema version ${newest}, newer than this service knows (${SCHEMA_VERSION}): upgrade the service before starting it on this database`);
  const done: number[] = [];
  for (const m of MIGRATIONS) {
    if (applied.has(m.version)) continue;
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('INSERT INTO lds_schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)', [m.version, m.name, new Date().toISOString()]);
      for (const sql of m.statements) await client.query(sql);
      await client.query('COMMIT');
      done.push(m.version);
      log(`ledger schema: applied migration ${m.version} (${m.name})`);
    } catch (err) {
      await client.query('ROLLBACK').catch(() => {});
      if (!RACE_CODES.has((err as { code?: string }).code ?? '')) throw err;
      // another instance applied this version at the same moment
    } finally {
      client.release();
    }
  }
  return done;
}
