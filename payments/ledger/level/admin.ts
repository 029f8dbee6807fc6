// Online operations on the embedded ledger. LevelDB lets one process open the directory, so while
// the service runs, `ledger verify` and `ledger export` cannot open it themselves; instead the
// service answers them over a Unix socket beside the ledger (`<ledger dir>.sock`, mode 0600: only
// the service's own user can connect). Both read one LevelDB snapshot while the service keeps
// serving. PostgreSQL needs none of this: the CLI reads its own REPEATABLE READ snapshot.
import { createServer, request, type Server } from 'node:http';
import { chmod, unlink } from 'node:fs/promises';
import type { Ledger } from '../ledger.ts';
import { writeExport } from '../transfer.ts';

export function adminSocketPath(ledgerDir: string): string {
  return `${ledgerDir.replace(/\/+$/, '')}.sock`;
}

/**
 * The longest Unix socket path the kernel takes (sun_path is 108 bytes on Linux, 104 on macOS and
 * the BSDs, NUL included). Node does not refuse a longer one: it listens on the path cut short, and
 * the socket is then nowhere the CLI looks. So a longer path is refused, naming what to change.
 */
const MAX_SOCKET_PATH_BYTES = process.platform === 'linux' ? 107 : 103;

export function checkAdminSocketPath(socketPath: string): void {
  const bytes = Buffer.byteLength(socketPath);
  if (bytes > MAX_SOCKET_PATH_BYTES)
    throw new Error(
      `the ledger's admin socket ${socketPath} is ${bytes} bytes long, more than the ${MAX_SOCKET_PATH_BYTES} a Unix socket path may have: set LDS_VAR_DIR (or LDS_LEDGER_DIR) to a shorter folder`,
    );
}

/** Serves GET /verify (JSON violations) and GET /export (NDJSON) on the socket. */
export async function serveLedgerAdmin(ledger: Ledger, socketPath: string): Promise<{ close(): Promise<void> }> {
  checkAdminSocketPath(socketPath);
  // We hold the LevelDB lock, so a socket file left here belongs to a process that is gone.
  await unlink(socketPath).catch(() => {});
  const server: Server = createServer((req, res) => {
    const fail = (err: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(`error: ${(err as Error).message}\n`);
    };
    if (req.method === 'GET' && req.url === '/verify') {
      ledger.verify().then((v) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify(v));
      }, fail);
    } else if (req.method === 'GET' && req.url === '/export') {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      ledger
        .readSnapshot((records) => writeExport(records, (line) => (res.write(line) ? undefined : new Promise<void>((r) => res.once('drain', () => r())))))
        .then(() => res.end(), fail);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end('GET /verify or GET /export\n');
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketPath, () => resolve());
  });
  await chmod(socketPath, 0o600);
  return {
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }).then(() => unlink(socketPath).catch(() => {})),
  };
}

/** Asks the running service (GET path on its ledger socket); streams the body to `onChunk`. */
export function askRunningService(socketPath: string, path: '/verify' | '/export', onChunk: (chunk: string) => void | Promise<void>): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request({ socketPath, path, method: 'GET' }, (res) => {
      res.setEncoding('utf8');
      (async () => {
        let body = '';
        for await (const chunk of res) {
          if (res.statusCode !== 200) body += chunk;
          else await onChunk(chunk as string);
        }
        if (res.statusCode !== 200) throw new Error(`the running service could not ${path.slice(1)} the ledger: ${body.trim()}`);
      })().then(resolve, reject);
    });
    req.on('error', (err) => reject(new Error(`the ledger is held by another process, and its service does not answer on ${socketPath} (${(err as NodeJS.ErrnoException).code ?? err.message})`)));
    req.end();
  });
}
