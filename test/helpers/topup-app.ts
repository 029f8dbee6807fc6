// A minimal Koa app mounting the top-up handler over real HTTP on 127.0.0.1:0, with its own
// temporary ledger (of the backend LDS_TEST_BACKEND names). Shared by the top-up tests.
import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Server } from 'node:http';
import Koa from 'koa';
import Router from '@koa/router';
import { bodyParser } from '@koa/bodyparser';
import type { Ledger } from '../../payments/ledger/ledger.ts';
import type { LedgerSettings } from '../../payments/ledger/open.ts';
import { openTestLedger } from './ledgers.ts';
import type { PaymentProcessor } from '../../payments/processors/types.ts';
import { createTopupHandler, TOPUP_PATH } from '../../payments/topup/handler.ts';
import { generateReceiptKey, ReceiptSigner } from '../../payments/receipts.ts';

export const TEST_SECRET = 'test-secret-key-of-at-least-32-bytes-0123456789';

export interface TopupApp {
  url: string;
  ledger: Ledger;
  /** Where the ledger lives (for the CLI, or a direct look at its records). */
  settings: LedgerSettings;
  dir: string;
  logs: { level: string; obj: object; msg?: string }[];
  close(): Promise<void>;
}

export async function startTopupApp(processor: PaymentProcessor, opts: { now?: () => number } = {}): Promise<TopupApp> {
  const dir = await mkdtemp(join(tmpdir(), 'lds-topup-'));
  const { ledger, settings } = await openTestLedger();
  const logs: TopupApp['logs'] = [];
  const logger = {
    info: (obj: object, msg?: string) => logs.push({ level: 'info', obj, msg }),
    warn: (obj: object, msg?: string) => logs.push({ level: 'warn', obj, msg }),
    error: (obj: object, msg?: string) => logs.push({ level: 'error', obj, msg }),
  };
  const app = new Koa();
  const router = new Router();
  router.post(TOPUP_PATH, createTopupHandler({ ledger, processor, realm: 'lds.test', secretKey: TEST_SECRET, logger, receipts: ReceiptSigner.fromJwks([generateReceiptKey()]), ...(opts.now ? { now: opts.now } : {}) }));
  app.use(bodyParser());
  app.use(router.routes());
  const server: Server = await new Promise((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}${TOPUP_PATH}`,
    ledger,
    settings,
    dir,
    logs,
    async close() {
      await new Promise<void>((r) => server.close(() => r()));
      await ledger.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

export { postJson } from './http.ts';
