// The free preview of each product: a few units per source, as a buyer may see them before paying
// (reference, title, citation), taken in ingestion order and spread over documents (one unit per
// act, station, ...) so a preview shows the breadth of a source rather than one act's articles.
// Text and record values are never copied here: previews are published in dist/.
import type { PreviewUnit } from '../model.ts';
import type { BuiltUnit, StoredUnitBody } from './units.ts';

export const PREVIEW_PER_SOURCE = 3;

export class PreviewPicker {
  private readonly picked = new Map<string, { units: PreviewUnit[]; groups: Set<string> }>(); // product \0 source

  /** A unit of `source` in `group`, stored in `products`; `unit()` is called only for a unit a preview takes. */
  offer(products: string[], source: string, group: string, unit: () => StoredUnitBody): void {
    for (const pid of products) {
      const k = `${pid}\0${source}`;
      let p = this.picked.get(k);
      if (!p) this.picked.set(k, (p = { units: [], groups: new Set() }));
      if (p.units.length >= PREVIEW_PER_SOURCE || p.groups.has(group)) continue;
      p.groups.add(group);
      p.units.push(previewOf(unit()));
    }
  }

  /** Per product: its preview units, sources in the order the product lists them. */
  result(sourcesOf: Map<string, string[]>): Record<string, PreviewUnit[]> {
    const out: Record<string, PreviewUnit[]> = {};
    for (const [pid, sources] of sourcesOf) out[pid] = sources.flatMap((s) => this.picked.get(`${pid}\0${s}`)?.units ?? []);
    return out;
  }
}

/** Only the identifying fields: never rows, records or anything else a buyer pays for. */
export function previewOf(u: BuiltUnit['unit']): PreviewUnit {
  const { ref, source, kind, citation: c } = u;
  const citation: PreviewUnit['citation'] = { label: c.label, publisher: c.publisher };
  for (const k of ['url', 'celex', 'eli', 'doi', 'uri'] as const) if (c[k]) citation[k] = c[k];
  return { ref, source, kind, title: u.title ?? c.label, citation };
}
