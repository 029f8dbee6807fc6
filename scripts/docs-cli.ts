// `npm run docs:cli`: writes docs/reference/cli.md from the command definitions (cli/reference.ts
// says how). `--check` writes nothing and exits 1 when the file differs from what it would write.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { SETTING } from '../cli/reference.ts';

const root = fileURLToPath(new URL('..', import.meta.url));
const target = fileURLToPath(new URL('../docs/reference/cli.md', import.meta.url));
// The defaults the help shows are read when cli.ts is imported: from the checkout's root, no settings.
process.chdir(root);
for (const k of Object.keys(process.env)) if (SETTING.test(k)) delete process.env[k];
const { program } = await import('../cli.ts');
const { renderCliReference } = await import('../cli/reference.ts');
const text = renderCliReference(program);
if (process.argv.includes('--check')) {
  const same = readFileSync(target, 'utf8') === text;
  console.error(same ? 'docs/reference/cli.md is up to date' : 'docs/reference/cli.md differs from the commands\' help: run npm run docs:cli');
  process.exitCode = same ? 0 : 1;
} else {
  writeFileSync(target, text);
  console.error(`wrote docs/reference/cli.md (${text.split('\n').length} lines)`);
}
