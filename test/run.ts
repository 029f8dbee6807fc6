// Runs every test/*.test.ts in its own Node process (servers, ports and LevelDB handles stay
// isolated), streams its output, and adds up uvu's per-file totals into the closing line CI reads:
// "N passed, N failed" (", N skipped" after it when a suite skipped tests). A suite skips only when a
// program it drives is missing (test/helpers/programs.ts); its "SKIP <suite>: <reason>" line is
// repeated above the closing line. A file that runs no test and skips none counts as a failure.
// Usage: npm test [-- name-filter ...]
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const filters = process.argv.slice(2);
const files = readdirSync(here)
  .filter((f) => f.endsWith('.test.ts'))
  .filter((f) => filters.length === 0 || filters.some((x) => f.includes(x)))
  .sort();

interface Tally { passed: number; failed: number; skipped: number; crashed: boolean; empty: boolean; skips: string[] }

function runFile(file: string): Promise<Tally> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(here, file)], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, FORCE_COLOR: '0' },
    });
    let out = '';
    child.stdout.on('data', (d) => { out += d; process.stdout.write(d); });
    child.stderr.on('data', (d) => process.stderr.write(d));
    child.on('close', (code) => {
      const num = (label: string) => {
        const all = [...out.matchAll(new RegExp(`${label}:\\s+(\\d+)`, 'g'))];
        return all.reduce((s, m) => s + Number(m[1]), 0);
      };
      // uvu's Total counts the tests that ran; skipped ones are only in Skipped.
      const total = num('Total');
      const passed = num('Passed');
      const skipped = num('Skipped');
      let failed = total - passed;
      // A file that exits non-zero without any failing uvu test (a crash, an unhandled
      // rejection, a hook that threw) still counts as one failure; so does one that checked nothing.
      const crashed = code !== 0 && failed === 0;
      const empty = total === 0 && skipped === 0;
      if (crashed || empty) failed = Math.max(failed, 1);
      const skips = [...out.matchAll(/^SKIP (.*)$/gm)].map((m) => m[1]!);
      resolve({ passed, failed, skipped, crashed, empty, skips });
    });
  });
}

const sum = { passed: 0, failed: 0, skipped: 0 };
const failedFiles: string[] = [];
const skipReasons: string[] = [];
for (const file of files) {
  console.log(`\n# ${file}`);
  const t = await runFile(file);
  sum.passed += t.passed;
  sum.failed += t.failed;
  sum.skipped += t.skipped;
  if (t.failed > 0) failedFiles.push(file + (t.crashed ? ' (exited non-zero)' : t.empty ? ' (ran no tests)' : ''));
  skipReasons.push(...t.skips);
}
if (skipReasons.length) console.log(`\nskipped:\n${skipReasons.map((r) => `  ${r}`).join('\n')}`);
if (failedFiles.length) console.log(`\nfailing files: ${failedFiles.join(', ')}`);
console.log(`\n${sum.passed} passed, ${sum.failed} failed${sum.skipped ? `, ${sum.skipped} skipped` : ''}`);
process.exitCode = sum.failed > 0 || files.length === 0 ? 1 : 0;
