// @tier: quick  (npm run test:quick: in-process)
// The LevelDB ledger writes its group commits through the storage binding's own batch
// (level/ledger.ts directWriter) instead of abstract-level's batch(): the bytes on disk must be
// exactly those batch() writes with the ledger's 'json' value encoding, for every kind of value the
// ledger writes, and a closed database must still refuse with abstract-level's error.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Level } from 'level';
import { directWriter, LevelLedger, openLevelDb } from '../payments/ledger/level/ledger.ts';
import { newBalanceToken } from '../payments/tokens.ts';
import { debit, fund } from './helpers/ledgers.ts';
import type { BatchOp } from '../payments/ledger/level/commit.ts';

const values: unknown[] = [
  { draw_id: 'drw_1', amount_cents: 10, draw: { refs: ['eu.eurlex:32016R0679#p1'], units_sha256: 'ab' } },
  { text: 'données « protégées » — \u2028 "quoted" \\ \t\n', n: -1.5, ok: true, none: null, list: [] },
  'a string',
  42,
  false,
  [1, 'two', { three: 3 }],
];

async function bytesOf(dir: string): Promise<Map<string, string>> {
  const raw = new Level<string, Buffer>(dir, { valueEncoding: 'buffer' });
  await raw.open();
  const out = new Map<string, string>();
  for await (const [k, v] of raw.iterator()) out.set(k, v.toString('hex'));
  await raw.close();
  return out;
}

test('a direct group-commit batch writes the same bytes as batch() with the json encoding, puts and deletes', async () => {
  const root = await mkdtemp(join(tmpdir(), 'lds-batch-'));
  const ops: BatchOp[] = values.map((value, i) => ({ type: 'put', key: `k!${i}`, value }));
  const written: Map<string, string>[] = [];
  for (const how of ['public', 'direct'] as const) {
    const dir = join(root, how);
    const db = await openLevelDb(dir, { createIfMissing: true });
    const writer = how === 'public' ? db : directWriter(db);
    assert.is.not(writer, how === 'direct' ? db : undefined, 'the direct writer is in use');
    await writer.batch(ops, { sync: true });
    await writer.batch([{ type: 'del', key: 'k!2' }, { type: 'put', key: 'k!3', value: { replaced: 'é' } }], { sync: true });
    // Read back through the ledger's own encoding too.
    assert.equal(await db.get('k!0'), values[0]);
    assert.equal(await db.get('k!3'), { replaced: 'é' });
    assert.is(await db.get('k!2'), undefined);
    await db.close();
    written.push(await bytesOf(dir));
  }
  assert.is(written[1].size, values.length - 1);
  assert.equal([...written[1]], [...written[0]]);
});

test('on a closed database the direct writer refuses like batch() and writes nothing', async () => {
  const dir = join(await mkdtemp(join(tmpdir(), 'lds-batch-')), 'db');
  const db = await openLevelDb(dir, { createIfMissing: true });
  const writer = directWriter(db);
  await db.close();
  let err: unknown;
  try {
    await writer.batch([{ type: 'put', key: 'k', value: { a: 1 } }], { sync: true });
  } catch (e) {
    err = e;
  }
  assert.match(String((err as { code?: string })?.code), /LEVEL_DATABASE_NOT_OPEN/);
  assert.is((await bytesOf(dir)).size, 0);
});


// Token records are cached once read, and the cache is cleared wholesale when it is full (unknown
// hashes are cached too, so it can fill). A rotation's records must stay visible until its batch
// is durable, even across a clear: otherwise a read in that window finds nothing on disk yet and
// takes the rotated-away token for its balance's own.
test('a rotation not yet on disk stays visible to token reads across a clear of the token cache', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'lds-tokens-'));
  let hold: Promise<void> | undefined;
  let held = false;
  let release = () => {};
  const holdWrite = () => {
    if (hold) held = true;
    return hold;
  };
  const ledger = await LevelLedger.open(dir, { maxCachedTokens: 2, hooks: { holdWrite } });
  try {
    const balance = await fund(ledger, 500);
    const next = newBalanceToken().hash;
    hold = new Promise((r) => (release = r));
    let settled = false;
    const rotation = ledger.rotateToken(balance, next).finally(() => (settled = true));
    while (!held) await new Promise((r) => setImmediate(r));
    // Unknown hashes fill the cache (limit 2), which is cleared after the rotation filled it.
    for (let i = 0; i < 3; i++) {
      const unknown = newBalanceToken().hash;
      assert.equal(await ledger.resolveToken(unknown), { kind: 'balance', balance: unknown });
    }
    assert.is(settled, false, 'the rotation is still waiting for its write');
    assert.equal(await ledger.resolveToken(balance), { kind: 'revoked' });
    assert.equal(await ledger.resolveToken(next), { kind: 'balance', balance });
    assert.is((await debit(ledger, balance, 'q_old_token', 10)).kind, 'revoked');
    release();
    assert.equal(await rotation, { kind: 'ok', balance });
    assert.equal(await ledger.resolveToken(balance), { kind: 'revoked' });
    assert.is((await debit(ledger, next, 'q_new_token', 10)).kind, 'ok');
    assert.is((await ledger.getBalance(balance))!.cents, 490);
  } finally {
    release();
    await ledger.close();
  }
});

// A token read returns the database as of its start. One that started before a rotation and comes
// back after the rotation is durable and the cache was cleared must not put the old record in the
// cache: the rotated-away token would stay live for every later read.
test('a token read that predates a rotation is read again, not cached, when the rotation landed meanwhile', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'lds-tokens-'));
  const ledger = await LevelLedger.open(dir, { maxCachedTokens: 2 });
  // The ledger's own database, with its next read held back after it has read (a late answer).
  const db = (ledger as unknown as { db: { get: (key: string) => Promise<unknown> } }).db;
  const get = db.get.bind(db);
  let gate: Promise<void> | undefined;
  let release = () => {};
  db.get = async (key: string) => {
    const value = await get(key);
    const held = gate;
    gate = undefined; // only the first read after arming
    if (held) await held;
    return value;
  };
  try {
    const balance = await fund(ledger, 500);
    gate = new Promise((r) => (release = r));
    const early = ledger.resolveToken(balance); // reads "no record" and is held
    while (gate) await new Promise((r) => setImmediate(r));
    const next = newBalanceToken().hash;
    assert.equal(await ledger.rotateToken(balance, next), { kind: 'ok', balance }); // durable
    for (let i = 0; i < 3; i++) await ledger.resolveToken(newBalanceToken().hash); // the cache is cleared
    release();
    assert.equal(await early, { kind: 'revoked' }, 'the late read is read again');
    assert.equal(await ledger.resolveToken(balance), { kind: 'revoked' });
    assert.is((await debit(ledger, balance, 'q_old_token', 10)).kind, 'revoked');
  } finally {
    release();
    await ledger.close();
  }
});

test.run();
