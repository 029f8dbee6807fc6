// `lds receipt verify FILE` when the JWKS cannot be fetched: one line that names the address it
// tried, why it failed and what to do (--jwks with the signing service's URL or a saved copy),
// never a bare "fetch failed". Issue 23 item 11.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { LDS_ARGS, REPO, runAsync, tempDir } from './helpers/build.ts';
import { canConnect, freePort } from './helpers/http.ts';
import { locate, UNSHARE } from './helpers/programs.ts';

const DEFAULT_JWKS = 'http://127.0.0.1:8080/.well-known/jwks.json';
let file: string;

test.before(async () => {
  file = join(await tempDir('lds-receipt-'), 'draw.json');
  await writeFile(file, JSON.stringify({ receipt: { type: 'draw', draw_id: 'drw_x', amount: '0.01', currency: 'EUR', signature: { alg: 'EdDSA', kid: 'k', value: 'AA' } } }));
});

/** The one error line: the address, the reason, and --jwks as the way out; no stack trace. */
function assertHelpful(r: { code: number | null; stdout: string; stderr: string }, url: string): void {
  assert.is(r.code, 1, r.stderr);
  assert.is(r.stdout, '');
  const lines = r.stderr.trim().split('\n');
  assert.is(lines.length, 1, r.stderr);
  assert.ok(lines[0]!.startsWith(`error: cannot reach ${url} (`), r.stderr);
  assert.match(lines[0]!, /\((ECONNREFUSED|ENETUNREACH)\)/);
  assert.match(lines[0]!, '--jwks');
  assert.match(lines[0]!, 'saved copy');
  assert.not.match(r.stderr, 'fetch failed');
}

test('without --jwks: the default address, why it failed, and what to do', async () => {
  const cli = [process.execPath, ...LDS_ARGS, 'receipt', 'verify', file];
  // As root, a network namespace of its own guarantees nothing answers at the default address
  // (this machine may run a service on 8080); otherwise the port must be free.
  const unshare = process.getuid?.() === 0 ? locate(UNSHARE) : { missing: 'not root' };
  if ('path' in unshare) {
    const r = await runAsync(unshare.path, ['-n', ...cli]);
    assertHelpful(r, DEFAULT_JWKS);
  } else {
    assert.not.ok(await canConnect(8080), 'something listens on 127.0.0.1:8080 (stop it, or run this test as root, which isolates it with unshare -n)');
    assertHelpful(await runAsync(cli[0]!, cli.slice(1)), DEFAULT_JWKS);
  }
});

test('with --jwks at an address that does not answer, or a file that is missing', async () => {
  const url = `http://127.0.0.1:${await freePort()}/.well-known/jwks.json`;
  assertHelpful(await runAsync(process.execPath, [...LDS_ARGS, 'receipt', 'verify', file, '--jwks', url]), url);
  const missing = join(REPO, 'no-such-jwks.json');
  const r = await runAsync(process.execPath, [...LDS_ARGS, 'receipt', 'verify', file, '--jwks', missing]);
  assert.is(r.code, 1);
  assert.match(r.stderr, `cannot read the JWKS file ${missing} (ENOENT)`);
  assert.match(r.stderr, '--jwks');
});

test.run();
