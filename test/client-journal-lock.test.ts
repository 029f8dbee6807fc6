// Issue 35: the receipts journal shared by several processes (client/lock.ts, client/journal.ts) and
// its reconciliation with a statement (client/reconcile.ts), without a service.
//   - appends from several processes at once all land, whole, each on its own line;
//   - a lock left by a process that died is taken over; a live holder is waited for, and a wait that
//     runs out names the lock file and the holder;
//   - reconcile follows token rotations to one balance, leaves other balances out, lists the
//     operator's corrections apart, and names each difference.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Journal, parseJournal } from '../client/journal.ts';
import { LockTimeout, withLock } from '../client/lock.ts';
import { reconcileJournal } from '../client/reconcile.ts';
import { REPO } from './helpers/build.ts';

const dir = () => mkdtemp(join(tmpdir(), 'lds-journal-lock-'));
const exited = (child: ReturnType<typeof spawn>) => new Promise<number | null>((r) => child.on('close', r));

test('four processes appending 25 lines each at once: 100 whole lines, none interleaved', async () => {
  const path = join(await dir(), 'receipts.ndjson');
  const journal = pathToFileURL(join(REPO, 'client/journal.ts')).href;
  const script = `const { Journal } = await import(${JSON.stringify(journal)}); const j = await Journal.open(process.argv[1]); for (let i = 0; i < 25; i++) await j.append({ kind: 'note', writer: process.argv[2], i, pad: 'x'.repeat(2000) }); await j.close();`;
  const children = [0, 1, 2, 3].map((w) => spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, path, String(w)], { cwd: REPO, stdio: 'inherit' }));
  assert.equal(await Promise.all(children.map(exited)), [0, 0, 0, 0]);
  const { entries, bad } = parseJournal(await readFile(path, 'utf8'));
  assert.equal(bad, []);
  assert.is(entries.length, 100);
  for (const w of ['0', '1', '2', '3']) assert.equal(entries.filter((e) => e.writer === w).map((e) => e.i), [...Array(25).keys()], `writer ${w} in order`);
});

test('a lock left by a dead process is taken over; a live holder is waited for, then named', async () => {
  const d = await dir();
  const dead = spawn(process.execPath, ['-e', '']);
  await exited(dead);
  const lock = join(d, 'receipts.ndjson.lock');
  await writeFile(lock, JSON.stringify({ pid: dead.pid, host: hostname(), nonce: 'left-behind', since: Date.now() }));
  const journal = await Journal.open(join(d, 'receipts.ndjson'));
  await journal.append({ kind: 'note' });
  await journal.close();
  assert.is(parseJournal(await readFile(join(d, 'receipts.ndjson'), 'utf8')).entries.length, 1, 'appended after taking the stale lock over');

  let release!: () => void;
  const held = withLock(lock, () => new Promise<void>((r) => (release = r)));
  await new Promise((r) => setTimeout(r, 50));
  const err = await withLock(lock, async () => 'got it', { timeoutMs: 300 }).catch((e) => e);
  assert.instance(err, LockTimeout);
  assert.match(err.message, new RegExp(`locked by process ${process.pid} on ${hostname()} .*\\(${lock.replace(/[.]/g, '\\.')}\\)`));
  const waiting = withLock(lock, async () => 'got it', { timeoutMs: 5000 });
  release();
  await held;
  assert.is(await waiting, 'got it', 'the waiter gets the lock once it is released');
});

test('reconcile: rotations chain to one balance, other balances are left out, corrections are notes, differences are named', () => {
  const base = 'https://lds.example/v1';
  const at = (m: number) => new Date(Date.UTC(2026, 0, 1, 0, m)).toISOString();
  const line = (o: Record<string, unknown>) => JSON.stringify({ v: 1, base_url: base, ...o });
  const text = [
    line({ kind: 'topup', at: at(1), token_hint: 'bal#aaaaaaaa', topup_id: 't1', amount: '5.00', receipt: { paid_at: at(1) } }),
    line({ kind: 'pay', at: at(2), token_hint: 'bal#aaaaaaaa', quote_id: 'q1', amount: '0.03' }),
    line({ kind: 'draw', at: at(2), token_hint: 'bal#aaaaaaaa', draw_id: 'd1', quote_id: 'q1', amount: '0.03' }),
    line({ kind: 'rotate', at: at(3), token_hint: 'bal#aaaaaaaa', new_token_hint: 'bal#bbbbbbbb' }),
    line({ kind: 'pay', at: at(4), token_hint: 'bal#bbbbbbbb', quote_id: 'q2', amount: '0.05' }),
    line({ kind: 'draw', at: at(4), token_hint: 'bal#bbbbbbbb', draw_id: 'd2', quote_id: 'q2', amount: '0.05' }),
    line({ kind: 'draw', at: at(5), token_hint: 'bal#cccccccc', draw_id: 'other', quote_id: 'q9', amount: '0.01' }),
    line({ kind: 'draw', at: at(6), token_hint: 'bal#bbbbbbbb', draw_id: 'd4', quote_id: 'q4', amount: '0.02' }),
  ].join('\n');
  const statement = [
    { kind: 'draw', id: 'd5', amount: '-0.07', balance_after: '4.85', at: at(7), quote_id: 'q5' },
    { kind: 'refund', id: 'r1', amount: '0.05', balance_after: '4.92', at: at(6), reason: 'sorry', draw_id: 'd2' },
    { kind: 'draw', id: 'd2', amount: '-0.06', balance_after: '4.87', at: at(4), quote_id: 'q2' },
    { kind: 'draw', id: 'd1', amount: '-0.03', balance_after: '4.97', at: at(2), quote_id: 'q1' },
    { kind: 'topup', id: 't1', amount: '5.00', balance_after: '5.00', at: at(1) },
    { kind: 'topup', id: 't0', amount: '5.00', balance_after: '5.00', at: at(0) },
  ] as const;
  const r = reconcileJournal(text, statement as never, { baseUrl: base, tokenHint: 'bal#bbbbbbbb' });
  assert.is(r.from, at(1), 'from the balance\'s first journal line: the older top-up t0 is outside');
  assert.is(r.matched, 2, 't1 and d1 (before the rotation) match');
  assert.is(r.otherBalances, 1);
  assert.equal(r.corrections.map((c) => c.id), ['r1']);
  assert.equal(r.differences.map((d) => [d.line, d.id]), [[6, 'd2'], [8, 'd4'], [undefined, 'd5']]);
  assert.match(r.differences[0]!.what, /draw d2 \(0\.06 EUR\): the statement says -0\.06 EUR, the journal 0\.05 EUR/);
  assert.match(r.differences[1]!.what, /draw d4 of 0\.02 EUR is in the journal but not in the service's statement/);
  assert.match(r.differences[2]!.what, /the statement's draw d5 \(-0\.07 EUR at .*\) is not in the journal/);
});

test.run();
