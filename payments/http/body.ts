// Reads a bounded JSON request body. The limit is enforced while streaming (a lying or absent
// Content-Length cannot make us buffer more), and every failure is a 4xx Problem, never a 5xx.
import type { Context } from 'koa';
import { Problem } from '../problem.ts';
import { problems } from '../draw/problems.ts';

export const tooLarge = (limit: number) => new Problem(413, 'body-too-large', 'Request body too large', `The request body may be at most ${limit} bytes.`);

/**
 * Why a request's Content-Type is not one this service reads, or undefined when it is. Request
 * bodies are UTF-8 JSON and the OpenAPI document names `application/json` only, so the type must be
 * exactly that, with no parameter or `charset=utf-8` (any case, optionally quoted). Anything else -
 * `charset=utf-16`, a `+json` type, another parameter - would be read as something it is not.
 */
export function jsonMediaTypeRefusal(header: string | undefined): string | undefined {
  // The two spellings nearly every client sends are accepted without building any message.
  if (header === 'application/json' || header === 'application/json; charset=utf-8') return undefined;
  const expected = 'Send the body as UTF-8 JSON with Content-Type: application/json (optionally with charset=utf-8)';
  if (!header) return `${expected}; the request has no Content-Type.`;
  const [essence, ...params] = header.split(';');
  const got = `, not ${JSON.stringify(header.slice(0, 100))}`;
  if (essence.trim().toLowerCase() !== 'application/json') return `${expected}${got}.`;
  for (const param of params) {
    const m = /^\s*([!#$%&'*+.^`|~\w-]+)\s*=\s*("?)([^"]*)\2\s*$/.exec(param);
    if (!m || m[1].toLowerCase() !== 'charset') return `${expected}${got}: the only parameter read is charset.`;
    if (m[3].toLowerCase() !== 'utf-8') return `${expected}${got}: bodies are read as UTF-8, so charset may only be utf-8.`;
  }
  return undefined;
}

/** In the service's words: where a JSON text breaks, without the parser's own message (which varies by runtime). */
export function jsonSyntaxDetail(text: string, err: unknown): string {
  if (text.trim() === '') return 'the body is empty; expected a JSON value';
  const message = err instanceof Error ? err.message : '';
  const at = /position (\d+)/.exec(message);
  const pos = at ? Number(at[1]) : /end of JSON input/i.test(message) ? text.length : undefined;
  if (pos === undefined) return `the body is not valid JSON (${text.length} characters)`;
  if (pos >= text.length) return `the body is not valid JSON: it ends after ${text.length} characters, before the value is complete`;
  return `the body is not valid JSON: it breaks at character ${pos + 1} of ${text.length}`;
}

const malformedBody = () => problems.malformed('(body)', 'The request body could not be read.');

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
  const refusal = jsonMediaTypeRefusal(ctx.get('content-type'));
  if (refusal) {
    ctx.req.resume();
    throw new Problem(415, 'unsupported-media-type', 'Unsupported media type', refusal, { field: 'Content-Type' });
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
    const detail = jsonSyntaxDetail(text, e);
    throw problems.malformed('(body)', detail[0].toUpperCase() + detail.slice(1) + '.');
  }
}
