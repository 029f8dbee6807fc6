// @tier: quick  (npm run test:quick: in-process)
// contract/private-dir.ts: folders made owner-only (the store, the ledger, the secrets), and the
// other side, the folder that keeps servers running as another user (Apache's children, PostgreSQL)
// away from their files, named in the errors of `lds preview apache` and the test PostgreSQL starter.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmod, mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { closedToOthers, privateDir } from '../contract/private-dir.ts';
import { tempDir } from './helpers/build.ts';

test('privateDir makes a missing folder 0700 and tightens a loose one, saying what it was', async () => {
  const root = await tempDir('private');
  const fresh = join(root, 'a', 'store');
  assert.is(await privateDir(fresh), null);
  assert.is((await stat(fresh)).mode & 0o777, 0o700);
  const loose = join(root, 'loose');
  await mkdir(loose, { mode: 0o755 });
  await chmod(loose, 0o755);
  assert.is(await privateDir(loose), 0o755);
  assert.is((await stat(loose)).mode & 0o777, 0o700);
});

test('closedToOthers names the first folder above a path that others cannot pass through', async () => {
  const root = await tempDir('closed');
  await chmod(root, 0o755);
  const deep = join(root, 'private', 'open', 'files');
  await mkdir(deep, { recursive: true, mode: 0o755 });
  await chmod(join(root, 'private', 'open'), 0o755);
  await chmod(deep, 0o755);
  await chmod(join(root, 'private'), 0o700);
  assert.equal(closedToOthers(deep), { dir: join(root, 'private'), mode: 0o700 });
  await chmod(join(root, 'private'), 0o751); // o+x is enough to pass through
  assert.is(closedToOthers(deep), closedToOthers(root), 'open below the temp folder: the answer is the temp folder\'s own');
});

test.run();
