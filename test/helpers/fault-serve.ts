// `lds serve` with a fault injected into the LevelDB ledger, for test/ops-failstop.test.ts: the
// very serveFromCli the CLI runs (same fail-stop and signal handling), plus a write failure armed
// by SIGUSR2. Production never runs this file; the CLI passes no faults.
import { loadConfig } from '../../payments/config.ts';
import { serveFromCli } from '../../payments/serve.ts';

let armed = false;
process.on('SIGUSR2', () => {
  armed = true;
  console.error('fault armed: the next ledger write fails');
});
const port = Number(process.argv[process.argv.indexOf('--port') + 1] ?? 0);
const config = await loadConfig({ port, host: '127.0.0.1' });
await serveFromCli(config, { ledgerFaults: { failWrite: () => (armed ? new Error('injected write failure (test)') : undefined) } });
