// The instance's receipt log (LDS_RECEIPT_LOG=<file>, off by default): every receipt this instance
// signs, one JSON receipt per line, appended and never read by the service. For the operator's
// `lds ledger reconcile <logs…>` after a failover that may have lost acknowledged changes (an
// asynchronous standby promoted, a restore from an older backup): it names every receipt whose
// record the ledger no longer has, without asking buyers for their journals.
//
// Durability, on purpose: each line is handed to the operating system (one write(2) to a file
// opened for appending) before the receipt is returned, so before the answer leaves; it is not
// fsynced, so a paid draw pays no disk flush. A line therefore survives the database failing over
// and this process crashing, not the machine losing power in the same moment - the loss it is for is
// the database's. A synchronous append: no buffer in memory, no thread-pool round trip, lines in
// signing order. A replay signs the same receipt again and logs it again; reconcile counts it once.
// Rotate with logrotate's copytruncate (the file is opened for appending).
import { closeSync, openSync, writeSync } from 'node:fs';
import type { LoggerLike } from './ledger/ledger.ts';

export interface ReceiptLog {
  append(receipt: object): void;
  close(): void;
}

export function openReceiptLog(path: string, logger?: LoggerLike): ReceiptLog {
  const fd = openSync(path, 'a', 0o600);
  let failed = false;
  return {
    append(receipt) {
      if (failed) return;
      try {
        writeSync(fd, `${JSON.stringify(receipt)}\n`);
      } catch (err) {
        // A log that cannot be written must not stop payments: say so once, loudly.
        failed = true;
        logger?.error({ err: (err as Error).message, file: path }, 'receipt log: cannot write; receipts are no longer logged');
      }
    },
    close: () => closeSync(fd),
  };
}
