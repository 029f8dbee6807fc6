// Receipt key generation (payments/receipts.ts generateReceiptKey): every fresh `lds serve` without
// LDS_RECEIPT_KEYS makes one. On Node 20, exporting a key from generateKeyPairSync as JWK deadlocks
// the process when a garbage collection runs inside the export; in a tight loop that happens within
// a few thousand keys, and it hung about one test-suite start in 100 before listening.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { generateReceiptKey, jwkThumbprint, ReceiptSigner, verifyReceipt } from '../payments/receipts.ts';
import { runAsync } from './helpers/build.ts';

const KEYS = 20_000;

test(`${KEYS} keys made back to back in one process: none hangs, all distinct`, async () => {
  // In a child process, so a deadlock ends in runAsync's 60 s kill (code null) instead of hanging this file.
  const script = `
    import { generateReceiptKey } from './payments/receipts.ts';
    const xs = new Set();
    for (let i = 0; i < ${KEYS}; i++) xs.add(generateReceiptKey().x);
    console.log(xs.size);`;
  const r = await runAsync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script]);
  assert.is(r.code, 0, `key generation ${r.code === null ? 'hung (killed after 60 s)' : `exited ${r.code}`}: ${r.stderr}`);
  assert.is(Number(r.stdout.trim()), KEYS);
});

test('a generated key is an Ed25519 private JWK whose d matches x, and it signs verifiable receipts', () => {
  const key = generateReceiptKey();
  assert.equal(Object.keys(key).sort(), ['crv', 'd', 'kty', 'x']);
  assert.is(key.kty, 'OKP');
  assert.is(key.crv, 'Ed25519');
  assert.match(key.x!, /^[A-Za-z0-9_-]{43}$/);
  assert.match(key.d!, /^[A-Za-z0-9_-]{43}$/);
  // fromJwks derives the public key from d with OpenSSL and refuses a d that does not match x.
  const signer = ReceiptSigner.fromJwks([key]);
  assert.is(signer.kid, jwkThumbprint({ crv: 'Ed25519', kty: 'OKP', x: key.x! }));
  const receipt = signer.sign({ kind: 'test', amount_cents: 7 });
  assert.equal(verifyReceipt(receipt, signer.jwks), { ok: true, kid: signer.kid });
  assert.is(verifyReceipt({ ...receipt, amount_cents: 8 }, signer.jwks).ok, false);
});

test.run();
