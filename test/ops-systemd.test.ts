// Issue 52 item 4: the units an operator installs (deploy/systemd/), checked with Debian's
// systemd-analyze (no running systemd needed: `verify` reads the files as systemd would and checks
// that each command exists, so the units are checked with this machine's node and checkout in
// place of /usr/bin/node and /opt/lds, as an operator's ADJUST makes them), and their commands run
// for real: the service's graceful stop fits in the unit's stop timeout with a request in flight,
// and the backup timer's service writes a dated export of a running ledger and rotates old ones.
// docs/operations.md ("The systemd units") is followed as written: its tested block runs here.
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { connect } from 'node:net';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO } from './helpers/build.ts';
import { readDoc, testedBlocks } from './helpers/docs.ts';
import { exited, startInstance, stopInstance, type Instance } from './helpers/instances.ts';
import { SYSTEMD_ANALYZE, programPath, suiteNeeding } from './helpers/programs.ts';
import { buildFixture, type Fixture } from './helpers/service-harness.ts';

const test = suiteNeeding('ops-systemd.test.ts', [SYSTEMD_ANALYZE]);
const UNITS = ['lds.service', 'lds-export.service', 'lds-export.timer'];
const unitText = (name: string) => readFileSync(join(REPO, 'deploy/systemd', name), 'utf8');

/** Every `Key=value` of a unit file, by key (a key may repeat), comments left out. */
function directives(text: string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z]+)=(.*)$/.exec(line.trim());
    if (m) out.set(m[1]!, [...(out.get(m[1]!) ?? []), m[2]!]);
  }
  return out;
}
const one = (d: Map<string, string[]>, key: string) => d.get(key)?.at(-1);
/** `Environment=NAME=value` lines of a unit, as an object. */
const environment = (d: Map<string, string[]>) => Object.fromEntries((d.get('Environment') ?? []).map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]));

/** The shipped units in `<dir>/deploy/systemd/`, with this machine's node and checkout (ADJUST). */
function adjusted(dir: string): string {
  const to = join(dir, 'deploy/systemd');
  mkdirSync(to, { recursive: true });
  for (const u of UNITS) writeFileSync(join(to, u), unitText(u).replaceAll('/usr/bin/node', process.execPath).replaceAll('/opt/lds', REPO));
  return to;
}

/** The tested block of docs/operations.md that runs systemd-analyze. */
function guideBlock(): string {
  const blocks = testedBlocks(readDoc('docs/operations.md')).filter((b) => b.includes('systemd-analyze'));
  assert.is(blocks.length, 1, 'docs/operations.md has one tested block of systemd-analyze');
  return blocks[0]!;
}

test('docs/operations.md, step 1: systemd-analyze verify is clean and the service unit rates at most 2.0 ("OK")', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lds-units-'));
  adjusted(dir);
  const bin = programPath(SYSTEMD_ANALYZE);
  const script = guideBlock().replaceAll('systemd-analyze ', `${bin} `);
  const r = spawnSync('sh', ['-e', '-c', script], { cwd: dir, encoding: 'utf8' });
  assert.is(r.status, 0, r.stderr + r.stdout);
  // verify prints nothing for clean units (a warning, even one it "ignores", is a finding).
  assert.is(r.stderr, '', 'verify: no finding');
  const m = /Overall exposure level for lds\.service: (\d+\.\d+) (\S+)/.exec(r.stdout);
  assert.ok(m, r.stdout);
  assert.ok(Number(m![1]) <= 2.0, `exposure ${m![1]}`);
  assert.is(m![2], 'OK');
  const claimed = /this unit\s+rates (\d+\.\d+)/.exec(readDoc('docs/operations.md'))?.[1];
  assert.is(claimed, m![1], 'the guide states the rating systemd-analyze gives');
});

test('the check can fail: verify names a misspelt directive and a command that is not there', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lds-units-bad-'));
  const units = adjusted(dir);
  const bad = readFileSync(join(units, 'lds.service'), 'utf8').replace('NoNewPrivileges=yes', 'NoNewPrivilege=yes').replace(process.execPath, '/nonexistent/node');
  writeFileSync(join(units, 'lds.service'), bad);
  const r = spawnSync(programPath(SYSTEMD_ANALYZE), ['verify', join(units, 'lds.service')], { encoding: 'utf8' });
  assert.is.not(r.status, 0);
  assert.match(r.stderr, /Unknown key 'NoNewPrivilege'/);
  assert.match(r.stderr, /\/nonexistent\/node is not executable/);
});

test('the service unit: a dedicated user, its own state, log and secret folders, the sandbox, limits and restarts', () => {
  const d = directives(unitText('lds.service'));
  assert.is(one(d, 'User'), 'lds');
  assert.is(one(d, 'StateDirectory'), 'lds');
  assert.is(one(d, 'StateDirectoryMode'), '0700');
  assert.is(one(d, 'LogsDirectory'), 'lds');
  assert.match(one(d, 'EnvironmentFile')!, /^\/etc\/lds\/secrets\//);
  assert.match(one(d, 'LoadCredential')!, /:\/etc\/lds\/secrets\//);
  const env = environment(d);
  assert.is(env.LDS_VAR_DIR, '/var/lib/lds');
  assert.is(env.NODE_ENV, 'production');
  for (const secret of ['LDS_QUOTE_SECRET', 'MPP_SECRET_KEY', 'LDS_OPERATOR_TOKEN', 'LDS_METRICS_TOKEN', 'STRIPE_SECRET_KEY']) assert.not.ok(secret in env, `${secret} is not in the unit`);
  for (const [key, value] of [['NoNewPrivileges', 'yes'], ['ProtectSystem', 'strict'], ['PrivateTmp', 'yes'], ['CapabilityBoundingSet', ''], ['Restart', 'on-failure'], ['KillSignal', 'SIGTERM']]) assert.is(one(d, key), value, key);
  assert.ok(d.get('SystemCallFilter')!.includes('@system-service'), 'a system-call filter');
  assert.match(one(d, 'MemoryMax')!, /^\d+[GM]$/);
  assert.match(one(d, 'TasksMax')!, /^\d+$/);
  assert.match(one(d, 'ExecStart')!, / serve /);
});

let fx: Fixture;
let inst: Instance | undefined;
test.after(async () => {
  if (inst) await stopInstance(inst);
});

test('the backup timer: nightly and persistent; its service exports the running ledger to a dated file and removes the old ones', async () => {
  const timer = directives(unitText('lds-export.timer'));
  assert.match(one(timer, 'OnCalendar')!, /^\*-\*-\* \d\d:\d\d:\d\d$/);
  assert.is(one(timer, 'Persistent'), 'true');
  assert.is(one(timer, 'Unit'), 'lds-export.service');
  fx = await buildFixture();
  inst = await startInstance(fx, {});
  const d = directives(unitText('lds-export.service'));
  const backups = mkdtempSync(join(tmpdir(), 'lds-backups-'));
  // An old backup beyond the kept days and a recent one.
  const old = join(backups, 'ledger-2026-01-01T023000Z.ndjson');
  const recent = join(backups, 'ledger-2026-11-30T023000Z.ndjson');
  writeFileSync(old, '');
  writeFileSync(recent, '');
  const keep = Number(environment(d).LDS_BACKUP_KEEP_DAYS);
  const day = 86_400;
  const now = Date.now() / 1000;
  utimesSync(old, now - (keep + 2) * day, now - (keep + 2) * day);
  utimesSync(recent, now - day, now - day);
  // The commands as systemd runs them: %% is %, ${NAME} the unit's environment (here this instance's).
  const env = { ...process.env, ...environment(d), LDS_VAR_DIR: inst.varDir, LDS_BACKUP_DIR: backups };
  for (const key of ['ExecStart', 'ExecStartPost']) {
    const line = one(d, key)!.replaceAll('%%', '%').replaceAll('/usr/bin/node', process.execPath).replaceAll('/opt/lds', REPO);
    const r = spawnSync('sh', ['-c', line], { cwd: REPO, env, encoding: 'utf8' });
    assert.is(r.status, 0, `${key}: ${r.stderr}`);
  }
  const files = readdirSync(backups).sort();
  const made = files.filter((f) => f !== 'ledger-2026-11-30T023000Z.ndjson');
  assert.equal(files.includes('ledger-2026-01-01T023000Z.ndjson'), false, 'the backup older than the kept days is removed');
  assert.ok(files.includes('ledger-2026-11-30T023000Z.ndjson'), 'a recent one is kept');
  assert.is(made.length, 1, files.join(' '));
  assert.match(made[0]!, /^ledger-\d{4}-\d\d-\d\dT\d{6}Z\.ndjson$/);
  const lines = readFileSync(join(backups, made[0]!), 'utf8').trim().split('\n');
  assert.ok(lines.length >= 1);
  for (const l of lines) JSON.parse(l); // canonical NDJSON, one record a line
});

test('stopping: the service drains for LDS_SHUTDOWN_GRACE_MS with a request in flight and exits 0 within TimeoutStopSec', async () => {
  assert.ok(inst, 'the instance of the backup test');
  const d = directives(unitText('lds.service'));
  const graceMs = Number(environment(d).LDS_SHUTDOWN_GRACE_MS);
  const stopS = Number(one(d, 'TimeoutStopSec'));
  assert.ok(graceMs >= 1000 && stopS >= graceMs / 1000 + 10, `TimeoutStopSec=${stopS} leaves the drain (${graceMs} ms) and the databases' close room`);
  // A fresh instance with the unit's drain settings.
  await stopInstance(inst!);
  inst = await startInstance(fx, { LDS_SHUTDOWN_GRACE_MS: String(graceMs) });
  const { hostname, port } = new URL(inst.base);
  // A request in flight: its body never finishes (the request timeout, 15 s, is longer than the grace).
  const socket = connect(Number(port), hostname);
  await new Promise((r) => socket.once('connect', r));
  socket.write(`POST /v1/lds/draw HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"product_id"`);
  socket.on('error', () => {});
  await new Promise((r) => setTimeout(r, 300));
  const t0 = Date.now();
  inst.proc.kill('SIGTERM');
  const code = await exited(inst.proc);
  const took = (Date.now() - t0) / 1000;
  socket.destroy();
  assert.is(code, 0, inst.log().slice(-2000));
  assert.ok(took >= graceMs / 1000 - 0.5, `it waited for the request in flight (${took.toFixed(1)} s)`);
  assert.ok(took < stopS, `it stopped within TimeoutStopSec=${stopS} (${took.toFixed(1)} s)`);
  assert.match(inst.log(), /shutdown grace period over/);
  inst = undefined;
});

test.run();
