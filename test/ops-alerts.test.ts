// Issue 52 item 5: the alert rules as a file (deploy/prometheus/alerts.yml), with Debian's promtool:
// docs/operations.md's "Alert rules" block runs as written (`promtool check rules`, and `promtool
// test rules` of deploy/prometheus/alerts.test.yml: each alert firing and not firing, a correct
// build published after a refused one included); the file holds exactly the alerts the guide's
// table names, each with a severity, a summary and a runbook link to a heading of the guide; the
// unit tests would catch issue 50 item 14 (a good publish counted as refused fires the alert); the
// scrape job passes `promtool check config`. That every metric the rules name is one the service
// exports, read from a real /metrics, is test/ops-observe.test.ts's (with the dashboard's).
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { markdownHtml } from '../generator/emit/markdown-page.ts';
import { REPO } from './helpers/build.ts';
import { readDoc, section, testedBlocks } from './helpers/docs.ts';
import { PROMTOOL, programPath, suiteNeeding } from './helpers/programs.ts';

const test = suiteNeeding('ops-alerts.test.ts', [PROMTOOL]);
const DIR = join(REPO, 'deploy/prometheus');

interface Rule {
  alert: string;
  expr: string;
  for?: string;
  labels?: { severity?: string };
  annotations?: { summary?: string; runbook_url?: string };
}
const rules = (): Rule[] => (parse(readFileSync(join(DIR, 'alerts.yml'), 'utf8')) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

function promtool(args: string[], cwd = DIR) {
  return spawnSync(programPath(PROMTOOL), args, { cwd, encoding: 'utf8' });
}

test('docs/operations.md, "Alert rules": promtool check rules and promtool test rules pass as written', () => {
  const blocks = testedBlocks(readDoc('docs/operations.md')).filter((b) => b.includes('promtool'));
  assert.is(blocks.length, 1, 'one tested block of promtool');
  // Every tested block of the guide is run by this file or test/ops-systemd.test.ts.
  for (const b of testedBlocks(readDoc('docs/operations.md'))) assert.ok(b.includes('promtool') || b.includes('systemd-analyze'), `a tested block no test runs:\n${b}`);
  const script = blocks[0]!.replaceAll('promtool ', `${programPath(PROMTOOL)} `);
  const r = spawnSync('sh', ['-e', '-c', script], { cwd: REPO, encoding: 'utf8' });
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, `SUCCESS: ${rules().length} rules found`);
  assert.match(r.stdout + r.stderr, /Unit Testing: +deploy\/prometheus\/alerts\.test\.yml\s+SUCCESS/);
});

test('the file holds every alert of the guide\'s table, each with a severity, a summary and a runbook heading in the guide', () => {
  const guide = readDoc('docs/operations.md');
  const table = section(guide, 'Endpoints, metrics and alerts').split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| Alert'));
  const named = new Set(table.flatMap((row) => [...row.split('|')[1]!.matchAll(/`(Lds\w+)`/g)].map((m) => m[1]!)));
  assert.ok(named.size >= 10, `the table names the rules: ${[...named]}`);
  const all = rules();
  assert.equal(all.map((r) => r.alert).sort(), [...named].sort(), 'the rules are exactly the alerts the guide describes');
  const anchors = new Set([...markdownHtml(guide).matchAll(/<h[1-6] id="([^"]*)">/g)].map((m) => m[1]!));
  for (const r of all) {
    assert.ok(['critical', 'warning', 'info'].includes(r.labels?.severity ?? ''), `${r.alert}: severity`);
    assert.match(r.annotations?.summary ?? '', /\{\{ \$labels\.instance \}\}/, `${r.alert}: a summary naming the instance`);
    const m = /^docs\/operations\.md#(.+)$/.exec(r.annotations?.runbook_url ?? '');
    assert.ok(m, `${r.alert}: runbook_url into docs/operations.md`);
    assert.ok(anchors.has(m![1]!), `${r.alert}: docs/operations.md has the heading #${m![1]}`);
    assert.is(m![1], r.alert.toLowerCase(), `${r.alert}: its own runbook entry`);
  }
});

test('every alert is unit-tested firing and not firing', () => {
  const doc = parse(readFileSync(join(DIR, 'alerts.test.yml'), 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] };
  const cases = doc.tests.flatMap((t) => t.alert_rule_test);
  for (const r of rules()) {
    const mine = cases.filter((c) => c.alertname === r.alert);
    assert.ok(mine.some((c) => c.exp_alerts.length > 0), `${r.alert} is tested firing`);
    assert.ok(mine.some((c) => c.exp_alerts.length === 0), `${r.alert} is tested not firing`);
  }
});

test('the unit tests catch issue 50 item 14: a good publish counted as a second refusal would fire the alert', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lds-alerts-'));
  cpSync(DIR, dir, { recursive: true });
  const tests = readFileSync(join(dir, 'alerts.test.yml'), 'utf8');
  // The series of the refused-then-good test, as the service counted it before the fix: 2 at the good publish (6m).
  const good = "'0 0 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1'";
  assert.ok(tests.includes(good), 'the refused-then-good series is in the unit tests');
  writeFileSync(join(dir, 'alerts.test.yml'), tests.replace(good, "'0 0 1 1 1 1 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2'"));
  const r = promtool(['test', 'rules', 'alerts.test.yml'], dir);
  assert.is.not(r.status, 0, 'promtool test rules fails');
  assert.match(r.stdout + r.stderr, /alertname: LdsBuildRefused, time: 20m/);
  // ... and the shipped tests pass (the first test ran them from the guide).
});

test('the scrape job (deploy/prometheus/prometheus.yml) passes promtool check config, with the metrics token file in place', () => {
  const dir = mkdtempSync(join(tmpdir(), 'lds-prom-'));
  cpSync(DIR, dir, { recursive: true });
  const token = join(dir, 'lds-metrics.token');
  writeFileSync(token, 'm'.repeat(64) + '\n', { mode: 0o600 });
  const shipped = readFileSync(join(dir, 'prometheus.yml'), 'utf8');
  const config = parse(shipped) as { rule_files: string[]; scrape_configs: { job_name: string; authorization: { type: string; credentials_file: string } }[] };
  assert.equal(config.rule_files, ['alerts.yml']);
  assert.is(config.scrape_configs[0]!.job_name, 'lds', 'the job the rules name (up{job="lds"})');
  assert.is(config.scrape_configs[0]!.authorization.type, 'Bearer');
  writeFileSync(join(dir, 'prometheus.yml'), shipped.replace(config.scrape_configs[0]!.authorization.credentials_file, token));
  const r = promtool(['check', 'config', 'prometheus.yml'], dir);
  assert.is(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stdout, /SUCCESS: 1 rule files found/);
});

test.run();
