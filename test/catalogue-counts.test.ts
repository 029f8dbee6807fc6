// Issue 23 item 13: counts in published text come from the build. A hand-written "Fourteen cited
// data products" in catalog-src stayed in llms.txt beside the build's "15 data products" once a
// product was added. Descriptions now state no count (`lds check` refuses one, naming the field),
// and every document says the number the catalogue has.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { emitContext } from '../generator/build.ts';
import { EMITTERS } from '../generator/emit/index.ts';
import { loadCatalogSrc } from '../generator/load.ts';
import { CatalogErrors } from '../generator/errors.ts';
import { cli, copyCatalogSrc, editJson } from './helpers/build.ts';
import { BUILT_AT, fakeStore } from './helpers/conformance.ts';

/** Number words a hand-written count would use, and digits before "products". */
const COUNT_WORDS = /\b(two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty)\b[\w -]{0,40}\b(products|sources)\b/i;

test('a product added: llms.txt, docs, pages and agent card say the new count, and no hand-written one', async () => {
  const src = await copyCatalogSrc();
  const before = await loadCatalogSrc(src);
  await copyFile(join(src, 'products/svc-energy-eu.json'), join(src, 'products/svc-extra-eu.json'));
  await editJson(join(src, 'products/svc-extra-eu.json'), (p) => {
    p.product_id = 'svc-extra-eu';
    p.slug = 'extra';
    p.title = 'Extra data product';
  });
  await editJson(join(src, 'catalogue.json'), (c) => c.agent_skill_order.push('svc-extra-eu'));
  const cat = await loadCatalogSrc(src);
  const n = before.products.length + 1;
  assert.is(cat.products.length, n);
  const ctx = emitContext(cat, cat.settings.addresses, fakeStore(cat), BUILT_AT);
  assert.is(ctx.catalogue.total, n);
  const files = new Map(EMITTERS.flatMap((e) => e(ctx)).map((f) => [f.path, f.body]));
  const llms = files.get('llms.txt')!;
  assert.match(llms, `${n} data products`);
  for (const [path, body] of files) {
    const stale = COUNT_WORDS.exec(body);
    assert.not.ok(stale, `${path} states a count by hand: "${stale?.[0]}"`);
    assert.not.match(body, new RegExp(`\\b${n - 1} (data )?products\\b`), `${path} says ${n - 1} products`);
  }
  assert.match(files.get('docs/index.md')!, `The service publishes ${n} data products`);
  assert.match(files.get('.well-known/agent-card.json')!, `Each of the ${n} products is one skill`);
});

test('lds check refuses a count written into a description, naming the file and field', async () => {
  const src = await copyCatalogSrc();
  await editJson(join(src, 'catalogue.json'), (c) => (c.description = `Fourteen cited data products, ${c.description}`));
  await editJson(join(src, 'products/svc-energy-eu.json'), (p) => (p.description = `${p.description} Built from 12 sources.`));
  const err = await loadCatalogSrc(src).then(() => null, (e: unknown) => e);
  assert.ok(err instanceof CatalogErrors, `refused: ${String(err)}`);
  const r = cli(['check', '--src', src]);
  assert.is(r.code, 1);
  assert.match(r.stderr + r.stdout, /catalogue\.json#\/description: states a count \("Fourteen cited data products"\)/);
  assert.match(r.stderr + r.stdout, /products\/svc-energy-eu\.json#\/description: states a count \("12 sources"\)/);
});

test.run();
