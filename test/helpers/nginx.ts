// Real nginx serving a built dist/ with the generated include (dist/_nginx/lds.conf), for the
// hosting tests, started as `lds preview nginx` starts it (generator/web-servers.ts: the whole
// configuration, pid, logs and temp paths in a temp folder); everything about the published paths
// comes from the include the build wrote.
import { join } from 'node:path';
import { build, type BuildResult } from '../../generator/build.ts';
import { programPath, servesBuild, startWebServer, type WebServer } from '../../generator/web-servers.ts';
import { CATALOG_SRC, tempDir } from './build.ts';
import { freePort, slotPort } from './http.ts';
import { NGINX } from './programs.ts';

export { freePort };

/** The nginx binary (NGINX_BIN, PATH or /usr/sbin); throws with the install command when missing. Suites use suiteNeeding([NGINX]) to skip instead. */
export function requireNginx(): string {
  return programPath(NGINX);
}

export type Nginx = WebServer;

/** Starts nginx on `port` serving distDir with its rules; resolves once it accepts connections. */
export async function startNginx(distDir: string, port: number): Promise<Nginx> {
  return startWebServer('nginx', { dir: await tempDir('nginx'), host: '127.0.0.1', port, site: servesBuild('nginx', distDir) });
}

/** Starts nginx on `port` with `http` as the whole content of its http block (upstreams, server blocks). */
export async function startNginxWith(http: string, port: number): Promise<Nginx> {
  return startWebServer('nginx', { dir: await tempDir('nginx'), host: '127.0.0.1', port, site: '', nginxHttp: http });
}

/** The build clock of buildFor (2023-11-14T22:13:20Z, the first of publish-flow.ts twoBuilds). */
const HOSTED_EPOCH = 1_700_000_000;

export interface HostedDist {
  nginx: Nginx;
  distDir: string;
  build: BuildResult;
  stop(): Promise<void>;
}

/**
 * Builds dist/ (no unit store) for the address nginx will answer at, then serves it.
 * The catalogue's own links therefore point at this nginx.
 */
export async function buildAndServe(): Promise<HostedDist> {
  requireNginx();
  const port = await slotPort();
  const { distDir, result } = await buildFor(port);
  const nginx = await startNginx(distDir, port);
  return { nginx, distDir, build: result, stop: () => nginx.stop() };
}

/**
 * dist/ (no unit store) built for a static host on 127.0.0.1:port, so the catalogue's own links
 * point at it; at a fixed build clock, so a build for the same port is the same (slotPort).
 */
export async function buildFor(port: number): Promise<{ distDir: string; result: BuildResult }> {
  const distDir = join(await tempDir('hosted'), 'dist');
  const result = await build({
    srcDir: CATALOG_SRC,
    outDir: distDir,
    storeRoot: join(distDir, '..', 'store'),
    noStore: true,
    localOrigin: `http://127.0.0.1:${port}`,
    sourceDateEpoch: HOSTED_EPOCH,
  });
  return { distDir, result };
}

export interface HeaderRule {
  path: string;
  headers: [string, string][];
}

/** Parses dist/_headers (Netlify/Cloudflare Pages format): a path line, then indented `Name: value` lines. */
export function parseHeadersFile(text: string): HeaderRule[] {
  const rules: HeaderRule[] = [];
  for (const line of text.split('\n')) {
    if (line.trim() === '') continue;
    if (/^\s/.test(line)) {
      const m = /^\s+([^:]+):\s?(.*)$/.exec(line);
      if (!m || rules.length === 0) throw new Error(`_headers: cannot read line ${JSON.stringify(line)}`);
      rules[rules.length - 1]!.headers.push([m[1]!.trim(), m[2]!]);
    } else rules.push({ path: line.trim(), headers: [] });
  }
  return rules;
}

/**
 * uvu swallows an error thrown by a `before` hook (no message, exit code 0). Wrap the hook's work
 * in this so the reason is printed and the process fails.
 */
export async function failLoudly<T>(setup: () => Promise<T>): Promise<T> {
  try {
    return await setup();
  } catch (err) {
    console.error(`\n  SETUP FAILED: ${(err as Error).message}\n`);
    process.once('exit', () => (process.exitCode = 1)); // uvu sets the exit code itself at the end
    throw err;
  }
}
