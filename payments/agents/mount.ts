// Mounts the agent endpoints in the service (serve.ts loads this module and calls mountAgents;
// tests pass it to startServer as `mount`): MCP at the path of mcp_url, A2A at the path of the
// agent card's `url`. Both read the draw bounds from the published OpenAPI document, so their
// input schemas are the HTTP API's, and A2A answers with the published agent card. A build
// published under the running service (payments/release/releases.ts) brings its own card and
// bounds: the endpoints are made again for each release the service switches to, while the A2A
// tasks (tasks/get of a task made before the switch) are kept in one store across them.
import type { AgentCard } from '@a2a-js/sdk';
import type { Middleware } from 'koa';
import type { Mount, MountContext } from '../http/app.ts';
import { createA2aMiddleware, DrawTaskStore } from './a2a.ts';
import { createMcpMiddleware } from './mcp.ts';
import { foreignHeader, ownOrigins } from './own-origin.ts';
import { createRequestValidator } from '../http/openapi-validate.ts';

export const AGENT_CARD_URL_PATH = '/.well-known/agent-card.json';

/** The path MCP answers at: mcp_url's path, or /mcp when mcp_url is the root of another host. */
export function mcpPath(mcpUrl: string): string {
  const p = new URL(mcpUrl).pathname.replace(/\/$/, '');
  return p === '' ? '/mcp' : p;
}

/** MCP, then A2A, as one middleware (serve.ts mounts it lazily, after the server listens). */
export function agentMiddleware(m: MountContext): Middleware {
  const taskStore = new DrawTaskStore();
  // m.site shows the serving release: its documents are one object per release, so a new one means
  // a switch (checked by identity on each request: no work on the way).
  let made: { documents: unknown; endpoints: Middleware } | null = null;
  return (ctx, next) => {
    const documents = m.site.entries;
    if (made?.documents !== documents) made = { documents, endpoints: agentEndpoints(m, taskStore) };
    return made.endpoints(ctx, next);
  };
}

/** The MCP and A2A endpoints of the serving release: its agent card and its draw bounds. */
function agentEndpoints(m: MountContext, taskStore: DrawTaskStore): Middleware {
  const { bounds } = createRequestValidator(m.site.json(`${m.basePath}/specification`));
  const card = m.site.json(AGENT_CARD_URL_PATH) as AgentCard;
  const topupUrl = `${m.baseUrl}/lds/balance/topup`;
  // The release's own addresses: a build for another address, once served, brings its own.
  const c = m.service.catalogue() as { base_url: string; mcp_url?: string; docs_url?: string };
  const own = ownOrigins([c.base_url, c.mcp_url ?? m.mcpUrl, c.docs_url ?? ''], m.listenHost);
  const mcp = createMcpMiddleware(m.service, { path: mcpPath(m.mcpUrl), bounds, topupUrl, maxBodyBytes: bounds.maxBodyBytes, foreignHeader: (host, origin) => foreignHeader(own, host, origin) });
  const a2a = createA2aMiddleware(m.service, card, { bounds, maxBodyBytes: bounds.maxBodyBytes, taskStore });
  return (ctx, next) => mcp(ctx, () => a2a(ctx, next));
}

export const mountAgents: Mount = (m) => {
  m.app.use(agentMiddleware(m));
};
