// A small HTTP proxy in front of a test server that can misbehave on purpose, for the client tests
// (test/client-buy.test.ts): answer for the service (429, 503), forward and then cut the connection
// before the answer reaches the client, or forward and alter the answer. It logs every request it
// saw (method, path, body) so a test can check what the client sent.
import { createServer, type IncomingMessage, type Server } from 'node:http';

export interface SeenRequest {
  method: string;
  path: string;
  body: string;
}

export type ProxyAction =
  | { reply: { status: number; headers?: Record<string, string>; body?: string } }
  | { drop: true } // forward, let the service answer, then destroy the client's connection
  | { alter: (body: string) => string }; // forward, change the answer's body

export interface FaultProxy {
  url: string;
  seen: SeenRequest[];
  /** decides per request; undefined forwards it unchanged */
  rule: (r: SeenRequest) => ProxyAction | undefined;
  close(): Promise<void>;
}

const HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'content-length', 'content-encoding', 'host']);

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (d) => (body += d));
    req.on('end', () => resolve(body));
    req.on('error', reject);
  });
}

export async function startFaultProxy(target: string): Promise<FaultProxy> {
  const proxy: FaultProxy = { url: '', seen: [], rule: () => undefined, close: async () => undefined };
  const server: Server = createServer(async (req, res) => {
    const body = await readBody(req);
    const seen = { method: req.method!, path: req.url!, body };
    proxy.seen.push(seen);
    const action = proxy.rule(seen);
    if (action && 'reply' in action) {
      res.writeHead(action.reply.status, { 'content-type': 'application/problem+json', ...action.reply.headers });
      res.end(action.reply.body ?? JSON.stringify({ type: 'https://example.org/problems/injected', title: `injected ${action.reply.status}`, status: action.reply.status }));
      return;
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && typeof v === 'string') headers[k] = v;
    const upstream = await fetch(`${target}${req.url}`, { method: req.method, headers, ...(body && req.method !== 'GET' && req.method !== 'HEAD' ? { body } : {}) });
    let text = await upstream.text();
    if (action && 'drop' in action) {
      // The service has answered (and committed); the client never hears it.
      req.socket.destroy();
      return;
    }
    if (action && 'alter' in action) text = action.alter(text);
    const out: Record<string, string> = {};
    upstream.headers.forEach((v, k) => {
      if (!HOP.has(k)) out[k] = v;
    });
    res.writeHead(upstream.status, out);
    res.end(text);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}
