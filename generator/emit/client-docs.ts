// The "Buying from code" section of the documentation and its line in llms.txt: the client library
// (lds-catalogue/client, client/ in the repository) and the `lds buy` command, with the example
// product and query of the other sections, so the example names a product that exists. Text only:
// the generator does not import the client.
import { DRAW_EXAMPLE_LIMIT, exampleClaim, mainExampleProduct } from './examples.ts';
import { type DocSection, fence } from './markdown.ts';
import type { EmitContext } from './types.ts';

function example(ctx: EmitContext): { product_id: string; query: string; limit: number } {
  return exampleClaim(mainExampleProduct(ctx.catalogue.products, DRAW_EXAMPLE_LIMIT), DRAW_EXAMPLE_LIMIT).request;
}

/** The TypeScript example: a spending policy, an automatic top-up, the journal, the refusal. */
export function clientExample(baseUrl: string, ex: { product_id: string; query: string; limit: number }): string {
  return `import { writeFileSync } from 'node:fs';
import { LdsClient, PolicyRefusal } from 'lds-catalogue/client';

const client = await LdsClient.create({
  baseUrl: process.env.LDS_BASE_URL ?? '${baseUrl}',
  token: process.env.LDS_BALANCE_TOKEN || undefined, // none yet: the top-up below opens a balance
  policy: { maxPerDraw: '0.50', maxPerTopup: '5.00', maxPerDay: '2.00' },
  autoTopup: { amount: '5.00' }, // when the balance is short, top up through MPP and pay
  spt: process.env.LDS_SPT ?? 'spt_test_example', // the Shared Payment Token that pays top-ups
  onNewToken: (token) => writeFileSync('balance-token', token + '\\n', { mode: 0o600, flag: 'wx' }),
  journal: 'receipts.ndjson', // every payment and receipt, NDJSON, fsynced, mode 0600
});
try {
  const paid = await client.draw({ product_id: ${JSON.stringify(ex.product_id)}, query: ${JSON.stringify(ex.query)}, limit: ${ex.limit} });
  console.log(\`\${paid.units.length} units for \${paid.receipt.amount} EUR, receipt verified\`);
  console.log(\`balance: \${(await client.balance()).balance} EUR\`);
} catch (err) {
  if (!(err instanceof PolicyRefusal)) throw err;
  console.error(\`not bought: \${err.limit} is \${err.limitAmount} EUR, the draw costs \${err.asked} EUR\`);
} finally {
  await client.close();
}`;
}

export function clientSection(ctx: EmitContext): string {
  const ex = example(ctx);
  return [
    'The client library `lds-catalogue/client` (the `client/` folder of the service\'s repository, TypeScript for Node 20+, run with `tsx`) does the whole flow above for a program or an agent: quote, check a **local spending policy** before any money moves (per draw, per top-up, per rolling 24 hours, an `approve(quote)` callback above a threshold), top up through MPP when allowed, pay, **verify the receipt** against the service\'s JWKS, and append everything to a **receipts journal**. A refused payment is a `PolicyRefusal` naming the limit and the amount asked; nothing is sent. A receipt that does not verify is a `ReceiptError`, never a result. Lost answers, `429` (after `Retry-After`) and `503` are retried safely: a paid draw is resent with the same `quote_id`, which the service answers with the same draw.',
    '',
    fence('ts', clientExample(ctx.addresses.base_url, ex)),
    '',
    'The same from the command line, with the token in `LDS_BALANCE_TOKEN` or a file only you can read (never on the command line):',
    '',
    fence('sh', `npx lds buy --base-url ${ctx.addresses.base_url} --product ${ex.product_id} --query '${ex.query}' --limit ${ex.limit} \\\n  --max 0.50 --max-per-day 2.00 --auto-topup 5.00 --token-file balance-token --journal receipts.ndjson --out units.json\nnpx lds receipts verify receipts.ndjson   # re-verifies every receipt offline\nnpx lds balance --token-file balance-token\nnpx lds statement --csv --token-file balance-token`),
  ].join('\n');
}

export const CLIENT_DOC_SECTIONS: DocSection[] = [{ title: 'Buying from code', render: clientSection }];

/** The line of llms.txt's buying flow that points at the client. */
export function llmsClientLine(): string {
  return '5. From code: the client library lds-catalogue/client (LdsClient: draw() quotes, checks a local spending policy, tops up when allowed, pays, verifies the signed receipt against /.well-known/jwks.json and journals it; safe retries) or the command `npx lds buy --product P --query Q --max 0.50`. See "Buying from code" in the documentation.';
}
