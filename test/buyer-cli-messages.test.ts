// Issue 34 (item 11, the buyer's commands; item 6, the journal) and issue 35: messages that say what
// is wrong. No service is needed: each of these is refused before anything is sent (the base URL
// names a port nothing listens on, so a request would fail otherwise).
//   - a --token-file that is missing, empty or readable by others: named, with why;
//   - a mistyped option on any command: named, with the nearest option (commander checked required
//     options first: "required option '--product' not specified" for `buy --prodcut`);
//   - a base URL without /v1: says it ends in /v1 (it was a bare 404);
//   - a receipts journal others can read or write: refused, naming the chmod (it was used as is).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmod, mkdtemp, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cliAsync } from './helpers/build.ts';
import { freePort } from './helpers/http.ts';
import { Journal, JournalError } from '../client/journal.ts';

let dir: string;
let base: string;
const TOKEN = `lds_bal_${'A'.repeat(43)}`;
test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lds-buyer-messages-'));
  base = `http://127.0.0.1:${await freePort()}/v1`;
});
const run = (args: string[], env: Record<string, string> = {}) => cliAsync(args, { env: { LDS_BALANCE_TOKEN: '', ...env } });
const oneError = (r: { code: number | null; stdout: string; stderr: string }, re: RegExp) => {
  assert.is(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stderr, re);
  assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
};

test('--token-file: a missing file, an empty one and one others can read are each named with why (balance and statement)', async () => {
  const missing = join(dir, 'nonexistent', 'token');
  for (const cmd of ['balance', 'statement']) oneError(await run([cmd, '--base-url', base, '--token-file', missing]), new RegExp(`error: --token-file ${missing}: no such file .*Save the balance token there`));
  const empty = join(dir, 'empty-token');
  await writeFile(empty, '\n', { mode: 0o600 });
  oneError(await run(['balance', '--base-url', base, '--token-file', empty]), new RegExp(`error: --token-file ${empty} is empty: its first line must be the balance token`));
  const loose = join(dir, 'loose-token');
  await writeFile(loose, `${TOKEN}\n`);
  await chmod(loose, 0o644);
  oneError(await run(['statement', '--base-url', base, '--token-file', loose]), new RegExp(`error: --token-file ${loose} can be read by others \\(mode 644\\): run chmod 600 ${loose}`));
});

test('a mistyped option is named with the nearest option, on any command; a missing required option is still refused', async () => {
  const typo = await run(['buy', '--prodcut', 'svc-agriculture-eu', '--query', 'x', '--max', '0.50', '--base-url', base]);
  oneError(typo, /error: unknown option '--prodcut'\n\(Did you mean --product\?\)/);
  assert.not.match(typo.stderr, /required option/);
  oneError(await run(['ledger', 'verify', '--dri', 'x']), /error: unknown option '--dri'\n\(Did you mean --dir\?\)/);
  oneError(await run(['receipts', 'verify', 'x.ndjson', '--jwsk', 'y']), /error: unknown option '--jwsk'\n\(Did you mean --jwks\?\)/);
  oneError(await run(['buy', '--query', 'x', '--max', '0.50', '--base-url', base]), /error: required option '--product <product_id>' not specified/);
});

test('a base URL without /v1 says that the base URL ends in /v1 (buy, balance, topup), before anything is sent', async () => {
  const origin = base.replace(/\/v1$/, '');
  const expected = new RegExp(`error: --base-url must end in /v1, the API this client speaks .*: ${origin.replace(/[.]/g, '\\.')}/v1, not "${origin.replace(/[.]/g, '\\.')}/"`);
  oneError(await run(['buy', '--base-url', `${origin}/`, '--product', 'svc-agriculture-eu', '--query', 'x', '--max', '0.50'], { LDS_BALANCE_TOKEN: TOKEN }), expected);
  oneError(await run(['balance', '--base-url', `${origin}/`], { LDS_BALANCE_TOKEN: TOKEN }), expected);
  oneError(await run(['topup', '--amount', '5.00', '--base-url', `${origin}/`]), expected);
});

test('a receipts journal others can read or write is refused, naming it and the chmod; a new one is created 0600', async () => {
  const path = join(dir, 'receipts.ndjson');
  await writeFile(path, '');
  await chmod(path, 0o644);
  const r = await run(['buy', '--base-url', base, '--product', 'svc-agriculture-eu', '--query', 'x', '--max', '0.50', '--journal', path], { LDS_BALANCE_TOKEN: TOKEN });
  oneError(r, new RegExp(`error: the receipts journal ${path} can be read by others \\(mode 644\\): run chmod 600 ${path}\\. It lists what you bought; nothing was sent`));
  await chmod(path, 0o660);
  const writable = await Journal.open(path).catch((e) => e);
  assert.instance(writable, JournalError);
  assert.match(writable.message, /can be written by others \(mode 660\).*others could rewrite it/);
  const fresh = join(dir, 'new', 'receipts.ndjson');
  await (await Journal.open(fresh)).close();
  assert.is((await stat(fresh)).mode & 0o777, 0o600);
});

// Issue 50, item 15: `lds balance`, `statement`, … went to :8080 whatever LDS_BASE_URL said (the client
// package, `lds mcp` and `lds build` honour it), and their retry lines named only the path. Every buyer
// command now takes its base from LDS_BASE_URL when --base-url is not given, and every line about an
// unanswered request names the host it went to. Nothing listens at the base, so each ends in an error.
test('every buyer command goes to LDS_BASE_URL when --base-url is not given, and its retry and error lines name that host', async () => {
  const journal = join(dir, 'base-url-journal.ndjson');
  const host = new URL(base).host;
  const commands = [
    ['balance'],
    ['statement'],
    ['rotate', '--journal', journal],
    ['topup', '--amount', '5.00'],
    ['buy', '--product', 'svc-agriculture-eu', '--query', 'x', '--max', '0.50', '--journal', journal],
  ];
  const runs = await Promise.all(commands.map((args) => run(args, { LDS_BALANCE_TOKEN: TOKEN, LDS_BASE_URL: base })));
  runs.forEach((r, i) => {
    const cmd = commands[i]![0];
    oneError(r, new RegExp(`error: .*${host.replace(/[.]/g, '\\.')}/v1/lds/`));
    assert.not.match(r.stderr, /:8080/, `${cmd} went to the default address: ${r.stderr}`);
    const retries = r.stderr.split('\n').filter((l) => /retrying in/.test(l));
    for (const line of retries) assert.ok(line.includes(`http://${host}/v1/lds/`), `${cmd}: the retry line names the host: ${line}`);
    if (cmd === 'balance' || cmd === 'statement' || cmd === 'buy') assert.ok(retries.length > 0, `${cmd} retried: ${r.stderr}`);
  });
});

test.run();
