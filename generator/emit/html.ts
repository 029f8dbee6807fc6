// The catalogue for people: index.html and one page per product (products/{product_id}.html).
// Self-contained (inline CSS, no scripts, no external assets), escaped, deterministic: every value
// comes from the finished catalogue in ctx. Pages link to each other relatively, so dist/ also
// reads well from disk; machine documents are linked at their published addresses.
import type { CatalogueProduct } from '../catalog.ts';
import { type Emitter, type EmitContext, HTML_TYPE } from './types.ts';
import { groupDigits, licenceBrief } from './docs.ts';
import { DRAW_EXAMPLE_LIMIT, exampleClaim } from './examples.ts';
import { shq } from './markdown.ts';
import { SOURCE_STATUS_TEXT } from './source-docs.ts';
import { machineDocuments, productPagePath, siteUrls } from './site.ts';
import { esc, link, page } from './page.ts';

export { esc };

function healthBadge(rollup: string): string {
  return `<span class="health health-${esc(rollup)}">${esc(rollup)}</span>`;
}

function machineDocsList(ctx: EmitContext): string {
  const docs = machineDocuments(ctx);
  const items = docs.map((d) =>
    `<li>${d.template ? `${esc(d.label)}: <code>${esc(d.url)}</code>` : link(d.url, d.label)} <span class="muted">(${esc(d.type)})</span>: ${esc(d.what)}</li>`,
  );
  return `<ul class="machine-docs">\n${items.join('\n')}\n</ul>`;
}

function productsTable(ctx: EmitContext): string {
  const c = ctx.catalogue;
  const rows = c.products.map((p) => `<tr id="product-${esc(p.product_id)}" data-product-id="${esc(p.product_id)}">
<th scope="row"><a href="${esc(productPagePath(p.product_id))}">${esc(p.title)}</a><br><code>${esc(p.product_id)}</code></th>
<td>${esc(p.sectoral_ds)} <span class="muted">(${esc(p.tag)})</span></td>
<td class="num units">${groupDigits(p.live_unit_count)}</td>
<td class="num rows">${groupDigits(p.live_row_count)}</td>
<td class="num draw-price">${esc(p.pricing.draw_unit_price)}</td>
<td class="num bulk-price">${esc(p.pricing.bulk_annual_price)}</td>
<td class="licences">${esc(licenceBrief(p))}</td>
<td class="health-cell">${healthBadge(p._health.rollup)}<details><summary>Why</summary><p class="health-reason">${esc(p._health.rollup_reason)}</p></details></td>
</tr>`);
  return `<div class="scroll"><table id="products">
<caption>${c.total} products, prices in ${esc(c.currency)}. Draw price is per unit; the bulk annual price is the per-unit rate times the live unit count.</caption>
<thead><tr>
<th scope="col">Product</th><th scope="col">Data space</th><th scope="col">Units</th><th scope="col">Rows</th><th scope="col">Draw price per unit (${esc(c.currency)})</th><th scope="col">Bulk annual price (${esc(c.currency)})</th><th scope="col">Licences</th><th scope="col">Health</th>
</tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table></div>`;
}

/** Every source: status, what the store holds of it, licence, attribution, what was checked. */
function sourcesTable(ctx: EmitContext): string {
  const rows = ctx.catalogue.sources.map((x) => `<tr id="source-${esc(x.source)}" data-source="${esc(x.source)}">
<th scope="row"><code>${esc(x.source)}</code><br>${esc(x.title)}</th>
<td>${esc(x.publisher)}</td>
<td class="status">${esc(SOURCE_STATUS_TEXT[x.status] ?? x.status)}${x.reason && x.status !== 'held' ? `<br><span class="muted">${esc(x.reason.replace(/^not yet available: /, ''))}</span>` : ''}</td>
<td>${esc(x.unit ?? '—')}</td>
<td class="num units">${groupDigits(x.units)}</td>
<td class="num rows">${groupDigits(x.rows)}</td>
<td>${esc(x.licence ?? 'held')}</td>
<td>${esc(x.attribution ?? '')}</td>
<td class="checked">${esc(x.checked ?? (x.status === 'held' ? 'no licence review yet' : ''))}</td>
<td>${x.products.map((id) => `<a href="${esc(productPagePath(id))}">${esc(id)}</a>`).join(', ')}</td>
</tr>`);
  return `<div class="scroll"><table id="source-table">
<caption>What each source holds in the unit store (a unit sold in several products counts once), its licence and what was checked of it. Held sources have no ruling: nothing of them is read or served.</caption>
<thead><tr><th scope="col">Source</th><th scope="col">Publisher</th><th scope="col">Status</th><th scope="col">Unit</th><th scope="col">Units</th><th scope="col">Rows</th><th scope="col">Licence</th><th scope="col">Attribution</th><th scope="col">What was checked</th><th scope="col">Products</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table></div>`;
}

/** A product's free preview: a few units' references, titles and citations; never text. */
function previewTable(ctx: EmitContext, p: CatalogueProduct): string {
  const units = ctx.previews[p.product_id] ?? [];
  if (units.length === 0) return `<p id="preview-empty">No units to preview: ${esc(p._health.rollup_reason)}</p>`;
  const rows = units.map((u) => `<tr>
<th scope="row"><code>${esc(u.ref)}</code></th>
<td>${esc(u.title)}</td>
<td>${u.citation.url ? link(u.citation.url, u.citation.label) : esc(u.citation.label)}</td>
<td>${esc(u.citation.publisher)}</td>
</tr>`);
  return `<div class="scroll"><table id="preview">
<caption>A few units of each source, free: reference, title and citation (the text is what a draw sells).</caption>
<thead><tr><th scope="col">Unit</th><th scope="col">Title</th><th scope="col">Citation</th><th scope="col">Publisher</th></tr></thead>
<tbody>
${rows.join('\n')}
</tbody>
</table></div>`;
}

function howToBuy(ctx: EmitContext): string {
  const c = ctx.catalogue;
  const u = siteUrls(ctx);
  return `<ol>
<li>Ask for a draw: <code>POST ${esc(u.draw)}</code> with a <code>product_id</code> and a <code>query</code> and <code>limit</code> (or unit references in <code>units</code>). The answer is <strong>402 Payment Required</strong> with a quote: the price and a <code>quote_id</code>.</li>
<li>Top up a prepaid balance once: <code>POST ${esc(u.topup)}</code>, paid through the Machine Payments Protocol with a Stripe Shared Payment Token (minimum ${esc(c.minimum_topup)} ${esc(c.currency)}). The answer gives you a balance token.</li>
<li>Repeat the draw with the <code>quote_id</code> and <code>Authorization: Bearer &lt;balance token&gt;</code>. You receive the cited units, their licences and the attribution to reproduce.</li>
<li>Read your balance: <code>GET ${esc(u.balance)}</code>.</li>
</ol>
<p>Step by step, with copyable examples: ${link(u.docs, 'the documentation')}. Bulk annual subscription checkout is not live yet.</p>`;
}

export function renderIndex(ctx: EmitContext): string {
  const c = ctx.catalogue;
  const body = `<section aria-labelledby="h-products">
<h2 id="h-products">Products</h2>
${productsTable(ctx)}
</section>
<section aria-labelledby="h-buy">
<h2 id="h-buy">How to buy</h2>
${howToBuy(ctx)}
</section>
<section aria-labelledby="h-sources">
<h2 id="h-sources">Sources</h2>
${sourcesTable(ctx)}
</section>
<section aria-labelledby="h-machine">
<h2 id="h-machine">Machine-readable documents</h2>
${machineDocsList(ctx)}
<p>MCP tool endpoint for agents: <code>${esc(c.mcp_url)}</code>.</p>
</section>`;
  return page(ctx, { title: c['dct:title'], description: c.description, body });
}

function factList(items: [string, string][]): string {
  return `<dl class="facts">\n${items.map(([k, v]) => `<dt>${esc(k)}</dt><dd>${v}</dd>`).join('\n')}\n</dl>`;
}

export function renderProduct(ctx: EmitContext, p: CatalogueProduct): string {
  const c = ctx.catalogue;
  const u = siteUrls(ctx);
  const h = p._health;
  const pr = p.pricing;
  const claim = exampleClaim(p, DRAW_EXAMPLE_LIMIT);
  const drawExample = JSON.stringify(claim.request);

  const sourceRows = h.sources.map((s) => `<tr>
<th scope="row"><code>${esc(s.source)}</code></th>
<td>${s.required ? 'required' : 'optional'}</td>
<td>${esc(s.status)}</td>
<td>${esc(s.unit ?? '—')}</td>
<td class="num">${groupDigits(s.units)}</td>
<td class="num">${groupDigits(s.rows)}</td>
<td>${esc(s.note ?? '')}</td>
</tr>`);

  const licenceRows = p.licence_basis.map((b, i) => {
    const s = p.licence_summary[i]!;
    return `<tr>
<th scope="row"><code>${esc(b.source)}</code></th>
<td>${esc(s.from)}</td>
<td>${b.verdict === 'held' ? 'held: no rows served' : esc(s.licences.join(', '))}</td>
<td>${esc(b.attribution ?? '')}</td>
<td>${esc(b.conditions ?? '')}</td>
<td>${esc(b.basis ?? '')}</td>
<td>${esc(b.checked ?? '')}</td>
<td>${esc(b.ruled_at ?? '')}</td>
<td>${b.terms_url ? link(b.terms_url, 'terms') : ''}</td>
</tr>`;
  });

  const unitRows = p.unit_definition.map((d) => `<tr><th scope="row"><code>${esc(d.source)}</code></th><td>${esc(d.unit)}</td><td>${esc(d.definition)}</td></tr>`);

  const body = `<section aria-labelledby="h-about">
<h2 id="h-about">About</h2>
${factList([
    ['Product id', `<code>${esc(p.product_id)}</code>`],
    ['Data space', `${esc(p.sectoral_ds)} (${esc(p.tag)})`],
    ['Marker', `<code>${esc(p.marker)}</code>`],
    ['Asset', `<code>${esc(p.asset_uri)}</code>`],
    ['Launch state', esc(p.launch_state)],
    ['Envelope state', esc(p.envelope_state)],
    ['Licence state', esc(p.licence_state)],
    ['Rulebook', esc(p.rulebook_ref)],
    ['Subscription', esc(p.subscribe_status)],
    ['Terminal condition', esc(p.terminal_condition)],
  ])}
</section>
<section aria-labelledby="h-counts">
<h2 id="h-counts">Counts</h2>
<div class="scroll"><table id="counts">
<caption>Computed ${esc(p.row_count_computed_at)}.</caption>
<tbody>
<tr><th scope="row">Units served</th><td class="num" id="live-unit-count">${groupDigits(p.live_unit_count)}</td><td>${esc(p.unit_count_basis)}</td></tr>
<tr><th scope="row">Rows served</th><td class="num" id="live-row-count">${groupDigits(p.live_row_count)}</td><td>${esc(p.row_count_basis)}</td></tr>
<tr><th scope="row">Rows at launch</th><td class="num" id="row-count-at-launch">${groupDigits(p.row_count_at_launch)}</td><td></td></tr>
</tbody>
</table></div>
</section>
<section aria-labelledby="h-prices">
<h2 id="h-prices">Prices</h2>
<div class="scroll"><table id="prices">
<caption>In ${esc(pr.currency)}.</caption>
<tbody>
<tr><th scope="row">Draw price per unit</th><td class="num" id="draw-unit-price">${esc(pr.draw_unit_price)}</td><td>a draw costs units × this price, rounded up to the cent, at least ${esc(pr.draw_minimum_charge)}</td></tr>
<tr><th scope="row">Bulk rate per unit per year</th><td class="num" id="bulk-unit-rate">${esc(pr.bulk_unit_rate)}</td><td></td></tr>
<tr><th scope="row">Bulk annual price</th><td class="num" id="bulk-annual-price">${esc(pr.bulk_annual_price)}</td><td>${groupDigits(pr.unit_count)} units × the bulk rate; checkout not live yet</td></tr>
</tbody>
</table></div>
</section>
<section aria-labelledby="h-health">
<h2 id="h-health">Health</h2>
<p>${healthBadge(h.rollup)}: <span id="health-reason">${esc(h.rollup_reason)}</span></p>
<p class="muted">Checked ${esc(h.checked_at)}; cached for ${h.cache_ttl_seconds} seconds. ${h.sources_required_count} required and ${h.sources_optional_count} optional source${h.sources_optional_count === 1 ? '' : 's'}.</p>
<div class="scroll"><table id="sources">
<caption>Sources</caption>
<thead><tr><th scope="col">Source</th><th scope="col">Role</th><th scope="col">Status</th><th scope="col">Unit kind</th><th scope="col">Units</th><th scope="col">Rows</th><th scope="col">Note</th></tr></thead>
<tbody>
${sourceRows.join('\n')}
</tbody>
</table></div>
</section>
<section aria-labelledby="h-units">
<h2 id="h-units">What one unit is</h2>
<p>P: one English pivot paragraph with all its language versions. R: one source row. A: one Akoma Ntoso provision with all its versions across kind and language.</p>
<div class="scroll"><table id="unit-definitions">
<caption>Unit definition per source</caption>
<thead><tr><th scope="col">Source</th><th scope="col">Kind</th><th scope="col">Definition</th></tr></thead>
<tbody>
${unitRows.join('\n')}
</tbody>
</table></div>
</section>
<section aria-labelledby="h-licences">
<h2 id="h-licences">Licences and attribution</h2>
<p>Each delivered unit carries its source's licence; reproduce the attribution with the data.</p>
<div class="scroll"><table id="licences">
<caption>Licence ruling per source</caption>
<thead><tr><th scope="col">Source</th><th scope="col">From</th><th scope="col">Licence</th><th scope="col">Attribution</th><th scope="col">Conditions</th><th scope="col">Basis</th><th scope="col">What was checked</th><th scope="col">Ruled</th><th scope="col">Terms</th></tr></thead>
<tbody>
${licenceRows.join('\n')}
</tbody>
</table></div>
</section>
<section aria-labelledby="h-buy">
<h2 id="h-buy">Buy from this product</h2>
<p>Ask for a quote (answers 402 with the price and a <code>quote_id</code>), then repeat with the <code>quote_id</code> and your balance token. See ${link(u.docs, 'the documentation')} for topping up a balance.</p>
<pre><code>${esc(`curl -i -X POST ${u.draw} \\\n  -H 'Content-Type: application/json' \\\n  -d ${shq(drawExample)}`)}</code></pre>
<p id="example-claim">${esc(claim.sentence.replace(/`/g, ''))}</p>
</section>
<section aria-labelledby="h-preview">
<h2 id="h-preview">Free preview</h2>
<p>What this product sells, before you pay: ${link(p.preview_url, 'the preview (JSON)')} lists the units below with the counts per source and what the example query matches.</p>
${previewTable(ctx, p)}
</section>
<section aria-labelledby="h-machine">
<h2 id="h-machine">Machine-readable</h2>
<ul>
<li>${link(p.dcat_url, 'DCAT-AP description of this product')} <span class="muted">(application/ld+json)</span></li>
<li>${link(u.catalogue, 'Catalogue (JSON)')}, where this product is <code>${esc(p.product_id)}</code></li>
<li>MCP tool endpoint: <code>${esc(p.mcp_endpoint)}</code></li>
</ul>
${machineDocsList(ctx)}
</section>`;
  const crumbs = `<a href="../index.html">${esc(c['dct:title'])}</a> › ${esc(p.title)}`;
  return page(ctx, { title: p.title, description: p.description, crumbs, body });
}

export const emitHtml: Emitter = (ctx) => [
  { path: 'index.html', contentType: HTML_TYPE, body: renderIndex(ctx), cache: 'catalogue' },
  ...ctx.catalogue.products.map((p) => ({ path: productPagePath(p.product_id), contentType: HTML_TYPE, body: renderProduct(ctx, p), cache: 'catalogue' as const })),
];
