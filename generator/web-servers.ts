// The web servers the build writes rules for (nginx, Apache httpd, Caddy), run as programs on one
// port over one build: where each is installed, the whole configuration that runs it (written into a
// folder of its own, with its pid file, logs and temporary files), how it is checked, started,
// reloaded and stopped. `lds preview` (cli/preview.ts) runs one for a person to look at a build as
// it will be hosted; the hosting tests run theirs through the same code, so what a preview shows
// is what the tests check. Everything about the published paths stays in the rules the build wrote
// (_nginx/lds.conf, _apache/lds.conf, _caddy/lds.caddy); the configurations come from
// emit/{nginx,apache,caddy}.ts.
import { spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { userInfo } from 'node:os';
import { delimiter, join } from 'node:path';
import { apacheServesBuild, apacheStandalone, type ApacheMachine } from './emit/apache.ts';
import { caddyServesBuild, caddyStandalone } from './emit/caddy.ts';
import { hostForPort } from './emit/hosting-paths.ts';
import { canConnect, freePort } from './ports.ts';
import { nginxServer, nginxServesBuild, nginxStandalone } from './emit/nginx.ts';

/** A program found on PATH (or in `dirs`), or named by an environment variable. */
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
export const APACHE: Program = { name: 'Apache httpd', names: ['apache2', 'httpd'], dirs: ['/usr/sbin'], env: 'APACHE_BIN', install: 'apt-get update && apt-get install -y apache2' };
export const CADDY: Program = { name: 'Caddy', names: ['caddy'], dirs: [], env: 'CADDY_BIN', install: 'apt-get update && apt-get install -y caddy' };

export type WebServerKind = 'nginx' | 'apache' | 'caddy';
export const WEB_SERVERS: Record<WebServerKind, Program> = { nginx: NGINX, apache: APACHE, caddy: CADDY };

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

export const whyMissing = (p: Program, missing: string) => `${p.name} is missing (${missing}); install it with \`${p.install}\``;

/** The program's path; throws with the reason and the install command when it is missing. */
export function programPath(p: Program): string {
  const found = locate(p);
  if ('missing' in found) throw new Error(whyMissing(p, found.missing));
  return found.path;
}

/** The lines inside a server block / <VirtualHost> / site block that serve a build folder with its rules. */
export function servesBuild(kind: WebServerKind, buildDir: string): string {
  return { nginx: nginxServesBuild, apache: apacheServesBuild, caddy: caddyServesBuild }[kind](buildDir);
}

export interface WebServerOptions {
  /** The folder for its configuration, pid file, logs and temporary files (absolute; created). */
  dir: string;
  host: string;
  port: number;
  /** The site: what goes inside the server block / <VirtualHost> / site block (servesBuild, or a release pin's include). */
  site: string;
  /** nginx only: the whole http block's content instead (upstreams, several servers); `site` is then unused. */
  nginxHttp?: string;
  /** Where the server's own output goes (default: kept, and shown if it fails to start). */
  output?: (chunk: string) => void;
}

export interface WebServer {
  kind: WebServerKind;
  origin: string;
  port: number;
  dir: string;
  /** The configuration file it runs. */
  config: string;
  /** The shell command that starts it with that configuration (in the foreground), for a person to run. */
  startCommand: string;
  /** The shell command that makes it read its configuration again (new workers; old ones finish). */
  reloadCommand: string;
  /** Resolves with its exit code when it ends. */
  exited: Promise<number | null>;
  /** Stops it gracefully (killed after a grace period) and waits for it. */
  stop(): Promise<void>;
}

/** A folder readable by a server's workers when they drop root: they cannot enter a 0700 folder. */
export async function readableByServer(...dirs: string[]): Promise<void> {
  for (const d of dirs) await chmod(d, 0o755);
}

/** As root, the user Apache's children run as (it refuses to serve as root): the first system web user there is. */
function apacheRunAs(): ApacheMachine['runAs'] {
  if (process.getuid?.() !== 0) return null;
  const passwd = readFileSync('/etc/passwd', 'utf8').split('\n').map((l) => l.split(':'));
  for (const name of ['www-data', 'apache', 'daemon', 'nobody']) {
    const entry = passwd.find((f) => f[0] === name);
    if (entry) return { user: name, group: `#${entry[3]}` };
  }
  throw new Error('running as root, Apache needs a user for its children, and none of www-data, apache, daemon, nobody exists');
}

const APACHE_MODULE_DIRS = ['/usr/lib/apache2/modules', '/usr/lib64/httpd/modules', '/usr/lib/httpd/modules', '/usr/local/apache2/modules', '/usr/libexec/apache2'];

/** What a standalone Apache needs from this machine (the module folder, Debian's enabled modules, a user as root). */
export function apacheMachine(): ApacheMachine {
  const modulesDir = APACHE_MODULE_DIRS.find((d) => existsSync(join(d, 'mod_rewrite.so')));
  if (!modulesDir) throw new Error(`no Apache module folder with mod_rewrite.so (looked in ${APACHE_MODULE_DIRS.join(', ')})`);
  const enabled = '/etc/apache2/mods-enabled';
  return { modulesDir, enabledModules: existsSync(enabled) ? enabled : null, runAs: apacheRunAs(), mimeTypes: existsSync('/etc/mime.types') ? '/etc/mime.types' : '/dev/null' };
}

interface Plan {
  config: string;
  text: string;
  args: string[];
  /** Checks the configuration without serving (nginx -t, apache2 -t, caddy validate). */
  checkArgs: string[];
  /** Whether starting checks first (nginx and Apache: their own start messages are less clear). */
  checkOnStart: boolean;
  reloadArgs: string[];
  env: NodeJS.ProcessEnv;
  stopSignal: NodeJS.Signals;
}

async function plan(kind: WebServerKind, o: WebServerOptions): Promise<Plan> {
  if (kind === 'nginx') {
    await mkdir(join(o.dir, 'tmp'), { recursive: true });
    const config = join(o.dir, 'nginx.conf');
    // As root, workers would drop to `nobody`, which cannot read a 0700 folder: they run as the caller.
    const user = process.getuid?.() === 0 ? userInfo().username : undefined;
    const text = nginxStandalone({ dir: o.dir, http: o.nginxHttp ?? nginxServer(o.host, o.port, o.site), ...(user ? { user } : {}) });
    const base = ['-p', o.dir, '-c', config, '-e', join(o.dir, 'error.log')];
    return { config, text, args: base, checkArgs: ['-t', ...base], checkOnStart: true, reloadArgs: [...base, '-s', 'reload'], env: process.env, stopSignal: 'SIGQUIT' };
  }
  if (kind === 'apache') {
    // Its children may run as another user (as root): they need to reach the runtime folder.
    await readableByServer(o.dir);
    const config = join(o.dir, 'httpd.conf');
    const text = apacheStandalone({ dir: o.dir, host: o.host, port: o.port, vhost: o.site, machine: apacheMachine() });
    return { config, text, args: ['-f', config, '-DFOREGROUND'], checkArgs: ['-t', '-f', config], checkOnStart: true, reloadArgs: ['-f', config, '-k', 'graceful'], env: process.env, stopSignal: 'SIGTERM' };
  }
  const config = join(o.dir, 'Caddyfile');
  const admin = await freePort();
  const text = caddyStandalone({ dir: o.dir, host: o.host, port: o.port, adminPort: admin, site: o.site });
  // Caddy keeps state under HOME / XDG folders: keep it in the server's folder.
  const env = { ...process.env, HOME: o.dir, XDG_DATA_HOME: join(o.dir, 'xdg'), XDG_CONFIG_HOME: join(o.dir, 'xdg') };
  const adapter = ['--config', config, '--adapter', 'caddyfile'];
  // `caddy run` reports a bad configuration itself as it starts: validate only what is not started.
  return { config, text, args: ['run', ...adapter], checkArgs: ['validate', ...adapter], checkOnStart: false, reloadArgs: ['reload', ...adapter, '--address', `127.0.0.1:${admin}`], env, stopSignal: 'SIGTERM' };
}

const shellWord = (s: string) => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);
const commandLine = (env: Record<string, string>, bin: string, args: string[]) => [...Object.entries(env).map(([k, v]) => `${k}=${shellWord(v)}`), ...[bin, ...args].map(shellWord)].join(' ');

function run(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', (err) => resolve({ code: -1, output: String(err) }));
    child.on('close', (code) => resolve({ code, output }));
  });
}

/** Writes the configuration of a server into o.dir and checks it (unless `starting` a server that checks as it starts); returns what starts it. */
export async function writeWebServer(kind: WebServerKind, o: WebServerOptions, starting = false): Promise<{ bin: string; plan: Plan; config: string; startCommand: string; reloadCommand: string }> {
  const bin = programPath(WEB_SERVERS[kind]);
  await mkdir(o.dir, { recursive: true });
  const p = await plan(kind, o);
  await writeFile(p.config, p.text);
  if (!starting || p.checkOnStart) {
    const check = await run(bin, p.checkArgs, p.env);
    if (check.code !== 0) throw new Error(`${WEB_SERVERS[kind].name} rejected the configuration ${p.config}:\n${check.output}`);
  }
  const caddyEnv: Record<string, string> = kind === 'caddy' ? { HOME: p.env.HOME!, XDG_DATA_HOME: p.env.XDG_DATA_HOME!, XDG_CONFIG_HOME: p.env.XDG_CONFIG_HOME! } : {};
  return { bin, plan: p, config: p.config, startCommand: commandLine(caddyEnv, bin, p.args), reloadCommand: commandLine(caddyEnv, bin, p.reloadArgs) };
}

/** Every server a process started, killed if that process exits without stopping them. */
const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Writes, checks and starts a server; resolves once it accepts connections on host:port. */
export async function startWebServer(kind: WebServerKind, o: WebServerOptions): Promise<WebServer> {
  const { bin, plan: p, startCommand, reloadCommand } = await writeWebServer(kind, o, true);
  const child = spawn(bin, p.args, { stdio: ['ignore', 'pipe', 'pipe'], env: p.env });
  running.add(child);
  let output = '';
  const take = (d: Buffer) => (o.output ? o.output(String(d)) : (output += d));
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      running.delete(child);
      resolve(code);
    }),
  );
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + 20_000;
  while (!(await canConnect(o.port, o.host))) {
    if (dead || Date.now() > deadline) {
      child.kill('SIGKILL');
      const log = await readFile(join(o.dir, 'error.log'), 'utf8').catch(() => '');
      throw new Error(`${WEB_SERVERS[kind].name} did not start on ${o.host}:${o.port}${dead ? ' (it exited)' : ''}:\n${output}\n${log}\n--- ${p.config} ---\n${p.text}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    kind,
    origin: `http://${hostForPort(o.host)}:${o.port}`,
    port: o.port,
    dir: o.dir,
    config: p.config,
    startCommand,
    reloadCommand,
    exited,
    async stop() {
      if (dead) return;
      child.kill(p.stopSignal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
