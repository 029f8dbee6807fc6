// The documentation at docs_url (docs/index.md, Markdown) and llms.txt (plain text for language
// models and agents), both generated from the finished catalogue: every count, price, licence and
// address comes from ctx, nothing is typed in twice.
//
// The Markdown document is a list of sections, each a separate function. Sections about other
// ways to buy (MCP, A2A) go into BUYING_CHANNEL_SECTIONS below; they are placed after the HTTP
// buying flow and before the error reference.
import type { CatalogueProduct } from '../catalog.ts';
import { type Emitter, type EmitContext, MARKDOWN_TYPE, TEXT_TYPE } from './types.ts';
import { DOCS_WHAT, docsPagePath, docsPath, machineDocuments, siteUrls } from './site.ts';
import { markdownPage } from './markdown-page.ts';
import { esc, link } from './page.ts';
import { DRAW_BOUNDS } from './openapi.ts';
import { AGENT_DOC_SECTIONS } from './agent-docs.ts';
import { type DocSection, fence, groupDigits, headingAnchor as anchor, mdTable, shq } from './markdown.ts';
import { CREDENTIAL_DOC_SECTIONS, TOPUP_REPLAY_RULE, exampleTopupBody, llmsTopupStep } from './topup-docs.ts';
import { DRAW_EXAMPLE_LIMIT, exampleClaim, mainExampleProduct } from './examples.ts';
import { PREVIEW_DOC_SECTIONS, SOURCE_DOC_SECTIONS } from './source-docs.ts';
import { CLIENT_DOC_SECTIONS, llmsClientLine } from './client-docs.ts';
import { PROBLEM_TYPES, problemBase } from '../../contract/problems.ts';
import { STATEMENT_PAGE } from '../../contract/limits.ts';

// ---------------------------------------------------------------------------------------------
// Small Markdown helpers

export { mdCell, mdTable } from './markdown.ts';

/** GitHub's heading anchor of a section title (plain text). */
export { headingAnchor as anchor } from './markdown.ts';


export { groupDigits } from './markdown.ts';

// ---------------------------------------------------------------------------------------------
// What the examples use: the first product whose example query fills the limit, and that query
// (see examples.ts), so every example names a product that exists and says what it returns.

function exampleProduct(ctx: EmitContext): CatalogueProduct {
  return mainExampleProduct(ctx.catalogue.products, DRAW_EXAMPLE_LIMIT);
}

function exampleDraw(ctx: EmitContext): { product_id: string; query: string; limit: number } {
  return exampleClaim(exampleProduct(ctx), DRAW_EXAMPLE_LIMIT).request;
}

/** The top-up request body the examples send (amount as a decimal string in EUR). */
export { exampleTopupBody };

/** Every problem type of the service (contract/problems.ts) with its `type` URI under this build's docs_url. */
export function problemTypes(ctx: EmitContext): { type: string; status: string; when: string }[] {
  const base = problemBase(ctx.addresses.docs_url);
  return PROBLEM_TYPES.map((t) => ({ type: base + t.slug, status: String(t.status), when: t.meaning }));
}

// ---------------------------------------------------------------------------------------------
// Sections

export function introSection(ctx: EmitContext): string {
  const c = ctx.catalogue;
  const u = siteUrls(ctx);
  return [
    c.description,
    '',
    `The service publishes ${c.total} data products, one per sectoral data space. Each product is a cited collection of EU legal and related material built from several sources; every source has its own licence ruling, and a source that is *held* serves no rows yet. Counts and prices below are the values of catalogue version \`${c.version}\` (generated ${c.generated_at}); the live values are always in the [catalogue](${u.catalogue}).`,
    '',
    'Data is bought per draw: a draw without payment answers **402 Payment Required** with a quote; a prepaid balance, funded through the Machine Payments Protocol (MPP) with a Stripe Shared Payment Token, pays the repeated draw. Bulk annual subscription checkout is not live yet.',
    '',
    `Catalogue content is licensed ${c.licence.title} (${c.licence.url}) and published by ${c['dct:publisher']} (${c.publisher_url}).`,
  ].join('\n');
}

export function addressesSection(ctx: EmitContext): string {
  const u = siteUrls(ctx);
  const a = ctx.addresses;
  return [
    mdTable(['What', 'Address'], [
      ['API base (`base_url`)', a.base_url],
      ['Catalogue', u.catalogue],
      ['Quote and draw', `POST ${u.draw}`],
      ['Top up a balance', `POST ${u.topup}`],
      ['Read a balance', `GET ${u.balance}`],
      ['MCP tool endpoint', a.mcp_url],
      ['Documentation (this file)', a.docs_url],
      ['Catalogue for people', u.home],
      ['Publisher', a.publisher_url],
    ]),
  ].join('\n');
}

export function browseSection(ctx: EmitContext): string {
  const u = siteUrls(ctx);
  const p = exampleProduct(ctx);
  const docs = machineDocuments(ctx);
  return [
    'Everything below is a static, cacheable document; none needs credentials. Each carries the catalogue version as its strong `ETag`, so `If-None-Match` answers `304 Not Modified` until the catalogue changes.',
    '',
    mdTable(['Document', 'Address', 'Type', 'What'], docs.map((d) => [d.label, d.url, d.type, d.what])),
    '',
    'List the products with their live counts and prices:',
    '',
    fence('sh', `curl -s ${u.catalogue}`),
    '',
    `Read the DCAT-AP description of one product (here \`${p.product_id}\`):`,
    '',
    fence('sh', `curl -s ${u.dcat(p.product_id)}`),
    '',
    'Fetch the agent card, the machine index and the OpenAPI specification:',
    '',
    fence('sh', [`curl -s ${u.agentCard}`, `curl -s ${u.machineIndex}`, `curl -s ${u.openapi}`].join('\n')),
    '',
    `Each product in the catalogue has \`live_unit_count\` (units you can buy), \`live_row_count\` (stored rows), \`pricing\` (\`draw_unit_price\` and \`bulk_annual_price\`, decimal strings in EUR), \`licence_summary\` and \`licence_basis\` (per source) and \`_health\` (\`rollup\` and \`rollup_reason\`). The catalogue is cached for ${ctx.cat.settings.cache_ttl_seconds} seconds (\`_health.cache_ttl_seconds\`).`,
  ].join('\n');
}

export function quoteSection(ctx: EmitContext): string {
  const u = siteUrls(ctx);
  const ex = exampleDraw(ctx);
  const p = exampleProduct(ctx);
  return [
    `Ask for units of a product, either by a full-text \`query\` with a \`limit\` (1 to ${DRAW_BOUNDS.maxLimit}), or by 1 to ${DRAW_BOUNDS.maxUnits} unit references in \`units\`. Without payment the answer is **402 Payment Required** with a quote: the \`amount\` to pay and a \`quote_id\`. Nothing is charged and nothing is stored.`,
    '',
    fence('sh', `curl -i -X POST ${u.draw} \\\n  -H 'Content-Type: application/json' \\\n  -d ${shq(JSON.stringify(ex))}`),
    '',
    `What it returns at catalogue version \`${ctx.catalogue.version}\`: ${exampleClaim(p, DRAW_EXAMPLE_LIMIT).sentence} Each product's example query, and a free preview of what it sells, are listed under [Free previews and example queries](#free-previews-and-example-queries).`,
    '',
    'Or name the units: a reference is `<source>:<local id>`, as listed in a quote\'s `resolved_units` or a delivered unit\'s `ref`:',
    '',
    fence('sh', `curl -i -X POST ${u.draw} \\\n  -H 'Content-Type: application/json' \\\n  -d ${shq(JSON.stringify({ product_id: p.product_id, units: ['<UNIT_REF>'] }))}`),
    '',
    `The quote is bound to the units it resolved (\`resolved_units\`) and is valid ${DRAW_BOUNDS.quoteLifetimeSeconds / 60} minutes (\`expires_at\`); \`breakdown\` gives the amount per source and \`pay_with\` the request that pays it. The price is the number of units times the product's draw price per unit (for \`${p.product_id}\`: ${p.pricing.draw_unit_price} ${p.pricing.currency}), rounded up to the cent, at least ${p.pricing.draw_minimum_charge} ${p.pricing.currency}. \`currency\` may be sent and must be ${ctx.catalogue.currency}.`,
    '',
    `When you send your balance token (\`Authorization: Bearer <BALANCE_TOKEN>\`) with the first request and the balance can pay the quote, the quote says \`payable_from_balance: true\` and the 402 answer carries a \`Link\` header with \`rel="payment"\`.`,
  ].join('\n');
}

export function topupSection(ctx: EmitContext): string {
  const u = siteUrls(ctx);
  const body = shq(JSON.stringify(exampleTopupBody(ctx)));
  return [
    `A prepaid balance pays draws. Fund it through the Machine Payments Protocol (MPP) with a Stripe Shared Payment Token (SPT). The body names the \`amount\` (a decimal string, at least **${ctx.catalogue.minimum_topup} ${ctx.catalogue.currency}**) and optionally the \`currency\`.`,
    '',
    '1. Ask for the top-up. The answer is **402** with an MPP challenge in the `WWW-Authenticate: Payment …` header (method `stripe`, intent `charge`, the amount and currency in its `request`).',
    '',
    fence('sh', `curl -i -X POST ${u.topup} \\\n  -H 'Content-Type: application/json' \\\n  -d ${body}`),
    '',
    '2. Obtain a Shared Payment Token (`spt_…`) for that amount from Stripe and build the MPP credential: the challenge echoed back with the payload `{"spt": "<SHARED_PAYMENT_TOKEN>"}`, base64url-encoded JSON exactly as [The payment credential](#the-payment-credential) shows (with a script for both legs and the sandbox test tokens). Repeat the request with it to open a new balance:',
    '',
    fence('sh', `curl -s -X POST ${u.topup} \\\n  -H 'Content-Type: application/json' \\\n  -H 'Authorization: Payment <MPP_CREDENTIAL>' \\\n  -d ${body}`),
    '',
    '3. The **200** answer returns your `balance_token` (shown once), the `balance` and a `Payment-Receipt` header. Keep the token secret: whoever holds it can spend the balance. A challenge credits at most once.',
    '',
    'To add to an existing balance, send the balance token in `Authorization` and the credential in `Payment-Authorization`:',
    '',
    fence('sh', `curl -s -X POST ${u.topup} \\\n  -H 'Content-Type: application/json' \\\n  -H 'Authorization: Bearer <BALANCE_TOKEN>' \\\n  -H 'Payment-Authorization: Payment <MPP_CREDENTIAL>' \\\n  -d ${body}`),
    '',
    'A credential in `Payment-Authorization` without the Bearer token is refused with 401 `balance-token-required` (nothing is charged): the service cannot tell which balance to credit.',
    '',
    `**Resending a used credential.** ${TOPUP_REPLAY_RULE}`,
  ].join('\n');
}

export function paySection(ctx: EmitContext): string {
  const u = siteUrls(ctx);
  const ex = exampleDraw(ctx);
  return [
    'Repeat the quoted request, unchanged, with the `quote_id` from the 402 answer and your balance token. The quote is paid from the balance exactly once: sending it again returns the same draw without a second charge.',
    '',
    fence('sh', `curl -s -X POST ${u.draw} \\\n  -H 'Content-Type: application/json' \\\n  -H 'Authorization: Bearer <BALANCE_TOKEN>' \\\n  -d ${shq(JSON.stringify({ ...ex, quote_id: '<QUOTE_ID>' }))}`),
    '',
    'The **200** answer carries the `units` (each with its citation, text rows and licence), an `attribution` list to reproduce with the data, and a signed `receipt` (`draw_id`, `unit_count`, `units_sha256`, `amount`, `balance_after`, `catalogue_version`, `signature`). When the balance is short, the answer is 402 `insufficient-balance` with the quote: top up and repeat.',
    '',
    `To check a receipt with nothing but the service's public keys (${siteUrls(ctx).origin}/.well-known/jwks.json): take the key whose \`kid\` is \`signature.kid\`, remove \`signature\` from the receipt, serialise the rest as RFC 8785 canonical JSON and verify \`signature.value\` (base64url) as its Ed25519 signature. Top-up answers carry a signed receipt too.`,
  ].join('\n');
}

export function balanceSection(ctx: EmitContext): string {
  const u = siteUrls(ctx);
  return [
    'Read the balance and its statement (top-ups, draws, refunds and adjustments, newest first):',
    '',
    fence('sh', `curl -s ${u.balance} \\\n  -H 'Authorization: Bearer <BALANCE_TOKEN>'`),
    '',
    `${STATEMENT_PAGE.defaultLines} lines a page: \`?limit=\` (up to ${STATEMENT_PAGE.maxLines}) and \`?after=\` with the \`next_after\` of the previous page read further; \`?format=csv\` answers the same page as CSV. To replace a token (say it leaked), \`POST\` to \`…/lds/balance/token\` with it as the Bearer token: the answer carries a new token for the same balance and the old one stops working at once.`,
  ].join('\n');
}

export function errorsSection(ctx: EmitContext): string {
  return [
    'Every refusal is an RFC 9457 problem (`Content-Type: application/problem+json`) with `type`, `title`, `status` and usually `detail`; some add `field` (the failing request field; `detail` then says in words what is allowed), `unknown` (unit references not in the product), `reason` (why a product has no live units yet) or `quote` (a fresh or the unpaid quote). Branch on `type`:',
    '',
    mdTable(['type', 'Status', 'When'], problemTypes(ctx).map((p) => [`[\`${p.type}\`](${p.type})`, p.status, p.when])),
    '',
    `Each \`type\` is the address of its own page, which says what it means and what to do ([all of them](${problemBase(ctx.addresses.docs_url)})).`,
    '',
    `Bounds: \`units\` 1 to ${DRAW_BOUNDS.maxUnits} references, \`limit\` 1 to ${DRAW_BOUNDS.maxLimit}, \`query\` at most ${DRAW_BOUNDS.maxQueryChars} characters, request body at most ${DRAW_BOUNDS.maxBodyBytes} bytes; quotes are valid ${DRAW_BOUNDS.quoteLifetimeSeconds / 60} minutes. Clients are rate limited per address and per balance token (429 with \`Retry-After\`; the \`RateLimit-Policy\` and \`RateLimit\` headers say how much is left).`,
  ].join('\n');
}

/** Licences of a product in short: the distinct licences of its served sources, and how many are held. */
export function licenceBrief(p: CatalogueProduct): string {
  const licences = [...new Set(p.licence_summary.flatMap((s) => s.licences))];
  const held = p.licence_basis.filter((b) => b.verdict === 'held').length;
  return `${licences.join(', ') || 'none'}${held ? ` (${held} source${held > 1 ? 's' : ''} held)` : ''}`;
}

export function productsSection(ctx: EmitContext): string {
  const c = ctx.catalogue;
  const u = siteUrls(ctx);
  return [
    `${c.total} products. Prices in ${c.currency}: the draw price is per unit; the bulk annual price is the per-unit rate times the live unit count (bulk checkout is not live yet). Counts are those of version \`${c.version}\`.`,
    '',
    mdTable(
      ['product_id', 'Title', 'Data space', 'Units', 'Rows', 'Draw price per unit', 'Bulk annual price', 'Licences', 'Health'],
      c.products.map((p) => [
        `[\`${p.product_id}\`](${u.productPage(p.product_id)})`,
        p.title,
        `${p.sectoral_ds} (${p.tag})`,
        groupDigits(p.live_unit_count),
        groupDigits(p.live_row_count),
        p.pricing.draw_unit_price,
        p.pricing.bulk_annual_price,
        licenceBrief(p),
        p._health.rollup,
      ]),
    ),
    '',
    'Units: **P** is one English pivot paragraph with all its language versions; **R** is one source row; **A** is one Akoma Ntoso provision (`akn_act`, `akn_eid`) with all its versions across kind and language. Each product\'s `unit_definition` says which kind each source sells.',
    '',
    'Health and its reason, per product:',
    '',
    ...c.products.map((p) => `- \`${p.product_id}\`: **${p._health.rollup}**: ${p._health.rollup_reason}`),
  ].join('\n');
}

export function licencesSection(ctx: EmitContext): string {
  const c = ctx.catalogue;
  // One row per source, with the products that use it (sources are shared between products).
  const bySource = new Map<string, { products: string[]; basis: CatalogueProduct['licence_basis'][number]; summary: CatalogueProduct['licence_summary'][number] }>();
  for (const p of c.products) {
    p.licence_basis.forEach((b, i) => {
      const entry = bySource.get(b.source) ?? { products: [], basis: b, summary: p.licence_summary[i]! };
      entry.products.push(p.product_id);
      bySource.set(b.source, entry);
    });
  }
  const rows = [...bySource.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([source, e]) => [
      `\`${source}\``,
      e.summary.from,
      e.basis.verdict === 'held' ? 'held: no rows served' : e.summary.licences.join(', '),
      e.basis.attribution ?? '',
      e.basis.conditions ?? '',
      e.basis.terms_url ?? '',
      e.products.map((id) => `\`${id}\``).join(', '),
    ]);
  return [
    `The catalogue and these documents are licensed ${c.licence.title} (${c.licence.url}); attribute ${c['dct:publisher']}.`,
    '',
    'The data you draw is licensed per source, by the ruling below. Each delivered unit carries its licence, and a paid draw answers with the `attribution` lines to reproduce with the data. Held sources have no ruling yet and serve nothing.',
    '',
    mdTable(['Source', 'From', 'Licence', 'Attribution', 'Conditions', 'Terms', 'Products'], rows),
  ].join('\n');
}

export function aboutSection(ctx: EmitContext): string {
  const c = ctx.catalogue;
  return `Generated from catalogue version \`${c.version}\` at ${c.generated_at}${c.store_version ? ` (unit store \`${c.store_version}\`)` : ' (no unit store built: every count is zero)'}. A shorter guide for language models and agents is at ${siteUrls(ctx).llms}.`;
}

// ---------------------------------------------------------------------------------------------
// Assembly

/**
 * Hook for other ways to buy, e.g. "Buying through MCP" and "Buying through A2A": add a
 * DocSection here (import it from its own module). They appear after "Read your balance" and
 * before "Errors", in this order.
 */
export const BUYING_CHANNEL_SECTIONS: DocSection[] = [...CLIENT_DOC_SECTIONS, ...AGENT_DOC_SECTIONS];

export const SECTIONS_BEFORE_CHANNELS: DocSection[] = [
  { title: 'Addresses', render: addressesSection },
  { title: 'Browse the catalogue', render: browseSection },
  { title: 'Quote a draw', render: quoteSection },
  { title: 'Top up a prepaid balance', render: topupSection },
  ...CREDENTIAL_DOC_SECTIONS,
  { title: 'Pay the draw', render: paySection },
  { title: 'Read your balance', render: balanceSection },
];

export const SECTIONS_AFTER_CHANNELS: DocSection[] = [
  { title: 'Errors', render: errorsSection },
  { title: 'Products', render: productsSection },
  ...PREVIEW_DOC_SECTIONS,
  { title: 'Licences and attribution', render: licencesSection },
  ...SOURCE_DOC_SECTIONS,
  { title: 'About this document', render: aboutSection },
];

export function docSections(): DocSection[] {
  return [...SECTIONS_BEFORE_CHANNELS, ...BUYING_CHANNEL_SECTIONS, ...SECTIONS_AFTER_CHANNELS];
}

export function renderDocs(ctx: EmitContext, sections: DocSection[] = docSections()): string {
  const titles = sections.map((s) => s.title);
  if (new Set(titles).size !== titles.length) throw new Error(`documentation sections repeat a title: ${titles.join(', ')}`);
  const parts = [
    `# ${ctx.catalogue['dct:title']}`,
    introSection(ctx),
    '## Contents',
    sections.map((s) => `- [${s.title}](#${anchor(s.title)})`).join('\n'),
    ...sections.flatMap((s) => [`## ${s.title}`, s.render(ctx).trimEnd()]),
  ];
  return parts.join('\n\n') + '\n';
}

/** llms.txt (llmstxt.org): title, summary, the buying flow in brief, then link lists. */
export function renderLlmsTxt(ctx: EmitContext): string {
  const c = ctx.catalogue;
  const u = siteUrls(ctx);
  const ex = exampleDraw(ctx);
  const lines = [
    `# ${c['dct:title']}`,
    '',
    `> ${c.description}`,
    '',
    `${c.total} data products of cited EU legal material, one per sectoral data space, bought per draw from a prepaid balance. Catalogue version ${c.version} (${c.generated_at}). Catalogue content: ${c.licence.title}, ${c['dct:publisher']}.`,
    '',
    'How to buy (HTTP, JSON bodies):',
    `1. Quote: POST ${u.draw} with {"product_id", "query", "limit"} or {"product_id", "units"}. Answer: 402 with the quote (quote_id, amount in ${c.currency}). Example body: ${JSON.stringify(ex)} (${exampleClaim(exampleProduct(ctx), DRAW_EXAMPLE_LIMIT).sentence.replace(/`/g, '')})`,
    llmsTopupStep(ctx),
    `3. Pay: repeat the draw with "quote_id" and Authorization: Bearer <balance_token>. Answer: 200 with the units, attribution and a receipt. A quote is paid exactly once.`,
    `4. Balance: GET ${u.balance} with Authorization: Bearer <balance_token>.`,
    llmsClientLine(),
    'Errors are application/problem+json (RFC 9457); branch on "type".',
    '',
    '## Docs',
    '',
    `- [Documentation](${u.docsMarkdown}): the full guide with curl examples, errors, products and licences (Markdown)`,
    ...machineDocuments(ctx)
      .filter((d) => d.url !== u.docs && d.url !== u.docsMarkdown && d.url !== u.llms)
      .map((d) => (d.template ? `- ${d.label}: ${d.url}: ${d.what} (${d.type})` : `- [${d.label}](${d.url}): ${d.what} (${d.type})`)),
    `- [MCP tool endpoint](${u.mcp}): the same draw and balance operations as tools`,
    '',
    '## Products',
    '',
    ...c.products.map(
      (p) =>
        `- [${p.title}](${p.dcat_url}): \`${p.product_id}\`, ${p.sectoral_ds} (${p.tag}). ${groupDigits(p.live_unit_count)} units, ${groupDigits(p.live_row_count)} rows; draw ${p.pricing.draw_unit_price} ${p.pricing.currency} per unit; bulk annual ${p.pricing.bulk_annual_price} ${p.pricing.currency}; licences ${licenceBrief(p)}; health ${p._health.rollup}.`,
    ),
    '',
    '## Optional',
    '',
    `- [Catalogue for people](${u.home}): the same products as HTML pages`,
    ...c.products.map((p) => `- [${p.title} page](${u.productPage(p.product_id)})`),
    ...c.products.map((p) => `- [${p.title} free preview](${p.preview_url}): a few units' references, titles and citations (no text); example query ${JSON.stringify(p.example_query.query)} matches ${groupDigits(p.example_query.matches)} units`),
  ];
  return lines.join('\n') + '\n';
}

/** Breadcrumbs of the documentation's pages, down to `here` (HTML). */
export function docsCrumbs(ctx: EmitContext, ...trail: { label: string; url?: string }[]): string {
  const u = siteUrls(ctx);
  return [{ label: ctx.catalogue['dct:title'], url: u.home }, ...trail].map((c) => (c.url ? link(c.url, c.label) : esc(c.label))).join(' › ');
}

export const emitDocs: Emitter = (ctx) => {
  const markdown = renderDocs(ctx);
  const pagePath = docsPagePath(ctx.addresses.docs_url);
  return [
    { path: docsPath(ctx.addresses.docs_url), contentType: MARKDOWN_TYPE, body: markdown, cache: 'catalogue' },
    ...(pagePath === null ? [] : [markdownPage(ctx, { path: pagePath, markdown, title: `${ctx.catalogue['dct:title']}: documentation`, description: `${DOCS_WHAT[0]!.toUpperCase()}${DOCS_WHAT.slice(1)}.`, crumbs: docsCrumbs(ctx, { label: 'Documentation' }), cache: 'catalogue' })]),
    { path: 'llms.txt', contentType: TEXT_TYPE, body: renderLlmsTxt(ctx), cache: 'catalogue' },
  ];
};
