// Local TCP ports: one free to listen on, and whether something listens on one. A module of its own
// with no imports but node:net, so the test starter of PostgreSQL (test/helpers/pg-start.ts) can be
// copied into a bare clone with it (test/pg-start.test.ts).
import { createConnection, createServer } from 'node:net';

/** A TCP port nothing listens on right now (on 127.0.0.1). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

/** True when something accepts a TCP connection on host:port right now. */
export function canConnect(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host, port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

