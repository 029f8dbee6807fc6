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
//   a balance token in a data part takes from that token's rate-limit bucket → -32029 with the 429 problem
// tasks/get: a task made with a balance token (a paid draw, a refusal, a quote for that balance) shows
// its artifacts only to a read with the same token; anyone else with the id gets its state alone
// (DrawTaskStore). Paid draws are kept apart from other tasks, so free quotes cannot push them out;
// a replayed paid quote is answered with its first task, and a full set drops the oldest task of the
// balance holding the most, so one balance cannot push out the paid draws of others.
import { randomUUID } from 'node:crypto';
import { hashesEqual, hashToken } from '../tokens.ts';
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
import { tokenLimitOf, type TokenLimit } from '../http/ratelimit.ts';
import { type AgentBounds, agentDrawSchema, balanceTokenOf, DEFAULT_MAX_BODY_BYTES, FALLBACK_BOUNDS, malformed, problemOf, plural, readJsonBody, toDrawRequest } from './common.ts';
import { problems } from '../draw/problems.ts';

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
  /** Where tasks are kept for tasks/get. Default: a DrawTaskStore (paid draws and other tasks bounded apart). */
  taskStore?: TaskStore;
  /** Draw-request bounds from the OpenAPI document (as the HTTP API validates). */
  bounds?: AgentBounds;
}

/** The caller, as far as the A2A layer knows: the balance token it presented, if any. */
export class BalanceHolder implements User {
  constructor(
    readonly token: string | undefined,
    /** The rate limit of this HTTP request's balance token bucket (payments/http/ratelimit.ts). */
    readonly limitToken: TokenLimit = () => {},
  ) {}
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

/** What a task read with another token (or none) says instead of its artifacts. */
export const WITHHELD_NOTE =
  'This task was made with a balance token; its artifacts (a paid draw, a receipt, a quote or refusal for that balance) are shown only to a tasks/get that sends the same token as Authorization: Bearer.';

/** How long a paid draw's task stays readable with tasks/get, and how many are kept (per instance, in memory). */
export const PAID_TASK_TTL_MS = 24 * 60 * 60 * 1000;
export const MAX_PAID_TASKS = 1000;
export const MAX_OTHER_TASKS = 1000;

interface Kept {
  task: Task;
  /** SHA-256 of the balance token the task was made with; only that token reads its artifacts */
  owner?: string;
  /** paid draws: when the task is dropped */
  until?: number;
  /** paid draws: the draw id of its receipt */
  drawId?: string;
}

/** The draw id of a task that holds a paid draw (its units and receipt), or undefined. */
function drawIdOf(task: Task): string | undefined {
  const draw = (task.artifacts ?? []).find((a) => a.name === 'draw');
  if (!draw) return undefined;
  const data = (draw.parts[0] as { data?: { receipt?: { draw_id?: unknown } } } | undefined)?.data;
  return String(data?.receipt?.draw_id ?? '');
}

/**
 * Keeps tasks in memory for tasks/get, in two separately bounded sets so free requests can never
 * push out what someone paid for: paid draws (at most `maxPaid`, each for `paidTtlMs`) and every
 * other task (quotes and refusals, at most `maxOther`), oldest dropped first within each set.
 *
 * Paid draws: one task per draw (a replay of its quote is answered with that task, `paidTaskOf`,
 * and changes nothing), and when the set is full the task dropped is the oldest of the balance
 * holding the most, so no balance can push out another's paid draws by buying many of its own.
 *
 * A task made with a balance token is that token's: a read with another token or none gets the
 * task's id, context and state, but no artifacts, status message, history or metadata (what it
 * says instead is WITHHELD_NOTE). Anonymous quotes are readable by whoever has the task id.
 */
export class DrawTaskStore implements TaskStore {
  private readonly paid = new Map<string, Kept>();
  private readonly other = new Map<string, Kept>();
  /** Paid task id by its draw id. */
  private readonly paidByDraw = new Map<string, string>();
  /** How many paid tasks each owner holds ('' for none). */
  private readonly paidPerOwner = new Map<string, number>();
  constructor(
    private readonly o: { maxPaid?: number; maxOther?: number; paidTtlMs?: number; now?: () => number } = {},
  ) {}

  private get now(): number {
    return (this.o.now ?? Date.now)();
  }

  async load(taskId: string, context?: ServerCallContext): Promise<Task | undefined> {
    const kept = this.paid.get(taskId) ?? this.other.get(taskId);
    if (!kept) return undefined;
    if (kept.until !== undefined && kept.until <= this.now) {
      this.dropPaid(taskId);
      return undefined;
    }
    if (kept.owner === undefined) return structuredClone(kept.task);
    const token = tokenOf(context);
    if (token && token !== 'malformed' && hashesEqual(hashToken(token), kept.owner)) return structuredClone(kept.task);
    return withheld(kept.task);
  }

  /** The task of a paid draw while it is kept: what a replay of its quote is answered with. */
  paidTaskOf(drawId: string): Task | undefined {
    const id = this.paidByDraw.get(drawId);
    const kept = id === undefined ? undefined : this.paid.get(id);
    if (!kept || (kept.until ?? Infinity) <= this.now) return undefined;
    return structuredClone(kept.task);
  }

  async save(task: Task, context?: ServerCallContext): Promise<void> {
    const token = tokenOf(context);
    const owner = token && token !== 'malformed' ? hashToken(token) : undefined;
    const prior = this.paid.get(task.id) ?? this.other.get(task.id);
    // Only its owner's requests change an owned task (the SDK saves on every event of a request),
    // and a paid draw's task is final: a replay answered with it changes nothing.
    if (prior?.owner !== undefined && prior.owner !== owner) return;
    if (this.paid.has(task.id)) return;
    this.other.delete(task.id);
    const drawId = drawIdOf(task);
    if (drawId !== undefined) {
      const now = this.now;
      const kept: Kept = { task: structuredClone(task), owner: owner ?? prior?.owner, until: now + (this.o.paidTtlMs ?? PAID_TASK_TTL_MS), drawId };
      this.paid.set(task.id, kept);
      this.paidByDraw.set(drawId, task.id);
      this.paidPerOwner.set(kept.owner ?? '', (this.paidPerOwner.get(kept.owner ?? '') ?? 0) + 1);
      // Oldest first, so the sweep stops at the first task still within its time.
      for (const [id, k] of this.paid) {
        if ((k.until ?? Infinity) > now) break;
        this.dropPaid(id);
      }
      while (this.paid.size > (this.o.maxPaid ?? MAX_PAID_TASKS)) this.dropPaid(this.oldestOfLargestOwner());
    } else {
      this.other.set(task.id, { task: structuredClone(task), owner: owner ?? prior?.owner });
      trim(this.other, this.o.maxOther ?? MAX_OTHER_TASKS);
    }
  }

  /** The oldest paid task of the owner holding the most (only when the set is full). */
  private oldestOfLargestOwner(): string {
    let largest = '';
    let most = 0;
    for (const [owner, n] of this.paidPerOwner) if (n > most) (largest = owner), (most = n);
    for (const [id, k] of this.paid) if ((k.owner ?? '') === largest) return id;
    throw new Error('paid task counts out of step with the paid tasks');
  }

  private dropPaid(id: string): void {
    const kept = this.paid.get(id);
    if (!kept) return;
    this.paid.delete(id);
    if (kept.drawId !== undefined && this.paidByDraw.get(kept.drawId) === id) this.paidByDraw.delete(kept.drawId);
    const owner = kept.owner ?? '';
    const n = (this.paidPerOwner.get(owner) ?? 1) - 1;
    if (n > 0) this.paidPerOwner.set(owner, n);
    else this.paidPerOwner.delete(owner);
  }

  get size(): { paid: number; other: number } {
    return { paid: this.paid.size, other: this.other.size };
  }
}

function trim(m: Map<string, Kept>, max: number): void {
  while (m.size > max) m.delete(m.keys().next().value as string);
}

function withheld(task: Task): Task {
  return {
    kind: 'task',
    id: task.id,
    contextId: task.contextId,
    status: { state: task.status.state, ...(task.status.timestamp ? { timestamp: task.status.timestamp } : {}) },
    artifacts: [],
    history: [],
    metadata: { withheld: WITHHELD_NOTE },
  };
}

function contentTypeError(detail: string): A2AError {
  return new A2AError(A2A_ERRORS.ContentTypeNotSupported, 'Incompatible content types', {
    detail,
    supported_input_modes: [JSON_MODE],
    supported_output_modes: [JSON_MODE],
  });
}

/** A refused request (429): JSON-RPC's implementation-defined server error, with the problem in `data`. */
export const RATE_LIMITED_CODE = -32029;
function rateLimited(p: Problem): A2AError {
  return new A2AError(RATE_LIMITED_CODE, `Too many requests: ${p.detail ?? p.title}`, p.toJSON());
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
  if (parts.length !== 1) throw invalidParams(problems.malformed('message.parts', `message.parts: send exactly one data part (got ${parts.length})`));
  const data = (parts[0] as { data?: unknown }).data;
  const parsed = drawSchema.safeParse(data);
  if (!parsed.success) throw invalidParams(malformed(parsed.error, 'Invalid draw request', data, 'message.parts.0.data'));
  const { balance_token, ...request } = parsed.data;
  const holder = context?.user instanceof BalanceHolder ? context.user : undefined;
  // A token in the data part takes from the same bucket as one in Authorization (a 429 problem).
  if (balance_token !== undefined) {
    try {
      holder?.limitToken(balance_token);
    } catch (err) {
      if (err instanceof Problem) throw rateLimited(err);
      throw err;
    }
  }
  const token = balance_token ?? tokenOf(context);
  const message: Message = { ...params.message, parts: [{ ...parts[0], kind: 'data', data: request }] };
  return {
    params: { ...params, message },
    context: new ServerCallContext(context?.requestedExtensions, new BalanceHolder(token, holder?.limitToken)),
  };
}

function dataMessage(taskId: string, contextId: string, data: Record<string, unknown>): Message {
  return { kind: 'message', role: 'agent', messageId: randomUUID(), taskId, contextId, parts: [{ kind: 'data', data }] };
}

class DrawExecutor implements AgentExecutor {
  constructor(
    private readonly service: DrawService,
    private readonly drawSchema: DrawSchema,
    /** Where a replayed draw's task is found (absent: a replay gets a task of its own). */
    private readonly paidTasks?: DrawTaskStore,
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
        // A replay (the quote was paid before) is answered with the task of that payment.
        const first = this.paidTasks?.paidTaskOf(d.receipt.draw_id);
        if (first) {
          bus.publish(first);
          bus.finished();
          return;
        }
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
  const store = opts.taskStore ?? new DrawTaskStore();
  return new DrawRequestHandler(card, store, new DrawExecutor(service, schema, store instanceof DrawTaskStore ? store : undefined), schema);
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
    const context = new ServerCallContext(undefined, new BalanceHolder(balanceTokenOf(ctx.get('authorization')), tokenLimitOf(ctx)));
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
