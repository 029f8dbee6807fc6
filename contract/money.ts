// Money, exactly. Balances and charges are integer euro cents; per-unit rates are integer
// micro-euros (1e-6 EUR) so sub-cent rates stay exact. No floating point touches money.
// Both halves use these: the generator prices the catalogue, the service prices draws.

/** The one currency of balances, quotes and top-ups. */
export const CURRENCY = 'EUR' as const;

export const MICROS_PER_CENT = 10_000n;

/** Bulk annual price in cents: units × rate, rounded half up to the cent. */
export function bulkAnnualCents(units: number, rateMicro: number): number {
  const micros = BigInt(units) * BigInt(rateMicro);
  return Number((micros + MICROS_PER_CENT / 2n) / MICROS_PER_CENT);
}

/** Draw price in cents: units × rate, rounded up to the cent, at least one cent. */
export function drawPriceCents(units: number, rateMicro: number): number {
  const micros = BigInt(units) * BigInt(rateMicro);
  const cents = (micros + MICROS_PER_CENT - 1n) / MICROS_PER_CENT;
  return Number(cents < 1n ? 1n : cents);
}

/** 1234 -> "12.34" */
export function formatCents(cents: number): string {
  if (!Number.isSafeInteger(cents)) throw new RangeError(`not an integer amount of cents: ${cents}`);
  const neg = cents < 0;
  const abs = Math.abs(cents);
  return `${neg ? '-' : ''}${Math.floor(abs / 100)}.${String(abs % 100).padStart(2, '0')}`;
}

/** 2000 micro-euros -> "0.002000" */
export function formatMicros(micros: number): string {
  if (!Number.isSafeInteger(micros) || micros < 0) throw new RangeError(`not a micro-euro rate: ${micros}`);
  return `${Math.floor(micros / 1_000_000)}.${String(micros % 1_000_000).padStart(6, '0')}`;
}

/**
 * "5.00" -> 500. Exact decimal parsing: at most two decimals, no exponent, no sign, no rounding.
 * Returns null for anything else so the caller can name the field in its problem response.
 */
export function parseAmountCents(text: unknown): number | null {
  if (typeof text !== 'string') return null;
  const m = /^(0|[1-9][0-9]{0,9})(?:\.([0-9]{1,2}))?$/.exec(text);
  if (!m) return null;
  const cents = Number(m[1]) * 100 + Number((m[2] ?? '').padEnd(2, '0'));
  return Number.isSafeInteger(cents) ? cents : null;
}
