// @tier: quick  (npm run test:quick: in-process, three short CLI starts)
// Issue 37: docs/reference/cli.md is the commands' help and cannot drift from it. The file is
// rendered again from the command definitions (cli.ts, imported without running a command) and must
// be byte for byte what `npm run docs:cli` wrote; and the help it holds is what the real command
// prints for `--help` (the CLI run as the other suites run it, compiled when test/run.ts built it).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { LDS_ARGS, REPO } from './helpers/build.ts';
import { SETTING, commandsOf, renderCliReference, withoutSettings } from '../cli/reference.ts';

const FILE = join(REPO, 'docs/reference/cli.md');
const reference = readFileSync(FILE, 'utf8');

// The help shows defaults read from the working directory and the environment when cli.ts is
// imported: render it as scripts/docs-cli.ts does, from the checkout's root with no settings.
process.chdir(REPO);
for (const k of Object.keys(process.env)) if (SETTING.test(k)) delete process.env[k];
const { program } = await import('../cli.ts');

/** The help block under `## lds <words>` in the reference. */
function section(words: string[]): string {
  const heading = `## ${['lds', ...words].join(' ')}\n\n\`\`\`text\n`;
  const start = reference.indexOf(heading);
  assert.ok(start >= 0, `the reference has ${heading.trim()}`);
  const body = reference.slice(start + heading.length);
  return body.slice(0, body.indexOf('\n```\n')) + '\n';
}

test('docs/reference/cli.md is what the command definitions render (npm run docs:cli)', () => {
  assert.fixture(reference, renderCliReference(program), 'docs/reference/cli.md differs from the commands\' help: run npm run docs:cli');
});

test('it lists every command and subcommand, each with its own help', () => {
  const all = commandsOf(program);
  assert.ok(all.length >= 30, `found the commands (${all.length})`);
  for (const { words, cmd } of all) {
    const help = section(words);
    assert.match(help, `Usage: lds ${words.join(' ')} `);
    for (const option of cmd.options) assert.ok(help.includes(option.flags), `lds ${words.join(' ')}: ${option.flags}`);
  }
  assert.ok(!all.some(({ words }) => words.at(-1) === 'help'), 'commander\'s implicit help command is not a command of ours');
});

test('the help in the reference is what the real command prints for --help', () => {
  const env = withoutSettings(process.env);
  const runs: [string[], string[]][] = [
    [[...LDS_ARGS, '--help'], []],
    [[...LDS_ARGS, 'serve', '--help'], ['serve']], // defaults from PORT and HOST
    [[...LDS_ARGS, 'ledger', 'reconcile', '--help'], ['ledger', 'reconcile']], // a subcommand, text added after
  ];
  for (const [args, words] of runs) {
    const r = spawnSync(process.execPath, args, { cwd: REPO, env, encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    assert.fixture(r.stdout, section(words), `lds ${words.join(' ')} --help`);
  }
});

test('an empty PORT or HOST is no setting: lds serve defaults to 8080 on 127.0.0.1, as the configuration reads an empty setting (PORT= listened on any free port)', () => {
  const r = spawnSync(process.execPath, [...LDS_ARGS, 'serve', '--help'], { cwd: REPO, env: { ...withoutSettings(process.env), PORT: '', HOST: '' }, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr);
  assert.match(r.stdout, /--port <n>\s+port \(also PORT\) \(default: "8080"\)/);
  assert.match(r.stdout, /--host <addr>\s+address to listen on \(also HOST\) \(default: "127\.0\.0\.1"\)/);
});

test.run();
