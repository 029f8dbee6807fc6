// Programs some suites drive for real (nginx, Apache httpd, Caddy, Chromium, curl). A fresh clone may not have them: the
// suite is then reported as skipped, with the reason and the command that installs the program, and
// never fails for that. CI sets LDS_REQUIRE_PROGRAMS=1 (.ci/run), which turns a missing program
// into a failure, so CI never skips. Point NGINX_BIN or CHROMIUM_BIN at a path that does not exist
// to see the skip on a machine that has them.
import { accessSync, constants, existsSync, readdirSync, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { suite, test, type Test } from 'uvu';

export interface Program {
  /** as the messages name it */
  name: string;
  /** executable names looked for on PATH, then in `dirs` */
  names: string[];
  /** also searched: /usr/sbin is not on a non-root user's PATH on Debian */
  dirs: string[];
  /** false: only `dirs` (what PATH holds under that name is something else) */
  onPath?: boolean;
  /** an environment variable that names the executable instead of searching */
  env?: string;
  install: string;
}

export const NGINX: Program = { name: 'nginx', names: ['nginx'], dirs: ['/usr/sbin'], env: 'NGINX_BIN', install: 'apt-get update && apt-get install -y nginx' };
export const APACHE: Program = { name: 'Apache httpd', names: ['apache2'], dirs: ['/usr/sbin'], env: 'APACHE_BIN', install: 'apt-get update && apt-get install -y apache2' };
export const CADDY: Program = { name: 'Caddy', names: ['caddy'], dirs: [], env: 'CADDY_BIN', install: 'apt-get update && apt-get install -y caddy' };
export const CHROMIUM: Program = { name: 'Chromium', names: ['chromium', 'chromium-browser'], dirs: [], env: 'CHROMIUM_BIN', install: 'apt-get update && apt-get install -y chromium' };
/** The documented shell examples call it by name, so only PATH counts. */
export const CURL: Program = { name: 'curl', names: ['curl'], dirs: [], install: 'apt-get update && apt-get install -y curl' };

/** util-linux (in every Debian system): `unshare -n` runs a command with no network but its own loopback. */
export const UNSHARE: Program = { name: 'unshare', names: ['unshare'], dirs: ['/usr/bin'], install: 'apt-get update && apt-get install -y util-linux' };

/**
 * Debian's PostgreSQL server programs (postgres, initdb, pg_ctl, pg_basebackup in
 * /usr/lib/postgresql/<major>/bin, newest major first): the high-availability suites run a primary
 * and standbys of their own (test/helpers/pg-cluster.ts). Not on PATH on Debian (its /usr/bin holds
 * wrappers), so only those folders, or LDS_PG_SERVER naming a `postgres` executable.
 */
export const POSTGRES_SERVER: Program = { name: 'PostgreSQL server', names: ['postgres'], dirs: debianPostgresBins(), onPath: false, env: 'LDS_PG_SERVER', install: 'apt-get update && apt-get install -y postgresql' };

function debianPostgresBins(): string[] {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return [join(root, '<major>', 'bin')]; // named in the message when missing
  return readdirSync(root)
    .filter((d) => /^\d+$/.test(d))
    .sort((a, b) => Number(b) - Number(a))
    .map((d) => join(root, d, 'bin'));
}

/** The flag .ci/run sets. */
export const REQUIRE_PROGRAMS = 'LDS_REQUIRE_PROGRAMS';

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The program's executable, or why there is none. */
export function locate(p: Program): { path: string } | { missing: string } {
  const named = p.env ? process.env[p.env] : undefined;
  if (named) return executable(named) ? { path: named } : { missing: `${p.env}=${named} is not an executable file` };
  const onPath = p.onPath === false ? [] : (process.env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const dir of [...onPath, ...p.dirs]) for (const name of p.names) if (executable(join(dir, name))) return { path: join(dir, name) };
  const where = [...(onPath.length ? ['on PATH'] : []), ...(p.dirs.length ? [`in ${p.dirs.join(', ')}`] : [])].join(' or ');
  return { missing: `no ${p.names.join(' or ')} ${where}${p.env ? ` (or set ${p.env})` : ''}` };
}

const whyMissing = (p: Program, missing: string) => `${p.name} is missing (${missing}); install it with \`${p.install}\``;

/** The program's path; throws with the reason and the install command when it is missing. */
export function programPath(p: Program): string {
  const found = locate(p);
  if ('missing' in found) throw new Error(whyMissing(p, found.missing));
  return found.path;
}

/** A suite whose tests are all registered as skipped; hooks never run. */
function skippedSuite(): Test {
  const s = suite();
  const add = (name: string) => s.skip(name);
  const hook = Object.assign(() => {}, { each: () => {} });
  return Object.assign(add, { only: add, skip: add, before: hook, after: hook, run: () => s.run() }) as unknown as Test;
}

/**
 * The `test` of a suite that needs these programs: uvu's own when all are there. Otherwise every
 * test of the suite is skipped and one line says why (`SKIP <suite>: ...`, which test/run.ts
 * repeats in its summary); with LDS_REQUIRE_PROGRAMS=1 one failing test says why instead.
 */
export function suiteNeeding(name: string, programs: Program[]): Test {
  const missing = programs.flatMap((p) => {
    const found = locate(p);
    return 'missing' in found ? [whyMissing(p, found.missing)] : [];
  });
  if (missing.length === 0) return test;
  const reason = missing.join('; ');
  if (process.env[REQUIRE_PROGRAMS] === '1') {
    const s = suite();
    s(`required programs are installed (${REQUIRE_PROGRAMS}=1)`, () => {
      throw new Error(`${reason}. ${REQUIRE_PROGRAMS}=1 (CI) turns a missing program into a failure instead of a skip.`);
    });
    s.run();
  } else {
    console.log(`SKIP ${name}: ${reason}`);
  }
  return skippedSuite();
}
