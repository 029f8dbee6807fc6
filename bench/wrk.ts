// The benchmark's load generator: wrk (Debian package `wrk`, C and LuaJIT), one process with one
// thread per target. Why not a Node load generator: on a 2-core machine the load generator shares
// the cores with the servers, and a JavaScript HTTP client's cost grows with the response (autocannon
// decodes every body into a string): 27 µs per 11-byte answer but ~100 µs per 10 KB catalogue and
// ~200 µs per 38 KB paid draw, so the ratios measured the client more than the servers. wrk's
// cost stays near 20 µs per response whatever its size (BENCHMARKS.md has the comparison).
//
// Every response's status is checked (wrk's non-2xx/3xx tally where 200 is expected, else a Lua
// response() hook), and the figures come back through a done() hook as one JSON line, not by
// scraping wrk's text.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

/** One request repeated, or one request per call built from `sequence` (a fresh body each). */
export interface WrkTarget {
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  /**
   * Paid draws: request i sends `prefix + ids[i] + suffix` with `Authorization: Bearer
   * tokens[i % tokens.length]`; each id is used once (running out is reported as an error, never
   * a silent repeat, since a repeated quote would be answered as a replay).
   */
  sequence?: { ids: string[]; tokens: string[]; prefix: string; suffix: string };
}

export interface WrkResult {
  requests: number;
  /** Seconds wrk ran. */
  seconds: number;
  /** Bytes received (status lines, headers, bodies). */
  bytes: number;
  p50ms: number;
  p99ms: number;
  /** Unexpected statuses by code, socket errors and timeouts, ids run out, each "what xN": empty when all is well. */
  bad: string[];
  /** Requests sent (ids consumed) including those still in flight when wrk stopped. */
  sent: number;
}

/** Whether wrk is installed; the benchmark says how to install it otherwise. */
export function haveWrk(): Promise<boolean> {
  return new Promise((res) => execFile('wrk', ['-v'], (err) => res(!err || (err as { code?: unknown }).code !== 'ENOENT')));
}

/** A Lua long string holding `s` verbatim (as a table key it needs spaces inside the brackets: `t[ [=[k]=] ]`). */
function lua(s: string): string {
  for (let level = 1; ; level++) {
    const eq = '='.repeat(level);
    if (!s.includes(`]${eq}]`)) return `[${eq}[${s}]${eq}]`;
  }
}

function script(t: WrkTarget, expect: number, dir: string, name: string): { text: string; files: [string, string][] } {
  const u = new URL(t.url);
  const headers = { ...(t.headers ?? {}) };
  const files: [string, string][] = [];
  const lines = [`local expect = ${expect}`, 'bad, codes, sent, ranout = 0, {}, 0, 0'];
  // A response() hook makes wrk copy every body into Lua (it cost a core at 150 KB answers): a row
  // expecting 200 counts wrk's own non-2xx/3xx tally instead; the others check each status.
  if (expect !== 200) lines.push('function response(status, headers, body)', '  if status ~= expect then bad = bad + 1; codes[status] = (codes[status] or 0) + 1 end', 'end');
  if (t.sequence) {
    const idsFile = join(dir, `${name}.ids`);
    files.push([idsFile, t.sequence.ids.join('\n') + '\n']);
    lines.push(
      'local ids, tokens = {}, {}',
      `for line in io.lines(${lua(idsFile)}) do ids[#ids + 1] = line end`,
      ...t.sequence.tokens.map((tok) => `tokens[#tokens + 1] = ${lua(tok)}`),
      `local path, prefix, suffix = ${lua(u.pathname + u.search)}, ${lua(t.sequence.prefix)}, ${lua(t.sequence.suffix)}`,
      `local headers = {}`,
      ...Object.entries(headers).map(([k, v]) => `headers[ ${lua(k)} ] = ${lua(v)}`),
      'function request()',
      '  sent = sent + 1',
      '  local id = ids[sent]',
      '  if id == nil then ranout = ranout + 1; id = "ran-out" end',
      '  headers["Authorization"] = "Bearer " .. tokens[(sent - 1) % #tokens + 1]',
      `  return wrk.format(${lua(t.method ?? 'POST')}, path, headers, prefix .. id .. suffix)`,
      'end',
    );
  } else {
    lines.push(`wrk.method = ${lua(t.method ?? 'GET')}`);
    if (t.body !== undefined) lines.push(`wrk.body = ${lua(t.body)}`);
    for (const [k, v] of Object.entries(headers)) lines.push(`wrk.headers[ ${lua(k)} ] = ${lua(v)}`);
  }
  lines.push(
    'local threads = {}',
    'function setup(thread) threads[#threads + 1] = thread end',
    'function done(summary, latency, requests)',
    '  local b, s, r, c = 0, 0, 0, {}',
    '  for _, t in ipairs(threads) do',
    '    b = b + t:get("bad"); s = s + t:get("sent"); r = r + t:get("ranout")',
    '    for k, v in pairs(t:get("codes")) do c[#c + 1] = string.format("\\"%d\\": %d", k, v) end',
    '  end',
    '  local e = summary.errors',
    // %.0f, not %d: LuaJIT's %d stops at 2^31 (bytes read pass that in a few seconds).
    '  io.write(string.format("WRK {\\"requests\\": %.0f, \\"us\\": %.0f, \\"bytes\\": %.0f, \\"p50\\": %.0f, \\"p99\\": %.0f, \\"bad\\": %.0f, \\"sent\\": %.0f, \\"ranout\\": %.0f, \\"codes\\": {%s}, \\"errors\\": {\\"connect\\": %.0f, \\"read\\": %.0f, \\"write\\": %.0f, \\"timeout\\": %.0f, \\"status\\": %.0f}}\\n",',
    '    summary.requests, summary.duration, summary.bytes, latency:percentile(50), latency:percentile(99), b, s, r, table.concat(c, ", "), e.connect, e.read, e.write, e.timeout, e.status))',
    'end',
  );
  return { text: lines.join('\n') + '\n', files };
}

let runs = 0;

/** Runs wrk against one target for `seconds` (whole seconds, at least 1) with `connections`. */
export async function wrk(t: WrkTarget, o: { seconds: number; connections: number; expect: number; dir: string }): Promise<WrkResult> {
  const name = `wrk-${process.pid}-${++runs}`;
  const { text, files } = script(t, o.expect, o.dir, name);
  const file = join(o.dir, `${name}.lua`);
  await Promise.all([writeFile(file, text), ...files.map(([f, body]) => writeFile(f, body))]);
  const seconds = Math.max(1, Math.round(o.seconds));
  const out = await new Promise<string>((res, rej) =>
    execFile('wrk', ['-t1', `-c${o.connections}`, `-d${seconds}s`, '--timeout', '10s', '-s', file, t.url], { maxBuffer: 1 << 20 }, (err, stdout, stderr) =>
      err ? rej(new Error(`wrk failed: ${err.message}\n${stderr}`)) : res(stdout + stderr),
    ),
  );
  const line = out.split('\n').find((l) => l.startsWith('WRK '));
  if (!line) throw new Error(`wrk printed no figures (its script failed?):\n${out}`);
  const f = JSON.parse(line.slice(4)) as { requests: number; us: number; bytes: number; p50: number; p99: number; bad: number; sent: number; ranout: number; codes: Record<string, number>; errors: Record<string, number> };
  const bad = [
    ...Object.entries(f.codes).map(([code, n]) => `status ${code} x${n}`),
    // wrk's own non-2xx/3xx tally counts only where no response() hook checks each status
    ...Object.entries(f.errors).filter(([k, n]) => n > 0 && (k !== 'status' || o.expect === 200)).map(([k, n]) => (k === 'status' ? `non-2xx/3xx x${n}` : `${k} errors x${n}`)),
    ...(f.ranout ? [`ran out of quotes x${f.ranout}`] : []),
  ];
  return { requests: f.requests, seconds: f.us / 1e6, bytes: f.bytes, p50ms: f.p50 / 1000, p99ms: f.p99 / 1000, bad, sent: f.sent };
}
