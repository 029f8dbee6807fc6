// Reads a bounded JSON request body. The limit is enforced while streaming (a lying or absent
// Content-Length cannot make us buffer more), and every failure is a 4xx Problem, never a 5xx.
import type { Context } from 'koa';
import { Problem } from './problem.ts';

export const tooLarge = (limit: number) => new Problem(413, 'body-too-large', 'Request body too large', `The request body may be at most ${limit} bytes.`);

export async function readJsonBody(ctx: Context, limit: number): Promise<unknown> {
  const type = ctx.get('content-type');
  if (!/^application\/([\w.+-]*\+)?json\s*(;|$)/i.test(type)) {
    ctx.req.resume();
    throw new Problem(415, 'unsupported-media-type', 'Unsupported media type', `Send the body as application/json${type ? `, not ${type.slice(0, 100)}` : ''}.`);
  }
  const declared = Number(ctx.get('content-length') || '0');
  if (declared > limit) {
    ctx.req.resume();
    throw tooLarge(limit);
  }
  const text = await new Promise<string>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    // Events, not for-await: leaving a for-await loop early destroys the request stream and with it
    // the socket, so the client would see a reset instead of our 413.
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        ctx.req.resume(); // discard the rest; the 413 is written once the client stops sending
        reject(tooLarge(limit));
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = () => {
      cleanup();
      resolve(Buffer.concat(chunks).toString('utf8'));
    };
    const onError = () => {
      cleanup();
      reject(new Problem(400, 'malformed-request', 'Malformed request', 'The request body could not be read.', { field: '(body)' }));
    };
    const cleanup = () => {
      ctx.req.off('data', onData);
      ctx.req.off('end', onEnd);
      ctx.req.off('error', onError);
    };
    ctx.req.on('data', onData);
    ctx.req.on('end', onEnd);
    ctx.req.on('error', onError);
  });
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new Problem(400, 'malformed-request', 'Malformed request', `The body is not valid JSON: ${(e as Error).message.slice(0, 200)}`, { field: '(body)' });
  }
}
