// Shared by the MCP and A2A adapters (payments/mcp.ts, payments/a2a.ts): reading a bounded JSON
// body from a raw Koa request, the balance token from `Authorization: Bearer`, the draw-request
// shapes agents send, and turning any thrown error into RFC 9457 problem details. Both adapters
// are thin: every amount, unit and refusal comes from the DrawService, as on the HTTP API.
import { QUOTE_ID_MAX_LENGTH } from '../draw/quote.ts';
import type { Context } from 'koa';
import * as z from 'zod';
import type { DrawRequest } from '../draw/service.ts';
import { Problem } from '../problem.ts';
import { jsonMediaTypeRefusal, jsonSyntaxDetail } from '../http/body.ts';

export const DEFAULT_MAX_BODY_BYTES = 64 * 1024;

export type BodyResult = { ok: true; body: unknown } | { ok: false; status: 400 | 413 | 415; message: string };

/**
 * Reads the request body as JSON, refusing more than `limit` bytes. If a body parser earlier in
 * the chain already parsed it, that result is used as is.
 */
export async function readJsonBody(ctx: Context, limit = DEFAULT_MAX_BODY_BYTES): Promise<BodyResult> {
  const pre = (ctx.request as { body?: unknown }).body;
  if (pre !== undefined && (ctx.req as { readableEnded?: boolean }).readableEnded) return { ok: true, body: pre };
  const refusal = jsonMediaTypeRefusal(ctx.get('content-type'));
  if (refusal) {
    ctx.req.resume();
    return { ok: false, status: 415, message: refusal };
  }
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
    return { ok: false, status: 400, message: `Parse error: ${jsonSyntaxDetail(text, e)}; send one JSON-RPC request object.` };
  }
}

export { balanceTokenOf } from '../tokens.ts';

/** Problem details (JSON) for anything thrown by the service or an adapter. Never leaks internals. */
export function problemOf(err: unknown): Record<string, unknown> {
  if (err instanceof Problem) return err.toJSON();
  return new Problem(500, 'internal', 'Internal error', 'The request could not be completed. Retrying is safe: a paid draw is charged at most once per quote_id and a top-up credential at most once.').toJSON();
}

/** What a failing field holds, in words ("a number", "nothing: the field is missing"). */
function gotOf(v: unknown): string {
  if (v === undefined) return 'nothing (the field is missing)';
  if (v === null) return 'null';
  if (Array.isArray(v)) return `a list of ${v.length} item${v.length === 1 ? '' : 's'}`;
  if (typeof v === 'string') return `a string of ${v.length} character${v.length === 1 ? '' : 's'}`;
  if (typeof v === 'number') return Number.isInteger(v) ? `the whole number ${v}` : `the number ${v}`;
  if (typeof v === 'boolean') return String(v);
  return `a ${typeof v}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const k of path) v = v !== null && typeof v === 'object' ? (v as Record<PropertyKey, unknown>)[k] : undefined;
  return v;
}

const TYPE_WORDS: Record<string, string> = { string: 'a string', number: 'a number', int: 'a whole number', boolean: 'true or false', object: 'an object', array: 'a list', literal: 'a fixed value' };

/** One failing field in the service's words: which field, what it must be, what it was. */
export interface FieldError {
  field: string;
  expected: string;
  got: string;
}

/**
 * A schema-validator issue (zod) told in the service's own words, never the validator's message
 * or its raw issue list: the field (dotted path under `prefix`), what is expected, what was sent.
 */
export function describeIssue(issue: z.core.$ZodIssue, input: unknown, prefix?: string, root = '(params)'): FieldError {
  const path = issue.path as PropertyKey[];
  const field = [...(prefix ? [prefix] : []), ...path.map(String)].join('.') || root;
  const value = valueAt(input, path);
  const i = issue as z.core.$ZodIssue & { expected?: string; origin?: string; minimum?: number | bigint; maximum?: number | bigint; keys?: string[]; values?: unknown[]; format?: string };
  const size = (bound: string, n: number | bigint | undefined) =>
    i.origin === 'string' ? `a string of ${bound} ${n} characters` : i.origin === 'array' || i.origin === 'set' ? `a list of ${bound} ${n} items` : `a number ${bound === 'at least' ? '>=' : '<='} ${n}`;
  switch (issue.code) {
    case 'invalid_type':
      return { field, expected: TYPE_WORDS[i.expected ?? ''] ?? `a value of type ${i.expected}`, got: gotOf(value) };
    case 'too_small':
      return { field, expected: size('at least', i.minimum), got: gotOf(value) };
    case 'too_big':
      return { field, expected: size('at most', i.maximum), got: gotOf(value) };
    case 'unrecognized_keys':
      return { field, expected: 'only the documented fields', got: `the unknown field${(i.keys ?? []).length === 1 ? '' : 's'} ${(i.keys ?? []).map((k) => JSON.stringify(k)).join(', ')}` };
    case 'invalid_value':
      return { field, expected: `one of ${(i.values ?? []).map((x) => JSON.stringify(x)).join(', ')}`, got: typeof value === 'string' ? JSON.stringify(value.slice(0, 60)) : gotOf(value) };
    case 'invalid_format':
      return { field, expected: `a ${i.format ?? 'well-formed'} string`, got: gotOf(value) };
    case 'not_multiple_of':
      return { field, expected: 'a whole number', got: gotOf(value) };
    default:
      return { field, expected: 'a value of the documented shape', got: gotOf(value) };
  }
}

/** "field: expected X, got Y" for up to five issues. */
export function issuesInWords(error: z.ZodError, input: unknown, prefix?: string, root?: string): { first: FieldError | undefined; text: string } {
  const words = error.issues.slice(0, 5).map((i) => describeIssue(i, input, prefix, root));
  return { first: words[0], text: words.map((w) => `${w.field}: expected ${w.expected}, got ${w.got}`).join('; ') };
}

/**
 * A malformed agent request: the HTTP API's 400 `malformed-request` problem, with `field` the
 * dotted path of the first failing field (under `prefix`, e.g. "message.parts.0.data") and what
 * it expected and got, in the service's words.
 */
export function malformed(error: z.ZodError, where: string, input: unknown, prefix?: string, root?: string): Problem {
  const { first, text } = issuesInWords(error, input, prefix, root);
  return new Problem(400, 'malformed-request', 'Malformed request', `${where}: ${text}`, first ? { field: first.field, expected: first.expected, got: first.got } : {});
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
