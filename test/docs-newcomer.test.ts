// @tier: quick  (npm run test:quick: reads the guides, runs git once)
// Issue 50: what a newcomer's trial tripped on, where the fix is the documentation; each test reads the
// claim. Item 9: docs/agents.md promised limits the agent "cannot change" without saying that this holds
// only for an agent that cannot run commands as the buyer's user. Item 11: the README's set-up did not
// say how to start on another port. Item 13: the publishing guide did not say up front to build for the
// running service's address. Item 16: the buyer examples wrote the balance token, the journal and the
// bought units into the checkout, where `git add -A` commits a bearer token.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { REPO } from './helpers/build.ts';
import { readDoc, section } from './helpers/docs.ts';

/** The ```sh blocks (tested or not) of a Markdown file. */
const shBlocks = (md: string) => [...md.matchAll(/^```sh[^\n]*\n([\s\S]*?)^```$/gm)].map((m) => m[1]!);

test('item 9: agents.md says the limits hold only against an agent that cannot run commands as the buyer, and what to do about it', () => {
  const md = readDoc('docs/agents.md');
  const intro = md.slice(0, md.indexOf('\n## '));
  assert.match(intro, /cannot change\*\* \(as long as it cannot run commands as you: see \[where the limits\s+hold\]\(#where-the-limits-hold\)\)/);
  const at = md.indexOf('### Where the limits hold');
  assert.ok(at > 0, 'a section "Where the limits hold"');
  const part = md.slice(at, md.indexOf('\n## ', at)).replace(/\s+/g, ' ');
  assert.match(part, /do not hold against an agent that can run commands as your user/);
  assert.match(part, /read your own 0600 token file, edit the host's configuration to raise `--max`/);
  assert.match(part, /\*\*A separate user\*\* owns the token file and the journal/);
  assert.match(part, /sudoers rule that allows exactly that command line, limits included/);
  assert.match(part, /\*\*Or a token file the agent's shell cannot read\*\*/);
});

test('item 11: the README set-up says how to start on another port (PORT) and build for it', () => {
  const setup = section(readDoc('README.md'), 'Set-up');
  assert.match(setup, /`PORT=18611 npm start` serves on `http:\/\/127\.0\.0\.1:18611`/);
  assert.match(setup, /`npm run build -- http:\/\/127\.0\.0\.1:18611`/);
});

test('item 13: the publishing guide says, before its first step, to build for the running service\'s address, and how lds diff shows a local move', () => {
  const md = readDoc('docs/publishing.md');
  const beforeFirstStep = md.slice(0, md.indexOf('\n## '));
  assert.match(beforeFirstStep, /\*\*Build for the address of the service you run\.\*\*/);
  assert.match(beforeFirstStep.replace(/\s+/g, ' '), /build for its address wherever this guide says `npm run build`: `npm run build -- http:\/\/127\.0\.0\.1:18611`/);
  assert.match(beforeFirstStep.replace(/\s+/g, ' '), /`npx lds diff` lists a move from one local address to another \(8080 → 18611\) apart, under "Local addresses"/);
});

test('item 16: the buyer examples keep the token, the journal and the units outside the checkout, and git ignores those names there', () => {
  for (const doc of ['README.md', 'docs/buying.md']) {
    for (const block of shBlocks(readDoc(doc))) {
      const vars = new Map([...block.matchAll(/^(\w+)=(\S+)/gm)].map((m) => [m[1]!, m[2]!]));
      const paths = [
        ...[...block.matchAll(/--(?:token-file|journal|out) (\S+)/g)].map((m) => m[1]!),
        ...[...block.matchAll(/lds receipts (?:verify|reconcile) (\S+)/g)].map((m) => m[1]!),
      ].map((p) => vars.get(/^"?\$(\w+)"?$/.exec(p)?.[1] ?? '') ?? p);
      for (const p of paths)
        assert.ok(/^(~\/|\/|"\$\{XDG_STATE_HOME:-\$HOME\/\.local\/state\}\/|<)/.test(p), `${doc}: ${p} would be written in the checkout (the folder the command runs in)\n${block}`);
    }
  }
  const buying = readDoc('docs/buying.md');
  assert.match(buying, /--token-file "\$token" --out ~\/units\.json/, 'docs/buying.md still shows the buyer commands');
  // Should a copy land in the checkout anyway, git does not offer it for a commit.
  const names = ['balance-token', 'receipts.ndjson', 'receipts.ndjson.lock', 'units.json'];
  const r = spawnSync('git', ['check-ignore', '--no-index', ...names], { cwd: REPO, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim().split('\n'), names);
});

test.run();
