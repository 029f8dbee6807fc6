// Issue 50, item 8: the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
// test/mcp-conformance/) against the service's /mcp over real HTTP, under Node 24 (the suite
// needs Node 22 or later; test/helpers/mcp-conformance.ts finds or installs it). Its scenario
// dns-rebinding-protection failed: a request whose Host and Origin name another site (a page that made
// its own name resolve to 127.0.0.1) was answered by a service listening on loopback. The scenarios
// that apply to this server run here: server-initialize, ping, tools-list, dns-rebinding-protection
// (the others test tools, prompts, resources and logging this server does not have). Then the same
// protection in detail: Host and Origin each checked, the refusal an RFC 9457 problem, the service's
// own published and loopback addresses accepted, and the rule for services that listen elsewhere.
import * as assert from 'uvu/assert';
import { request } from 'node:http';
import { join } from 'node:path';
import { mkdtemp, readFile, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { runAsync } from './helpers/build.ts';
import { conformanceCli, node24 } from './helpers/mcp-conformance.ts';
import { suiteMissing } from './helpers/programs.ts';
import { startAgentService, type AgentService } from './helpers/agents.ts';
import { PROBLEM_BASE } from './helpers/problems.ts';
import { foreignHeader, ownOrigins } from '../payments/agents/own-origin.ts';
import { test as uvuTest } from 'uvu';

const tools = await Promise.all([node24(), conformanceCli()]).then(([node, cli]) => ({ node, cli }), (err: Error) => err);
const test = tools instanceof Error ? suiteMissing('agents-mcp-conformance.test.ts (the MCP conformance suite under Node 24)', tools.message) : uvuTest;

let svc: AgentService;
test.before(async () => {
  svc = await startAgentService();
});
test.after(async () => {
  await svc?.close();
});

const SCENARIOS = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];

test(`the official conformance suite passes its server scenarios ${SCENARIOS.join(', ')} against /mcp`, async () => {
  const { node, cli } = tools as { node: string; cli: string };
  const version = await runAsync(node, ['--version']);
  assert.match(version.stdout, /^v(2[2-9]|[3-9]\d)\./, 'the suite runs on Node 22 or later');
  const out = await mkdtemp(join(tmpdir(), 'mcp-conformance-'));
  for (const scenario of SCENARIOS) {
    const r = await runAsync(node, [cli, 'server', '--url', svc.mcpUrl, '--scenario', scenario, '-o', out], { timeoutMs: 120_000 });
    assert.is(r.code, 0, `${scenario}:\n${r.stdout}\n${r.stderr}`);
    assert.match(r.stderr + r.stdout, /Passed: (\d+)\/\1, 0 failed, 0 warnings/, `${scenario}:\n${r.stderr}`);
  }
  // What the suite recorded: every check of every scenario a success, the rebinding ones among them.
  const checks: { id: string; status: string }[] = [];
  for (const d of await readdir(out)) checks.push(...JSON.parse(await readFile(join(out, d, 'checks.json'), 'utf8')));
  assert.ok(checks.length >= SCENARIOS.length, `${checks.length} checks`);
  for (const c of checks) assert.is(c.status, 'SUCCESS', `${c.id}: ${JSON.stringify(c)}`);
  for (const id of ['localhost-host-rebinding-rejected', 'localhost-host-valid-accepted']) assert.ok(checks.some((c) => c.id === id), `the suite checked ${id}`);
});

/** POST an MCP initialize to /mcp with these Host and Origin headers (node:http: fetch may not set Host). */
function initialize(url: string, headers: Record<string, string>): Promise<{ status: number; type: string; body: any }> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'rebinding-test', version: '1' } } });
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(body), ...headers } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        const json = (() => {
          try {
            return JSON.parse(text.startsWith('event:') ? text.split('\ndata: ')[1]! : text);
          } catch {
            return text;
          }
        })();
        resolve({ status: res.statusCode!, type: String(res.headers['content-type']), body: json });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

test('a foreign Host or Origin is refused with 403 foreign-origin, naming the header; the service\'s own addresses are answered', async () => {
  const own = new URL(svc.mcpUrl);
  const refused: Record<string, string>[] = [
    { Host: 'evil.example', Origin: 'http://evil.example' },
    { Host: 'evil.example' },
    { Host: own.host, Origin: 'http://evil.example' },
    { Host: own.host, Origin: 'null' },
    { Host: `${own.host}.evil.example` },
  ];
  for (const headers of refused) {
    const r = await initialize(svc.mcpUrl, headers);
    assert.is(r.status, 403, JSON.stringify(headers));
    assert.match(r.type, /^application\/problem\+json/);
    assert.is(r.body.type, `${PROBLEM_BASE}foreign-origin`);
    assert.is(r.body.header, headers.Origin && headers.Host === own.host ? 'Origin' : 'Host');
    assert.match(r.body.detail, /not this service's address/);
  }
  const accepted: Record<string, string>[] = [
    { Host: own.host },
    { Host: own.host, Origin: own.origin },
    { Host: `localhost:${own.port}`, Origin: `http://localhost:${own.port}` },
    { Host: `[::1]:${own.port}` },
    { Host: '127.0.0.1:1', Origin: 'http://127.0.0.1:9' }, // a loopback proxy in front: still this machine
    { Host: new URL(svc.catalogue.base_url).host, Origin: new URL(svc.catalogue.base_url).origin },
  ];
  for (const headers of accepted) {
    const r = await initialize(svc.mcpUrl, headers);
    assert.is(r.status, 200, `${JSON.stringify(headers)}: ${JSON.stringify(r.body)}`);
    assert.is(r.body.result.serverInfo !== undefined, true);
  }
});

test('a service that listens on every address or a specific one accepts its published addresses, and loopback names only when it listens on loopback', () => {
  const published = ['https://lds.example.org/v1', 'https://lds.example.org/mcp', 'https://docs.example.org/docs/'];
  const everywhere = ownOrigins(published, '0.0.0.0');
  assert.is(foreignHeader(everywhere, 'lds.example.org', 'https://lds.example.org'), null);
  assert.is(foreignHeader(everywhere, 'lds.example.org', 'https://docs.example.org'), null);
  assert.is(foreignHeader(everywhere, 'localhost:8080', undefined), null);
  assert.equal(foreignHeader(everywhere, 'lds.example.org', 'http://lds.example.org'), { header: 'Origin', value: 'http://lds.example.org' }, 'another scheme is another origin');
  assert.equal(foreignHeader(everywhere, 'lds.example.org:8443', undefined), { header: 'Host', value: 'lds.example.org:8443' });
  const one = ownOrigins(published, '10.0.0.5');
  assert.is(foreignHeader(one, '10.0.0.5:8080', undefined), null);
  assert.equal(foreignHeader(one, 'localhost:8080', undefined), { header: 'Host', value: 'localhost:8080' });
  assert.equal(foreignHeader(one, undefined, undefined), { header: 'Host', value: '' });
  const v6 = ownOrigins(published, '::1');
  assert.is(foreignHeader(v6, '[::1]:8080', 'http://[::1]:8080'), null);
  assert.equal(foreignHeader(v6, 'evil.example', undefined), { header: 'Host', value: 'evil.example' });
});

test.run();
