// @tier: quick  (npm run test:quick: in-process)
// The index writer's postings runs (generator/store/posting-runs.ts): what is spilled in runs comes
// back merged, term by term in (product, term) order, with each term's pairs in run order. The
// catalogue's own terms fit in one read buffer; these runs also hold terms several buffers long.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { mergeRuns, RunWriter } from '../generator/store/posting-runs.ts';
import { tempDir } from './helpers/build.ts';
import { rng } from './helpers/random.ts';

test('runs merge term by term, in order, with every pair of every run (terms up to 3 buffers long)', async () => {
  const dir = join(await tempDir('runs'), 'postings');
  const r = rng(24);
  // expected: "product/term" -> the pairs, in run order
  const expected = new Map<string, number[]>();
  let docid = 0;
  for (let run = 0; run < 5; run++) {
    const w = await RunWriter.create(dir, run);
    for (let product = 0; product < 3; product++) {
      for (let term = 0; term < 40; term++) {
        if (r() < 0.4) continue;
        // one big term per run: 400,000 pairs (3.2 MB, past the 1 MB read buffer)
        const n = product === 1 && term === 7 ? 400_000 : 1 + Math.floor(r() * 2000);
        const pairs = new Uint32Array(n * 2);
        for (let i = 0; i < n; i++) {
          pairs[2 * i] = docid++;
          pairs[2 * i + 1] = 1 + Math.floor(r() * 9);
        }
        await w.add(product, term, pairs, n);
        const key = `${product}/${term}`;
        const all = expected.get(key) ?? [];
        for (const v of pairs) all.push(v);
        expected.set(key, all);
      }
    }
    await w.close();
  }
  const seen: string[] = [];
  await mergeRuns(dir, async (product, term, pairs, n) => {
    const key = `${product}/${term}`;
    seen.push(key);
    const want = expected.get(key)!;
    assert.ok(want, `unexpected term ${key}`);
    assert.is(n * 2, want.length, `pairs of ${key}`);
    for (let i = 0; i < want.length; i++) if (pairs[i] !== want[i]) assert.unreachable(`${key}: pair value ${i} is ${pairs[i]}, expected ${want[i]}`);
  });
  const order = [...expected.keys()].sort((a, b) => {
    const [pa, ta] = a.split('/').map(Number);
    const [pb, tb] = b.split('/').map(Number);
    return pa - pb || ta - tb;
  });
  assert.equal(seen, order, 'each term once, in (product, term) order');
  await rm(dir, { recursive: true, force: true });
});

test('no runs: nothing to merge', async () => {
  let calls = 0;
  await mergeRuns(join(await tempDir('runs'), 'none'), async () => void calls++);
  assert.is(calls, 0);
});

test.run();
