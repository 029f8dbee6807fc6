// The process table as Linux shows it in /proc: who is whose child, and who is still alive. For
// the tests that stop a process tree (npm → the server) and assert that nothing of it survives; and
// where a process that hangs is stuck.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessInfo {
  pid: number;
  ppid: number;
  /** R, S, D, Z (zombie: dead, waiting to be reaped), ... */
  state: string;
  /** argv joined by spaces */
  cmd: string;
}

function read(pid: number): ProcessInfo | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "pid (comm) state ppid ...": comm may hold spaces and parentheses, so read after the last ')'.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return { pid, ppid: Number(ppid), state: state!, cmd };
  } catch {
    return null; // gone between listing and reading
  }
}

export function processTable(): ProcessInfo[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => read(Number(name)))
    .filter((p): p is ProcessInfo => p !== null);
}

/** Every process below `pid` (children, grandchildren, ...), parents before their children. */
export function descendants(pid: number): ProcessInfo[] {
  const table = processTable();
  const out: ProcessInfo[] = [];
  const queue = [pid];
  while (queue.length) {
    const parent = queue.shift()!;
    for (const p of table.filter((x) => x.ppid === parent)) {
      out.push(p);
      queue.push(p.pid);
    }
  }
  return out;
}

/** True while the process runs; a zombie (exited, not yet reaped) counts as dead. */
export function alive(pid: number): boolean {
  const p = read(pid);
  return p !== null && p.state !== 'Z';
}

/**
 * Where a hung process's main thread is, as native frames from gdb (when installed; '' otherwise):
 * a start that hangs before it prints anything leaves no other trace. Function names only, top 25.
 */
export function mainThreadStack(pid: number): string {
  const r = spawnSync('gdb', ['-p', String(pid), '-batch', '-ex', 'bt 25'], { encoding: 'utf8', timeout: 30_000 });
  if (r.error || !r.stdout) return '';
  return r.stdout
    .split('\n')
    .filter((l) => /^#\d+ /.test(l))
    .map((l) => l.replace(/^(#\d+)\s+(?:0x[0-9a-f]+ in )?([^(]*).*$/, '$1 $2').trim())
    .join('\n');
}
