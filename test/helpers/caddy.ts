// Real Caddy (Debian's caddy) for the hosting tests, started by the test on 127.0.0.1 and a free
// port, its admin endpoint on another free port (what `caddy reload` talks to), its state in a temp
// folder (XDG_DATA_HOME / XDG_CONFIG_HOME), plain HTTP (auto_https off). No system service.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './build.ts';
import { canConnect, freePort } from './http.ts';
import { CADDY, programPath } from './programs.ts';

export interface Caddy {
  origin: string;
  port: number;
  dir: string;
  /** The shell command that reloads it (caddy reload: adapts the Caddyfile again and applies it before it returns). */
  reloadCommand: string;
  stop(): Promise<void>;
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/** Starts Caddy on `port` with `site` (the body of one site block); resolves once it accepts connections. */
export async function startCaddy(site: string, port: number): Promise<Caddy> {
  const bin = programPath(CADDY);
  const dir = await tempDir('caddy');
  const admin = await freePort();
  const conf = join(dir, 'Caddyfile');
  await writeFile(
    conf,
    `{
	admin 127.0.0.1:${admin}
	auto_https off
	storage file_system ${dir}/data
}
http://127.0.0.1:${port} {
${site}
}
`,
  );
  const env = { ...process.env, HOME: dir, XDG_DATA_HOME: join(dir, 'xdg'), XDG_CONFIG_HOME: join(dir, 'xdg') };
  const child = spawn(bin, ['run', '--config', conf, '--adapter', 'caddyfile'], { stdio: ['ignore', 'pipe', 'pipe'], env });
  running.add(child);
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<void>((resolve) => child.once('exit', () => { running.delete(child); resolve(); }));
  let dead = false;
  void exited.then(() => (dead = true));
  const deadline = Date.now() + 20_000;
  while (!(await canConnect(port))) {
    if (dead || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`caddy did not start on port ${port}${dead ? ' (it exited)' : ''}:\n${output}\n--- Caddyfile ---\n${await readFile(conf, 'utf8')}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    dir,
    reloadCommand: `HOME=${dir} XDG_DATA_HOME=${dir}/xdg XDG_CONFIG_HOME=${dir}/xdg ${bin} reload --config ${conf} --adapter caddyfile --address 127.0.0.1:${admin}`,
    async stop() {
      if (dead) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
