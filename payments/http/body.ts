// Reads a bounded JSON request body. The limit is enforced while streaming (a lying or absent
// Content-Length cannot make us buffer more), and every failure is a 4xx Problem, never a 5xx.
import type { Context } from 'koa';
import { Problem } from '../problem.ts';

export const tooLarge = (limit: number) => new Problem(413, 'body-too-large', 'Request body too large', `The request body may be at most ${limit} bytes.`);

const JSON_TYPE = /^application\/([\w.+-]*\+)?json\s*(;|$)/i;

const malformedBody = () => new Problem(400, 'malformed-request', 'Malformed request', 'The request body could not be read.', { field: '(body)' });

/** The state of one body being read; kept on the request so the listeners can be shared functions. */
interface BodyState {
  limit: number;
  size: number;
  first: Buffer | undefined;
  chunks: Buffer[] | undefined;
  resolve: (text: string) => void;
  reject: (err: Problem) => void;
}

const STATE = Symbol('lds.body');
type Req = Context['req'] & { [STATE]?: BodyState };

// Module-level listeners (EventEmitter calls them with `this` = the request): no closures per request.
function onData(this: Req, chunk: Buffer): void {
  const st = this[STATE]!;
  st.size += chunk.length;
  if (st.size > st.limit) {
    cleanup(this);
    this.resume(); // discard the rest; the 413 is written once the client stops sending
    st.reject(tooLarge(st.limit));
    return;
  }
  if (st.first === undefined) st.first = chunk;
  else (st.chunks ??= [st.first]).push(chunk);
}

function onEnd(this: Req): void {
  const st = this[STATE]!;
  cleanup(this);
  const body = st.chunks ? Buffer.concat(st.chunks) : st.first;
  st.resolve(body ? body.toString('utf8') : '');
}

function onError(this: Req): void {
  const st = this[STATE]!;
  cleanup(this);
  st.reject(malformedBody());
}

function cleanup(req: Req): void {
  req.off('data', onData);
  req.off('end', onEnd);
  req.off('error', onError);
  req[STATE] = undefined;
}

function readText(req: Req, limit: number): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    req[STATE] = { limit, size: 0, first: undefined, chunks: undefined, resolve, reject };
    // Events, not for-await: leaving a for-await loop early destroys the request stream and with it
    // the socket, so the client would see a reset instead of our 413.
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
  });
}

export async function readJsonBody(ctx: Context, limit: number): Promise<unknown> {
  const type = ctx.get('content-type');
  if (!JSON_TYPE.test(type)) {
    ctx.req.resume();
    throw new Problem(415, 'unsupported-media-type', 'Unsupported media type', `Send the body as application/json${type ? `, not ${type.slice(0, 100)}` : ''}.`);
  }
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > limit) {
    ctx.req.resume();
    throw tooLarge(limit);
  }
  const text = await readText(ctx.req, limit);
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Problem(400, 'malformed-request', 'Malformed request', `The body is not valid JSON: ${(e as Error).message.slice(0, 200)}`, { field: '(body)' });
  }
}
