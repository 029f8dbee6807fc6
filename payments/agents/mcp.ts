// The MCP tool endpoint (mcp_url, path /mcp): Streamable HTTP, stateless, with the official
// @modelcontextprotocol/sdk. Every POST gets a fresh Server + transport (the SDK's stateless
// pattern: no session id, nothing kept between requests). The tools are thin adapters over the
// DrawService, so amounts, units and refusals are those of the HTTP API:
//   list_products, get_product, quote_draw, draw, get_balance.
// A refusal is a tool error (isError: true) whose structuredContent is the RFC 9457 problem the
// HTTP API would answer, including bad arguments (400 with the failing field).
// The balance token comes from `Authorization: Bearer` on the MCP HTTP request (handed to the SDK
// as authInfo) or from a `balance_token` argument.
// Revisions: the SDK answers initialize with the client's revision when it knows it (2024-11-05 to
// 2025-11-25). JSON-RPC batches exist only in 2025-03-26 (also assumed for a request without
// MCP-Protocol-Version): there every message of a batch counts against the rate limits; any other
// revision's batch is refused (-32600).
import type { IncomingMessage } from 'node:http';
import type { Middleware } from 'koa';
import * as z from 'zod';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ErrorCode, InitializeRequestSchema, ListToolsRequestSchema, McpError, PingRequestSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import type { BalanceView, DrawService, PaidDraw, Quote } from '../draw/service.ts';
import { Problem } from '../problem.ts';
import { problems } from '../draw/problems.ts';
import { callLimitOf, tokenLimitOf, type TokenLimit } from '../http/ratelimit.ts';
import { TOPUP_MINIMUM_CENTS } from '../../contract/limits.ts';
import { CURRENCY, formatCents } from '../../contract/money.ts';
import {
  type AgentBounds,
  balanceTokenOf,
  balanceTokenSchema,
  DEFAULT_MAX_BODY_BYTES,
  drawRequestShape,
  FALLBACK_BOUNDS,
  issuesInWords,
  malformed,
  problemOf,
  productIdSchema,
  quoteIdSchema,
  plural,
  readJsonBody,
  toDrawRequest,
} from './common.ts';

export interface McpOptions {
  /** Path the endpoint answers at (the path of mcp_url). Default `/mcp`. */
  path?: string;
  /** Largest JSON-RPC body accepted, in bytes. Default 64 KiB. */
  maxBodyBytes?: number;
  /** Reported in the MCP initialize answer. */
  serverInfo?: { name: string; version: string };
  /** Where a buyer tops up, named in hints (absolute URL of POST …/lds/balance/topup). */
  topupUrl?: string;
  /** Draw-request bounds from the OpenAPI document, so the advertised input schemas match the HTTP API. */
  bounds?: AgentBounds;
  /**
   * The header (Host or Origin) of a request that names another site, or null (own-origin.ts): such a
   * request is refused with 403 foreign-origin before anything else (DNS rebinding). Absent: not checked.
   */
  foreignHeader?: (host: string | undefined, origin: string | undefined) => { header: 'Host' | 'Origin'; value: string } | null;
}

// ---- catalogue view (the service's snapshot; only the fields the tools read) ----

interface CatalogueProductView {
  product_id: string;
  title: string;
  sectoral_ds?: string;
  tag?: string;
  dcat_url?: string;
  live_unit_count?: number;
  live_row_count?: number;
  pricing?: Record<string, unknown>;
  _health?: { rollup?: string; rollup_reason?: string };
  licence_basis?: unknown[];
  licence_summary?: unknown[];
  [k: string]: unknown;
}

interface CatalogueView {
  version?: string;
  base_url: string;
  currency?: string;
  licence?: unknown;
  products: CatalogueProductView[];
}

function catalogueOf(service: DrawService): CatalogueView {
  const c = service.catalogue() as CatalogueView;
  return { ...c, products: Array.isArray(c?.products) ? c.products : [] };
}

// ---- schemas ----

const loose = <T extends z.ZodRawShape>(shape: T) => z.looseObject(shape);

const priceView = loose({
  currency: z.string(),
  bulk_annual_price: z.string().optional(),
  draw_unit_price: z.string().optional(),
  draw_minimum_charge: z.string().optional(),
});

const productSummary = loose({
  product_id: z.string(),
  title: z.string(),
  sectoral_ds: z.string().optional(),
  tag: z.string().optional(),
  live_unit_count: z.number().int().optional(),
  live_row_count: z.number().int().optional(),
  price: priceView.optional(),
  health: loose({ rollup: z.string().optional(), rollup_reason: z.string().optional() }),
  dcat_url: z.string().optional(),
});

const listProductsOutput = loose({
  catalogue_version: z.string().optional(),
  total: z.number().int(),
  products: z.array(productSummary),
});

const getProductOutput = loose({
  catalogue_version: z.string().optional(),
  product: loose({ product_id: z.string(), title: z.string() }),
  licences: z.array(z.unknown()),
  dcat_url: z.string().optional(),
  catalogue_licence: z.unknown().optional(),
});

const quoteOutput = loose({
  quote_id: z.string(),
  product_id: z.string(),
  unit_count: z.number().int(),
  amount: z.string(),
  currency: z.string(),
  expires_at: z.string(),
});

const drawOutput = loose({
  units: z.array(loose({ ref: z.string(), source: z.string(), citation: loose({ label: z.string() }) })),
  attribution: z.array(loose({ source: z.string(), attribution: z.string() })),
  receipt: loose({ draw_id: z.string(), quote_id: z.string(), amount: z.string(), currency: z.string(), balance_after: z.string() }),
});

const balanceOutput = loose({ balance: z.string(), currency: z.string(), statement: z.array(z.unknown()) });

/** RFC 9457 problem details: the structuredContent of every tool error (isError: true). */
export const problemOutput = loose({ type: z.string(), title: z.string(), status: z.number().int(), detail: z.string().optional() });

function inputSchemas(b: AgentBounds) {
  return {
    listProducts: z.strictObject({}),
    getProduct: z.strictObject({ product_id: productIdSchema }),
    quote: z.strictObject({
      ...drawRequestShape(b),
      balance_token: balanceTokenSchema.optional().describe('Optional: with a balance token the quote says whether that balance can pay it (payable_from_balance).'),
    }),
    draw: z.strictObject({ ...drawRequestShape(b), quote_id: quoteIdSchema, balance_token: balanceTokenSchema.optional() }),
    balance: z.strictObject({ balance_token: balanceTokenSchema.optional() }),
  };
}
type Inputs = ReturnType<typeof inputSchemas>;

// ---- tools ----

interface ToolCtx {
  token?: string;
  /** Takes a `balance_token` argument's request from that token's rate-limit bucket (payments/http/ratelimit.ts). */
  limitToken: TokenLimit;
}

interface ToolDef {
  name: string;
  title: string;
  description: string;
  input: z.ZodType;
  output: z.ZodType;
  annotations: Tool['annotations'];
  run(args: any, tc: ToolCtx): Promise<{ structured: Record<string, unknown>; summary: string }>;
}

function toolDefs(service: DrawService, opts: McpOptions): ToolDef[] {
  const topup = opts.topupUrl ?? '{base_url}/lds/balance/topup';
  const inputs = inputSchemas(opts.bounds ?? FALLBACK_BOUNDS);
  return [
    {
      name: 'list_products',
      title: 'List data products',
      description:
        'Lists the data products of the catalogue (EU legal and related material, one product per sectoral data space): id, title, live unit and row counts, prices (bulk annual price and per-unit draw price, EUR) and health. Free; no balance needed.',
      input: inputs.listProducts,
      output: listProductsOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      async run() {
        const c = catalogueOf(service);
        const products = c.products.map((p) => ({
          product_id: p.product_id,
          title: p.title,
          sectoral_ds: p.sectoral_ds,
          tag: p.tag,
          live_unit_count: p.live_unit_count,
          live_row_count: p.live_row_count,
          price: p.pricing ? pick(p.pricing, ['currency', 'bulk_annual_price', 'draw_unit_price', 'draw_minimum_charge']) : undefined,
          health: { rollup: p._health?.rollup, rollup_reason: p._health?.rollup_reason },
          dcat_url: p.dcat_url,
        }));
        const structured = { catalogue_version: c.version, total: products.length, products };
        const summary = products
          .map((p) => `${p.product_id}: ${p.title}, ${p.live_unit_count ?? '?'} units, draw ${String(p.price?.draw_unit_price ?? '?')} ${String(p.price?.currency ?? CURRENCY)}/unit, ${p.health.rollup ?? 'unknown'}`)
          .join('\n');
        return { structured, summary: `${products.length} products (catalogue ${c.version ?? 'unversioned'}):\n${summary}` };
      },
    },
    {
      name: 'get_product',
      title: 'Get one data product',
      description:
        'Returns the full catalogue entry of one product: description, per-source unit definitions, licence rulings and summaries (CC BY 4.0 or held), counts, prices, health, and the link to its DCAT-AP description. Free.',
      input: inputs.getProduct,
      output: getProductOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      async run(args: z.infer<Inputs['getProduct']>) {
        const c = catalogueOf(service);
        const p = c.products.find((x) => x.product_id === args.product_id);
        if (!p) throw problems.unknownProduct(args.product_id, c.base_url);
        const structured = {
          catalogue_version: c.version,
          product: p,
          licences: p.licence_summary ?? [],
          licence_basis: p.licence_basis ?? [],
          dcat_url: p.dcat_url,
          catalogue_licence: c.licence,
        };
        return { structured, summary: `${p.product_id}: ${p.title}. DCAT-AP: ${p.dcat_url ?? 'n/a'}` };
      },
    },
    {
      name: 'quote_draw',
      title: 'Quote a draw',
      description:
        'Prices a draw without buying anything: give `product_id` and either `units` (unit references) or `query` + `limit`. Returns the quote (quote_id, unit_count, amount in EUR, expires_at, per-source breakdown) as a normal result; pass the same request with its quote_id to `draw` to buy. Nothing is charged and nothing is stored.',
      input: inputs.quote,
      output: quoteOutput,
      annotations: { readOnlyHint: true, idempotentHint: false, openWorldHint: false },
      async run(args: z.infer<Inputs['quote']>, tc) {
        const token = args.balance_token ?? tc.token;
        const q: Quote = await service.quote(toDrawRequest(args), token === 'malformed' ? undefined : token);
        const pay = q.payable_from_balance
          ? 'Your balance covers it: call draw with this quote_id.'
          : `To pay, call draw with this quote_id and a balance token (top up with POST ${topup}, minimum ${formatCents(TOPUP_MINIMUM_CENTS)} ${CURRENCY}).`;
        return {
          structured: q as unknown as Record<string, unknown>,
          summary: `Quote ${q.quote_id}: ${plural(q.unit_count, 'unit')} of ${q.product_id} for ${q.amount} ${q.currency}, valid until ${q.expires_at}. ${pay}`,
        };
      },
    },
    {
      name: 'draw',
      title: 'Buy a quoted draw',
      description:
        'Pays a quote from a prepaid balance and returns the units, each with its citation and licence, the attribution block you must keep with them, and a receipt. Send the request you quoted (product_id and the same units, or query + limit) plus `quote_id`. The balance token comes from `Authorization: Bearer` on the MCP request or the `balance_token` argument. Exactly once: paying the same quote again returns the same draw without a second charge.',
      input: inputs.draw,
      output: drawOutput,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      async run(args: z.infer<Inputs['draw']>, tc) {
        // No token: the service refuses with the same 401 problem as the HTTP API.
        const token = args.balance_token ?? tc.token ?? '';
        const d: PaidDraw = await service.pay({ ...toDrawRequest(args), quote_id: args.quote_id }, token);
        return { structured: d as unknown as Record<string, unknown>, summary: drawSummary(d) };
      },
    },
    {
      name: 'get_balance',
      title: 'Read the prepaid balance',
      description:
        'Returns the prepaid balance (EUR) and its recent statement (top-ups and draws) for the balance token sent as `Authorization: Bearer` or as `balance_token`.',
      input: inputs.balance,
      output: balanceOutput,
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      async run(args: z.infer<Inputs['balance']>, tc) {
        const token = args.balance_token ?? tc.token ?? '';
        const b: BalanceView = await service.balance(token);
        return { structured: b as unknown as Record<string, unknown>, summary: `Balance: ${b.balance} ${b.currency} (${b.statement.length} statement entries).` };
      },
    },
  ];
}

function pick(o: Record<string, unknown>, keys: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of keys) if (o[k] !== undefined) out[k] = o[k];
  return out;
}

/** Human-readable summary of a paid draw: what was bought, every citation and the attribution. */
export function drawSummary(d: PaidDraw): string {
  const r = d.receipt;
  const lines = [`Draw ${r.draw_id}: ${plural(d.units.length, 'unit')} of ${r.product_id} for ${r.amount} ${r.currency}; balance after ${r.balance_after} ${r.currency}.`, 'Citations:'];
  for (const u of d.units) lines.push(`- ${u.ref}: ${u.citation?.label ?? ''}${u.citation?.url ? ` <${u.citation.url}>` : ''}`);
  lines.push('Attribution (keep it with the units):');
  for (const a of d.attribution) lines.push(`- ${a.source}: ${a.attribution} (${a.licence}${a.licence_url ? `, ${a.licence_url}` : ''})`);
  return lines.join('\n');
}

function jsonSchemaOf(schema: z.ZodType, io: 'input' | 'output'): Tool['inputSchema'] {
  const js = z.toJSONSchema(schema, { target: 'draft-7', io, unrepresentable: 'any' }) as Record<string, unknown>;
  delete js.$schema;
  return { type: 'object', ...js } as Tool['inputSchema'];
}

/**
 * The advertised output schema: the result, or the problem details a tool error carries. The
 * SDK 1.x client validates structuredContent against outputSchema even when isError is true
 * (modelcontextprotocol/typescript-sdk#1943), and both are true descriptions of what comes back.
 */
function outputSchemaOf(schema: z.ZodType): Tool['inputSchema'] {
  return jsonSchemaOf(z.union([schema, problemOutput]), 'output');
}

function okResult(structured: Record<string, unknown>, summary: string): CallToolResult {
  return { content: [{ type: 'text', text: summary }, { type: 'text', text: JSON.stringify(structured) }], structuredContent: structured };
}

function errorResult(err: unknown): CallToolResult {
  const problem = problemOf(err);
  const text = `${String(problem.title)} (${String(problem.status)})${problem.detail ? `: ${String(problem.detail)}` : ''} [${String(problem.type)}]`;
  return { isError: true, content: [{ type: 'text', text }, { type: 'text', text: JSON.stringify(problem) }], structuredContent: problem };
}

function listing(defs: ToolDef[]): Tool[] {
  return defs.map((d) => ({
    name: d.name,
    title: d.title,
    description: d.description,
    inputSchema: jsonSchemaOf(d.input, 'input'),
    outputSchema: outputSchemaOf(d.output),
    annotations: d.annotations,
  }));
}

const LenientCallToolRequest = z.object({ method: z.literal('tools/call'), params: z.unknown() });

function buildServer(defs: ToolDef[], tools: Tool[], opts: McpOptions, limitToken: TokenLimit): Server {
  const server = new Server(opts.serverInfo ?? { name: 'lds-catalogue', version: '1.0.0' }, {
    capabilities: { tools: {} },
    instructions:
      `EU legal data sold per draw. list_products → quote_draw (free, returns the price) → draw (paid from a prepaid balance token) → get_balance. ` +
      `Top up over HTTP with MPP (POST ${opts.topupUrl ?? '{base_url}/lds/balance/topup'}, minimum ${formatCents(TOPUP_MINIMUM_CENTS)} ${CURRENCY}), then send the balance token as Authorization: Bearer. Keep the attribution with the units.`,
  });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools }));
  // tools/call is registered with a lenient envelope and its params checked here, so malformed
  // params get JSON-RPC -32602 (invalid params) instead of the SDK's generic -32603.
  server.setRequestHandler(LenientCallToolRequest, async (raw, extra) => {
    const checked = CallToolRequestSchema.shape.params.safeParse(raw.params);
    if (!checked.success) throw new McpError(ErrorCode.InvalidParams, `Invalid params for tools/call: ${issuesInWords(checked.error, raw.params, 'params').text}`);
    const request = { params: checked.data };
    const def = defs.find((d) => d.name === request.params.name);
    if (!def) throw new McpError(ErrorCode.InvalidParams, `Unknown tool ${JSON.stringify(request.params.name)}; tools: ${defs.map((d) => d.name).join(', ')}`);
    const args = request.params.arguments ?? {};
    const parsed = def.input.safeParse(args);
    if (!parsed.success) return errorResult(malformed(parsed.error, `Invalid arguments for ${def.name}`, args, undefined, '(arguments)'));
    try {
      const argToken = (parsed.data as { balance_token?: unknown }).balance_token;
      if (typeof argToken === 'string') limitToken(argToken);
      const { structured, summary } = await def.run(parsed.data, { token: extra.authInfo?.token, limitToken });
      return okResult(structured, summary);
    } catch (err) {
      if (!(err instanceof Problem)) console.error(`mcp tool ${def.name} failed:`, err);
      return errorResult(err);
    }
  });
  return server;
}

function rpcError(code: number, message: string) {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

/** The requests this endpoint answers, with the SDK's own schema of each. */
const REQUEST_SCHEMAS: Record<string, z.ZodType> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
};

/**
 * Checks a request's params before the SDK sees them. The SDK answers bad params with its
 * validator's raw issue list as the message (and for most methods as an internal error, -32603);
 * this answers -32602 in the service's words, naming the field, what it expects and what came.
 */
export function invalidParamsAnswer(body: unknown): Record<string, unknown> | undefined {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return undefined;
  const msg = body as { id?: unknown; method?: unknown };
  if (typeof msg.method !== 'string' || msg.id === undefined) return undefined;
  const schema = REQUEST_SCHEMAS[msg.method];
  if (!schema) return undefined;
  const checked = schema.safeParse(body);
  if (checked.success) return undefined;
  const { first, text } = issuesInWords(checked.error, body, undefined, '(request)');
  return { jsonrpc: '2.0', id: msg.id, error: { code: ErrorCode.InvalidParams, message: `Invalid params for ${msg.method}: ${text}`, ...(first ? { data: first } : {}) } };
}

/**
 * The only MCP revision with JSON-RPC batches: added in 2025-03-26, removed in 2025-06-18. A
 * request without MCP-Protocol-Version is taken to be 2025-03-26, as the specification says.
 */
export const BATCHING_REVISION = '2025-03-26';

/**
 * What a JSON-RPC batch of the revision `revision` gets: refused (-32600) when the revision has no
 * batches, else undefined (the caller counts every message against the rate limits).
 */
export function batchRefusal(batch: unknown[], revision: string): Record<string, unknown> | undefined {
  if (revision === BATCHING_REVISION) return undefined;
  return rpcError(
    -32600,
    `Invalid Request: a JSON-RPC batch (an array of ${batch.length} messages) is not part of MCP ${revision} (the MCP-Protocol-Version of this request); batches exist only in ${BATCHING_REVISION}. Send one request per POST.`,
  );
}

/**
 * Koa middleware for the MCP endpoint. Answers POST at `opts.path` (default /mcp); GET and DELETE
 * get 405 (stateless: no standalone SSE stream, no session to end). The raw req/res go to the
 * SDK's transport; Koa does not respond (ctx.respond = false).
 */
export function createMcpMiddleware(service: DrawService, opts: McpOptions = {}): Middleware {
  const path = (opts.path ?? '/mcp').replace(/\/$/, '') || '/';
  const limit = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const defs = toolDefs(service, opts);
  const tools = listing(defs);
  return async (ctx, next) => {
    if (ctx.path !== path && ctx.path !== `${path}/`) return next();
    const foreign = opts.foreignHeader?.(ctx.req.headers.host, ctx.req.headers.origin);
    if (foreign) throw problems.foreignOrigin(foreign.header, foreign.value);
    if (ctx.method !== 'POST') {
      ctx.status = 405;
      ctx.set('Allow', 'POST');
      ctx.body = rpcError(-32000, `Method ${ctx.method} not allowed: this MCP endpoint is stateless Streamable HTTP; send JSON-RPC with POST.`);
      return;
    }
    const read = await readJsonBody(ctx, limit);
    if (!read.ok) {
      ctx.status = read.status;
      ctx.body = rpcError(read.status === 400 ? -32700 : -32600, read.message);
      return;
    }
    if (Array.isArray(read.body)) {
      // Each message of a batch is a call like any other: it takes from the rate limits (the
      // HTTP request took one already), or the batch is refused where its revision has none.
      const refusal = batchRefusal(read.body, ctx.get('mcp-protocol-version') || BATCHING_REVISION);
      if (refusal) {
        ctx.status = 400;
        ctx.body = refusal;
        return;
      }
      callLimitOf(ctx)(read.body.length - 1);
    }
    const invalid = invalidParamsAnswer(read.body);
    if (invalid) {
      ctx.status = 200;
      ctx.type = 'application/json';
      ctx.body = invalid;
      return;
    }
    const token = balanceTokenOf(ctx.get('authorization'));
    const req = ctx.req as IncomingMessage & { auth?: AuthInfo };
    if (token) req.auth = { token, clientId: 'balance-token', scopes: [] };
    const server = buildServer(defs, tools, opts, tokenLimitOf(ctx));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    ctx.respond = false;
    ctx.res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, ctx.res, read.body);
    } catch (err) {
      console.error('mcp request failed:', err);
      if (!ctx.res.headersSent) {
        ctx.res.writeHead(500, { 'content-type': 'application/json' });
        ctx.res.end(JSON.stringify(rpcError(-32603, 'Internal error')));
      } else if (!ctx.res.writableEnded) ctx.res.end();
    }
  };
}
