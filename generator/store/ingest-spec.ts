// One `data` entry of a served source through its adapter, into units: which adapter reads it,
// which unit kind it makes, and which products each unit goes to (every product listing the
// source, or, for a `routed` source, those whose EuroVoc rule the unit's act matches). The store
// build (build-store.ts) owns writing, counting and the report; this module owns the dispatch.
import { stat } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { readAkomaNtoso, type AknProvision } from '../ingest/akoma-ntoso.ts';
import { readAlignedParagraphs } from '../ingest/aligned-paragraphs.ts';
import { readCorineLegend } from '../ingest/corine-legend.ts';
import { readCsv } from '../ingest/csv.ts';
import { readAirbaseStatistics, readStations, type Station } from '../ingest/eea-airbase.ts';
import { type BadRecordHandler, IngestError } from '../ingest/errors.ts';
import { escoFiles, escoRecord, mergeSkillRows, readEscoFile, type EscoRow } from '../ingest/esco.ts';
import { readEurlex57k } from '../ingest/eurlex57k.ts';
import { readEurlexTriples } from '../ingest/eurlex-triples.ts';
import { iateFiles, readIateEntries, readIateTerms, type IateEntry, type IateTerm } from '../ingest/iate.ts';
import { readJsonStat } from '../ingest/jsonstat.ts';
import { readOpenAireResults } from '../ingest/openaire.ts';
import { readOafResults } from '../ingest/openaire-oaf.ts';
import { readOpenFoodTox } from '../ingest/openfoodtox.ts';
import type { SourceRecord } from '../ingest/records.ts';
import type { AdapterName, CatalogSrc, DataSpec, Source, UnitKind } from '../model.ts';
import type { IndexWriter } from './index-writer.ts';
import { PARALLEL_MIN_BYTES, parallelLines } from './parallel-lines.ts';
import type { PreparedUnit } from './prepared.ts';
import type { SourceReport } from './report.ts';
import type { RouteResult } from './routing.ts';
import type { Staging } from './staging.ts';
import { actBlockUnit, actParagraphUnit, aknAct, alignedRowUnit, genericRecord, iateConceptUnit, paragraphUnit, provisionUnit, recordUnit, type BuiltUnit } from './units.ts';

export interface IngestContext {
  cat: CatalogSrc;
  src: Source;
  spec: DataSpec;
  path: string; // absolute
  listed: string[]; // products that name the source
  rep: SourceReport;
  onBad: BadRecordHandler;
  emit: (b: BuiltUnit, products: string[], file: string, where: string) => Promise<void>;
  /** The same for a unit prepared by an ingest worker (parallel-lines.ts). */
  emitPrepared: (u: PreparedUnit, products: string[], file: string, where: string) => Promise<void>;
  /** The index being built: the workers' terms are mapped to its term ids. */
  index: IndexWriter;
  /** Ingest worker threads for aligned paragraph files, and their block size (see BuildStoreOptions). */
  workers: number | undefined;
  workerBlockBytes: number | undefined;
  /** The routes of every act in an acts file (read once per file). */
  routesFor: (acts: string) => Promise<Map<string, RouteResult>>;
  /** Routes an act read with its units (EURLEX57K), and records it for the report under `file`. */
  routeAct: (file: string, celex: string, descriptors: string[]) => RouteResult;
  staging: <T>(name: string) => Staging<T>;
  /** The EuroVoc descriptor id of an English label (exact, trimmed, case-insensitive), if any. */
  descriptorOfLabel: (label: string) => string | undefined;
  /**
   * Claims an act for this data file: one act is one set of units, so an act that already came
   * through another data entry (of any source) is refused. Returns that entry, or null.
   */
  claimAct: (celex: string, entry: string) => string | null;
  /** How far into the current data file an adapter has read (bytes), for the progress line. */
  readAt?: (bytes: number) => void;
}

/** The unit kind each adapter makes (null: tables, never units). */
const MAKES: Record<AdapterName, UnitKind | null> = {
  'aligned-paragraphs': 'P',
  'aligned-rows': 'R',
  eurlex57k: 'P',
  'eurlex-triples': 'P',
  'akoma-ntoso': 'A',
  csv: 'R',
  jsonstat: 'R',
  esco: 'R',
  'openaire-results': 'R',
  'openaire-oaf': 'R',
  'eea-airbase': 'R',
  openfoodtox: 'R',
  'corine-legend': 'R',
  iate: 'P',
  eurovoc: null,
};

export async function ingestSpec(x: IngestContext): Promise<void> {
  const { src, spec, path, rep, onBad } = x;
  const where = `sources/${src.id}.json`;
  const makes = MAKES[spec.adapter];
  if (makes === null) return; // routing tables (eurovoc), read before any unit
  if (makes !== src.unit) throw new Error(`${where}: adapter ${spec.adapter} makes ${makes} units, the source sells ${src.unit}`);
  const routed = src.routed === true;
  if (routed && spec.adapter !== 'aligned-paragraphs' && spec.adapter !== 'aligned-rows' && spec.adapter !== 'eurlex57k' && spec.adapter !== 'eurlex-triples')
    throw new Error(`${where}: adapter ${spec.adapter} reads no EuroVoc descriptors, so its data cannot be routed`);

  /** Products of an act's units: its route within the products naming the source (tracked for the report). */
  const productsOf = (celex: string, route: RouteResult | undefined): string[] => {
    if (!routed) return x.listed;
    if (!route) {
      rep.noAct++;
      rep.noActSample ??= celex;
      return [];
    }
    let a = rep.acts.get(celex);
    if (!a) rep.acts.set(celex, (a = { products: route.products.filter((p) => x.listed.includes(p)), units: 0 }));
    a.units++;
    return a.products; // the same array for every unit of the act
  };
  /** One act, one set of units: false (reported) when another data entry already brought this act. */
  const claim = (celex: string, file: string, line: number): boolean => {
    const other = x.claimAct(celex, `${src.id} ${spec.path}`);
    if (other === null) return true;
    onBad(new IngestError(file, String(line), `act ${celex} already comes through ${other}: one act is one set of units (a buyer must not buy a paragraph twice under two references); keep the act in one data file`));
    return false;
  };
  const records = async (gen: AsyncIterable<SourceRecord>) => {
    for await (const r of gen) await x.emit(recordUnit(src, r), x.listed, r.file, r.where);
  };

  switch (spec.adapter) {
    case 'aligned-paragraphs':
    case 'aligned-rows': {
      let routes: Map<string, RouteResult> | null = null;
      if (routed) {
        if (!spec.acts) throw new Error(`${where}: a routed source needs an "acts" file for ${spec.path}`);
        routes = await x.routesFor(spec.acts);
        rep.actsFile = spec.acts;
      }
      // P units of an act (aligned-paragraphs) claim it once per file; aligned rows are R records of
      // another product, not a second set of the act's paragraphs.
      const seen = new Map<string, boolean>();
      const mine = (celex: string, line: number): boolean => {
        if (spec.adapter !== 'aligned-paragraphs') return true;
        let ok = seen.get(celex);
        if (ok === undefined) seen.set(celex, (ok = claim(celex, spec.path, line)));
        return ok;
      };
      const workers = x.workers ?? ((await stat(path)).size >= PARALLEL_MIN_BYTES ? availableParallelism() : 0);
      if (workers > 0) {
        const job = { adapter: spec.adapter, src: { id: src.id, publisher: src.publisher }, displayName: spec.path };
        for await (const it of parallelLines(path, job, workers, x.index, x.workerBlockBytes)) {
          if (!it.ok) onBad(new IngestError(spec.path, String(it.line), it.reason));
          else if (mine(it.celex, it.line)) await x.emitPrepared(it.unit, productsOf(it.celex, routes?.get(it.celex)), spec.path, String(it.line));
        }
        return;
      }
      const make = spec.adapter === 'aligned-paragraphs' ? paragraphUnit : alignedRowUnit;
      for await (const p of readAlignedParagraphs(path, spec.path, onBad)) if (mine(p.celex, p.line)) await x.emit(make(src, p), productsOf(p.celex, routes?.get(p.celex)), p.file, String(p.line));
      return;
    }
    case 'eurlex57k': {
      // The acts carry their own descriptors: each is routed as it is read.
      if (routed) rep.actsFile = spec.path;
      for await (const act of readEurlex57k(path, spec.path, onBad)) {
        if (routed && rep.acts.has(act.celex)) {
          onBad(new IngestError(act.file, String(act.line), `act ${act.celex} is already ingested for ${src.id} from another line or file`));
          continue;
        }
        if (!claim(act.celex, act.file, act.line)) continue;
        const route = x.routeAct(spec.path, act.celex, act.descriptors);
        for (const b of act.blocks) await x.emit(actBlockUnit(src, act, b), productsOf(act.celex, route), act.file, String(act.line));
      }
      return;
    }
    case 'eurlex-triples': {
      // The acts carry EuroVoc labels: each is mapped to a descriptor id through the EuroVoc table
      // (never guessed); a label that matches nothing is reported and the act routed by the others.
      if (routed) rep.actsFile = spec.path;
      for await (const act of readEurlexTriples(path, spec.path, onBad, x.readAt)) {
        if (!claim(act.celex, act.file, act.line)) continue;
        const ids: string[] = [];
        for (const t of act.tags) {
          const id = x.descriptorOfLabel(t);
          if (id !== undefined) ids.push(id);
          else (rep.unmatchedLabels ??= []).push(`${act.celex}: ${JSON.stringify(t)}`);
        }
        const route = routed ? x.routeAct(spec.path, act.celex, [...new Set(ids)].sort()) : undefined;
        const products = productsOf(act.celex, route);
        for (const p of act.paragraphs) await x.emit(actParagraphUnit(src, act, p), products, act.file, String(act.line));
      }
      return;
    }
    case 'csv': {
      if (!spec.key?.length) throw new Error(`${where}: csv data ${spec.path} needs "key" columns for stable unit references`);
      const columns = [...new Set([...spec.key, ...(spec.text ?? []), ...(spec.title ?? [])])];
      for await (const r of readCsv(path, spec.path, onBad, { columns, delimiter: spec.delimiter })) {
        const empty = spec.key.filter((c) => r.record[c] === '');
        if (empty.length) {
          onBad(new IngestError(r.file, String(r.line), `empty key column(s) ${empty.join(', ')}`));
          continue;
        }
        await x.emit(recordUnit(src, genericRecord(src, spec, spec.key.map((c) => r.record[c]), r.record, r.file, String(r.line))), x.listed, r.file, String(r.line));
      }
      return;
    }
    case 'jsonstat': {
      for await (const r of readJsonStat(path, spec.path, onBad)) await x.emit(recordUnit(src, genericRecord(src, spec, [r.dataset, ...r.key], r.record, r.file, r.where)), x.listed, r.file, r.where);
      return;
    }
    case 'openaire-results':
      return records(readOpenAireResults(path, spec.path, onBad));
    case 'openaire-oaf':
      return records(readOafResults(path, x.cat.root, onBad));
    case 'corine-legend':
      return records(readCorineLegend(path, spec.path, onBad, spec.delimiter));
    case 'openfoodtox':
      return records(readOpenFoodTox(path, spec.path, onBad));
    case 'eea-airbase': {
      if (!spec.stations) throw new Error(`${where}: eea-airbase data ${spec.path} needs its "stations" file`);
      const stations: Map<string, Station> = await readStations(join(x.cat.root, spec.stations), spec.stations, onBad, spec.delimiter);
      return records(readAirbaseStatistics(path, spec.path, stations, spec.stations, onBad, spec.delimiter));
    }
    case 'esco': {
      // Occupations become units as they are read; a skill's rows (one per file it is listed in)
      // are staged and merged first.
      const stage = x.staging<EscoRow>(`esco!${src.id}`);
      for (const f of await escoFiles(path)) {
        for await (const row of readEscoFile(f, `${spec.path}/${f.name}`, onBad)) {
          if (row.kind === 'occupation') await x.emit(recordUnit(src, escoRecord(row)), x.listed, row.file, String(row.line));
          else await stage.put(`${row.id}\u0001${row.file}\u0001${String(row.line).padStart(10, '0')}`, row);
        }
      }
      for await (const rows of stage.groups((k) => k.split('\u0001')[0])) {
        const merged = mergeSkillRows(rows);
        if (!merged.ok) {
          onBad(new IngestError(rows[rows.length - 1].file, String(rows[rows.length - 1].line), merged.reason));
          continue;
        }
        await x.emit(recordUnit(src, escoRecord(merged.row, merged.collections)), x.listed, merged.row.file, String(merged.row.line));
      }
      return;
    }
    case 'iate': {
      // A concept's rows of the CSV release(s) and its entry in the API pull(s) are staged under its
      // id (release rows first, in file and line order), then merged into one unit per concept.
      const stage = x.staging<{ term?: IateTerm; entry?: IateEntry }>(`iate!${src.id}`);
      const pad = (n: number | string) => String(n).padStart(10, '0');
      for (const f of await iateFiles(path)) {
        const name = `${spec.path}/${f.name}`;
        if (f.format === 'csv') for await (const t of readIateTerms(f.path, name, onBad)) await stage.put(`${pad(t.id)}\u0001c\u0001${name}\u0001${pad(t.line)}`, { term: t });
        else for await (const e of readIateEntries(f.path, name, onBad)) await stage.put(`${pad(e.id)}\u0001j\u0001${name}\u0001${pad(e.index)}`, { entry: e });
      }
      for await (const group of stage.groups((k) => k.split('\u0001')[0])) {
        const terms = group.flatMap((g) => (g.term ? [g.term] : []));
        const entries = group.flatMap((g) => (g.entry ? [g.entry] : []));
        if (entries.length > 1) {
          const [a, b] = entries;
          onBad(new IngestError(b.file, b.where, `IATE ${b.id} is already an entry at ${a.file}:${a.where}`));
          continue;
        }
        const at = terms[0] ? { file: terms[0].file, where: String(terms[0].line) } : { file: entries[0].file, where: entries[0].where };
        await x.emit(iateConceptUnit(src, terms, entries[0] ?? null), x.listed, at.file, at.where);
      }
      return;
    }
    case 'akoma-ntoso': {
      // Versions of one provision (kinds, languages) may sit in different files: stage them keyed
      // by (act, eId, kind, lang), then build one unit per (act, eId).
      const stage = x.staging<AknProvision>(`akn!${src.id}`);
      const staged = new Set<string>();
      for await (const p of readAkomaNtoso(path, x.cat.root, onBad)) {
        const key = `${aknAct(p)}\u0001${p.eid}\u0001${p.kind}\u0001${p.lang}`;
        if (staged.has(key)) {
          onBad(new IngestError(p.file, p.path, `provision ${p.eid} (${p.kind}, ${p.lang}) of ${aknAct(p)} occurs in more than one file`));
          continue;
        }
        staged.add(key);
        await stage.put(key, p);
      }
      for await (const group of stage.groups((k) => k.split('\u0001').slice(0, 2).join('\u0001'))) await x.emit(provisionUnit(src, group), x.listed, group[0].file, group[0].path);
      return;
    }
  }
}
