// The printable build report: what each source gave, where EuroVoc routed the acts (acts and
// units per product, acts routed nowhere), and what was skipped. Publishers read it in CI logs.
import type { BadRecordCounter } from '../ingest/errors.ts';
import type { Source } from '../model.ts';
import type { RouteResult } from './routing.ts';

export interface SourceReport {
  source: string;
  unit: string;
  records: number; // records read that made a unit
  units: number; // stored
  rows: number;
  unrouted: number; // units whose act matched no product rule (not stored)
  duplicates: number;
  noAct: number; // routed records whose act is missing from the acts file
  noActSample?: string;
  actsFile?: string;
  /** EuroVoc labels of acts that match no descriptor of the table ("CELEX: label"): reported, never guessed. */
  unmatchedLabels?: string[];
  acts: Map<string, { products: string[]; units: number }>;
}

interface ReportInput {
  storeVersion: string;
  plan: { id: string; state: string; src: Source; reason?: string }[];
  reports: Map<string, SourceReport>;
  counts: Record<string, Record<string, { rows: number; units: number }>>;
  actRoutes: Map<string, { routes: Map<string, RouteResult>; lines: number }>;
  tablesFrom: string | null;
  bad: BadRecordCounter;
  skip: boolean;
  units: number;
  index: { terms: number; postings: number };
}

const LIST_MAX = 30;
const list = (xs: string[]) => (xs.length > LIST_MAX ? `${xs.slice(0, LIST_MAX).join(', ')}, … (${xs.length} in all)` : xs.join(', '));

export function formatReport(r: ReportInput): string {
  const out: string[] = [];
  out.push(`unit store ${r.storeVersion}: ${r.units} units stored; index ${r.index.terms} terms, ${r.index.postings} postings`);
  out.push('sources:');
  for (const item of r.plan) {
    const rep = r.reports.get(item.id);
    if (item.state === 'held') out.push(`  ${item.id}: held, not read (${item.src.held?.reason ?? 'no licence ruling'})`);
    else if (item.state !== 'served') out.push(`  ${item.id}: no units (${item.reason})`);
    else if (rep) {
      const extra = [
        rep.unrouted ? `${rep.unrouted} matched no rule of a product listing this source (not stored)` : '',
        rep.noAct ? `${rep.noAct} with no act metadata (e.g. ${rep.noActSample})` : '',
        rep.duplicates ? `${rep.duplicates} duplicates skipped` : '',
      ].filter(Boolean);
      out.push(`  ${item.id} (${rep.unit}): ${rep.records} records, ${rep.units} units, ${rep.rows} rows stored${extra.length ? `; ${extra.join('; ')}` : ''}`);
    }
  }

  out.push(`routing (EuroVoc tables: ${r.tablesFrom ?? 'none; rules match descriptor ids only'}):`);
  for (const [file, { routes, lines }] of r.actRoutes) {
    const nowhere = [...routes].filter(([, x]) => x.products.length === 0).map(([c]) => c).sort();
    const unresolved = [...new Set([...routes.values()].flatMap((x) => x.unresolved))].sort();
    out.push(`  acts file ${file}: ${lines} acts, ${nowhere.length} routed nowhere${nowhere.length ? `: ${list(nowhere)}` : ''}`);
    if (unresolved.length) out.push(`  descriptor ids not in the EuroVoc table (matched by id only): ${list(unresolved)}`);
  }
  const routedSources = [...r.reports.values()].filter((x) => x.actsFile);
  const products = Object.keys(r.counts).sort();
  for (const pid of products) {
    const parts: string[] = [];
    for (const rep of routedSources) {
      if (!(rep.source in r.counts[pid])) continue;
      const acts = [...rep.acts.values()].filter((a) => a.products.includes(pid)).length;
      parts.push(`${rep.source} ${acts} acts / ${r.counts[pid][rep.source].units} units`);
    }
    const total = Object.values(r.counts[pid]).reduce((s, c) => ({ u: s.u + c.units, r: s.r + c.rows }), { u: 0, r: 0 });
    out.push(`  ${pid}: ${parts.join('; ')}; all sources ${total.u} units, ${total.r} rows`);
  }
  for (const rep of routedSources) {
    if (rep.unmatchedLabels?.length)
      out.push(`  ${rep.source}: ${rep.unmatchedLabels.length} EuroVoc label(s) match no descriptor of the table (not guessed; the act is routed by its other labels): ${list(rep.unmatchedLabels)}`);
    const nowhere = [...rep.acts].filter(([, a]) => a.products.length === 0);
    if (nowhere.length) out.push(`  ${rep.source}: acts in no rule of a product listing this source (units not stored): ${list(nowhere.map(([c, a]) => `${c} (${a.units})`))}`);
  }

  if (r.bad.count) {
    out.push(`skipped ${r.bad.count} bad record${r.bad.count === 1 ? '' : 's'} (--skip-bad-records):`);
    for (const s of r.bad.samples) out.push(`  ${s}`);
    if (r.bad.count > r.bad.samples.length) out.push(`  … and ${r.bad.count - r.bad.samples.length} more`);
  } else out.push(`bad records: none${r.skip ? ' (--skip-bad-records was set)' : ''}`);
  return out.join('\n');
}
