// docs/reference/cli.md, generated from the command definitions (cli.ts) so it cannot drift from
// them: every command's help exactly as `npx lds <command> --help` prints it to a pipe (commander's
// width of 80 columns, no colours), in the order the commands are defined, under a table that says
// which guide explains each command. `npm run docs:cli` writes the file (scripts/docs-cli.ts);
// test/cli-reference.test.ts renders it again and compares, and runs a few `--help` for real.
//
// The help of a command shows defaults that depend on where and how it runs (`--out` is "dist"
// relative to the working directory, `serve --port` follows PORT): render it from the checkout's
// root with none of the settings set (withoutSettings), as a newcomer who types the command sees it.
import type { Command } from 'commander';

/** The guide (path under docs/) that explains each top-level command; a new command must be given one. */
const GUIDES: Record<string, string> = {
  check: 'publishing.md',
  licence: 'publishing.md',
  build: 'publishing.md',
  diff: 'publishing.md',
  publish: 'hosting.md',
  preview: 'hosting.md',
  serve: 'operations.md',
  topup: 'buying.md',
  buy: 'buying.md',
  balance: 'buying.md',
  statement: 'buying.md',
  rotate: 'buying.md',
  receipts: 'buying.md',
  receipt: 'buying.md',
  mcp: 'agents.md',
  ledger: 'operations.md',
  admin: 'operations.md',
};

/** The environment variables a command definition reads for its defaults. */
export const SETTING = /^(LDS_|PORT$|HOST$)/;

/** `env` without the settings that change what the help shows as defaults. */
export function withoutSettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([k]) => !SETTING.test(k)));
}

/** What `<command> --help` prints: commander's own help output (its text added before and after included), captured. */
export function commandHelp(cmd: Command): string {
  const saved = cmd.configureOutput();
  let text = '';
  cmd.configureOutput({ writeOut: (s) => (text += s), getOutHelpWidth: () => 80 /* commander's width when stdout is not a terminal */, getOutHasColors: () => false });
  try {
    cmd.outputHelp();
  } finally {
    cmd.configureOutput(saved);
  }
  return text;
}

/** Every command below `root`, depth first in the order they are defined, with its words (`ledger verify`). */
export function commandsOf(root: Command, prefix: string[] = []): { words: string[]; cmd: Command }[] {
  return root.commands.flatMap((cmd) => {
    const words = [...prefix, cmd.name()];
    return [{ words, cmd }, ...commandsOf(cmd, words)];
  });
}

/** GitHub's anchor of a `## lds <words>` heading. */
const anchorOf = (words: string[]) => ['lds', ...words].join('-');

export function renderCliReference(root: Command): string {
  const top = root.commands.map((c) => c.name());
  const unguided = top.filter((name) => !GUIDES[name]);
  if (unguided.length) throw new Error(`cli/reference.ts: name the guide that explains ${unguided.join(', ')} (GUIDES)`);
  const rows = commandsOf(root).map(({ words, cmd }) => {
    const description = cmd.description().replace(/\|/g, '\\|');
    return `| [\`lds ${words.join(' ')}\`](#${anchorOf(words)}) | ${description} | [${GUIDES[words[0]!]}](../${GUIDES[words[0]!]}) |`;
  });
  const sections = [{ words: [] as string[], cmd: root }, ...commandsOf(root)].map(({ words, cmd }) =>
    [`## ${['lds', ...words].join(' ')}`, '', '```text', commandHelp(cmd).trimEnd(), '```', ''].join('\n'),
  );
  return [
    '# Command reference: `npx lds`',
    '',
    'For anyone who runs the `lds` command: publishers, hosts, operators and buyers. At the end you will know every',
    'command, its arguments and options with their defaults, its exit status and an example, and which guide',
    'explains it.',
    '',
    '<!-- Generated from the command definitions (cli.ts) by `npm run docs:cli`: do not edit. Change a',
    "command's description or help text there and run the script; test/cli-reference.test.ts fails while",
    'this file differs from the help the commands print. -->',
    '',
    "`npx lds <command>` (or `npm exec lds -- <command>`) runs this checkout's own command: `package.json`",
    "`bin` names `bin/lds.mjs`, which runs, in the same process, the compiled `build/cli.js` while `build/` is",
    "current (`npm start` compiles it) and `cli.ts` through tsx otherwise; npm finds a project's own",
    "`bin` without asking a registry, so it works offline and never installs a stranger's package of that",
    'name. Every command has `--help`; `npx lds --version` prints the package version and the catalogue and',
    'unit store format versions. Below, each command\'s help is exactly what `npx lds <command> --help` prints',
    '(defaults as in a checkout with no `LDS_*`, `PORT` or `HOST` set).',
    '',
    '| Command | What it does | Guide |',
    '|---|---|---|',
    ...rows,
    '',
    ...sections,
  ].join('\n');
}
