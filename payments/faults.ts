// Fault hooks in the money path, for the seeded simulator (sim/) ONLY.
//
// Production never sets them: `lds serve` / `npm start` (serveFromCli) calls startServer without a
// `faults` option, no configuration setting or environment variable reaches them, and every call
// site is `faults?.hit(...)`, a no-op when absent. The simulator starts its service instances
// through its own entry (sim/instance.ts), which passes a FaultHooks that can kill the process at
// one of these points or make the sandbox processor time out after it charged.
//
// Points, per state change of the ledger (op = 'debit' for a paid draw, 'credit' for a top-up):
//   before-commit  the change is decided (under its locks / before its statement is sent) but not written;
//   during-commit  its write has been handed to the database and has not returned (LevelDB: the synced
//                  batch is being written; PostgreSQL: the statement is on its way) - it may or may not land;
//   after-commit   the change is durable and the service has not answered yet.
// processor:after-charge: the sandbox processor has created (and remembered, for its idempotency
// key) a PaymentIntent; a hook answering true makes the call fail as a network timeout would.

export type FaultOp = 'debit' | 'credit';
export type CommitPoint = 'before-commit' | 'during-commit' | 'after-commit';

export interface FaultHooks {
  /** Called at a commit point. May end the process (it never returns then). */
  commit(point: CommitPoint, op: FaultOp): void;
  /** Called after the sandbox processor charged; true: fail the call as a timeout would. */
  processorAfterCharge(): boolean;
}
