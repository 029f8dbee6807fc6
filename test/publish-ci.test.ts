// Issue 20: the CI recipe runs as written. deploy/ci/publish-check.sh (the shell form that
// deploy/ci/github-workflow.yml runs step by step) is run from the checkout, with its default
// command (npx lds), on a copy of catalog-src: a first publication, then a good change (a price:
// the diff shows it, diff's exit 1 is reported, the build succeeds; the published catalogue is
// fetched over HTTP with curl as the workflow does), then a bad change (check fails with its errors
// and, in GitHub form, annotations on their lines; nothing is built).
import * as assert from 'uvu/assert';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { parse } from 'yaml';
import { REPO, copyCatalogSrc, editJson, tempDir } from './helpers/build.ts';
import { setDrawPrice } from './helpers/publish.ts';
import { CURL, suiteNeeding } from './helpers/programs.ts';

const test = suiteNeeding('publish-ci', [CURL]);
const SCRIPT = 'deploy/ci/publish-check.sh';
const WORKFLOW = readFileSync(join(REPO, 'deploy/ci/github-workflow.yml'), 'utf8');
const PRICED = 'svc-energy-eu';

interface Run { code: number | null; stdout: string; stderr: string }

/** Runs the recipe from the checkout's root, as CI does; the builds take a while on a busy machine. */
function recipe(args: string[], env: Record<string, string>): Promise<Run> {
  return new Promise((resolve, reject) => {
    // The recipe decides the check format from GITHUB_ACTIONS; a test run inside Actions must not leak it.
    const base = { ...process.env };
    delete base.GITHUB_ACTIONS;
    delete base.SOURCE_DATE_EPOCH;
    const child = spawn('sh', [SCRIPT, ...args], { cwd: REPO, env: { ...base, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 600_000);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

async function workspace(src: string) {
  const root = await tempDir('ci');
  return { root, env: { LDS_SRC: src, LDS_OUT: join(root, 'dist'), LDS_STORE_DIR: join(root, 'store'), LDS_REPORT_DIR: join(root, 'report') } };
}

const catalogueOf = (dist: string) => JSON.parse(readFileSync(join(dist, 'v1/lds/_catalog'), 'utf8'));
const commitTime = () => Number(spawnSync('git', ['log', '-1', '--format=%ct'], { cwd: REPO, encoding: 'utf8' }).stdout.trim());

let published: { dist: string; server: Server; url: string };

test.before(async () => {
  // The first publication: nothing to compare with yet.
  const src = await copyCatalogSrc();
  const ws = await workspace(src);
  const r = await recipe([], { ...ws.env, LDS_PUBLISHED: '' });
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stderr, 'first publication, nothing to compare');
  const server = createServer((req, res) => {
    if (req.url !== '/v1/lds/_catalog') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(readFileSync(join(ws.env.LDS_OUT, 'v1/lds/_catalog')));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as { port: number }).port;
  published = { dist: ws.env.LDS_OUT, server, url: `http://127.0.0.1:${port}/v1/lds/_catalog` };
});

test.after(() => {
  published?.server.close();
});

test('the first publication is built with SOURCE_DATE_EPOCH from the last commit, with its unit store', () => {
  const cat = catalogueOf(published.dist);
  assert.is(cat.generated_at, new Date(commitTime() * 1000).toISOString().replace(/\.\d{3}Z$/, 'Z'));
  assert.ok(cat.store_version, 'the unit store was built');
  assert.ok(existsSync(join(published.dist, '..', 'store', 'CURRENT')), 'the store is where the artifact step uploads it from');
});

test('a good change (a price): check passes, the build succeeds, the diff shows the price and its exit 1 is reported', async () => {
  const src = await copyCatalogSrc();
  const old = await setDrawPrice(src, PRICED, 15_000);
  const ws = await workspace(src);
  const r = await recipe([], { ...ws.env, LDS_PUBLISHED: published.url });
  assert.is(r.code, 0, `the recipe succeeds: ${r.stderr}`);
  assert.match(r.stderr, `fetch ${published.url}`);
  assert.match(r.stderr, 'changes a buyer sees');
  assert.match(r.stderr, '(lds diff exited 1)');
  assert.is(readFileSync(join(ws.env.LDS_REPORT_DIR, 'changed'), 'utf8').trim(), 'true');
  assert.is(readFileSync(join(ws.env.LDS_REPORT_DIR, 'review'), 'utf8').trim(), 'true', 'a price change needs the review label');
  assert.match(r.stderr, 'needs review: prices');
  // The build happened and carries the new price.
  const built = catalogueOf(ws.env.LDS_OUT);
  assert.is(built.products.find((p: any) => p.product_id === PRICED).pricing.draw_unit_price_micro_eur, 15_000);
  // The diff names the price, with its percentage, and nothing else.
  const pct = (((15_000 - old) / old) * 100).toFixed(1);
  const md = readFileSync(join(ws.env.LDS_REPORT_DIR, 'diff.md'), 'utf8');
  assert.match(md, `| ${PRICED} | draw price per unit | ${(old / 1e6).toFixed(6)} | 0.015000 | +${pct} % |`);
  assert.match(r.stdout, md, 'the report is printed to the log too');
  const json = JSON.parse(readFileSync(join(ws.env.LDS_REPORT_DIR, 'diff.json'), 'utf8'));
  assert.is(json.change_count, 1);
  assert.equal(json.prices.map((p: any) => [p.product_id, p.price, p.change_percent]), [[PRICED, 'draw_unit_price', Number(pct)]]);
  assert.equal(json.version.old, catalogueOf(published.dist).version);
  assert.equal(json.version.new, built.version);
});

async function badChange(): Promise<{ src: string; file: string; ws: Awaited<ReturnType<typeof workspace>> }> {
  const src = await copyCatalogSrc();
  const file = join(src, 'products', `${PRICED}.json`);
  await editJson(file, (d) => {
    d.pricing.draw_unit_price_micro_eur = 'ten cents'; // schema error
    d.sources.push({ source: 'eu.no_such_source', required: false }); // cross-file error, same file
  });
  return { src, file, ws: await workspace(src) };
}

function nothingBuilt(ws: Awaited<ReturnType<typeof workspace>>, r: Run) {
  assert.match(r.stderr, 'check failed (exit 1): nothing is built');
  assert.not.ok(existsSync(ws.env.LDS_OUT), 'no dist/');
  assert.not.ok(existsSync(ws.env.LDS_STORE_DIR), 'no unit store');
  assert.not.ok(existsSync(join(ws.env.LDS_REPORT_DIR, 'diff.md')), 'no diff');
}

test('a bad change: check fails naming the file and pointer, the recipe exits 1, nothing is built', async () => {
  const { ws } = await badChange();
  const r = await recipe([], { ...ws.env, LDS_PUBLISHED: published.url, LDS_CHECK_FORMAT: 'text' });
  assert.is(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout + r.stderr, `products/${PRICED}.json#/pricing/draw_unit_price_micro_eur: `);
  nothingBuilt(ws, r);
});

// Needs `lds check --format github` (built on its own branch): one ::error per finding, on the line
// of the value, both findings of the one file in the same run.
test('a bad change inside GitHub Actions: ::error annotations on their lines, nothing is built', async () => {
  const { file, ws } = await badChange();
  const r = await recipe(['check'], { ...ws.env, GITHUB_ACTIONS: 'true' });
  assert.is(r.code, 1, r.stdout + r.stderr);
  const lines = readFileSync(file, 'utf8').split('\n');
  const lineOf = (text: string) => lines.findIndex((l) => l.includes(text)) + 1;
  const annotations = r.stdout.split('\n').filter((l) => l.startsWith('::error '));
  const price = annotations.find((a) => a.includes('#/pricing/draw_unit_price_micro_eur: '));
  assert.ok(price, `an annotation for the price:\n${r.stdout}\n${r.stderr}`);
  assert.match(price!, new RegExp(`^::error file=[^,]*products/${PRICED}\\.json,line=${lineOf('"draw_unit_price_micro_eur"')},col=\\d+::`));
  const unknown = annotations.find((a) => a.includes('eu.no_such_source'));
  assert.ok(unknown, `an annotation for the unknown source in the same run:\n${r.stdout}`);
  assert.match(unknown!, new RegExp(`^::error file=[^,]*products/${PRICED}\\.json,line=${lineOf('"eu.no_such_source"')},col=\\d+::`));
  nothingBuilt(ws, r);
});

test('the GitHub workflow runs the same recipe: check, build, diff in that order, then uploads dist/ and the unit store', () => {
  // Read as GitHub reads it: parsed, not searched as text (test/shipped-files checks it parses and validates).
  const job = (parse(WORKFLOW) as { jobs: Record<string, { env: Record<string, string>; steps: { name?: string; if?: string; run?: string; uses?: string; with?: Record<string, string> }[] }> }).jobs.catalogue;
  const steps = job.steps.flatMap((st) => [...(st.run ?? '').matchAll(/^sh deploy\/ci\/publish-check\.sh (\w+)$/gm)].map((m) => m[1]));
  assert.equal(steps, ['check', 'build', 'diff']);
  const script = readFileSync(join(REPO, SCRIPT), 'utf8');
  // The artifact paths are the recipe's default output folders.
  const defaults = (name: string) => new RegExp(`\\$\\{${name}:-([^}]+)\\}`).exec(script)![1];
  const uploads = job.steps.filter((st) => st.uses?.startsWith('actions/upload-artifact@')).map((st) => st.with?.path);
  assert.ok(uploads.includes(`${defaults('LDS_OUT')}/`), JSON.stringify(uploads));
  assert.ok(uploads.includes(`${defaults('LDS_STORE_DIR')}/`), JSON.stringify(uploads));
  assert.is(job.env.LDS_REPORT_DIR, defaults('LDS_REPORT_DIR'));
  // SOURCE_DATE_EPOCH from the commit and check's GitHub annotations are the recipe's own.
  assert.match(script, 'SOURCE_DATE_EPOCH=$(git log -1 --format=%ct)');
  assert.match(script, 'LDS_CHECK_FORMAT=github');
  assert.ok(job.steps.some((st) => st.if?.includes("steps.diff.outputs.review == 'true'")), 'a step refuses a buyer-visible change without the label');
});

test.run();
