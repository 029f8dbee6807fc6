// Mounts the agent endpoints in the service (serve.ts loads this module and calls mountAgents;
// tests pass it to startServer as `mount`): MCP at the path of mcp_url, A2A at the path of the
// agent card's `url`. Both read the draw bounds from the published OpenAPI document, so their
// input schemas are the HTTP API's.
import type { AgentCard } from '@a2a-js/sdk';
import type { Middleware } from 'koa';
import type { Mount, MountContext } from '../http/app.ts';
import { createA2aMiddleware } from './a2a.ts';
import { createMcpMiddleware } from './mcp.ts';
import { createRequestValidator } from '../http/openapi-validate.ts';

export const AGENT_CARD_URL_PATH = '/.well-known/agent-card.json';

/** The path MCP answers at: mcp_url's path, or /mcp when mcp_url is the root of another host. */
export function mcpPath(mcpUrl: string): string {
  const p = new URL(mcpUrl).pathname.replace(/\/$/, '');
  return p === '' ? '/mcp' : p;
}

/** MCP, then A2A, as one middleware (serve.ts mounts it lazily, after the server listens). */
export function agentMiddleware(m: MountContext): Middleware {
  const { bounds } = createRequestValidator(m.site.json(`${m.basePath}/specification`));
  const card = m.site.json(AGENT_CARD_URL_PATH) as AgentCard;
  const topupUrl = `${m.baseUrl}/lds/balance/topup`;
  const mcp = createMcpMiddleware(m.service, { path: mcpPath(m.mcpUrl), bounds, topupUrl, maxBodyBytes: bounds.maxBodyBytes });
  const a2a = createA2aMiddleware(m.service, card, { bounds, maxBodyBytes: bounds.maxBodyBytes });
  return (ctx, next) => mcp(ctx, () => a2a(ctx, next));
}

export const mountAgents: Mount = (m) => {
  m.app.use(agentMiddleware(m));
};
