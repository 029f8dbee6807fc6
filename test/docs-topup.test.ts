// Issue 14, item 9: the documentation says exactly what the top-up credential is, and its copyable
// curl script works. The scripts are taken from the docs the real service serves (built for its own
// address) and run as printed with sh against it: a new balance, crediting an existing one, and every
// sandbox test token the docs list, with the outcome the docs claim. The documented JSON shape is the
// one mppx's Credential.serialize writes; llms.txt and the OpenAPI document say the same.
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { Challenge, Credential } from 'mppx';
import { localAddresses } from '../generator/addresses.ts';
import { CREDENTIAL_JSON, SANDBOX_SPTS, topupScript, topupScriptInput } from '../generator/emit/topup-docs.ts';
import { SANDBOX_DECLINE_TOKEN, SANDBOX_REQUIRES_ACTION_TOKEN } from '../payments/processors/sandbox.ts';
import { balanceOf, startAgentService, topUp, type AgentService } from './helpers/agents.ts';
import { CURL, suiteNeeding } from './helpers/programs.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';

const test = suiteNeeding('docs-topup.test.ts', [CURL]);

let svc: AgentService;
let docs: string;

test.before(async () => {
  svc = await startAgentService();
  docs = await (await fetch(`${svc.origin}/docs/index.md`)).text(); // the Markdown beside the page at /docs/ (issue 37)
});
test.after(async () => {
  await svc?.close();
});

/** The body of every ```sh block of one section of the served docs. */
function shBlocks(section: string): string[] {
  const start = docs.indexOf(`\n## ${section}\n`);
  assert.ok(start >= 0, `section ${section}`);
  const end = docs.indexOf('\n## ', start + 1);
  const text = docs.slice(start, end < 0 ? undefined : end);
  return [...text.matchAll(/```sh\n([\s\S]*?)\n```/g)].map((m) => m[1]!);
}

/** Runs a documented script with sh, as a reader pastes it (the service lives in this process). */
function sh(script: string, env: Record<string, string> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('sh', ['-c', script], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const json = (r: { stdout: string; stderr: string }) => {
  try {
    return JSON.parse(r.stdout);
  } catch {
    throw new Error(`not JSON: ${r.stdout} ${r.stderr}`);
  }
};

test('the docs have the credential section, linked from the top-up steps, with both scripts for this service', () => {
  assert.ok(docs.includes('(#the-payment-credential)'), 'in the contents and from step 2 of the top-up');
  const [fresh, existing] = shBlocks('The payment credential');
  const x = topupScriptInput({ addresses: localAddresses(svc.origin, 'https://publisher.example'), catalogue: svc.catalogue });
  assert.is(fresh, topupScript(x));
  assert.is(existing, topupScript(x, true));
  assert.ok(fresh!.includes(`TOPUP_URL='${svc.base}/lds/balance/topup'`), 'the script names this service');
  assert.ok(docs.includes(CREDENTIAL_JSON));
  assert.not.match(docs, /serialised as the MPP specification says/);
});

test('the new-balance script, run as printed: 200 with a balance token that holds the minimum', async () => {
  const [fresh] = shBlocks('The payment credential');
  const r = await sh(fresh!);
  assert.is(r.code, 0, r.stderr);
  const body = json(r);
  assert.match(body.balance_token, /^lds_bal_[A-Za-z0-9_-]{43}$/);
  assert.is(body.balance, svc.catalogue.minimum_topup);
  assert.is(await balanceOf(svc.base, body.balance_token), svc.catalogue.minimum_topup);
});

test('the existing-balance script, run as printed with $BALANCE_TOKEN: the balance grows, no new token', async () => {
  const [, existing] = shBlocks('The payment credential');
  const token = await topUp(svc.base, '5.00', 'spt_test_docs');
  const r = await sh(existing!, { BALANCE_TOKEN: token });
  assert.is(r.code, 0, r.stderr);
  const body = json(r);
  assert.is(body.balance_token, undefined);
  assert.is(body.balance, '10.00');
  assert.is(await balanceOf(svc.base, token), '10.00');
});

test('every sandbox token the docs list does what the docs say (they are the processor\'s own values)', async () => {
  assert.is(SANDBOX_SPTS.declined, SANDBOX_DECLINE_TOKEN);
  assert.is(SANDBOX_SPTS.requiresAction, SANDBOX_REQUIRES_ACTION_TOKEN);
  const [fresh] = shBlocks('The payment credential');
  // [the table row's first cell, an SPT it stands for, the documented outcome (null: accepted)]
  const rows: [string, string, string | null][] = [
    ['any other `spt_…`', 'spt_anything_else', null],
    [`\`${SANDBOX_SPTS.declined}\``, SANDBOX_SPTS.declined, 'payment-declined'],
    [`\`${SANDBOX_SPTS.requiresAction}\``, SANDBOX_SPTS.requiresAction, 'payment-requires-action'],
    ['anything not starting with `spt_`', 'tok_not_an_spt', 'payment-token-rejected'],
  ];
  for (const [cell, spt, type] of rows) {
    const row = docs.split('\n').find((l) => l.startsWith(`| ${cell}`));
    assert.ok(row, `the docs list ${cell}`);
    assert.ok(row!.includes(type ? `402 \`${type}\`` : 'accepted: 200'), `${cell}: the documented outcome`);
    const body = json(await sh(fresh!, { SPT: spt }));
    if (type) {
      assert.is(body.status, 402, spt);
      assert.is(body.type, `${PROBLEM_BASE}${type}`, spt);
    } else assert.match(body.balance_token, /^lds_bal_/, spt);
  }
});

test('the documented shape is what mppx writes: every challenge auth-param as a string, and payload.spt', async () => {
  const crediting: Record<string, string>[] = [{}, { authorization: `Bearer ${await topUp(svc.base)}` }];
  for (const headers of crediting) {
    const res = await fetch(`${svc.base}/lds/balance/topup`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: '{"amount":"5.00"}' });
    assert.is(res.status, 402);
    const header = res.headers.get('www-authenticate')!;
    const params = Object.fromEntries([...header.matchAll(/([a-z]+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1]!, m[2]!]));
    const wire = Credential.serialize(Credential.from({ challenge: Challenge.deserialize(header), payload: { spt: 'spt_test_shape' } }));
    assert.match(wire, /^Payment [A-Za-z0-9_-]+$/, 'base64url, no padding');
    const decoded = JSON.parse(Buffer.from(wire.slice('Payment '.length), 'base64url').toString('utf8'));
    assert.equal(decoded, { challenge: params, payload: { spt: 'spt_test_shape' } });
    // The placeholders of the documented JSON are exactly the challenge's keys (header only when crediting).
    const documented = JSON.parse(CREDENTIAL_JSON);
    assert.equal(Object.keys(documented.challenge).sort(), Object.keys(params).filter((k) => k !== 'header').sort());
    assert.equal(Object.keys(documented.payload), ['spt']);
  }
});

test('llms.txt and the OpenAPI document give the same credential shape and scripts', async () => {
  const llms = await (await fetch(`${svc.origin}/llms.txt`)).text();
  assert.ok(llms.includes(CREDENTIAL_JSON), 'llms.txt: the JSON');
  for (const v of Object.values(SANDBOX_SPTS)) assert.ok(llms.includes(v), `llms.txt: ${v}`);
  const spec = (await (await fetch(`${svc.base}/specification`)).json()) as any;
  const op = spec.paths['/lds/balance/topup'].post;
  const [fresh, existing] = shBlocks('The payment credential');
  assert.equal(op['x-codeSamples'].map((s: any) => s.source), [fresh, existing]);
  assert.ok(op.description.includes(CREDENTIAL_JSON));
  assert.ok(spec.components.securitySchemes.mpp.description.includes(CREDENTIAL_JSON));
  assert.match(op.responses['402'].headers['WWW-Authenticate'].example, /^Payment id="[^"]+", realm="[^"]+", method="stripe", intent="charge", request="/);
});

test.run();
