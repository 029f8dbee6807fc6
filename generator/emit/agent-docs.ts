// Documentation sections "Buying through MCP" and "Buying through A2A" (docs.ts places them in
// BUYING_CHANNEL_SECTIONS). The copyable examples are data built by the functions below from the
// catalogue and addresses; test/agents-docs.test.ts renders them for a running service and runs
// them as they are (the TypeScript program with tsx, the curl commands with sh), so the docs and
// the service cannot drift apart.
//
// This module imports only types from docs.ts (docs.ts imports this one).
import { a2aUrl } from '../addresses.ts';
import type { EmitContext } from './types.ts';
import { mainExampleProduct } from './examples.ts';
import { type DocSection, fence, shq } from './markdown.ts';

/** Everything an example names; derived from the catalogue so it always names what exists. */
export interface AgentExampleInput {
  mcp_url: string;
  a2a_url: string;
  agent_card_url: string;
  topup_url: string;
  product_id: string;
  query: string;
  limit: number;
}

interface ExampleProduct {
  product_id: string;
  example_query: { query: string; matches: number };
}

/** The `limit` of the agent examples. */
export const AGENT_EXAMPLE_LIMIT = 3;

/**
 * The request the examples send: the first product whose example query fills the limit (see
 * examples.ts), its example query, limit 3.
 */
export function agentExampleInput(ctx: { addresses: EmitContext['addresses']; catalogue: { products: ExampleProduct[] } }): AgentExampleInput {
  const a = ctx.addresses;
  const p = mainExampleProduct(ctx.catalogue.products, AGENT_EXAMPLE_LIMIT);
  return {
    mcp_url: a.mcp_url,
    a2a_url: a2aUrl(a),
    agent_card_url: `${new URL(a.base_url).origin}/.well-known/agent-card.json`,
    topup_url: `${a.base_url}/lds/balance/topup`,
    product_id: p.product_id,
    query: p.example_query.query,
    limit: AGENT_EXAMPLE_LIMIT,
  };
}


/**
 * A complete TypeScript program (ESM, run with tsx) that lists the tools, quotes a draw, pays it
 * from the balance in $BALANCE_TOKEN and reads the balance, through the official MCP SDK client.
 * It prints one JSON line per step: {"step": ..., "result": ...}.
 */
export function mcpExampleProgram(x: AgentExampleInput): string {
  const request = JSON.stringify({ product_id: x.product_id, query: x.query, limit: x.limit });
  return `import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

// The balance token from a top-up pays the draw; it travels as a bearer token on every MCP request.
const transport = new StreamableHTTPClientTransport(new URL(${JSON.stringify(x.mcp_url)}), {
  requestInit: { headers: { Authorization: \`Bearer \${process.env.BALANCE_TOKEN}\` } },
});
const client = new Client({ name: 'my-agent', version: '1.0.0' });
await client.connect(transport);
const show = (step: string, result: unknown) => console.log(JSON.stringify({ step, result }));

const { tools } = await client.listTools();
show('tools', tools.map((t) => t.name));

// 1. Price the draw: a normal result with quote_id, unit_count, amount, currency, expires_at.
const request = ${request};
const quote = await client.callTool({ name: 'quote_draw', arguments: request });
if (quote.isError) throw new Error(JSON.stringify(quote.structuredContent)); // RFC 9457 problem details
show('quote', quote.structuredContent);

// 2. Buy it: the same request plus the quote_id. The units come with citations, attribution and a receipt.
const { quote_id } = quote.structuredContent as { quote_id: string; amount: string; currency: string };
const draw = await client.callTool({ name: 'draw', arguments: { ...request, quote_id } });
if (draw.isError) throw new Error(JSON.stringify(draw.structuredContent));
show('draw', draw.structuredContent);

// 3. What is left on the balance.
const balance = await client.callTool({ name: 'get_balance', arguments: {} });
show('balance', balance.structuredContent);
await client.close();
`;
}

function jsonRpc(id: number, messageId: string, data: Record<string, unknown>): string {
  return JSON.stringify(
    { jsonrpc: '2.0', id, method: 'message/send', params: { message: { kind: 'message', role: 'user', messageId, parts: [{ kind: 'data', data }] } } },
    null,
    2,
  );
}

/** curl: ask for a quote through A2A message/send (no credentials needed). */
export function a2aQuoteCommand(x: AgentExampleInput): string {
  const body = jsonRpc(1, 'quote-1', { product_id: x.product_id, query: x.query, limit: x.limit });
  return `curl -s ${x.a2a_url} \\\n  -H 'Content-Type: application/json' \\\n  -d ${shq(body)}`;
}

/**
 * curl: pay the quote through A2A message/send. Reads $BALANCE_TOKEN and $QUOTE_ID from the
 * shell (the here-document expands them).
 */
export function a2aPayCommand(x: AgentExampleInput): string {
  const placeholder = '@@QUOTE_ID@@';
  const body = jsonRpc(2, 'pay-1', { product_id: x.product_id, query: x.query, limit: x.limit, quote_id: placeholder })
    .replace(/[\\`$]/g, (c) => `\\${c}`) // literal inside an unquoted here-document
    .replace(placeholder, '$QUOTE_ID');
  return `curl -s ${x.a2a_url} \\\n  -H 'Content-Type: application/json' \\\n  -H "Authorization: Bearer $BALANCE_TOKEN" \\\n  --data-binary @- <<EOF\n${body}\nEOF`;
}

/** curl: a text part is refused with ContentTypeNotSupportedError (-32005). */
export function a2aTextRefusedCommand(x: AgentExampleInput): string {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 3,
    method: 'message/send',
    params: { message: { kind: 'message', role: 'user', messageId: 'text-1', parts: [{ kind: 'text', text: `${x.limit} units about ${x.query}` }] } },
  });
  return `curl -s ${x.a2a_url} -H 'Content-Type: application/json' -d ${shq(body)}`;
}

export const MCP_TOOLS: { name: string; args: string; what: string }[] = [
  { name: 'list_products', args: '(none)', what: 'every product: id, title, live unit and row counts, prices, health, DCAT link' },
  { name: 'get_product', args: '`product_id`', what: 'the full catalogue entry of one product: sources, unit definitions, licence rulings and summaries, DCAT link' },
  { name: 'quote_draw', args: '`product_id` and `units`, or `query` + `limit`; optional `currency` (EUR), `balance_token`', what: 'the quote as a normal result: `quote_id`, `unit_count`, `amount`, `currency`, `expires_at`, per-source breakdown, `payable_from_balance`. Nothing is charged.' },
  { name: 'draw', args: 'the quoted request plus `quote_id`; optional `balance_token`', what: 'pays the quote from the balance: `units` (each with its citation and licence), `attribution`, `receipt`. Paying the same quote again returns the same draw, charged once.' },
  { name: 'get_balance', args: 'optional `balance_token`', what: 'the balance and its recent statement' },
];

export function mcpSection(ctx: EmitContext): string {
  const x = agentExampleInput(ctx);
  const tools = MCP_TOOLS.map((t) => `| \`${t.name}\` | ${t.args} | ${t.what} |`).join('\n');
  return [
    `The MCP tool endpoint is **${x.mcp_url}**: MCP over Streamable HTTP, stateless (no session: every JSON-RPC request is a POST on its own, answered with JSON; GET answers 405). Any MCP client works; send \`Accept: application/json, text/event-stream\` when you POST by hand. Each tool has a JSON input schema and an output schema, and returns its result both as \`structuredContent\` and as text.`,
    '',
    '| Tool | Arguments | Returns |',
    '|---|---|---|',
    tools,
    '',
    `Amounts, units and refusals are exactly those of the HTTP API. Pay with a prepaid balance: top up over HTTP first (see [Top up a prepaid balance](#top-up-a-prepaid-balance), \`POST ${x.topup_url}\`), then send the balance token as \`Authorization: Bearer <BALANCE_TOKEN>\` on the MCP HTTP requests, or as the \`balance_token\` argument.`,
    '',
    `A refusal (unknown product, invalid arguments, unknown or expired quote, insufficient balance, …) is a tool result with \`isError: true\` whose \`structuredContent\` is the same RFC 9457 problem details as the HTTP API (\`type\`, \`title\`, \`status\`, \`detail\`; \`field\`, \`expected\` and \`got\` for invalid arguments; see [Errors](#errors)). An unknown tool name is a JSON-RPC error (-32602); so are params of \`initialize\`, \`tools/list\` or \`tools/call\` that do not fit the protocol, with \`data\` naming the \`field\`, what is \`expected\` and what it \`got\`. A \`balance_token\` argument takes from the same rate limit as \`Authorization: Bearer\` (a refusal is the 429 problem).`,
    '',
    `A complete TypeScript program with the official SDK (\`npm install @modelcontextprotocol/sdk\`, run with \`BALANCE_TOKEN=… npx tsx buy.ts\`):`,
    '',
    fence('ts', mcpExampleProgram(x).trimEnd()),
  ].join('\n');
}

export function a2aSection(ctx: EmitContext): string {
  const x = agentExampleInput(ctx);
  return [
    `The agent card at ${x.agent_card_url} names the A2A endpoint **${x.a2a_url}**: A2A protocol 0.3.0 over JSON-RPC 2.0 (\`preferredTransport\` \`JSONRPC\`), one skill per product (the skill id is the \`product_id\`). JSON is the only input and output mode. Methods: \`message/send\`, \`tasks/get\`, \`tasks/cancel\`; streaming and push notifications are not offered.`,
    '',
    'Send one **data part** per message:',
    '',
    `- \`{"product_id": …, "query": …, "limit": …}\` or \`{"product_id": …, "units": [ … ]}\`: the answer is a completed task with a \`quote\` artifact (the same quote as the HTTP 402: \`quote_id\`, \`amount\`, \`currency\`, \`unit_count\`, \`expires_at\`, …). Nothing is charged.`,
    `- the same data plus \`"quote_id"\`, with \`Authorization: Bearer <BALANCE_TOKEN>\` on the HTTP request (or \`"balance_token"\` in the data): a completed task with a \`draw\` artifact: \`units\` (each with its citation and licence), \`attribution\` and \`receipt\`. The balance token is never kept in the task history.`,
    '',
    'Ask for a quote:',
    '',
    fence('sh', a2aQuoteCommand(x)),
    '',
    `Pay it (with \`BALANCE_TOKEN\` from a top-up and \`QUOTE_ID\` from the quote artifact in the shell):`,
    '',
    fence('sh', a2aPayCommand(x)),
    '',
    'Reading a task again (`tasks/get`): a task made with a balance token (a paid draw, or a quote or refusal for that balance) shows its artifacts only to a request with the same `Authorization: Bearer <BALANCE_TOKEN>`; anyone else who has the task id sees its state alone (no artifacts; `metadata.withheld` says why). A paid draw\'s task stays readable for 24 hours on the instance that answered it (in memory, the 1,000 most recent paid draws, kept apart from free quotes); after that, pay the same quote again (same data part and `quote_id`, same token) to get the same draw back without a second charge.',
    '',
    'A refusal from the service (unknown product, unknown or expired quote, insufficient balance, …) is a task in state `failed` whose status message carries a data part `{"problem": …}` with the same RFC 9457 problem details as the HTTP API (also in the task\'s `metadata.problem`). Protocol errors are JSON-RPC errors:',
    '',
    '| Code | Error | When |',
    '|---|---|---|',
    '| -32700 | JSONParseError | the body is not JSON (HTTP 400) |',
    '| -32600 | InvalidRequestError | not a JSON-RPC 2.0 request |',
    '| -32601 | MethodNotFoundError | an unknown method |',
    '| -32602 | InvalidParamsError | a malformed message or data part; `data` is the problem details, with `field` |',
    '| -32001 | TaskNotFoundError | `tasks/get` or `tasks/cancel` for an unknown task |',
    '| -32002 | TaskNotCancelableError | `tasks/cancel` for a finished task (every task finishes within its `message/send`) |',
    '| -32003 | PushNotificationNotSupportedError | push-notification config methods, or a `pushNotificationConfig` on `message/send` |',
    '| -32004 | UnsupportedOperationError | `message/stream`, `tasks/resubscribe` |',
    '| -32005 | ContentTypeNotSupportedError | a text or file part, or `acceptedOutputModes` without `application/json` |',
    '| -32029 | (rate limited) | the balance token in the data part is over its rate limit; `data` is the 429 problem details (the same bucket as `Authorization: Bearer`) |',
    '',
    'For example, a text part is refused:',
    '',
    fence('sh', a2aTextRefusedCommand(x)),
  ].join('\n');
}

export const AGENT_DOC_SECTIONS: DocSection[] = [
  { title: 'Buying through MCP', render: mcpSection },
  { title: 'Buying through A2A', render: a2aSection },
];
