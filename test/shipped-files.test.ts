// Issue 34 item 13: every YAML and JSON file the project ships parses with a real parser, and the
// GitHub workflow is a valid workflow.
//   - the files are those of the repository (git ls-files, plus new files not ignored): the CI
//     workflow, the Grafana dashboard, the configurations (package.json, tsconfig*.json), catalog-src
//     (definitions, schemas, JSON-lines data), the simulator's histories, the conformance material;
//   - JSON with JSON.parse (strict: no comments, no trailing commas), JSON lines line by line, YAML
//     with the `yaml` package (YAML 1.2, strict, duplicate keys refused, no warnings);
//   - deploy/ci/github-workflow.yml against the GitHub Actions workflow schema with
//     action-validator (npm @action-validator/cli, WebAssembly, the schema built in: no network).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { REPO } from './helpers/build.ts';

/** The repository's files (tracked, and new ones not ignored), relative to its root. */
function shippedFiles(): string[] {
  const r = spawnSync('git', ['ls-files', '--cached', '--others', '--exclude-standard', '-z'], { cwd: REPO, encoding: 'utf8' });
  assert.is(r.status, 0, `git ls-files: ${r.stderr}`);
  return r.stdout.split('\0').filter((f) => f !== '');
}

const files = shippedFiles();
const ofKind = (pattern: RegExp) => files.filter((f) => pattern.test(f));
const JSON_FILES = ofKind(/\.(json|jsonld)$/);
const JSON_LINES = ofKind(/\.jsonl$/);
const YAML_FILES = ofKind(/\.ya?ml$/);
const WORKFLOW = 'deploy/ci/github-workflow.yml';

test('the lists are not empty: the files named in the issue are among them', () => {
  for (const f of ['deploy/grafana-dashboard.json', 'package.json', 'tsconfig.json', 'tsconfig.build.json', 'catalog-src/catalogue.json']) assert.ok(JSON_FILES.includes(f), f);
  assert.ok(YAML_FILES.includes(WORKFLOW));
  assert.ok(JSON_LINES.length > 0);
});

test('every JSON file parses as strict JSON (JSON.parse)', () => {
  const bad: string[] = [];
  for (const f of JSON_FILES) {
    try {
      JSON.parse(readFileSync(join(REPO, f), 'utf8'));
    } catch (err) {
      bad.push(`${f}: ${(err as Error).message}`);
    }
  }
  assert.equal(bad, []);
});

test('every JSON-lines file parses line by line', () => {
  const bad: string[] = [];
  for (const f of JSON_LINES) {
    readFileSync(join(REPO, f), 'utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.trim() === '') return;
        try {
          JSON.parse(line);
        } catch (err) {
          bad.push(`${f}:${i + 1}: ${(err as Error).message}`);
        }
      });
  }
  assert.equal(bad, []);
});

test('every YAML file parses (yaml, strict, unique keys), without errors or warnings', () => {
  const bad: string[] = [];
  for (const f of YAML_FILES) {
    for (const doc of parseAllDocuments(readFileSync(join(REPO, f), 'utf8'), { strict: true, uniqueKeys: true, prettyErrors: true })) {
      for (const e of [...doc.errors, ...doc.warnings]) bad.push(`${f}: ${e.message}`);
    }
  }
  assert.equal(bad, []);
});

test('the GitHub workflow is valid against the GitHub Actions schema (action-validator)', () => {
  const cli = join(REPO, 'node_modules/@action-validator/cli/cli.mjs');
  const r = spawnSync(process.execPath, [cli, join(REPO, WORKFLOW)], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
  assert.is(r.status, 0, `action-validator refused ${WORKFLOW}:\n${r.stdout}${r.stderr}`);
  // The validator does check: a workflow with a misspelt key is refused.
  const broken = readFileSync(join(REPO, WORKFLOW), 'utf8').replace('runs-on:', 'runs-onn:');
  const dir = mkdtempSync(join(tmpdir(), 'lds-workflow-'));
  writeFileSync(join(dir, 'catalogue.yml'), broken);
  try {
    const refused = spawnSync(process.execPath, [cli, join(dir, 'catalogue.yml')], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
    assert.is.not(refused.status, 0, 'a misspelt key must be refused');
    assert.match(refused.stdout + refused.stderr, /runs-onn/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
