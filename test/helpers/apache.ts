// Real Apache httpd (Debian's apache2) for the hosting tests, started by the test on 127.0.0.1 and a
// free port with a configuration of its own in a temp folder (no system service). The modules are
// Debian's default set (mods-enabled: mime.conf with its AddLanguage .br, deflate, negotiation, ...)
// plus rewrite and headers, which the generated include needs: the rules are tested against what
// an operator's `a2enmod rewrite headers` server really has.
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './build.ts';
import { canConnect } from './http.ts';
import { APACHE, programPath } from './programs.ts';

export interface Apache {
  origin: string;
  port: number;
  dir: string;
  /** The shell command that reloads it gracefully (apachectl graceful: new children read the configuration). */
  reloadCommand: string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * As root, Apache's children run as www-data (it refuses to serve as root), which cannot enter a
 * mkdtemp folder (0700): the folders it serves from are opened to others for reading.
 */
export async function readableByServer(...dirs: string[]): Promise<void> {
  for (const d of dirs) await chmod(d, 0o755);
}

/** Starts apache2 on `port` with `vhost` (the body of one <VirtualHost>); resolves once it accepts connections. */
export async function startApache(vhost: string, port: number): Promise<Apache> {
  const bin = programPath(APACHE);
  const dir = await tempDir('apache');
  await readableByServer(dir);
  const conf = join(dir, 'httpd.conf');
  const modules = '/usr/lib/apache2/modules';
  const root = process.getuid?.() === 0;
  await writeFile(
    conf,
    `ServerRoot /etc/apache2
DefaultRuntimeDir ${dir}
PidFile ${dir}/httpd.pid
ErrorLog ${dir}/error.log
LogLevel warn
Mutex file:${dir} default
Listen 127.0.0.1:${port}
ServerName 127.0.0.1
${root ? 'User www-data\nGroup www-data\n' : ''}IncludeOptional /etc/apache2/mods-enabled/*.load
IncludeOptional /etc/apache2/mods-enabled/*.conf
<IfModule !rewrite_module>
  LoadModule rewrite_module ${modules}/mod_rewrite.so
</IfModule>
<IfModule !headers_module>
  LoadModule headers_module ${modules}/mod_headers.so
</IfModule>
<Directory />
  AllowOverride None
  Require all denied
</Directory>
<VirtualHost 127.0.0.1:${port}>
${vhost}
</VirtualHost>
`,
  );
  const check = await run(bin, ['-t', '-f', conf]);
  if (check.code !== 0) throw new Error(`apache2 -t rejected the config:\n${check.output}\n--- httpd.conf ---\n${await readFile(conf, 'utf8')}`);

  const child = spawn(bin, ['-f', conf, '-DFOREGROUND'], { stdio: ['ignore', 'pipe', 'pipe'] });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => { running.delete(child); resolve(); }));
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + 15_000;
  while (!(await canConnect(port))) {
    if (dead || Date.now() > deadline) {
      child.kill('SIGKILL');
      const log = await readFile(join(dir, 'error.log'), 'utf8').catch(() => '');
      throw new Error(`apache2 did not start on port ${port}${dead ? ' (it exited)' : ''}:\n${output}\n${log}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    dir,
    reloadCommand: `${bin} -f ${conf} -k graceful`,
    async stop() {
      if (dead) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
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
