// Issue 35: docs/agents.md's host configurations are right. Each JSON snippet (Claude Desktop,
// Claude Code, VS Code, Cursor) is parsed with JSON.parse and its `lds` server started as the host
// would start it (command and args as written, the checkout path and token file replaced by real
// ones) with the official MCP SDK client over stdio: it initializes and lists the buyer's tools.
// Nothing is bought (no service is needed: `lds mcp` reaches the service only when a tool runs).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { REPO } from './helpers/build.ts';

test('every host snippet of docs/agents.md starts `lds mcp` and lists its tools', async () => {
  const guide = await readFile(join(REPO, 'docs/agents.md'), 'utf8');
  const snippets = [...guide.matchAll(/```json\n([\s\S]*?)\n```/g)].map((m) => JSON.parse(m[1]!));
  assert.is(snippets.length, 4, 'Claude Desktop, Claude Code, VS Code, Cursor');
  const dir = await mkdtemp(join(tmpdir(), 'lds-agents-guide-'));
  await writeFile(join(dir, 'token'), `lds_bal_${'A'.repeat(43)}\n`, { mode: 0o600 });
  await Promise.all(
    snippets.map(async (snippet) => {
      const server = (snippet.mcpServers ?? snippet.servers).lds as { command: string; args: string[]; type?: string };
      assert.ok(server.type === undefined || server.type === 'stdio');
      assert.is(server.command, 'node');
      const args = server.args.map((a) => a.replace('/home/you/lds-catalogue', REPO).replace('/home/you/.config/lds/token', join(dir, 'token')));
      const transport = new StdioClientTransport({ command: process.execPath, args: [...args, '--journal', join(dir, 'receipts.ndjson')], cwd: dir, env: { PATH: process.env.PATH ?? '' }, stderr: 'pipe' });
      let log = '';
      transport.stderr!.on('data', (d) => (log += d));
      const client = new Client({ name: 'guide-check', version: '1.0.0' });
      await client.connect(transport);
      try {
        const { tools } = await client.listTools();
        assert.equal(tools.map((t) => t.name).sort(), ['buy_draw', 'find_products', 'get_balance', 'get_statement', 'quote_draw', 'verify_journal']);
        assert.match(log, /serving https:\/\/lds\.example\.org\/v1 over stdio; .*balance token from --token-file .*at most 0\.50 EUR a draw, 2\.00 EUR a day, approval above 0\.20 EUR/);
      } finally {
        await client.close();
      }
    }),
  );
});

test.run();
