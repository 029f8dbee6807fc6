// Shared by the agent suites (test/agents-*.test.ts): the real service (startServer over a real
// build of catalog-src, the ledger backend LDS_TEST_BACKEND names, the sandbox MPP processor) with the MCP and A2A endpoints
// mounted as `lds serve` mounts them, on a port chosen before the build so the published agent
// card, catalogue and docs name the very server the clients talk to (the service fixture's store,
// its documents rendered for that port: service-harness.ts buildFixtureFor).
import { readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { localAddresses } from '../../generator/addresses.ts';
import { servedBuild } from './problems.ts';
import { loadConfig } from '../../payments/config.ts';
import { createLogger, startServer, type RunningServer } from '../../payments/serve.ts';
import { mountAgents } from '../../payments/agents/mount.ts';
import { buildFixtureFor } from './service-harness.ts';
import { freePort, slotPort } from './http.ts';
import { BACKEND } from './ledgers.ts';
import { freshDatabase } from './pg.ts';

export interface AgentService {
  running: RunningServer;
  origin: string; // http://127.0.0.1:<port>
  base: string; // <origin>/v1
  mcpUrl: string;
  root: string;
  dist: string;
  store: string;
  catalogue: any;
  card: any;
  close(): Promise<void>;
}


/** `env` adds to (or overrides) the service's environment, e.g. rate limits or LDS_OPERATOR_TOKEN. */
export async function startAgentService(opts: { env?: Record<string, string> } = {}): Promise<AgentService> {
  let lastErr: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    // The slot's port first (its build is one made before: slotPort); a free one if it was taken meanwhile.
    const port = attempt === 0 ? await slotPort() : await freePort();
    const origin = `http://127.0.0.1:${port}`;
    const fx = await buildFixtureFor(origin);
    const ledger = BACKEND === 'postgres' ? { LDS_LEDGER_URL: await freshDatabase() } : {};
    const env = { LDS_DIST_DIR: fx.dist, LDS_STORE_DIR: fx.store, LDS_VAR_DIR: join(fx.root, 'var'), LDS_RATE_LIMIT_RPS: '0', ...ledger, ...(opts.env ?? {}) };
    try {
      const config = await loadConfig({ port, host: '127.0.0.1' }, env);
      const running = await startServer(config, { logger: createLogger('silent'), env, mount: mountAgents });
      const card = JSON.parse(await readFile(join(fx.dist, '.well-known/agent-card.json'), 'utf8'));
      servedBuild(fx.catalogue);
      return {
        running,
        origin,
        base: `${origin}/v1`,
        mcpUrl: localAddresses(origin, 'https://publisher.example').mcp_url,
        root: fx.root,
        dist: fx.dist,
        store: fx.store,
        catalogue: fx.catalogue,
        card,
        close: async () => {
          await running.close();
          await rm(fx.root, { recursive: true, force: true });
        },
      };
    } catch (err) {
      await rm(fx.root, { recursive: true, force: true });
      lastErr = err; // the port was taken between probing and listening: try another
      if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw err;
    }
  }
  throw lastErr;
}

/** The official MCP client over Streamable HTTP, optionally sending a balance token as Bearer. */
export async function mcpClient(mcpUrl: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'agents-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : undefined);
  await client.connect(transport);
  return client;
}

/** A raw JSON-RPC POST (for what an SDK client would never send). */
export async function rawPost(url: string, body: string, headers: Record<string, string> = {}): Promise<{ status: number; json: any; text: string; headers: Headers }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, body });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text, headers: res.headers };
}

/** Unit equality across channels: same refs and same content, in the same order. */
export function unitKey(units: { ref: string; rows: unknown; citation: unknown; licence: unknown }[]): string {
  return JSON.stringify(units.map((u) => [u.ref, u.rows, u.citation, u.licence]));
}

// HTTP buyer helpers are the service tests' own, so both suites top up and read balances the same way.
import { postJson } from './service-harness.ts';
export { balanceOf, bearer, postJson, topUp } from './service-harness.ts';

/** Unit references of a product, as the HTTP API resolves a query for it (up to `limit`). */
export async function refsOf(base: string, productId: string, query: string, limit = 100): Promise<string[]> {
  const res = await postJson(`${base}/lds/draw`, { product_id: productId, query, limit });
  const body = (await res.json()) as { resolved_units?: string[] };
  if (res.status !== 402 || !body.resolved_units) throw new Error(`quote failed: ${res.status} ${JSON.stringify(body)}`);
  return body.resolved_units;
}
