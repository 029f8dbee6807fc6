// Issue 14, item 9: `lds topup` funds a balance against a real running service (real build, real
// LevelDB ledger, the sandbox processor behind the same mppx code path as Stripe): a new balance
// prints its token once; --token -, LDS_BALANCE_TOKEN and --token credit an existing balance; every
// refusal is one readable line and exit code 1; secrets given to it are never printed.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { cliAsync } from './helpers/build.ts';
import { freePort } from './helpers/http.ts';
import { balanceOf, buildFixture, startTestServer, topUp, type TestServer } from './helpers/service-harness.ts';

let srv: TestServer;
const TOKEN_RE = /\blds_bal_[A-Za-z0-9_-]{43}\b/g;

test.before(async () => {
  srv = await startTestServer(await buildFixture());
});
test.after(async () => {
  await srv?.close();
});

/** `cli.ts topup` against the test server; LDS_BALANCE_TOKEN is cleared unless given. */
const topup = (args: string[], opts: { env?: Record<string, string>; input?: string } = {}) =>
  cliAsync(['topup', '--base-url', srv.base, ...args], { env: { LDS_BALANCE_TOKEN: '', ...opts.env }, input: opts.input });

test('--help names every option, the token sources and the sandbox test tokens', async () => {
  const r = await cliAsync(['topup', '--help']);
  assert.is(r.code, 0);
  for (const word of ['--amount', '--token', '--spt', '--base-url', '--json', 'LDS_BALANCE_TOKEN', 'standard input', 'spt_sandbox_decline', 'spt_sandbox_requires_action', 'http://127.0.0.1:8080/v1'])
    assert.ok(r.stdout.includes(word), `help mentions ${word}`);
  const main = await cliAsync(['--help']);
  assert.match(main.stdout, /\btopup\b/, 'listed in the main help');
});

test('a new balance: prints the amount, the balance and the token once; the token spends that balance', async () => {
  const r = await topup(['--amount', '7.5']);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Paid 7\.50 EUR \(payment pi_\S+\)\.$/m);
  assert.match(r.stdout, /^New balance: 7\.50 EUR$/m);
  const tokens = r.stdout.match(TOKEN_RE) ?? [];
  assert.is(tokens.length, 1, 'the token, once');
  assert.is(r.stderr.trim(), '');
  assert.is(await balanceOf(srv.base, tokens[0]!), '7.50');
});

test('credits an existing balance from standard input, LDS_BALANCE_TOKEN or --token, and never prints it', async () => {
  const token = await topUp(srv.base, '5.00');
  const fromStdin = await topup(['--amount', '5.00', '--token', '-'], { input: `${token}\n` });
  assert.is(fromStdin.code, 0, fromStdin.stderr);
  assert.match(fromStdin.stdout, /^Balance \(the one from standard input\): 10\.00 EUR$/m);
  const fromEnv = await topup(['--amount', '5.00'], { env: { LDS_BALANCE_TOKEN: token } });
  assert.is(fromEnv.code, 0, fromEnv.stderr);
  assert.match(fromEnv.stdout, /^Balance \(the one from LDS_BALANCE_TOKEN\): 15\.00 EUR$/m);
  const fromFlag = await topup(['--amount', '5.00', '--token', token]);
  assert.is(fromFlag.code, 0, fromFlag.stderr);
  assert.match(fromFlag.stdout, /^Balance \(the one from --token\): 20\.00 EUR$/m);
  for (const r of [fromStdin, fromEnv, fromFlag]) {
    assert.not.match(r.stdout + r.stderr, TOKEN_RE, 'an existing token is not printed');
    assert.not.match(r.stdout, /New balance/);
  }
  assert.is(await balanceOf(srv.base, token), '20.00', 'credited three times, no new balance');
});

test('--json prints one object: balance_token only for a new balance, the amount and the payment', async () => {
  const fresh = await topup(['--amount', '5.00', '--json']);
  assert.is(fresh.code, 0, fresh.stderr);
  const a = JSON.parse(fresh.stdout);
  assert.match(a.balance_token, /^lds_bal_/);
  assert.equal([a.balance, a.currency, a.amount], ['5.00', 'EUR', '5.00']);
  assert.match(a.payment, /^pi_/);
  const again = await topup(['--amount', '5.00', '--json'], { env: { LDS_BALANCE_TOKEN: a.balance_token } });
  const b = JSON.parse(again.stdout);
  assert.is(b.balance_token, undefined);
  assert.is(b.balance, '10.00');
});

test('refusals are one readable line with the service\'s reason, exit code 1, and nothing credited', async () => {
  const token = await topUp(srv.base, '5.00');
  const cases: [string[], RegExp, Record<string, string>?][] = [
    [['--amount', '5.00', '--spt', 'spt_sandbox_decline'], /^error: top-up refused \(HTTP 402 \[payment-declined\]\): .*declined/],
    [['--amount', '5.00', '--spt', 'spt_sandbox_requires_action'], /^error: top-up refused \(HTTP 402 \[payment-requires-action\]\): /],
    [['--amount', '5.00', '--spt', 'not_an_spt'], /^error: top-up refused \(HTTP 402 \[payment-token-rejected\]\): /],
    [['--amount', '4.99'], /^error: top-up refused \(HTTP 400 \[topup-below-minimum\]\): .*5\.00 EUR/],
    [['--amount', 'five'], /^error: top-up refused \(HTTP 400 \[\S+\]\): .*amount/i],
    [['--amount', '5.00'], /^error: the balance token from LDS_BALANCE_TOKEN is not a balance token/, { LDS_BALANCE_TOKEN: 'lds_bal_secret-but-wrong' }],
    [['--amount', '5.00', '--token', `lds_bal_${'A'.repeat(43)}`], /^error: top-up refused \(HTTP 401 \[invalid-balance-token\]\): /],
    [['--amount', '5.00', '--spt', 'spt_sandbox_decline'], /^error: top-up refused \(HTTP 402 \[payment-declined\]\): /, { LDS_BALANCE_TOKEN: token }],
  ];
  for (const [args, expected, env] of cases) {
    const r = await topup(args, { env });
    assert.is(r.code, 1, `${args.join(' ')}: exit 1\n${r.stdout}${r.stderr}`);
    assert.match(r.stderr, expected, args.join(' '));
    assert.is(r.stderr.trim().split('\n').length, 1, `one line, no stack trace: ${r.stderr}`);
    assert.not.ok(r.stderr.includes('secret-but-wrong') || r.stderr.includes(token), 'no token in the message');
    assert.is(r.stdout, '');
  }
  assert.is(await balanceOf(srv.base, token), '5.00', 'a declined top-up of an existing balance credits nothing');
});

test('addresses: a service that is not there, and a base URL without /v1, are explained', async () => {
  const port = await freePort();
  const down = await cliAsync(['topup', '--amount', '5.00', '--base-url', `http://127.0.0.1:${port}/v1`]);
  assert.is(down.code, 1);
  assert.match(down.stderr, new RegExp(`^error: cannot reach http://127\\.0\\.0\\.1:${port}/v1/lds/balance/topup \\(ECONNREFUSED\\): is the service running`));
  const noV1 = await cliAsync(['topup', '--amount', '5.00', '--base-url', srv.url]);
  assert.is(noV1.code, 1);
  assert.match(noV1.stderr, /^error: --base-url must end in \/v1, the API this client speaks/);
  const bad = await cliAsync(['topup', '--amount', '5.00', '--base-url', 'localhost:8080']);
  assert.is(bad.code, 1);
  assert.match(bad.stderr, /^error: --base-url must be an http or https URL/);
});

test.run();
