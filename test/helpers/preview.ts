// `lds preview <server>` as a person runs it (the real CLI, a child process): the hosting suites run
// their checks against the server it starts, so what they check is what a preview shows.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { WebServerKind } from '../../generator/web-servers.ts';
import { LDS_ARGS, REPO, tempDir } from './build.ts';

export interface Preview {
  origin: string;
  /** The folder of its configuration, pid file and logs. */
  dir: string;
  /** Everything the command wrote on stderr so far. */
  stderr(): string;
  /** Ctrl-C: the command stops the server and exits; resolves with its exit code. */
  stop(): Promise<number | null>;
}

// Each command runs in a process group of its own, with its server: a test that dies kills both.
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of children) {
    try {
      process.kill(-c.pid!, 'SIGKILL');
    } catch {
      // already gone
    }
  }
});

/** Runs `lds preview <kind> --from <build> --port <port>`; resolves once it prints the address it serves. */
export async function startPreview(kind: WebServerKind, build: string, port: number): Promise<Preview> {
  const dir = join(await tempDir(`preview-${kind}`), 'server');
  const child = spawn(process.execPath, [...LDS_ARGS, 'preview', kind, '--from', build, '--port', String(port), '--dir', dir], { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const exited = new Promise<number | null>((resolve) =>
    child.once('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  const origin = `http://127.0.0.1:${port}`;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`lds preview ${kind} did not serve within 60 s:\n${stdout}\n${stderr}`));
    }, 60_000);
    child.stdout!.on('data', (d) => {
      stdout += d;
      if (stdout.includes(`${origin}/\n`)) {
        clearTimeout(timer);
        resolve();
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`lds preview ${kind} exited (${code}) before serving:\n${stdout}\n${stderr}`));
    });
  });
  return {
    origin,
    dir,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGINT');
      return exited;
    },
  };
}
