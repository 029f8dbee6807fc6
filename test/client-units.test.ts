// @tier: quick  (npm run test:quick: in-process)
// Issue 22: the pure parts of the buyer's client: the spending policy, the retry timing (Retry-After,
// RateLimit, backoff with jitter, bounded attempts, what is resent) and the journal (0600, the day
// budget across reopenings, a torn last line). The service itself is exercised in client-buy.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checkDraw, checkTopup, parsePolicy, DAY_MS } from '../client/policy.ts';
import { backoffMs, rateLimitWaitMs, retryAfterMs, sendWithRetry } from '../client/retry.ts';
import { Journal } from '../client/journal.ts';
import { PolicyRefusal } from '../client/errors.ts';

const quote = (amount: string) => ({ quote_id: 'q1', amount });

test('policy: each limit refuses with its name, its amount and the amount asked; at the limit is allowed', async () => {
  const p = parsePolicy({ maxPerDraw: '0.50', maxPerDay: '1.00', maxPerTopup: '5.00' });
  await checkDraw(p, quote('0.50'), 50, 50); // exactly at both limits
  const over = await checkDraw(p, quote('0.51'), 51, 0).catch((e) => e);
  assert.instance(over, PolicyRefusal);
  assert.equal([over.limit, over.limitAmount, over.asked], ['max_per_draw', '0.50', '0.51']);
  const day = await checkDraw(p, quote('0.10'), 10, 91).catch((e) => e);
  assert.equal([day.limit, day.limitAmount, day.asked], ['max_per_day', '1.00', '0.10']);
  assert.match(day.message, /0\.91 EUR was spent in the last 24 hours/);
  checkTopup(p, 500);
  assert.throws(() => checkTopup(p, 501), (e: PolicyRefusal) => e.limit === 'max_per_topup' && e.asked === '5.01');
  assert.throws(() => parsePolicy({ maxPerDraw: '0.5000' }), /policy\.maxPerDraw must be an amount/);
});

test('policy: approve() is asked above the threshold only; no callback above it refuses', async () => {
  const asked: string[] = [];
  const p = parsePolicy({ approveAbove: '0.20', approve: (q: { amount: string }) => (asked.push(q.amount), q.amount !== '0.30') });
  await checkDraw(p, quote('0.20'), 20, 0);
  await checkDraw(p, quote('0.25'), 25, 0);
  const no = await checkDraw(p, quote('0.30'), 30, 0).catch((e) => e);
  assert.is(no.limit, 'approval');
  assert.equal(asked, ['0.25', '0.30']);
  const none = await checkDraw(parsePolicy({ approveAbove: '0.20' }), quote('0.21'), 21, 0).catch((e) => e);
  assert.match(none.message, /no approve\(\) callback/);
});

test('retry timing: Retry-After (seconds, date), RateLimit r=0 buckets, backoff within its jitter band', () => {
  assert.is(retryAfterMs('2'), 2000);
  assert.is(retryAfterMs(new Date(10_000).toUTCString(), 7_000), 3000);
  assert.is(retryAfterMs('soon'), undefined);
  assert.is(rateLimitWaitMs('"addr";r=0;t=3, "token";r=5;t=9'), 3000);
  assert.is(rateLimitWaitMs('"addr";r=2;t=3'), undefined);
  for (const attempt of [1, 2, 3, 10]) {
    const step = Math.min(8000, 250 * 2 ** (attempt - 1));
    assert.is(backoffMs(attempt, 250, () => 0), step / 2);
    assert.is(backoffMs(attempt, 250, () => 1), step);
  }
});

test('sendWithRetry: 503 then 200; bounded attempts; a lost answer is resent only when resendable; a wait above the cap is not taken', async () => {
  const waits: number[] = [];
  const env = (answers: (() => Response)[]) => {
    let n = 0;
    return { calls: () => n, env: { fetch: (async () => answers[n++]!()) as typeof fetch, sleep: async (ms: number) => void waits.push(ms), random: () => 0.5 } };
  };
  const req = (idempotent: boolean) => ({ url: 'http://x/v1/lds/draw', init: { method: 'POST', body: '{}' }, idempotent });
  const a = env([() => new Response(null, { status: 503 }), () => new Response('ok', { status: 200 })]);
  assert.is((await sendWithRetry(req(true), a.env)).status, 200);
  assert.is(a.calls(), 2);
  const b = env(Array(9).fill(() => new Response(null, { status: 503 })));
  assert.is((await sendWithRetry(req(true), b.env, { maxAttempts: 3 })).status, 503);
  assert.is(b.calls(), 3);
  const lost = () => {
    throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'UND_ERR_SOCKET' } });
  };
  const c = env([lost, () => new Response('ok')]);
  assert.is((await sendWithRetry(req(true), c.env)).status, 200);
  const d = env([lost, () => new Response('ok')]);
  const gave = await sendWithRetry(req(false), d.env).catch((err) => err);
  assert.instance(gave, TypeError);
  assert.is(d.calls(), 1, 'not resent: it may have been done');
  const refused = () => {
    throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
  };
  const e = env([refused, () => new Response('ok')]);
  assert.is((await sendWithRetry(req(false), e.env)).status, 200, 'never sent: safe to resend');
  waits.length = 0;
  const f = env([() => new Response(null, { status: 429, headers: { 'retry-after': '120' } }), () => new Response('ok')]);
  assert.is((await sendWithRetry(req(true), f.env, { maxWaitMs: 30_000 })).status, 429, 'asked to wait 2 minutes: the 429 is for the caller');
  assert.equal(waits, []);
});

test('journal: created 0600, one line per entry; the day budget survives reopening and forgets older days and unpaid quotes; a torn line is ended', async () => {
  const path = join(await mkdtemp(join(tmpdir(), 'lds-journal-')), 'sub', 'j.ndjson');
  const j = await Journal.open(path);
  const old = new Date(Date.now() - DAY_MS - 60_000).toISOString();
  await j.append({ kind: 'pay', quote_id: 'a', amount: '0.40', at: old });
  await j.append({ kind: 'pay', quote_id: 'b', amount: '0.30' });
  await j.append({ kind: 'pay', quote_id: 'c', amount: '0.20' });
  await j.append({ kind: 'failure', action: 'draw', quote_id: 'c', charged: false });
  await j.close();
  assert.is((await stat(path)).mode & 0o777, 0o600);
  await writeFile(path, (await readFile(path, 'utf8')) + '{"kind":"pay","quo', { flag: 'w' });
  const again = await Journal.open(path);
  assert.is(again.spentSince(Date.now() - DAY_MS), 30, 'b only: a is older than a day, c was not charged');
  await again.append({ kind: 'pay', quote_id: 'd', amount: '0.05' });
  await again.close();
  const lines = (await readFile(path, 'utf8')).split('\n');
  assert.is(JSON.parse(lines.at(-2)!).quote_id, 'd', 'the new entry is on a line of its own');
  const last = await Journal.open(path);
  assert.is(last.spentSince(Date.now() - DAY_MS), 35);
  // c refused (not charged), then paid after a top-up: it counts again.
  await last.append({ kind: 'pay', quote_id: 'c', amount: '0.20' });
  assert.is(last.spentSince(Date.now() - DAY_MS), 55);
  await last.close();
});

test.run();
