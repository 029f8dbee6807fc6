// The instance's receipt log (LDS_RECEIPT_LOG=<file>, off by default): every receipt this instance
// signs, one JSON receipt per line, appended and never read by the service. For the operator's
// `lds ledger reconcile <logs…>` after a failover that may have lost acknowledged changes (an
// asynchronous standby promoted, a restore from an older backup): it names every receipt whose
// record the ledger no longer has, without asking buyers for their journals.
//
// Durability, on purpose: lines go through one append stream and are not fsynced one by one, so a
// paid draw pays no extra disk flush. A line survives the database failing over and this process
// crashing (the bytes are the OS's within milliseconds), not the machine losing power in the same
// moment - the failure it is for is the database's, not this machine's. A replay signs the same
// receipt again and logs it again; reconcile counts it once. Rotate with logrotate's copytruncate
// (the file is opened for appending).
import { createWriteStream, type WriteStream } from 'node:fs';
import type { LoggerLike } from './ledger/ledger.ts';

export interface ReceiptLog {
  append(receipt: object): void;
  close(): Promise<void>;
}

export function openReceiptLog(path: string, logger?: LoggerLike): ReceiptLog {
  const out: WriteStream = createWriteStream(path, { flags: 'a', mode: 0o600 });
  let failed = false;
  out.on('error', (err) => {
    // A log that cannot be written must not stop payments: say so once, loudly.
    if (!failed) logger?.error({ err: err.message, file: path }, 'receipt log: cannot write; receipts are no longer logged');
    failed = true;
  });
  return {
    append(receipt) {
      if (!failed) out.write(`${JSON.stringify(receipt)}\n`);
    },
    close: () => new Promise<void>((resolve) => out.end(() => resolve())),
  };
}
