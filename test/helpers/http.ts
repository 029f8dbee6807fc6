// Small HTTP helpers every server test uses.
// The port helpers are the ones the web servers of `lds preview` start with.
import { createServer } from 'node:net';
import { freePort } from '../../generator/ports.ts';

export { canConnect, freePort } from '../../generator/ports.ts';

/** Whether a server could listen on 127.0.0.1:port right now. */
function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

/** Where the runner's slots' ports start: below Linux's ephemeral range (32768-60999), so no outgoing connection or port-0 server takes one. */
const SLOT_PORTS_FROM = 20_000;
const PORTS_PER_SLOT = 20;

/**
 * A port for a server whose published documents must name it (a build rendered for its origin),
 * chosen so that the build is byte for byte one made before. test/run.ts runs its files in
 * LDS_TEST_JOBS slots, one file at a time in each (LDS_TEST_SLOT), so a slot's ports are never
 * wanted by two files at once: this is the first of the slot's ports that is free, the same port
 * in every file of the slot and in every run. A build for it (at a fixed build clock) then has the
 * same documents as an earlier file's, and the build's compression cache (generator/compress-cache.ts)
 * has their variants, where a new port would compress the whole catalogue again (~1.5 CPU-s a build).
 * Outside the runner, or when all of the slot's ports are taken: any free port (freePort).
 */
export async function slotPort(): Promise<number> {
  const slot = Number(process.env.LDS_TEST_SLOT);
  if (Number.isInteger(slot) && slot >= 0) {
    const first = SLOT_PORTS_FROM + slot * PORTS_PER_SLOT;
    for (let port = first; port < first + PORTS_PER_SLOT; port++) if (await canListen(port)) return port;
  }
  return freePort();
}

export function postJson(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
