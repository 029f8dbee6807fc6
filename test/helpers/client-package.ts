// The client package as a buyer gets it (not itself a suite): `npm pack` of client/, installed into
// an empty project in the temp folder. Packing and installing take tens of seconds, so the result is
// kept in the temp folder under a key hashed from everything that goes into the tarball (the client
// and contract sources, the package's files, the lock file) and reused by every test, every backend
// run and later runs until a source changes. Bun comes from the npm registry the same way, once per
// version. Concurrent callers (the two ledger backends' runs) take turns with the client's own lock.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { withLock } from '../../client/lock.ts';
import { REPO, runAsync } from './build.ts';

/** The Bun the test runs the README example on (npm package `bun`, which ships the binary). */
export const BUN_VERSION = '1.4.4';

export interface PackedClient {
  /** the tarball npm pack made */
  tarball: string;
  /** a project whose only dependency is the tarball (node_modules installed) */
  project: string;
}

/** Hash of what the tarball is made from. */
function sourcesKey(): string {
  const h = createHash('sha256');
  const add = (path: string) => h.update(path).update(readFileSync(join(REPO, path)));
  for (const dir of ['client', 'contract']) for (const f of readdirSync(join(REPO, dir)).sort()) if (/\.(ts|json|md)$|^LICENSE$/.test(f)) add(`${dir}/${f}`);
  for (const f of ['scripts/build-client.mjs', 'tsconfig.json', 'package-lock.json']) add(f);
  return h.digest('hex').slice(0, 16);
}

async function npm(args: string[], cwd: string): Promise<void> {
  const r = await runAsync('npm', [...args, '--no-audit', '--no-fund', '--loglevel=error'], { cwd, env: { npm_config_update_notifier: 'false' } });
  if (r.code !== 0) throw new Error(`npm ${args.join(' ')} in ${cwd} failed (${r.code}):\n${r.stdout}\n${r.stderr}`);
}

/** Makes `dir` once with `make` (into a temp name, then renamed), under a lock; later calls find it. */
async function cached(dir: string, make: (into: string) => Promise<void>): Promise<string> {
  if (existsSync(join(dir, '.ready'))) return dir;
  return withLock(
    `${dir}.lock`,
    async () => {
      if (existsSync(join(dir, '.ready'))) return dir;
      await rm(dir, { recursive: true, force: true });
      const into = await mkdtemp(`${dir}.tmp-`);
      await make(into);
      await writeFile(join(into, '.ready'), new Date().toISOString());
      await rename(into, dir);
      return dir;
    },
    { timeoutMs: 600_000 },
  );
}

/** The packed client, installed into an empty project (made once per source hash). */
export async function packedClient(): Promise<PackedClient> {
  const dir = await cached(join(tmpdir(), `lds-client-package-${sourcesKey()}`), async (into) => {
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

/** The `bun` binary of the npm package of that name (installed once per version). */
export async function bunBinary(): Promise<string> {
  const dir = await cached(join(tmpdir(), `lds-bun-${BUN_VERSION}`), async (into) => {
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
