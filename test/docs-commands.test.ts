// Issue 37: every command block marked as tested (```sh tested```) in README.md and the guides under
// docs/ runs as written. Each file's tested blocks are run in order, literally, by one shell that
// stops at the first failing command, in a fresh copy of the repository (test/helpers/docs.ts), as
// test/publishing-guide.test.ts has run the publisher guide's since issue 20. A guide whose blocks
// build on each other and whose results are checked in detail has its own test file (RUNNERS); every
// other file's blocks run here, so a block marked tested anywhere is never left unrun.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { REPO } from './helpers/build.ts';
import { documentationFiles, freshCopy, readDoc, runScript, testedBlocks } from './helpers/docs.ts';

/** Files whose tested blocks another test file runs (and checks the results of). */
const RUNNERS: Record<string, string> = {
  'docs/publishing.md': 'test/publishing-guide.test.ts',
  // its systemd-analyze block; test/ops-alerts.test.ts runs its promtool block (and checks no other is left)
  'docs/operations.md': 'test/ops-systemd.test.ts',
};

const withBlocks = documentationFiles().filter((f) => testedBlocks(readDoc(f)).length > 0);

test('README.md has tested blocks, and every file with tested blocks is run by a test', () => {
  assert.ok(withBlocks.includes('README.md'), 'README.md has a tested block');
  for (const [doc, runner] of Object.entries(RUNNERS)) {
    assert.ok(withBlocks.includes(doc), `${doc} has tested blocks`);
    assert.ok(existsSync(join(REPO, runner)), `${runner} runs them`);
  }
  // a block marked in another way (```bash tested, ``` sh tested) would be skipped by both: refuse it
  for (const f of documentationFiles()) assert.not.match(readDoc(f), /^```(?!sh tested$)[^\n]*\btested\b/m, `${f}: a tested block is marked \`\`\`sh tested`);
});

for (const doc of withBlocks.filter((f) => !RUNNERS[f])) {
  test(`${doc}: its tested blocks run as written`, async () => {
    const dir = await freshCopy('docs-commands');
    const script = join(dir, '..', 'blocks.sh');
    writeFileSync(script, testedBlocks(readDoc(doc)).join('\n'));
    const r = await runScript(script, dir);
    assert.is(r.code, 0, `${doc}:\n${r.out.slice(-4000)}`);
  });
}

test.run();
