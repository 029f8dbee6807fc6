// A build killed part-way (SIGKILL, no chance to clean up) leaves the previous store untouched:
// CURRENT still names it, a reader that had it open keeps answering, a fresh reader opens it, and
// the next build clears the dead build's leftovers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { buildUnitStore } from '../generator/store/build-store.ts';
import { openUnitStore } from '../payments/store/unit-store.ts';
import { copyCatalogSrc, tempDir } from './helpers/build.ts';
import { ownProgramArgs } from './helpers/own-programs.ts';
import { BUILT_AT, catalog } from './helpers/store-fixtures.ts';

/** A catalog-src whose paragraph file is 60x larger (new paragraph numbers), so a build takes a while. */
async function bigSource(): Promise<string> {
  const src = await copyCatalogSrc();
  const path = join(src, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl');
  const lines = (await readFile(path, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const out: string[] = [];
  for (let copy = 0; copy < 60; copy++) for (const x of lines) out.push(JSON.stringify({ ...x, para_idx: x.para_idx + copy * 100_000 }));
  await writeFile(path, out.join('\n') + '\n');
  return src;
}

test('SIGKILL mid-build leaves the previous store current, intact and usable', async () => {
  const root = await tempDir('store-kill');
  const cat = await catalog();
  const first = await buildUnitStore(cat, { storeRoot: root, builtAt: BUILT_AT, skipBadRecords: false });
  const current = await readFile(join(root, 'CURRENT'), 'utf8');
  assert.is(current.trim(), first.store_version);

  // a "running service" holds the store open during the build
  const reader = await openUnitStore(root);
  const q = 'aid to milk producers in Portugal';
  const before = (await reader.search('svc-agriculture-eu', q, 5)).map((u) => u.ref);
  assert.is(before.length, 5);

  const src = await bigSource();
  const child = spawn(process.execPath, [...ownProgramArgs('test/helpers/store-build-child.ts'), src, root], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise<NodeJS.Signals | number | null>((res) => child.on('exit', (code, signal) => res(signal ?? code)));
  // wait until the child is writing units for the eu.eurlex source, then kill it without warning
  await new Promise<void>((res, rej) => {
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('progress ingest: eu.eurlex')) res();
    });
    exited.then(() => rej(new Error(`child ended before it was killed:\n${out}\n${err}`)));
  });
  await new Promise((r) => setTimeout(r, 300));
  const leftovers = (await readdir(root)).filter((n) => n.startsWith('.tmp-'));
  child.kill('SIGKILL');
  assert.is(await exited, 'SIGKILL');
  assert.not.ok(out.includes('done '), 'the child was killed before it finished');
  assert.ok(leftovers.length > 0, 'the child had started writing its temporary store');

  // nothing visible changed
  assert.is(await readFile(join(root, 'CURRENT'), 'utf8'), current);
  assert.equal((await readdir(root)).filter((n) => n.startsWith('store-')), [first.store_version]);
  // the open reader still answers, and so does a fresh one
  assert.equal((await reader.search('svc-agriculture-eu', q, 5)).map((u) => u.ref), before);
  await reader.close();
  const fresh = await openUnitStore(root);
  assert.is(fresh.meta.store_version, first.store_version);
  assert.equal((await fresh.search('svc-agriculture-eu', q, 5)).map((u) => u.ref), before);
  assert.equal(fresh.meta.products['svc-agriculture-eu'].by_source, first.products['svc-agriculture-eu']);
  const got = await fresh.getUnits('svc-agriculture-eu', [before[0]]);
  assert.equal(got.unknown, []);
  await fresh.close();

  // the next build removes the dead build's temporary directories and switches normally
  const second = await buildUnitStore(await catalog(src), { storeRoot: root, builtAt: BUILT_AT, skipBadRecords: false });
  const names = await readdir(root);
  assert.equal(names.filter((n) => n.startsWith('.tmp-')), []);
  assert.is((await readFile(join(root, 'CURRENT'), 'utf8')).trim(), second.store_version);
  assert.ok(names.includes(first.store_version!), 'the previous store is kept');
  // 59 more copies of every MultiEURLEX paragraph (the EURLEX57K acts are not copied)
  assert.ok(second.products['svc-agriculture-eu']['eu.eurlex'].units > first.products['svc-agriculture-eu']['eu.eurlex'].units * 30);
});

test.run();
