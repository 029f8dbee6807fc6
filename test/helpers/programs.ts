// Programs some suites drive for real (nginx, Apache httpd, Caddy, Chromium, curl). A fresh clone may not have them: the
// suite is then reported as skipped, with the reason and the command that installs the program, and
// never fails for that. CI sets LDS_REQUIRE_PROGRAMS=1 (.ci/run), which turns a missing program
// into a failure, so CI never skips. Point NGINX_BIN or CHROMIUM_BIN at a path that does not exist
// to see the skip on a machine that has them.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { suite, test, type Test } from 'uvu';
import { APACHE, CADDY, locate, NGINX, programPath, whyMissing, type Program } from '../../generator/web-servers.ts';

// The web servers are found as `lds preview` finds them (generator/web-servers.ts).
export { APACHE, CADDY, locate, NGINX, programPath, type Program };

export const CHROMIUM: Program = { name: 'Chromium', names: ['chromium', 'chromium-browser'], dirs: [], env: 'CHROMIUM_BIN', install: 'apt-get update && apt-get install -y chromium' };
/** The documented shell examples call it by name, so only PATH counts. */
export const CURL: Program = { name: 'curl', names: ['curl'], dirs: [], install: 'apt-get update && apt-get install -y curl' };

/** util-linux (in every Debian system): `unshare -n` runs a command with no network but its own loopback. */
/** systemd's unit checker (Debian's systemd package; no running systemd needed): test/ops-systemd. */
export const SYSTEMD_ANALYZE: Program = { name: 'systemd-analyze', names: ['systemd-analyze'], dirs: ['/usr/bin', '/bin'], install: 'apt-get update && apt-get install -y systemd' };
/** Prometheus's rule checker and rule unit-test runner (Debian's prometheus package): test/ops-alerts. */
export const PROMTOOL: Program = { name: 'promtool', names: ['promtool'], dirs: ['/usr/bin'], install: 'apt-get update && apt-get install -y prometheus' };
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

/**
 * Debian's python3-rdflib: the independent RDF library that reads the whole DCAT-AP catalogue
 * (test/helpers/rdf_harvest.py). Debian's own python3 in /usr/bin (another python on PATH, e.g.
 * pyenv's, does not see Debian's packages); `probe` says whether that python imports rdflib.
 */
export const PYTHON_RDFLIB: Program & { probe: string[] } = {
  name: 'python3-rdflib',
  names: ['python3'],
  dirs: ['/usr/bin'],
  onPath: false,
  env: 'LDS_PYTHON',
  install: 'apt-get update && apt-get install -y python3-rdflib',
  probe: ['-c', 'import rdflib'],
};

/** The flag .ci/run sets. */
export const REQUIRE_PROGRAMS = 'LDS_REQUIRE_PROGRAMS';

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
    if ('missing' in found) return [whyMissing(p, found.missing)];
    // A program that is there may still lack what the suite needs of it (python3 without rdflib).
    const probe = (p as { probe?: string[] }).probe;
    if (probe && spawnSync(found.path, probe, { stdio: 'ignore' }).status !== 0) return [whyMissing(p, `${found.path} ${probe.join(' ')} fails`)];
    return [];
  });
  if (missing.length === 0) return test;
  return suiteMissing(name, missing.join('; '));
}

/**
 * The `test` of a suite that cannot run for `reason` (a program, or a tool it installs, is missing):
 * skipped with one line saying why, or with LDS_REQUIRE_PROGRAMS=1 (CI) one failing test saying it.
 */
export function suiteMissing(name: string, reason: string): Test {
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
