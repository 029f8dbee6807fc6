// A TCP proxy that can stop forwarding without closing anything: a network partition as the two
// ends see it. For the high-availability tests (an instance cut off from its database; a standby's
// replication link stalled). HTTP-level faults are test/helpers/fault-proxy.ts.
//
//   pause()   every byte in both directions stops being read: the connections stay open, nothing
//             arrives, the senders' buffers fill and they block - as behind a blackhole. New
//             connections are accepted and held, unforwarded, as well.
//   resume()  everything held flows again, in order (a healed partition: TCP retransmits).
// A connection one end closes while paused is closed at the other end on resume.
import { createConnection, createServer, type Server, type Socket } from 'node:net';

export interface TcpProxy {
  /** the port the proxy listens on (127.0.0.1) */
  port: number;
  paused: boolean;
  pause(): void;
  resume(): void;
  /** connections open through the proxy now */
  open(): number;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket | null]>();
  let paused = false;
  /** client sockets accepted while paused: connected upstream on resume */
  const held: Socket[] = [];

  const forward = (from: Socket, to: Socket) => {
    from.on('data', (chunk) => {
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (!paused) from.resume();
    });
    from.on('end', () => to.end());
    from.on('error', () => to.destroy());
    from.on('close', () => to.destroy());
  };

  const connect = (client: Socket) => {
    const upstream = createConnection({ host: targetHost, port: targetPort });
    const pair: [Socket, Socket | null] = [client, upstream];
    pairs.add(pair);
    upstream.on('close', () => pairs.delete(pair));
    forward(client, upstream);
    forward(upstream, client);
    if (paused) {
      client.pause();
      upstream.pause();
    }
  };

  const server: Server = createServer({ pauseOnConnect: true }, (client) => {
    client.on('error', () => {});
    if (paused) held.push(client);
    else {
      connect(client);
      client.resume();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;

  const proxy: TcpProxy = {
    port,
    get paused() {
      return paused;
    },
    pause() {
      paused = true;
      for (const [a, b] of pairs) {
        a.pause();
        b?.pause();
      }
    },
    resume() {
      paused = false;
      for (const [a, b] of pairs) {
        a.resume();
        b?.resume();
      }
      for (const client of held.splice(0)) {
        if (client.destroyed) continue;
        connect(client);
        client.resume();
      }
    },
    open: () => pairs.size + held.length,
    close: () =>
      new Promise<void>((resolve) => {
        for (const [a, b] of pairs) {
          a.destroy();
          b?.destroy();
        }
        for (const c of held) c.destroy();
        server.close(() => resolve());
      }),
  };
  return proxy;
}
