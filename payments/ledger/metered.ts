// The ledger timed and counted for the metrics (payments/metrics.ts), below every transport.
import type { Metrics } from '../metrics.ts';
import type { DebitDrawInput, Ledger } from './ledger.ts';

/**
 * The ledger as the service uses it, timed for the metrics: every state change (call to durable
 * answer, both backends) and what paid draws sold. Counted here, below every transport, so a draw
 * paid over MCP or A2A is counted like one over HTTP, and a replay (nothing debited) is not.
 */
export function meteredLedger(ledger: Ledger, metrics: Metrics): Ledger {
  const debitDraw: Ledger['debitDraw'] = async (tokenHash, input: DebitDrawInput) => {
    const started = performance.now();
    try {
      const r = await ledger.debitDraw(tokenHash, input);
      metrics.ledgerCommit('debit', 'ok', (performance.now() - started) / 1000);
      if (r.kind === 'ok') {
        const refs = (input.draw as { refs?: unknown[] } | null)?.refs;
        metrics.paidDraw(input.productId ?? 'other', Array.isArray(refs) ? refs.length : 0, input.amountCents, input.currency);
      }
      return r;
    } catch (err) {
      metrics.ledgerCommit('debit', 'error', (performance.now() - started) / 1000);
      throw err;
    }
  };
  const creditTopup: Ledger['creditTopup'] = async (input) => {
    const started = performance.now();
    try {
      const r = await ledger.creditTopup(input);
      metrics.ledgerCommit('credit', 'ok', (performance.now() - started) / 1000);
      if (r.kind === 'ok') metrics.topupCredited(input.amountCents, input.currency);
      return r;
    } catch (err) {
      metrics.ledgerCommit('credit', 'error', (performance.now() - started) / 1000);
      throw err;
    }
  };
  // Every other member is the ledger's own; methods are bound once, not on every call.
  const bound = new Map<PropertyKey, unknown>([
    ['debitDraw', debitDraw],
    ['creditTopup', creditTopup],
  ]);
  return new Proxy(ledger, {
    get(target, prop) {
      const b = bound.get(prop);
      if (b !== undefined) return b;
      const v = Reflect.get(target, prop, target) as unknown;
      if (typeof v !== 'function') return v;
      const f = v.bind(target);
      bound.set(prop, f);
      return f;
    },
  });
}
