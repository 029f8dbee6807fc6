// Shared by the live-publish tests (service-publish-live, scale-publish-rolling): a second catalogue
// version made from a copy of catalog-src (a new draw price for one product, and its last ECDC rows
// gone, so the unit store version changes too), built with the real CLI into a given dist/ and
// store root (as a publisher's pipeline would), and small readers of what a service serves.
import { cp, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { LDS_ARGS, REPO, copyCatalogSrc, editJson } from './build.ts';
import { cachedBuild } from './fixture-cache.ts';

export const PRODUCT = 'svc-health-eu';
const ECDC_CSV = 'data/ecdc/covid19_weekly_cases_deaths_2023w27-w46.csv';

/** The ECDC unit references of the last `n` rows of the fixture CSV (`global.ecdc:<location>/<indicator>/<week>`). */
export async function lastEcdcRefs(srcDir: string, n: number): Promise<string[]> {
  const rows = parseCsv(await readFile(join(srcDir, ECDC_CSV)), { columns: true }) as Record<string, string>[];
  return rows.slice(-n).map((r) => `global.ecdc:${r.location}/${r.indicator}/${r.year_week}`);
}

/**
 * catalog-src with PRODUCT's draw price set to `priceMicros` and the last `dropRows` ECDC rows
 * removed (so the store differs); returns the folder.
 */
export async function secondVersionSrc(priceMicros: number, dropRows: number): Promise<string> {
  const src = await copyCatalogSrc();
  await editJson(join(src, 'products', `${PRODUCT}.json`), (p) => {
    p.pricing.draw_unit_price_micro_eur = priceMicros;
  });
  const csvPath = join(src, ECDC_CSV);
  const lines = (await readFile(csvPath, 'utf8')).split('\n');
  while (lines.length && lines[lines.length - 1].trim() === '') lines.pop();
  await writeFile(csvPath, lines.slice(0, lines.length - dropRows).join('\n') + '\n');
  return src;
}

/** How a build child process ended. */
export interface BuildRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/**
 * `lds build` of srcDir into dist and storeRoot (addresses as buildFixture's), as a child process,
 * with `env` added to its environment. Not cliAsync: its 60 s limit is too short for a whole build
 * on a loaded machine.
 */
export function runBuild(srcDir: string, dist: string, storeRoot: string, env: Record<string, string> = {}): Promise<BuildRun> {
  return runBuildWith(['--src', srcDir, '--out', dist, '--store-root', storeRoot, '--local', '--publisher-url', 'https://publisher.example', '--source-date-epoch', '1767225600'], env);
}

/** `lds build` with these arguments, as a child process (no time limit but a generous one). */
export function runBuildWith(buildArgs: string[], env: Record<string, string> = {}): Promise<BuildRun> {
  const args = [...LDS_ARGS, 'build', ...buildArgs];
  return new Promise<BuildRun>((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: REPO, stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stderr });
    });
  });
}

/** `lds build` of srcDir into dist and storeRoot, which must succeed. */
export async function buildInto(srcDir: string, dist: string, storeRoot: string): Promise<void> {
  const r = await runBuild(srcDir, dist, storeRoot);
  assert.is(r.code, 0, `build failed: ${r.stderr}`);
}

/**
 * A build of secondVersionSrc(priceMicros, dropRows) as buildInto makes it, in `root`/dist and
 * `root`/store: made once per machine (test/helpers/fixture-cache.ts) for these parameters and
 * copied, for a suite that ships a finished build rather than builds into what a service serves.
 */
export async function secondVersionBuild(priceMicros: number, dropRows: number, root: string): Promise<{ dist: string; store: string }> {
  const make = async (dir: string) => buildInto(await secondVersionSrc(priceMicros, dropRows), join(dir, 'dist'), join(dir, 'store'));
  await cachedBuild(`second-version-${priceMicros}-${dropRows}`, root, make, ['cli.ts', 'cli', 'test/helpers/releases.ts']);
  return { dist: join(root, 'dist'), store: join(root, 'store') };
}

/** A copy of a built dist/ and store root for one instance (its own LevelDB copies). */
export async function copyBuild(fromDist: string, fromStore: string, toDir: string): Promise<{ dist: string; store: string }> {
  const dist = join(toDir, 'dist');
  const store = join(toDir, 'store');
  await cp(fromDist, dist, { recursive: true, dereference: true }); // the build dist links to, not the link
  await cp(fromStore, store, { recursive: true });
  return { dist, store };
}

export interface Readyz {
  status: number;
  body: { status?: string; catalogue_version?: string; store_version?: string; checks?: Record<string, string> };
}

export async function readyz(base: string): Promise<Readyz> {
  const res = await fetch(`${new URL(base).origin}/readyz`);
  return { status: res.status, body: (await res.json()) as Readyz['body'] };
}

/** Polls /readyz until `until` holds (every 100 ms, up to `ms`); returns the last answer and when it held. */
export async function waitReady(base: string, until: (r: Readyz) => boolean, ms = 60_000): Promise<Readyz & { at: number }> {
  const deadline = Date.now() + ms;
  for (;;) {
    const r = await readyz(base);
    if (until(r)) return { ...r, at: Date.now() };
    if (Date.now() > deadline) throw new Error(`/readyz did not change as expected within ${ms / 1000} s: ${JSON.stringify(r)}`);
    await new Promise((res) => setTimeout(res, 100));
  }
}

/** The sum of the Prometheus samples of `name` carrying every label in `labels` (0 when none), from GET /metrics. */
export async function metric(base: string, metricsToken: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  const res = await fetch(`${new URL(base).origin}/metrics`, { headers: { authorization: `Bearer ${metricsToken}` } });
  assert.is(res.status, 200);
  let sum = 0;
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * Waits until the service has looked for a new build `n` more times (lds_release_checks_total):
 * what a test needs before it can say a check did not do something (switch, retry a refused build).
 */
export async function releaseChecks(base: string, metricsToken: string, n: number, timeoutMs = 30_000): Promise<void> {
  const start = await metric(base, metricsToken, 'lds_release_checks_total');
  const deadline = Date.now() + timeoutMs;
  while ((await metric(base, metricsToken, 'lds_release_checks_total')) < start + n) {
    if (Date.now() > deadline) throw new Error(`the service did not look for a new build ${n} times within ${timeoutMs / 1000} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The cents of a decimal amount string ("0.25" -> 25), without floating point. */
export function centsOf(amount: string): number {
  const [e, c = '00'] = amount.split('.');
  return Number(e) * 100 + Number(c.padEnd(2, '0'));
}
