// The A2A endpoint named by the agent card's `url` ({base_url}/a2a): A2A 0.3.0 over JSON-RPC,
// built from @a2a-js/sdk's JsonRpcTransportHandler + DefaultRequestHandler with our AgentExecutor
// and a small Koa adapter (no express).
//
// message/send takes exactly one data part (JSON is the only input and output mode):
//   {product_id, units}            or {product_id, query, limit}  → a quote (task completed, artifact "quote")
//   {product_id, ..., quote_id[, balance_token]}                  → the paid draw (artifact "draw")
// The balance token is `Authorization: Bearer` on the HTTP request or `balance_token` in the data
// part; it is stripped from the message before the SDK keeps it in the task history.
// Refusals:
//   a text or file part, or acceptedOutputModes without application/json → ContentTypeNotSupportedError (-32005)
//   a malformed data part / message → InvalidParams (-32602) with the problem details in `data`
//   message/stream, tasks/resubscribe → UnsupportedOperationError (-32004) (the SDK, from the card)
//   push-notification config methods, or a pushNotificationConfig on message/send → -32003
//   a problem from the service (unknown product, expired quote, insufficient balance, …) → the task
//   fails; its status message carries the problem as a data part (and in metadata.problem).
import { randomUUID } from 'node:crypto';
import type { Middleware } from 'koa';
import * as z from 'zod';
import type { AgentCard, Artifact, Message, MessageSendParams, Task, TaskState } from '@a2a-js/sdk';
import {
  A2AError,
  DefaultRequestHandler,
  JsonRpcTransportHandler,
  ServerCallContext,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
  type TaskStore,
  type User,
} from '@a2a-js/sdk/server';
import type { DrawService } from '../draw/service.ts';
import { Problem } from '../problem.ts';
import { type AgentBounds, agentDrawSchema, balanceTokenOf, DEFAULT_MAX_BODY_BYTES, FALLBACK_BOUNDS, malformed, problemOf, plural, readJsonBody, toDrawRequest } from './common.ts';

export const JSON_MODE = 'application/json';

/** A2A 0.3 error codes this endpoint uses beyond JSON-RPC's own. */
export const A2A_ERRORS = {
  TaskNotFound: -32001,
  TaskNotCancelable: -32002,
  PushNotificationNotSupported: -32003,
  UnsupportedOperation: -32004,
  ContentTypeNotSupported: -32005,
  InvalidAgentResponse: -32006,
} as const;

export interface A2aOptions {
  /** Path the endpoint answers at. Default: the path of agentCard.url. */
  path?: string;
  maxBodyBytes?: number;
  /** Where tasks are kept for tasks/get. Default: an in-memory store bounded to `maxTasks`. */
  taskStore?: TaskStore;
  maxTasks?: number;
  /** Draw-request bounds from the OpenAPI document (as the HTTP API validates). */
  bounds?: AgentBounds;
}

/** The caller, as far as the A2A layer knows: the balance token it presented, if any. */
class BalanceHolder implements User {
  constructor(readonly token: string | undefined) {}
  get isAuthenticated(): boolean {
    return this.token !== undefined;
  }
  get userName(): string {
    return this.token ? 'balance-holder' : 'anonymous';
  }
}

function tokenOf(ctx: ServerCallContext | undefined): string | undefined {
  const u = ctx?.user;
  return u instanceof BalanceHolder ? u.token : undefined;
}

/** Keeps the most recent tasks in memory (oldest dropped first), so the store cannot grow without bound. */
export class BoundedTaskStore implements TaskStore {
  private readonly tasks = new Map<string, Task>();
  constructor(private readonly max = 1000) {}
  async load(taskId: string): Promise<Task | undefined> {
    const t = this.tasks.get(taskId);
    return t ? structuredClone(t) : undefined;
  }
  async save(task: Task): Promise<void> {
    this.tasks.delete(task.id);
    this.tasks.set(task.id, structuredClone(task));
    while (this.tasks.size > this.max) this.tasks.delete(this.tasks.keys().next().value as string);
  }
}

function contentTypeError(detail: string): A2AError {
  return new A2AError(A2A_ERRORS.ContentTypeNotSupported, 'Incompatible content types', {
    detail,
    supported_input_modes: [JSON_MODE],
    supported_output_modes: [JSON_MODE],
  });
}

function invalidParams(p: Problem): A2AError {
  return new A2AError(-32602, `Invalid parameters: ${p.detail ?? p.title}`, p.toJSON());
}

const partsSchema = z.array(z.looseObject({ kind: z.string() })).min(1);
const messageSchema = z.looseObject({
  kind: z.literal('message'),
  role: z.literal('user'),
  messageId: z.string().min(1).max(200),
  parts: partsSchema,
  taskId: z.string().max(200).optional(),
  contextId: z.string().max(200).optional(),
});

/** Checks the message before the SDK sees it; hands the token on in the call context, not the message. */
class DrawRequestHandler extends DefaultRequestHandler {
  constructor(
    card: AgentCard,
    store: TaskStore,
    executor: AgentExecutor,
    private readonly drawSchema: DrawSchema,
  ) {
    super(card, store, executor);
  }

  override async sendMessage(params: MessageSendParams, context?: ServerCallContext): Promise<Message | Task> {
    const { params: clean, context: ctx } = prepare(params, context, this.drawSchema);
    return super.sendMessage(clean, ctx);
  }
}

type DrawSchema = ReturnType<typeof agentDrawSchema>;

/** The parts of MessageSendConfiguration we read; wrong types are the caller's error (-32602), not ours. */
const configurationSchema = z
  .object({ acceptedOutputModes: z.array(z.string()).optional(), blocking: z.boolean().optional(), historyLength: z.number().int().nonnegative().optional() })
  .passthrough()
  .optional();

function prepare(params: MessageSendParams, context: ServerCallContext | undefined, drawSchema: DrawSchema): { params: MessageSendParams; context: ServerCallContext } {
  const rawMessage = (params as { message?: unknown }).message;
  const m = messageSchema.safeParse(rawMessage);
  if (!m.success) throw invalidParams(malformed(m.error, 'Invalid message', rawMessage, 'message'));
  const rawConf = (params as { configuration?: unknown }).configuration;
  const conf = configurationSchema.safeParse(rawConf);
  if (!conf.success) throw invalidParams(malformed(conf.error, 'Invalid configuration', rawConf, 'configuration'));
  const accepted = params.configuration?.acceptedOutputModes;
  if (accepted && accepted.length && !accepted.some((x) => x === JSON_MODE || x === '*/*' || x === 'application/*')) {
    throw contentTypeError(`This agent answers in ${JSON_MODE} only; acceptedOutputModes was ${JSON.stringify(accepted)}.`);
  }
  if (params.configuration?.pushNotificationConfig) throw A2AError.pushNotificationNotSupported();
  const parts = params.message.parts;
  const other = parts.find((p) => p.kind !== 'data');
  if (other) {
    const what = other.kind === 'file' ? `a file part${'file' in other && other.file && 'mimeType' in other.file && other.file.mimeType ? ` (${other.file.mimeType})` : ''}` : `a ${other.kind} part`;
    throw contentTypeError(`Got ${what}; this agent accepts only ${JSON_MODE} data parts: {"kind":"data","data":{"product_id":…,"units":[…]}} or {…,"query":…,"limit":…}, plus "quote_id" to pay.`);
  }
  if (parts.length !== 1) throw invalidParams(new Problem(400, 'malformed-request', 'Malformed request', `message.parts: send exactly one data part (got ${parts.length})`, { field: 'message.parts' }));
  const data = (parts[0] as { data?: unknown }).data;
  const parsed = drawSchema.safeParse(data);
  if (!parsed.success) throw invalidParams(malformed(parsed.error, 'Invalid draw request', data, 'message.parts.0.data'));
  const { balance_token, ...request } = parsed.data;
  const token = balance_token ?? tokenOf(context);
  const message: Message = { ...params.message, parts: [{ ...parts[0], kind: 'data', data: request }] };
  return {
    params: { ...params, message },
    context: new ServerCallContext(context?.requestedExtensions, new BalanceHolder(token)),
  };
}

function dataMessage(taskId: string, contextId: string, data: Record<string, unknown>): Message {
  return { kind: 'message', role: 'agent', messageId: randomUUID(), taskId, contextId, parts: [{ kind: 'data', data }] };
}

class DrawExecutor implements AgentExecutor {
  constructor(
    private readonly service: DrawService,
    private readonly drawSchema: DrawSchema,
  ) {}

  async execute(rc: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = rc;
    const finish = (state: TaskState, artifacts: Artifact[], message?: Message, metadata?: Record<string, unknown>) => {
      const task: Task = {
        kind: 'task',
        id: taskId,
        contextId,
        status: { state, timestamp: new Date().toISOString(), ...(message ? { message } : {}) },
        artifacts,
        history: [],
        ...(metadata ? { metadata } : {}),
      };
      bus.publish(task);
      bus.finished();
    };
    try {
      const part = rc.userMessage.parts[0] as { data: unknown };
      const a = this.drawSchema.parse(part.data);
      const token = tokenOf(rc.context);
      if (a.quote_id === undefined) {
        const q = await this.service.quote(toDrawRequest(a), token === 'malformed' ? undefined : token);
        finish('completed', [
          {
            artifactId: randomUUID(),
            name: 'quote',
            description: `Quote for ${plural(q.unit_count, 'unit')} of ${q.product_id}: ${q.amount} ${q.currency}, valid until ${q.expires_at}. To buy, send the same request plus "quote_id" (the quote's pay_with) as a data part, with your balance token (Authorization: Bearer).`,
            parts: [{ kind: 'data', data: q as unknown as Record<string, unknown> }],
          },
        ]);
      } else {
        // No token: the service refuses with the same 401 problem as the HTTP API.
        const d = await this.service.pay({ ...toDrawRequest(a), quote_id: a.quote_id }, token ?? '');
        finish('completed', [
          {
            artifactId: randomUUID(),
            name: 'draw',
            description: `${plural(d.units.length, 'unit')} of ${d.receipt.product_id} for ${d.receipt.amount} ${d.receipt.currency}, each with its citation and licence, plus the attribution to keep with them and the receipt.`,
            parts: [{ kind: 'data', data: d as unknown as Record<string, unknown> }],
          },
        ]);
      }
    } catch (err) {
      if (!(err instanceof Problem)) console.error('a2a draw failed:', err);
      const problem = problemOf(err);
      finish('failed', [], dataMessage(taskId, contextId, { problem }), { problem });
    }
  }

  async cancelTask(_taskId: string, _bus: ExecutionEventBus): Promise<void> {
    // Every task finishes within its message/send call; there is nothing running to cancel.
  }
}

function rpcError(id: unknown, code: number, message: string, data?: Record<string, unknown>) {
  return { jsonrpc: '2.0', id: id ?? null, error: { code, message, ...(data ? { data } : {}) } };
}

/** The request handler alone (for tests or other transports). */
export function createA2aRequestHandler(service: DrawService, agentCard: AgentCard, opts: A2aOptions = {}): DefaultRequestHandler {
  const card: AgentCard = { ...agentCard, capabilities: { ...agentCard.capabilities, streaming: false, pushNotifications: false } };
  const schema = agentDrawSchema(opts.bounds ?? FALLBACK_BOUNDS);
  return new DrawRequestHandler(card, opts.taskStore ?? new BoundedTaskStore(opts.maxTasks), new DrawExecutor(service, schema), schema);
}

/**
 * Koa middleware for the A2A JSON-RPC endpoint at the path of `agentCard.url`. POST only.
 * A body that is not JSON answers 400 with a JSON-RPC parse error (-32700), as the SDK's own
 * express handler does; every other answer is HTTP 200 with a JSON-RPC result or error.
 */
export function createA2aMiddleware(service: DrawService, agentCard: AgentCard, opts: A2aOptions = {}): Middleware {
  const path = (opts.path ?? new URL(agentCard.url).pathname).replace(/\/$/, '') || '/';
  const limit = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
  const transport = new JsonRpcTransportHandler(createA2aRequestHandler(service, agentCard, opts));
  return async (ctx, next) => {
    if (ctx.path !== path && ctx.path !== `${path}/`) return next();
    ctx.set('Cache-Control', 'no-store');
    if (ctx.method !== 'POST') {
      ctx.status = 405;
      ctx.set('Allow', 'POST');
      ctx.body = rpcError(null, -32600, `Method ${ctx.method} not allowed: send A2A JSON-RPC requests with POST. The agent card is at /.well-known/agent-card.json.`);
      return;
    }
    const read = await readJsonBody(ctx, limit);
    if (!read.ok) {
      ctx.status = read.status;
      ctx.body = rpcError(null, read.status === 400 ? -32700 : -32600, read.message);
      return;
    }
    const context = new ServerCallContext(undefined, new BalanceHolder(balanceTokenOf(ctx.get('authorization'))));
    let response: unknown;
    try {
      response = await transport.handle(read.body, context);
    } catch (err) {
      console.error('a2a request failed:', err);
      response = rpcError((read.body as { id?: unknown })?.id, -32603, 'Internal error');
    }
    if (response && typeof (response as AsyncGenerator)[Symbol.asyncIterator] === 'function') {
      // Not reached while the card declares streaming false (the SDK refuses first); never stream.
      await (response as AsyncGenerator).return?.(undefined);
      response = rpcError((read.body as { id?: unknown })?.id, A2A_ERRORS.UnsupportedOperation, 'Streaming is not supported');
    }
    ctx.status = 200;
    ctx.type = 'application/json';
    ctx.body = response;
  };
}
