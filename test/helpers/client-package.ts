// The client package as a buyer gets it (not itself a suite): `npm pack` of client/, installed into
// an empty project. Packing and installing take tens of seconds, so the result is kept in the test
// fixture cache (test/helpers/fixture-cache.ts) under a hash of everything that goes into the
// tarball (the client and contract sources, the package's files, the lock file), made by one
// process while the others wait, and reused by every test, every backend run and later runs until a
// source changes. Bun comes from the npm registry the same way, once per version.
import { readdirSync } from 'node:fs';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO, runAsync } from './build.ts';
import { cachedFixture } from './fixture-cache.ts';

/** The Bun the test runs the README example on (npm package `bun`, which ships the binary). */
export const BUN_VERSION = '1.4.4';

export interface PackedClient {
  /** the tarball npm pack made */
  tarball: string;
  /** a project whose only dependency is the tarball (node_modules installed) */
  project: string;
}

/** What the tarball is made from: the client and contract sources, the package's files, the lock file. */
function packageInputs(): string[] {
  const files = ['client', 'contract'].flatMap((dir) => readdirSync(join(REPO, dir)).filter((f) => /\.(ts|json|md)$|^LICENSE$/.test(f)).map((f) => `${dir}/${f}`));
  return [...files, 'scripts/build-client.mjs', 'tsconfig.json', 'package-lock.json'];
}

async function npm(args: string[], cwd: string): Promise<void> {
  const r = await runAsync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env: { npm_config_update_notifier: 'false' } });
  if (r.code !== 0) throw new Error(`npm ${args.join(' ')} in ${cwd} failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
}

/** The packed client, installed into an empty project (made once per machine until a source changes). */
export async function packedClient(): Promise<PackedClient> {
  const dir = await cachedFixture('client-package', { paths: packageInputs(), params: 'npm pack + install' }, async (into) => {
    await npm(['pack', '--pack-destination', into], join(REPO, 'client'));
    const [tarball] = (await readdir(into)).filter((f) => f.endsWith('.tgz'));
    if (!tarball) throw new Error('npm pack made no tarball');
    const project = join(into, 'project');
    await mkdir(project);
    await writeFile(join(project, 'package.json'), JSON.stringify({ name: 'buyer', private: true, type: 'module' }));
    // From the npm cache where it holds the dependencies (npm ci filled it), else the registry.
    await npm(['install', '--prefer-offline', join(into, tarball)], project);
  });
  const tarball = (await readdir(dir)).find((f) => f.endsWith('.tgz'))!;
  return { tarball: join(dir, tarball), project: join(dir, 'project') };
}

/** The `bun` binary of the npm package of that name (installed once per machine and version). */
export async function bunBinary(): Promise<string> {
  const dir = await cachedFixture('bun', { paths: [], params: `bun@${BUN_VERSION}` }, async (into) => {
    await writeFile(join(into, 'package.json'), JSON.stringify({ name: 'bun-runtime', private: true }));
    await npm(['install', '--prefer-offline', `bun@${BUN_VERSION}`], into);
  });
  return join(dir, 'node_modules', 'bun', 'bin', 'bun.exe');
}

/** Every package name installed under `project`'s node_modules, nested ones included. */
export async function installedPackages(project: string): Promise<Set<string>> {
  const names = new Set<string>();
  const walk = async (modules: string) => {
    let entries: string[];
    try {
      entries = await readdir(modules);
    } catch {
      return;
    }
    for (const e of entries) {
      if (e.startsWith('.')) continue;
      const scoped = e.startsWith('@') ? (await readdir(join(modules, e))).map((s) => `${e}/${s}`) : [e];
      for (const name of scoped) {
        names.add(name);
        await walk(join(modules, name, 'node_modules'));
      }
    }
  };
  await walk(join(project, 'node_modules'));
  return names;
}
