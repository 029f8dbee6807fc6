// npm run bench:nginx — figures, not a test: what a static host spends per catalogue read. Builds
// dist/ (no unit store) and serves it with Debian's nginx and the generated include
// (dist/_nginx/lds.conf, through test/helpers/nginx.ts: one worker, access log on, as the hosting
// tests run it), then drives it with wrk (bench/wrk.ts) and reports nginx's CPU (master and worker,
// from /proc) per request for: the catalogue with `Accept-Encoding: br, gzip` (Debian's nginx has
// no brotli module, so the gzip file is sent), without Accept-Encoding (identity), and a
// revalidation with its ETag (304). For the capacity table: cores of static host per 100,000
// catalogue reads/s = CPU µs per read × 100,000 / 1,000,000.
// Options (env): BENCH_SECONDS (default 4 per row), BENCH_CONNECTIONS (default 50).
import { readdir, readFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { buildAndServe } from '../test/helpers/nginx.ts';
import { haveWrk, wrk } from './wrk.ts';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');

async function stat(pid: string): Promise<{ ppid: number; ms: number; comm: string } | undefined> {
  try {
    const s = await readFile(`/proc/${pid}/stat`, 'utf8');
    const f = s.slice(s.lastIndexOf(')') + 2).split(' ');
    return { ppid: Number(f[1]), ms: (Number(f[11]) + Number(f[12])) * 10, comm: s.slice(s.indexOf('(') + 1, s.lastIndexOf(')')) };
  } catch {
    return undefined;
  }
}

/** CPU ms of the nginx master (the process whose pid file we hold) and its workers. */
async function nginxCpuMs(master: number): Promise<number> {
  let sum = (await stat(String(master)))?.ms ?? 0;
  for (const e of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(e)) continue;
    const s = await stat(e);
    if (s?.ppid === master) sum += s.ms;
  }
  return sum;
}

async function main() {
  if (!(await haveWrk())) throw new Error('needs wrk: apt-get install wrk');
  const hosted = await buildAndServe();
  try {
    const master = Number((await readFile(`${hosted.nginx.dir}/nginx.pid`, 'utf8')).trim());
    const url = `${hosted.nginx.origin}/v1/lds/_catalog`;
    const probe = await fetch(url, { headers: { 'accept-encoding': 'gzip' } });
    await probe.arrayBuffer();
    const etag = probe.headers.get('etag') ?? '';
    const rows: [string, Record<string, string>, number][] = [
      ['GET /v1/lds/_catalog, Accept-Encoding: br, gzip (gzip file)', { 'accept-encoding': 'br, gzip' }, 200],
      ['GET /v1/lds/_catalog, no Accept-Encoding (identity)', {}, 200],
      ['GET /v1/lds/_catalog, If-None-Match: its gzip ETag (304)', { 'accept-encoding': 'br, gzip', 'if-none-match': etag }, 304],
    ];
    console.log(`\nnginx static host — ${cpus().length} × ${cpus()[0]?.model}, ${new Date().toISOString()}, ${SECONDS}s per row, ${CONNECTIONS} connections, 1 worker\n`);
    console.log('| request | requests/s | p99 ms | nginx CPU µs/req | bytes/response | load average at end |');
    console.log('|---|---:|---:|---:|---:|---|');
    for (const [name, headers, expect] of rows) {
      await wrk({ url, headers }, { seconds: 1, connections: CONNECTIONS, expect, dir: tmpdir() }); // warm-up
      const c0 = await nginxCpuMs(master);
      const r = await wrk({ url, headers }, { seconds: SECONDS, connections: CONNECTIONS, expect, dir: tmpdir() });
      const c1 = await nginxCpuMs(master);
      if (r.bad.length) throw new Error(`${name}: unexpected answers ${r.bad.join(' ')}`);
      console.log(`| ${name} | ${(r.requests / r.seconds).toFixed(0)} | ${r.p99ms.toFixed(2)} | ${(((c1 - c0) * 1000) / r.requests).toFixed(1)} | ${(r.bytes / r.requests).toFixed(0)} | ${load()} |`);
    }
  } finally {
    await hosted.stop();
  }
}

await main();
