// Shared by the MCP and A2A adapters (payments/mcp.ts, payments/a2a.ts): reading a bounded JSON
// body from a raw Koa request, the balance token from `Authorization: Bearer`, the draw-request
// shapes agents send, and turning any thrown error into RFC 9457 problem details. Both adapters
// are thin: every amount, unit and refusal comes from the DrawService, as on the HTTP API.
import { QUOTE_ID_MAX_LENGTH } from '../draw/quote.ts';
import type { Context } from 'koa';
import * as z from 'zod';
import type { DrawRequest } from '../draw/service.ts';
import { Problem } from '../problem.ts';

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

export type BodyResult = { ok: true; body: unknown } | { ok: false; status: 400 | 413 | 415; message: string };

/**
 * Reads the request body as JSON, refusing more than `limit` bytes. If a body parser earlier in
 * the chain already parsed it, that result is used as is.
 */
export async function readJsonBody(ctx: Context, limit = DEFAULT_MAX_BODY_BYTES): Promise<BodyResult> {
  const pre = (ctx.request as { body?: unknown }).body;
  if (pre !== undefined && (ctx.req as { readableEnded?: boolean }).readableEnded) return { ok: true, body: pre };
  const type = ctx.get('content-type');
  if (type && !/^application\/([\w.+-]*\+)?json\b/i.test(type)) return { ok: false, status: 415, message: `Content-Type must be application/json, not ${type}` };
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > limit) {
    ctx.req.resume();
    return { ok: false, status: 413, message: `Request body larger than ${limit} bytes` };
  }
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of ctx.req) {
      size += (chunk as Buffer).length;
      if (size > limit) {
        ctx.req.resume();
        return { ok: false, status: 413, message: `Request body larger than ${limit} bytes` };
      }
      chunks.push(chunk as Buffer);
    }
  } catch {
    return { ok: false, status: 400, message: 'Request body could not be read' };
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return { ok: false, status: 400, message: 'Empty request body: expected a JSON-RPC message' };
  try {
    return { ok: true, body: JSON.parse(text) };
  } catch (e) {
    return { ok: false, status: 400, message: `Malformed JSON: ${(e as Error).message}` };
  }
}

export { balanceTokenOf } from '../tokens.ts';

/** Problem details (JSON) for anything thrown by the service or an adapter. Never leaks internals. */
export function problemOf(err: unknown): Record<string, unknown> {
  if (err instanceof Problem) return err.toJSON();
  return new Problem(500, 'internal', 'Internal error', 'The request could not be completed. Retrying is safe: a paid draw is charged at most once per quote_id and a top-up credential at most once.').toJSON();
}

/**
 * A malformed agent request: the HTTP API's 400 `malformed-request` problem, with `field` the
 * dotted path of the first failing field (under `prefix`, e.g. "message.parts.0.data").
 */
export function malformed(error: z.ZodError, where: string, prefix?: string): Problem {
  const join = (path: PropertyKey[]) => [...(prefix ? [prefix] : []), ...path.map(String)].join('.');
  const issue = error.issues[0];
  const field = issue ? join(issue.path) : prefix;
  const detail = error.issues
    .slice(0, 5)
    .map((i) => (i.path.length || prefix ? `${join(i.path)}: ${i.message}` : i.message))
    .join('; ');
  return new Problem(400, 'malformed-request', 'Malformed request', `${where}: ${detail}`, field ? { field } : {});
}

// ---- draw-request shapes shared by the MCP tool schemas and the A2A data parts ----

/** Bounds of a draw request: the service reads them from the OpenAPI document (RequestValidator.bounds). */
export interface AgentBounds {
  /** Distinct unit references (duplicates count once). */
  maxUnits: number;
  /** Entries of the list as sent, duplicates included. */
  maxUnitItems: number;
  maxLimit: number;
  defaultLimit: number;
  maxQueryChars: number;
}

/** Only used when the mount is not given the OpenAPI bounds; the service still applies its own. */
export const FALLBACK_BOUNDS: AgentBounds = { maxUnits: 1000, maxUnitItems: 1000, maxLimit: 1000, defaultLimit: 10, maxQueryChars: 1000 };

export const productIdSchema = z.string().min(1).max(64).describe('The product id (also the A2A skill id), e.g. "svc-language-eu". list_products names them all.');
export const currencySchema = z.string().min(1).max(16).describe('Currency of the quote; only "EUR" is accepted (the default).');
export const quoteIdSchema = z.string().min(1).max(QUOTE_ID_MAX_LENGTH).describe('The quote_id of the quote being paid (from quote_draw, A2A or the HTTP 402).');
export const balanceTokenSchema = z
  .string()
  .min(1)
  .max(512)
  .describe('Balance token from a top-up. Optional if the request already carries `Authorization: Bearer <BALANCE_TOKEN>`.');

/** The fields of a draw request (spec 4.1), bounded as the OpenAPI document bounds them. */
export function drawRequestShape(b: AgentBounds) {
  return {
    product_id: productIdSchema,
    units: z
      .array(z.string().min(3).max(200))
      .min(1)
      .max(b.maxUnitItems)
      .optional()
      .describe(`Unit references to buy (1 to ${b.maxUnits} distinct; duplicates count once), e.g. ["eu.eurlex:32016R0679#p12"]. Give either \`units\` or \`query\`.`),
    query: z.string().min(1).max(b.maxQueryChars).optional().describe("Full-text query over the product's English text, instead of `units`; resolved to a unit list when quoted."),
    limit: z.number().int().min(1).max(b.maxLimit).optional().describe(`With \`query\`: how many units at most (1 to ${b.maxLimit}, default ${b.defaultLimit}).`),
    currency: currencySchema.optional(),
  };
}

/** A quote or a paid draw, as an agent sends it (A2A data part; MCP tools use the same fields). */
export function agentDrawSchema(b: AgentBounds) {
  return z.strictObject({
    ...drawRequestShape(b),
    quote_id: quoteIdSchema.optional(),
    balance_token: balanceTokenSchema.optional(),
  });
}

/** The DrawRequest the service takes: only the fields that were given. */
export function toDrawRequest(a: { product_id: string; units?: string[]; query?: string; limit?: number; currency?: string }): DrawRequest {
  const req: DrawRequest = { product_id: a.product_id };
  if (a.units !== undefined) req.units = a.units;
  if (a.query !== undefined) req.query = a.query;
  if (a.limit !== undefined) req.limit = a.limit;
  if (a.currency !== undefined) req.currency = a.currency;
  return req;
}

export function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}
