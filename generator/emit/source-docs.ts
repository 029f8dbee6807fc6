// Documentation sections about what the products are made of (docs.ts places them):
// "Free previews and example queries" (each product's free preview and what its example query
// matches) and "Sources: what each holds and what was checked" (the per-source table of the
// catalogue: status, units, rows, licence, attribution, what was checked of the licence).
// Imports only types from docs.ts (docs.ts imports this module).
import { DRAW_EXAMPLE_LIMIT, exampleClaim } from './examples.ts';
import { type DocSection, fence, groupDigits, mdTable, shq } from './markdown.ts';
import type { EmitContext } from './types.ts';

export const SOURCE_STATUS_TEXT: Record<string, string> = {
  served: 'served',
  'not-yet-available': 'not yet available',
  held: 'held: nothing read or served',
  reference: 'reference tables (sells no units)',
};

export function previewsSection(ctx: EmitContext): string {
  const c = ctx.catalogue;
  const first = c.products.find((p) => p.live_unit_count > 0) ?? c.products[0]!;
  return [
    'Before buying, look at what a product sells, for free: each product has a static preview with a few units of each source (reference, title and citation, never the text), its counts per source, and what its example query matches. A quote (the 402 answer) then lists exactly the units a query resolves to (`resolved_units`); nothing is charged until you pay it.',
    '',
    fence('sh', `curl -s ${first.preview_url}`),
    '',
    `Example queries, and what they return at catalogue version \`${c.version}\` (a query matches the units that contain at least one of its words, case and accents folded; hyphenated terms match as a whole and by their parts, so \`covid\`, \`COVID-19\` and \`covid 19\` find the same records):`,
    '',
    mdTable(
      ['product_id', 'Free preview', 'Example query', 'Units matched', `Quote with limit ${DRAW_EXAMPLE_LIMIT}`],
      c.products.map((p) => {
        const claim = exampleClaim(p, DRAW_EXAMPLE_LIMIT);
        return [`\`${p.product_id}\``, p.preview_url, `\`${p.example_query.query}\``, groupDigits(claim.matches), claim.matches ? `${claim.quoted} units` : 'no quote'];
      }),
    ),
    '',
    'Any of them as a quote request:',
    '',
    fence('sh', `curl -i -X POST ${ctx.addresses.base_url}/lds/draw \\\n  -H 'Content-Type: application/json' \\\n  -d ${shq(JSON.stringify(exampleClaim(first, DRAW_EXAMPLE_LIMIT).request))}`),
    '',
    exampleClaim(first, DRAW_EXAMPLE_LIMIT).sentence,
  ].join('\n');
}

export function sourcesSection(ctx: EmitContext): string {
  const c = ctx.catalogue;
  return [
    'Every source a product names, with what the unit store holds of it (a unit sold in several products counts once here), its licence ruling and what was checked of that licence. A *held* source has no ruling: nothing of it is read, stored or served. A source that is *not yet available* has a ruling but no data attached yet; it sells nothing and says why.',
    '',
    mdTable(
      ['Source', 'Publisher', 'Status', 'Unit', 'Units', 'Rows', 'Licence', 'Attribution', 'What was checked', 'Products'],
      c.sources.map((s) => [
        `\`${s.source}\``,
        s.publisher,
        `${SOURCE_STATUS_TEXT[s.status] ?? s.status}${s.reason && s.status !== 'held' ? `: ${s.reason.replace(/^not yet available: /, '')}` : ''}`,
        s.unit ?? '—',
        groupDigits(s.units),
        groupDigits(s.rows),
        s.licence ?? 'held',
        s.attribution ?? '',
        s.checked ?? (s.status === 'held' ? 'no licence review yet' : ''),
        s.products.map((id) => `\`${id}\``).join(', '),
      ]),
    ),
  ].join('\n');
}

export const PREVIEW_DOC_SECTIONS: DocSection[] = [{ title: 'Free previews and example queries', render: previewsSection }];
export const SOURCE_DOC_SECTIONS: DocSection[] = [{ title: 'Sources: what each holds and what was checked', render: sourcesSection }];
