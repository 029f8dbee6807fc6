// The runner's record of a run's failures (test/run.ts): each failed file's whole output, the lines
// of it that name a seed, and how to run it again, in one file that outlives the run. The output is
// printed as the run goes, but a failure seen once (an intermittent one) was gone with the terminal
// or the CI log's truncation; this file keeps it to be diagnosed afterwards. Its path is printed in
// the run's closing lines (above "N passed, N failed", which stays the last line).
//
// Where: LDS_TEST_FAILURE_DIR, else <temp folder>/lds-test-failures-<uid>/ (owner-only: outputs may
// name paths and ports of the machine); the newest KEEP logs are kept, older ones removed.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

export interface FailedRun {
  /** e.g. `client-buy.test.ts [postgres]` */
  name: string;
  file: string;
  backend: string | null;
  why: string;
  seconds: number;
  output: string;
}

const KEEP = 20;

/** The folder failure logs go to (made owner-only when missing). */
export function failureDir(osTmp: string, env: NodeJS.ProcessEnv = process.env): string {
  const dir = env.LDS_TEST_FAILURE_DIR || join(osTmp, `lds-test-failures-${process.getuid?.() ?? 'user'}`);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

/** The lines of a file's output that name a seed (the simulator's, a seeded generator's): what replays it. */
export function seedLines(output: string): string[] {
  const lines = output.split('\n').filter((l) => /\bseeds?\b/i.test(l) && /\d/.test(l));
  return [...new Set(lines.map((l) => l.trim()))].slice(0, 20);
}

function commitOf(repo: string): string {
  try {
    const sha = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no'], { cwd: repo, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    return dirty ? `${sha} (with uncommitted changes)` : sha;
  } catch {
    return 'unknown (not a git checkout)';
  }
}

/** The text of the log: a header for the run, then one section per failed file. */
export function failureLogText(failures: FailedRun[], run: { startedAt: Date; repo: string; command: string }): string {
  const head = [
    `# npm test failures of the run started ${run.startedAt.toISOString()}`,
    `# commit ${commitOf(run.repo)}; Node ${process.version} on ${process.platform}-${process.arch}; ${run.command}`,
    `# ${failures.length} failed file run${failures.length === 1 ? '' : 's'}: ${failures.map((f) => f.name).join(', ')}`,
  ];
  const sections = failures.map((f) => {
    const seeds = seedLines(f.output);
    return [
      '',
      `## ${f.name}: ${f.why} after ${f.seconds.toFixed(1)} s`,
      `run it again: ${f.backend ? `LDS_TEST_BACKEND=${f.backend} ` : ''}npm test -- ${f.file.replace(/\.test\.ts$/, '')}`,
      seeds.length ? `seeds named in its output:\n${seeds.map((l) => `  ${l}`).join('\n')}` : 'seeds named in its output: none (it has no seed, or it failed before printing one)',
      '--- its whole output ---',
      f.output.replace(/\n?$/, '\n') + '--- end of its output ---',
    ].join('\n');
  });
  return `${[...head, ...sections].join('\n')}\n`;
}

/** Writes the log of this run's failures (none: nothing written, null) and keeps the newest KEEP. */
export function writeFailureLog(dir: string, failures: FailedRun[], run: { startedAt: Date; repo: string; command: string }): string | null {
  if (failures.length === 0) return null;
  const path = join(dir, `${run.startedAt.toISOString().replace(/[:.]/g, '-')}-${process.pid}.log`);
  writeFileSync(path, failureLogText(failures, run), { mode: 0o600 });
  chmodSync(path, 0o600);
  const logs = readdirSync(dir).filter((f) => f.endsWith('.log')).sort();
  for (const old of logs.slice(0, Math.max(0, logs.length - KEEP))) rmSync(join(dir, old), { force: true });
  return path;
}
