// Real nginx serving a built dist/ with the generated include (dist/_nginx/lds.conf), for the
// hosting tests. The harness config is ours (ports, pid, logs, temp paths in a temp folder);
// everything about the published paths comes from the include the build wrote.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { join } from 'node:path';
import { build, type BuildResult } from '../../generator/build.ts';
import { CATALOG_SRC, tempDir } from './build.ts';
import { canConnect, freePort } from './http.ts';
import { NGINX, programPath } from './programs.ts';

export { freePort };

/** The nginx binary (NGINX_BIN, PATH or /usr/sbin); throws with the install command when missing. Suites use suiteNeeding([NGINX]) to skip instead. */
export function requireNginx(): string {
  return programPath(NGINX);
}

export interface Nginx {
  origin: string; // http://127.0.0.1:<port>
  port: number;
  dir: string; // harness folder: nginx.conf, logs, temp paths
  /** The shell command that reloads this nginx (new workers read the configuration again; old ones finish). */
  reloadCommand: string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** The harness around http-level directives: pid, logs and temp paths in the harness folder `dir`. */
export function harnessConf(dir: string, http: string): string {
  // As root, workers would drop to `nobody`, which cannot read a mkdtemp (0700) folder.
  const user = process.getuid?.() === 0 ? `user ${userInfo().username};\n` : '';
  return `${user}daemon off;
master_process on;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log ${dir}/access.log;
  client_body_temp_path ${dir}/tmp/client_body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  default_type application/octet-stream;
${http}
}
`;
}

/** The harness config: one server on 127.0.0.1:port whose root is distDir, including the generated rules. */
export function nginxConf(distDir: string, port: number, dir: string): string {
  return harnessConf(
    dir,
    `  server {
    listen 127.0.0.1:${port};
    server_name localhost;
    root ${distDir};
    include ${distDir}/_nginx/lds.conf;
  }`,
  );
}

/** Starts nginx on `port` serving distDir; resolves once it accepts connections. */
export function startNginx(distDir: string, port: number): Promise<Nginx> {
  return startNginxWith((dir) => nginxConf(distDir, port, dir), port);
}

/** Starts nginx with the config `confFor(harness folder)` gives, listening on `port`. */
export async function startNginxWith(confFor: (dir: string) => string, port: number): Promise<Nginx> {
  const bin = requireNginx();
  const dir = await tempDir('nginx');
  await mkdir(join(dir, 'tmp'), { recursive: true });
  const conf = join(dir, 'nginx.conf');
  await writeFile(conf, confFor(dir));

  // Check the config first so a bad generated include fails with nginx's own message.
  const check = await run(bin, ['-t', '-p', dir, '-c', conf, '-e', join(dir, 'error.log')]);
  if (check.code !== 0) throw new Error(`nginx -t rejected the config:\n${check.output}\n--- nginx.conf ---\n${await readFile(conf, 'utf8')}`);

  const child = spawn(bin, ['-p', dir, '-c', conf, '-e', join(dir, 'error.log')], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => { running.delete(child); resolve(code); }));
  let dead = false;
  void exited.then(() => (dead = true));

  const deadline = Date.now() + 10_000;
  while (!(await canConnect(port))) {
    if (dead || Date.now() > deadline) {
      child.kill('SIGKILL');
      const log = await readFile(join(dir, 'error.log'), 'utf8').catch(() => '');
      throw new Error(`nginx did not start on port ${port}${dead ? ' (it exited)' : ''}:\n${output}\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }

  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    dir,
    reloadCommand: `${bin} -p ${dir} -c ${conf} -e ${join(dir, 'error.log')} -s reload`,
    async stop() {
      if (dead) return;
      child.kill('SIGQUIT'); // graceful shutdown
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

function run(bin: string, args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (err) => resolve({ code: -1, output: String(err) }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

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
  const port = await freePort();
  const distDir = join(await tempDir('hosted'), 'dist');
  const result = await build({
    srcDir: CATALOG_SRC,
    outDir: distDir,
    storeRoot: join(distDir, '..', 'store'),
    noStore: true,
    localOrigin: `http://127.0.0.1:${port}`,
  });
  const nginx = await startNginx(distDir, port);
  return { nginx, distDir, build: result, stop: () => nginx.stop() };
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
