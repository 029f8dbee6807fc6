// @tier: quick  (npm run test:quick: in-process)
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { bulkAnnualCents, drawPriceCents, formatCents, formatMicros, parseAmountCents } from '../contract/money.ts';

test('draw price rounds up to the cent and is at least one cent', () => {
  assert.is(drawPriceCents(1, 10_000), 1);
  assert.is(drawPriceCents(3, 3_333), 1); // 9,999 micro-euros -> 1 cent
  assert.is(drawPriceCents(3, 3_334), 2); // 10,002 micro-euros -> 2 cents
  assert.is(drawPriceCents(0, 10_000), 1);
  assert.is(drawPriceCents(10, 10_000), 10);
});

test('bulk annual price rounds half up', () => {
  assert.is(bulkAnnualCents(5, 1_000), 1); // 5,000 micro = half a cent -> 1
  assert.is(bulkAnnualCents(4, 1_000), 0);
  assert.is(bulkAnnualCents(1_000_000, 2_000), 200_000);
});

test('formatting is exact', () => {
  assert.is(formatCents(500), '5.00');
  assert.is(formatCents(7), '0.07');
  assert.is(formatCents(-1234), '-12.34');
  assert.is(formatMicros(2_000), '0.002000');
  assert.is(formatMicros(12_345_678), '12.345678');
});

test('amount parsing refuses instead of rounding', () => {
  assert.is(parseAmountCents('5.00'), 500);
  assert.is(parseAmountCents('5'), 500);
  assert.is(parseAmountCents('5.5'), 550);
  for (const bad of ['5.001', '-5.00', '5e2', ' 5.00', '05.00', '', '5.', 5, null]) {
    assert.is(parseAmountCents(bad), null, String(bad));
  }
});

test.run();
