// @ledger-backends: level postgres  (test/run.ts runs this file once per ledger backend)
// @tier: quick  (npm run test:quick: in-process, on LevelDB)
// debitDraw takes the hash of the token the buyer PRESENTED and resolves it itself (on PostgreSQL in
// the one debit statement, on LevelDB under the quote's lock): a rotated-in token debits its
// balance and the records name the balance; a rotated-away or revoked token is 'revoked' with
// nothing changed, even for a quote already paid; an unknown hash is 'unknown_balance'. A draw
// racing a rotation is ordered entirely before or after it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { DebitDrawResult, Ledger } from '../payments/ledger/ledger.ts';
import { debit, fund, openTestLedger } from './helpers/ledgers.ts';
import { newBalanceToken } from '../payments/tokens.ts';


async function records(ledger: Ledger): Promise<Map<string, unknown>> {
  return ledger.readSnapshot(async (rs) => {
    const out = new Map<string, unknown>();
    for await (const [k, v] of rs) out.set(k, v);
    return out;
  });
}

async function rotate(ledger: Ledger, from: string): Promise<string> {
  const to = newBalanceToken().hash;
  const was = await ledger.resolveToken(from);
  assert.is(was.kind, 'balance');
  assert.equal(await ledger.rotateToken(from, to), { kind: 'ok', balance: was.kind === 'balance' ? was.balance : '' });
  return to;
}

test('a rotated-in token debits its balance; the draw, claim, entries and statement name the balance id', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  const balance = await fund(ledger, 1_000);
  const second = await rotate(ledger, balance);
  const third = await rotate(ledger, second);

  const r = await debit(ledger, third, 'q_rotated', 70);
  assert.is(r.kind, 'ok');
  if (r.kind !== 'ok') return;
  assert.is(r.draw.token_hash, balance);
  assert.is(r.balanceAfterCents, 930);
  assert.is((await ledger.getBalance(balance))!.cents, 930);
  assert.is(await ledger.getBalance(third), null); // no balance under the presented hash
  assert.is((await ledger.findDrawByQuote('q_rotated'))!.token_hash, balance);
  const lines = await ledger.statement(balance, 5);
  assert.is(lines[0].kind, 'draw');
  assert.is(lines[0].quoteId, 'q_rotated');
  assert.equal(await ledger.statement(third, 5), []);
  const recs = await records(ledger);
  const entries = [...recs].filter(([k, v]) => k.startsWith('e:') && (v as { txn: string }).txn.endsWith(r.draw.draw_id));
  assert.equal(entries.map(([, v]) => (v as { account: string; cents: number }).account).sort(), [`balance:${balance}`, 'revenue']);

  // the same quote again with the live token: the original draw; with a fresh rotation: still a replay
  const again = await debit(ledger, third, 'q_rotated', 70);
  assert.is(again.kind, 'replay');
  assert.is(again.kind === 'replay' && again.draw.draw_id, r.draw.draw_id);
  const fourth = await rotate(ledger, third);
  const replay = await debit(ledger, fourth, 'q_rotated', 70);
  assert.is(replay.kind, 'replay');
  // another balance presenting its own token for that quote: other_balance
  const other = await fund(ledger, 500);
  assert.equal(await debit(ledger, other, 'q_rotated', 70), { kind: 'other_balance' });
  assert.is((await ledger.getBalance(balance))!.cents, 930);

  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('a rotated-away or revoked token is refused as revoked and nothing changes, even for a paid quote', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  const balance = await fund(ledger, 1_000);
  assert.is((await debit(ledger, balance, 'q_paid', 100)).kind, 'ok');
  const second = await rotate(ledger, balance); // the original token is rotated away
  const third = await rotate(ledger, second); // and so is the second
  const before = await records(ledger);

  for (const gone of [balance, second]) {
    assert.equal(await debit(ledger, gone, 'q_new', 10), { kind: 'revoked' });
    assert.equal(await debit(ledger, gone, 'q_paid', 100), { kind: 'revoked' }); // no replay for a dead token
  }
  assert.equal(await ledger.revokeToken(third), { kind: 'ok', balance });
  const afterRevoke = await records(ledger);
  assert.equal(await debit(ledger, third, 'q_new', 10), { kind: 'revoked' });
  assert.equal(await debit(ledger, third, 'q_paid', 100), { kind: 'revoked' });
  // an operator's revocation of an original, never-rotated token
  const lone = await fund(ledger, 300);
  assert.equal(await ledger.revokeToken(lone), { kind: 'ok', balance: lone });
  const afterLone = await records(ledger);
  assert.equal(await debit(ledger, lone, 'q_lone', 10), { kind: 'revoked' });

  assert.equal(await records(ledger), afterLone); // the refusals wrote nothing
  // only the token record of the revocation differs from the state before it
  assert.equal([...afterRevoke.keys()].filter((k) => !before.has(k)), []);
  assert.is(await ledger.findDrawByQuote('q_new'), null);
  assert.is(await ledger.findDrawByQuote('q_lone'), null);
  assert.is((await ledger.getBalance(balance))!.cents, 900);
  assert.is((await ledger.getBalance(lone))!.cents, 300);
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('an unknown or malformed hash is unknown_balance, with nothing written', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  await fund(ledger, 100);
  const before = await records(ledger);
  assert.equal(await debit(ledger, newBalanceToken().hash, 'q_x', 1), { kind: 'unknown_balance' });
  assert.equal(await debit(ledger, 'not-a-hash', 'q_x', 1), { kind: 'unknown_balance' });
  assert.equal(await records(ledger), before);
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test('debits racing a rotation: each is ordered before it (ok, on the balance) or after it (revoked); none after it succeeds', async () => {
  const t = await openTestLedger();
  const ledger = t.ledger;
  const balance = await fund(ledger, 100_000);
  const results: Promise<DebitDrawResult>[] = [];
  for (let i = 0; i < 20; i++) results.push(debit(ledger, balance, `q_race_${i}`, 10 + i));
  // debits keep starting, one a millisecond, while the rotation runs and after it answered
  let answered = false;
  const rotated = rotate(ledger, balance).then((to) => ((answered = true), to));
  const late: Promise<DebitDrawResult>[] = [];
  while (!answered || late.length < 10) {
    const i = results.length + late.length;
    (answered ? late : results).push(debit(ledger, balance, `q_race_${i}`, 10 + i));
    await new Promise((r) => setTimeout(r, 1));
  }
  const fresh = await rotated;
  // started after the rotation answered: all refused
  assert.ok((await Promise.all(late)).every((r) => r.kind === 'revoked'));
  const settled = await Promise.all(results);
  assert.is(settled[0].kind, 'ok'); // started before the rotation, and nothing else was in its way
  let spent = 0;
  for (const [i, r] of settled.entries()) {
    assert.ok(r.kind === 'ok' || r.kind === 'revoked', r.kind);
    if (r.kind === 'ok') {
      assert.is(r.draw.token_hash, balance);
      spent += 10 + i;
    } else assert.is(await ledger.findDrawByQuote(`q_race_${i}`), null);
  }
  assert.is((await ledger.getBalance(balance))!.cents, 100_000 - spent);
  // the new token pays on the same balance
  const next = await debit(ledger, fresh, 'q_after', 5);
  assert.is(next.kind === 'ok' && next.draw.token_hash, balance);
  assert.is((await ledger.getBalance(balance))!.cents, 100_000 - spent - 5);
  await ledger.close();
  assert.equal(await t.verifyClosed(), []);
});

test.run();
