// Issue 14, item 1: stopping `npm start` stops the service. Each test runs `npm start` itself (the
// package.json script, whatever it is) on a built tree in temp folders, then stops it the way a
// person does: `kill -TERM <npm's pid>` (a supervisor, `kill %1`) or Ctrl-C in a terminal (SIGINT to
// the whole foreground process group). The server must drain (answer what is in flight), exit, and
// leave no process of the tree behind; the port must stop answering.
//
// Why this needed a test: `npm run` starts scripts with `sh -c '<script>'` and forwards SIGTERM and
// SIGINT only to that shell. Debian's sh (dash) does not exec the last command of `-c`, and dies of
// SIGTERM without passing it on; the old script `tsx cli.ts serve` also put tsx's own relay process
// between the shell and the Node process that serves. npm exited, the server kept answering. The
// scripts now `exec node --import tsx cli.ts …` (see the comment on `serve` in cli.ts), so npm's
// child is the server itself and npm's forwarding reaches it.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import { REPO } from './helpers/build.ts';
import { canConnect, freePort } from './helpers/http.ts';
import { alive, descendants, type ProcessInfo } from './helpers/processes.ts';
import { buildFixture, type Fixture } from './helpers/service-harness.ts';

let fx: Fixture;
const groups = new Set<number>();

test.before(async () => {
  fx = await buildFixture();
});

// Whatever a failing test leaves running is killed, so the suite never leaks a server.
test.after.each(() => {
  for (const pgid of groups) {
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  groups.clear();
});

interface Started {
  npm: ChildProcess;
  port: number;
  /** npm's stdout and stderr so far (the server's JSON log lines are on stdout) */
  output: () => string;
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** `npm start` in its own process group (as a shell job is), on a free port; resolves once it serves. */
async function npmStart(): Promise<Started> {
  const port = await freePort();
  const varDir = await mkdtemp(join(fx.root, 'var-stop-'));
  const npm = spawn('npm', ['start'], {
    cwd: REPO,
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LDS_DIST_DIR: fx.dist, LDS_STORE_DIR: fx.store, LDS_VAR_DIR: varDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', LDS_RATE_LIMIT_RPS: '0' },
  });
  groups.add(npm.pid!);
  let out = '';
  npm.stdout!.on('data', (d) => (out += d));
  npm.stderr!.on('data', (d) => (out += d));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => npm.once('exit', (code, signal) => resolve({ code, signal })));
  const deadline = Date.now() + 60_000;
  while (!out.includes(`serving http://127.0.0.1:${port}`)) {
    if (npm.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not serve on port ${port}:\n${out}`);
    await sleep(50);
  }
  return { npm, port, output: () => out, exit };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function eventually(what: string, check: () => Promise<boolean> | boolean, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting until ${what}`);
    await sleep(50);
  }
}

/** The server's pino lines with this message. */
const logLines = (out: string, msg: string) =>
  out
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l))
    .filter((l) => l.msg === msg);

function assertTreeGone(tree: ProcessInfo[]): void {
  const survivors = tree.filter((p) => alive(p.pid));
  assert.equal(survivors.map((p) => `${p.pid} ${p.cmd}`), [], 'no process of the npm start tree survives');
}

test('kill -TERM <npm pid>: npm\'s child is the server itself; it answers the request in flight, stops listening, exits 0; nothing survives', async () => {
  const s = await npmStart();
  const tree = descendants(s.npm.pid!);
  // The root cause, checked directly: no shell or relay process between npm and the server.
  assert.ok(tree.length >= 1, 'npm has a child');
  assert.match(tree[0]!.cmd, /^\S*node\b.*\bcli\.(ts|js) serve\b/, `npm's child must be the Node server (the script must \`exec\` it), not a shell or wrapper: ${tree[0]!.cmd}`);

  // A request in flight: headers and half of the body sent before the signal.
  const body = JSON.stringify({ amount: '5.00', currency: 'EUR' });
  const sock = connect({ host: '127.0.0.1', port: s.port });
  let answer = '';
  sock.on('data', (d) => (answer += d));
  const closed = new Promise<void>((r) => sock.once('close', () => r()));
  await new Promise<void>((r) => sock.once('connect', () => r()));
  sock.write(`POST /v1/lds/balance/topup HTTP/1.1\r\nHost: 127.0.0.1:${s.port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body.slice(0, 10)}`);
  await sleep(200);

  process.kill(s.npm.pid!, 'SIGTERM');
  await eventually('the port stops accepting connections', async () => !(await canConnect(s.port)));
  assert.ok(alive(tree[0]!.pid), 'the server waits for the request in flight');

  sock.write(body.slice(10));
  await closed; // the server answers, then closes the connection as it stops
  assert.match(answer, /^HTTP\/1\.1 402 /, `the request in flight is answered (the 402 MPP challenge), not cut: ${JSON.stringify(answer)}`);

  const { code, signal } = await s.exit;
  assert.is(signal, null);
  assert.is(code, 0, `npm exits 0 once the server has drained:\n${s.output()}`);
  await eventually('every process of the tree has exited', () => tree.every((p) => !alive(p.pid)), 5_000).catch(() => {});
  assertTreeGone(tree);
  assert.not.ok(await canConnect(s.port), 'nothing answers on the port');
  assert.equal(logLines(s.output(), 'draining').map((l) => l.signal), ['SIGTERM'], 'the server itself received SIGTERM and drained');
  assert.is(logLines(s.output(), 'stopped').length, 1, 'the server closed its databases and said so');
});

test('Ctrl-C (SIGINT to the foreground process group, as a terminal sends it): drains once, exits, nothing survives', async () => {
  const s = await npmStart();
  const tree = descendants(s.npm.pid!);
  assert.ok(tree.length >= 1);

  process.kill(-s.npm.pid!, 'SIGINT'); // the terminal signals npm and the server alike
  const { code, signal } = await s.exit;
  await eventually('the port stops accepting connections', async () => !(await canConnect(s.port)));
  // npm ends as an interrupted program does (killed by SIGINT, or 130), or 0 when the server was quicker.
  assert.ok(code === 0 || code === 130 || signal === 'SIGINT', `npm exits, got code ${code}, signal ${signal}:\n${s.output()}`);
  await eventually('every process of the tree has exited', () => tree.every((p) => !alive(p.pid)), 5_000).catch(() => {});
  assertTreeGone(tree);
  // npm forwards the SIGINT it got as well: the server drains once and ignores the second one.
  assert.equal(logLines(s.output(), 'draining').map((l) => l.signal), ['SIGINT']);
  assert.is(logLines(s.output(), 'stopped').length, 1);
});

test.run();
