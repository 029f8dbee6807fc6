// `lds diff` output: Markdown for a pull-request comment, or one JSON document. Pure.
import type { CatalogueChanges, Change, SourceStatusChange } from './changes.ts';

/** The JSON form: the changes as computed, plus whether a buyer sees any of them. */
export function diffJson(c: CatalogueChanges): string {
  return JSON.stringify({ buyer_visible: c.change_count > 0, ...c }, null, 2) + '\n';
}

/** A value as one line of text: lists joined, a unit definition as "source (unit): definition". */
function flat(value: unknown): string {
  const item = (v: unknown): string => {
    if (typeof v === 'string') return v;
    const d = v as { source?: unknown; unit?: unknown; definition?: unknown } | null;
    if (d && typeof d === 'object' && typeof d.source === 'string' && typeof d.definition === 'string') return `${d.source} (${String(d.unit)}): ${d.definition}`;
    return JSON.stringify(v);
  };
  return (Array.isArray(value) ? value.map(item).join('; ') : item(value)).replace(/\s+/g, ' ').trim();
}

/** A table cell: one line, pipes escaped, long prose shortened (the JSON form keeps it whole). */
function cell(value: unknown, max = 160): string {
  if (value === null || value === undefined) return '—';
  let text = flat(value);
  if (text.length > max) text = `${text.slice(0, max - 1)}…`;
  return text.replace(/\\/g, '\\\\').replace(/\|/g, '\\|') || '""';
}

/**
 * The old and new cells of a changed long text, each from a little before where they first differ
 * (a reviewer sees what changed, not the same first 160 characters twice).
 */
function changedCells(oldValue: unknown, newValue: unknown): [unknown, unknown] {
  if (oldValue === null || oldValue === undefined || newValue === null || newValue === undefined) return [oldValue, newValue];
  const a = flat(oldValue);
  const b = flat(newValue);
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const from = Math.max(0, a.lastIndexOf(' ', Math.max(0, i - 40)) + 1);
  return from > 0 ? [`…${a.slice(from)}`, `…${b.slice(from)}`] : [a, b];
}

function table(head: string[], rows: unknown[][]): string[] {
  return [`| ${head.join(' | ')} |`, `|${head.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.map((v) => cell(v)).join(' | ')} |`)];
}

const arrow = <T>(c: Change<T>, fmt: (v: T) => string = String) => (c.old === c.new ? fmt(c.new) : `${fmt(c.old)} → ${fmt(c.new)}`);
const signed = (n: number) => (n > 0 ? `+${n}` : String(n));
const delta = (c: Change<number>) => (c.old === c.new ? String(c.new) : `${c.old} → ${c.new} (${signed(c.new - c.old)})`);
const percent = (p: number | null) => (p === null ? 'from zero' : `${p > 0 ? '+' : ''}${p.toFixed(1)} %`);
const PRICE_NAMES = { draw_unit_price: 'draw price per unit', bulk_unit_rate: 'bulk rate per unit', draw_minimum_charge: 'minimum charge per draw' };

function statusRows(list: SourceStatusChange[]): unknown[][] {
  return list.map((s) => [s.source, arrow(s.status, (v) => v ?? 'not listed'), s.reason, s.licence, s.attribution, s.products]);
}

export function diffMarkdown(c: CatalogueChanges): string {
  const out: string[] = ['## Catalogue changes for buyers', ''];
  out.push(
    c.change_count === 0
      ? 'No change a buyer sees.'
      : `**${c.change_count} change${c.change_count === 1 ? '' : 's'} a buyer sees** (\`lds diff\` exits 1).`,
  );
  if (c.review.length) out.push('', `**Needs review before it reaches buyers:** ${c.review.join(', ')}.`);
  out.push('', ...table(['', 'old', 'new'], [
    ['version', c.version.old, c.version.new],
    ['unit store', c.store_version.old, c.store_version.new],
    ['built at', c.generated_at.old, c.generated_at.new],
  ]));
  const section = (title: string, lines: string[]) => {
    if (lines.length) out.push('', `### ${title}`, '', ...lines);
  };
  const { added, removed, renamed } = c.products;
  section('Products', [
    ...(added.length || removed.length ? table(['product', 'change', 'title', 'slug'], [
      ...added.map((p) => [p.product_id, 'added', p.title, p.slug]),
      ...removed.map((p) => [p.product_id, 'removed', p.title, p.slug]),
    ]) : []),
    ...(renamed.length ? [...(added.length || removed.length ? [''] : []), ...table(['product', 'title', 'slug'], renamed.map((r) => [
      r.product_id, r.title ? arrow(r.title) : '(unchanged)', r.slug ? arrow(r.slug) : '(unchanged)',
    ]))] : []),
  ]);
  section('Prices (EUR)', c.prices.length ? table(['product', 'price', 'old', 'new', 'change'], c.prices.map((p) => [
    p.product_id, PRICE_NAMES[p.price], p.old, p.new, percent(p.change_percent),
  ])) : []);
  section('Sources held', c.sources.held.length ? [
    'No units of these sources are sold from this version on; their licence ruling is withdrawn.', '',
    ...table(['source', 'status', 'reason', 'licence withdrawn', 'attribution', 'products'], statusRows(c.sources.held)),
  ] : []);
  section('Sources released', c.sources.released.length ? table(['source', 'status', 'reason', 'licence', 'attribution', 'products'], statusRows(c.sources.released)) : []);
  section('Sources listed, removed or changing status', c.sources.status.length ? table(['source', 'status', 'reason', 'licence', 'attribution', 'products'], statusRows(c.sources.status)) : []);
  section('Units and rows per product', c.product_counts.length ? table(['product', 'units', 'rows', 'bulk annual price (EUR)'], c.product_counts.map((p) => [
    p.product_id, delta(p.units), delta(p.rows), arrow(p.bulk_annual_price),
  ])) : []);
  section('Units and rows per source', c.source_counts.length ? table(['source', 'units', 'rows'], c.source_counts.map((s) => [s.source, delta(s.units), delta(s.rows)])) : []);
  section('Licence rulings and attributions', c.licences.length ? table(['source', 'field', 'old', 'new'], c.licences.map((l) => [l.source, l.field, l.old, l.new])) : []);
  section('Addresses', c.addresses.length ? table(['address', 'old', 'new'], c.addresses.map((a) => [a.field, a.old, a.new])) : []);
  section('Local addresses (not a change a buyer sees)', c.local_addresses.length ? [
    'Both addresses are on this machine (a local build for another port or loopback name); no buyer reaches either.', '',
    ...table(['address', 'old', 'new'], c.local_addresses.map((a) => [a.field, a.old, a.new])),
  ] : []);
  section('Other product fields', c.product_fields.length ? table(['product', 'field', 'old', 'new'], c.product_fields.map((f) => [f.product_id, f.field, ...changedCells(f.old, f.new)])) : []);
  section('Catalogue', c.catalogue_fields.length ? table(['field', 'old', 'new'], c.catalogue_fields.map((f) => [f.field, ...changedCells(f.old, f.new)])) : []);
  return out.join('\n') + '\n';
}
