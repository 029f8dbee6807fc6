// Issue 50, item 21: the operator's `ledger` commands on a LevelDB ledger, where they are pointed wrong.
//   - `ledger export --out` onto an existing file crashed with an unhandled EEXIST (a stack trace), and a
//     failed export (no ledger there) left an empty file behind;
//   - `verify` and `export` told a missing ledger, or a folder that holds none, in different words.
// Now: an existing --out is refused in one line and left as it was, a failed export leaves no file, a
// successful one is owner-only and complete, and both commands say "no ledger at <dir>" the same way
// (without writing LevelDB's LOCK and LOG into a folder that is not a ledger).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LevelLedger } from '../payments/ledger/level/ledger.ts';
import { cliAsync, type RunResult } from './helpers/build.ts';

let dir: string;
let ledgerDir: string;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lds-ledger-commands-'));
  ledgerDir = join(dir, 'ledger');
  await (await LevelLedger.open(ledgerDir)).close(); // an empty ledger: nothing paid yet
});

const run = (args: string[]) => cliAsync(args, { env: { LDS_LEDGER_URL: '' } });
const oneError = (r: RunResult, re: RegExp) => {
  assert.is(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stderr, re);
  assert.not.match(r.stderr, /\n\s+at |node:internal|Node\.js v/, `no stack trace: ${r.stderr}`);
};

test('export --out onto an existing file is refused in one line, and the file is left as it was', async () => {
  const out = join(dir, 'existing.ndjson');
  await writeFile(out, 'yesterday\'s backup\n');
  const r = await run(['ledger', 'export', '--dir', ledgerDir, '--out', out]);
  oneError(r, new RegExp(`^error: --out ${out} already exists: name a new file .*nothing was written\\n$`));
  assert.is(await readFile(out, 'utf8'), 'yesterday\'s backup\n');
  assert.equal((await readdir(dir)).sort(), ['existing.ndjson', 'ledger'], 'no partial file beside it');
});

test('a failed export leaves no file; verify and export say "no ledger at <dir>" alike, for a missing folder and one that is not a ledger', async () => {
  const missing = join(dir, 'no-such-ledger');
  const notALedger = join(dir, 'empty-folder');
  await mkdir(notALedger);
  for (const at of [missing, notALedger]) {
    const expected = new RegExp(`^error: no ledger at ${at} \\(nothing has been paid there yet, or LDS_LEDGER_DIR / --dir points elsewhere\\)\\n$`);
    const out = join(dir, 'failed.ndjson');
    oneError(await run(['ledger', 'verify', '--dir', at]), expected);
    oneError(await run(['ledger', 'export', '--dir', at, '--out', out]), expected);
    oneError(await run(['ledger', 'export', '--dir', at]), expected);
    assert.not.ok((await readdir(dir)).some((f) => f.includes('failed.ndjson')), 'the failed export left no file (nor a partial one)');
  }
  assert.equal(await readdir(notALedger), [], 'LevelDB wrote nothing into the folder that is not a ledger');
});

test('a typed --dir wins over an LDS_LEDGER_URL left in the environment (it went to PostgreSQL and said "clean")', async () => {
  const missing = join(dir, 'typed-but-missing');
  const env = { LDS_LEDGER_URL: 'postgres://nobody:secret@127.0.0.1:1/none' };
  const r = await cliAsync(['ledger', 'verify', '--dir', missing], { env });
  oneError(r, new RegExp(`^error: no ledger at ${missing} `));
  const ok = await cliAsync(['ledger', 'verify', '--dir', ledgerDir], { env });
  assert.is(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, new RegExp(`ledger LevelDB ${ledgerDir}: clean`));
});

test('an export to a new file is complete and owner-only, and says which ledger it exported', async () => {
  const out = join(dir, 'backup.ndjson');
  const r = await run(['ledger', 'export', '--dir', ledgerDir, '--out', out]);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`^ledger LevelDB ${ledgerDir}: exported to ${out}\\n$`));
  assert.is((await stat(out)).mode & 0o777, 0o600);
  const lines = (await readFile(out, 'utf8')).trimEnd().split('\n').map((l) => JSON.parse(l));
  assert.is(lines[0].type, 'header');
  assert.is(lines.at(-1).type, 'footer');
  const same = await run(['ledger', 'export', '--dir', ledgerDir]);
  assert.is(same.stdout, await readFile(out, 'utf8'), 'the same bytes as to standard output');
  const v = await run(['ledger', 'verify', '--dir', ledgerDir]);
  assert.is(v.code, 0, v.stderr);
  assert.is(v.stdout, `ledger LevelDB ${ledgerDir}: clean\n`);
});

test.run();
