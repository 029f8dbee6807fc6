// A second `lds serve` on the same LevelDB unit store or ledger (two real processes): it must not
// start, and must say which database, that another process holds it, and what to do instead.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cp, mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { buildFixture, type Fixture } from './helpers/service-harness.ts';
import { sharedSecrets, startInstance, stopInstance, type Instance } from './helpers/instances.ts';

let fx: Fixture;
let first: Instance;
let secrets: Record<string, string>;

test.before(async () => {
  fx = await buildFixture();
  secrets = sharedSecrets();
  // The first instance uses the fixture's store itself (not a copy) and its own LevelDB ledger.
  first = await startInstance(fx, { ...secrets, LDS_STORE_DIR: fx.store });
});
test.after(async () => {
  if (first) await stopInstance(first);
});

async function refusal(env: Record<string, string>): Promise<string> {
  try {
    const second = await startInstance(fx, { ...secrets, ...env });
    await stopInstance(second);
  } catch (err) {
    return (err as Error).message;
  }
  assert.unreachable('the second instance started');
  return '';
}

test('same unit store: names the store database, says another process holds it, says what to do', async () => {
  const msg = await refusal({ LDS_STORE_DIR: fx.store });
  assert.match(msg, /server exited \(1\)/, msg);
  assert.ok(msg.includes(fx.store), msg);
  assert.match(msg, /unit store database .* is held by another process/);
  assert.match(msg, /its own copy of the unit store/);
  assert.match(msg, /LDS_STORE_DIR/);
  assert.match(msg, /PostgreSQL ledger \(LDS_LEDGER_URL/);
  assert.not.match(msg, /^error: Database failed to open$/m);
  // the first instance is unaffected
  assert.is((await fetch(`${first.base}/lds/_catalog`)).status, 200);
});

test('same LevelDB ledger (own copy of the store): names the ledger, says another process holds it, points at PostgreSQL', async () => {
  const dir = await mkdtemp(join(fx.root, 'var-second-'));
  await cp(fx.store, join(dir, 'store'), { recursive: true });
  const msg = await refusal({ LDS_STORE_DIR: join(dir, 'store'), LDS_LEDGER_DIR: join(first.varDir, 'ledger') });
  assert.match(msg, /server exited \(1\)/, msg);
  assert.ok(msg.includes(join(first.varDir, 'ledger')), msg);
  assert.match(msg, /ledger database .* is held by another process/);
  assert.match(msg, /LDS_LEDGER_URL=postgres/);
  assert.is((await fetch(`${first.base}/lds/_catalog`)).status, 200);
});

test.run();
