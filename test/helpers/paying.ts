// Buyers paying draws in a loop while a test breaks something underneath (test/ha-*.test.ts): each
// worker quotes distinct units and pays the quote at once, alternating instances, and every answer
// is recorded with when it was asked and how long it took. A test waits on events in that record
// (`until`), never on fixed sleeps, and checks it against the ledger afterwards.
import { bearer, postJson } from './http.ts';

export interface Paid {
  quote_id: string;
  units: string[];
  /** the instance asked (its /v1 base) */
  base: string;
  status: number;
  /** ms since the epoch when the paying request was sent */
  at: number;
  /** how long it took to answer, ms */
  ms: number;
  drawId?: string;
  /** a refusal's problem body */
  problem?: { type: string; status: number; detail?: string; outcome?: string };
  retryAfter?: string | null;
}

export interface PayingLoop {
  readonly paid: Paid[];
  /** Resolves with the first answer (already recorded or still to come) that `match` accepts. */
  until(match: (p: Paid) => boolean, what: string, timeoutMs?: number): Promise<Paid>;
  stop(): Promise<void>;
}

export interface PayingOptions {
  bases: string[];
  token: string;
  product: string;
  refs: string[];
  workers?: number;
  /** client-side limit of one request (a hung request fails the test instead of hanging it) */
  requestTimeoutMs?: number;
}

export function startPaying(o: PayingOptions): PayingLoop {
  const paid: Paid[] = [];
  const waiters: { match: (p: Paid) => boolean; resolve: (p: Paid) => void }[] = [];
  let stopped = false;
  let n = 0;
  const record = (p: Paid) => {
    paid.push(p);
    for (const w of [...waiters]) if (w.match(p)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(p);
    }
  };
  const timeout = o.requestTimeoutMs ?? 30_000;
  const worker = async () => {
    while (!stopped) {
      const i = n++;
      const base = o.bases[i % o.bases.length]!;
      const units = [o.refs[i % o.refs.length]!, o.refs[(i * 7 + 3) % o.refs.length]!].filter((u, k, a) => a.indexOf(u) === k);
      let quoteId: string;
      try {
        const q = await postJson(`${base}/lds/draw`, { product_id: o.product, units });
        if (q.status !== 402) throw new Error(`quote: ${q.status} ${await q.text()}`);
        quoteId = ((await q.json()) as { quote_id: string }).quote_id;
      } catch (err) {
        if (stopped) return;
        throw err;
      }
      const at = Date.now();
      const res = await fetch(`${base}/lds/draw`, { method: 'POST', headers: { 'content-type': 'application/json', ...bearer(o.token) }, body: JSON.stringify({ product_id: o.product, units, quote_id: quoteId }), signal: AbortSignal.timeout(timeout) });
      const body = (await res.json()) as { receipt?: { draw_id: string }; type: string; status: number; detail?: string; outcome?: string };
      record({ quote_id: quoteId, units, base, status: res.status, at, ms: Date.now() - at, ...(res.status === 200 ? { drawId: body.receipt!.draw_id } : { problem: body, retryAfter: res.headers.get('retry-after') }) });
    }
  };
  const running = Array.from({ length: o.workers ?? 4 }, worker);
  return {
    paid,
    until(match, what, timeoutMs = 60_000) {
      const seen = paid.find(match);
      if (seen) return Promise.resolve(seen);
      return new Promise<Paid>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no paid draw answer ${what} within ${timeoutMs} ms (last: ${JSON.stringify(paid.slice(-3).map((p) => [p.status, p.problem?.detail]))})`)), timeoutMs);
        waiters.push({ match, resolve: (p) => (clearTimeout(timer), resolve(p)) });
      });
    },
    async stop() {
      stopped = true;
      await Promise.all(running);
    },
  };
}

/** Pays a quote again (a buyer's retry) and returns the draw id of the 200 answer; anything else throws. */
export async function payAgain(p: Paid, token: string, product: string): Promise<string> {
  const res = await postJson(`${p.base}/lds/draw`, { product_id: product, units: p.units, quote_id: p.quote_id }, bearer(token));
  const body = (await res.json()) as { receipt?: { draw_id: string } };
  if (res.status !== 200) throw new Error(`retry of quote ${p.quote_id.slice(0, 20)}…: ${res.status} ${JSON.stringify(body)}`);
  return body.receipt!.draw_id;
}
