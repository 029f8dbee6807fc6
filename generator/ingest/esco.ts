// Adapter 'esco': the ESCO classification as downloaded in CSV (one language), from a folder.
// Read are the occupations file (occupations*.csv) and the skills files (skills*.csv, the full
// skills pillar, and *SkillsCollection*.csv, the collections); the download's other files
// (relations, ISCO and skill groups) are not units and are left alone. One record per concept:
// an occupation, or a skill/competence or knowledge concept, identified by its ESCO URI.
//
// A skill appears in the skills file and again in every collection it belongs to (the ICT skills
// collection is part of the transversal one): its rows are merged into one record, listing the
// collections, and rows of one URI that disagree on a value are an error, not a silent choice.
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { readCsv } from './csv.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { describe, type SourceRecord } from './records.ts';

export type EscoKind = 'occupation' | 'skill';

export const ESCO_COLUMNS: Record<EscoKind, readonly string[]> = {
  occupation: ['conceptType', 'conceptUri', 'iscoGroup', 'preferredLabel', 'altLabels', 'description'],
  skill: ['conceptType', 'conceptUri', 'skillType', 'reuseLevel', 'preferredLabel', 'altLabels', 'description'],
};
const CONCEPT_TYPE: Record<EscoKind, string> = { occupation: 'Occupation', skill: 'KnowledgeSkillCompetence' };
const URI = /^http:\/\/data\.europa\.eu\/esco\/(occupation|skill)\/([A-Za-z0-9][A-Za-z0-9.-]*)$/;

export interface EscoFile {
  path: string;
  name: string;
  kind: EscoKind;
  /** The collection a skills file lists (e.g. "transversalSkillsCollection"); null for the full pillar. */
  collection: string | null;
}

/** The ESCO files of a download folder that hold concepts, sorted by name. */
export async function escoFiles(dir: string): Promise<EscoFile[]> {
  const names = (await readdir(dir)).filter((n) => n.endsWith('.csv')).sort();
  const out: EscoFile[] = [];
  for (const name of names) {
    if (/^occupations/i.test(name)) out.push({ path: join(dir, name), name, kind: 'occupation', collection: null });
    else if (/^skills_/i.test(name)) out.push({ path: join(dir, name), name, kind: 'skill', collection: null });
    else if (/SkillsCollection/i.test(name)) out.push({ path: join(dir, name), name, kind: 'skill', collection: name.replace(/_[a-z]{2}(_.*)?\.csv$/i, '').replace(/\.csv$/i, '') });
  }
  return out;
}

export interface EscoRow {
  file: string;
  line: number;
  kind: EscoKind;
  id: string; // the last segment of the URI (a UUID)
  collection: string | null;
  record: Record<string, string>;
}

/** The concept rows of one ESCO file, each checked (type, URI, label). */
export async function* readEscoFile(f: EscoFile, displayName: string, onBad: BadRecordHandler): AsyncGenerator<EscoRow> {
  for await (const { line, record } of readCsv(f.path, displayName, onBad, { columns: ESCO_COLUMNS[f.kind] })) {
    const m = URI.exec(record.conceptUri);
    let reason = '';
    if (record.conceptType !== CONCEPT_TYPE[f.kind]) reason = `conceptType must be ${CONCEPT_TYPE[f.kind]} in ${f.name}, got ${JSON.stringify(record.conceptType)}`;
    else if (!m || m[1] !== f.kind) reason = `conceptUri must be an ESCO ${f.kind} URI, got ${JSON.stringify(record.conceptUri)}`;
    else if (record.preferredLabel.trim() === '') reason = `${record.conceptUri} has no preferredLabel`;
    if (reason) {
      onBad(new IngestError(displayName, String(line), reason));
      continue;
    }
    yield { file: displayName, line, kind: f.kind, id: m![2], collection: f.collection, record };
  }
}

/**
 * One skill from its rows in several files: the values must agree where both rows have the column;
 * the record lists the collections it was found in. Returns a reason when they disagree.
 */
export function mergeSkillRows(rows: EscoRow[]): { ok: true; row: EscoRow; collections: string[] } | { ok: false; reason: string } {
  const merged: Record<string, string> = { ...rows[0].record };
  for (const [i, r] of rows.entries()) {
    const twice = rows.slice(0, i).find((x) => x.file === r.file);
    if (twice) return { ok: false, reason: `${r.record.conceptUri} is listed twice in ${r.file} (lines ${twice.line} and ${r.line})` };
  }
  for (const r of rows.slice(1)) {
    for (const [k, v] of Object.entries(r.record)) {
      if (k in merged && merged[k] !== v) return { ok: false, reason: `${r.record.conceptUri}: ${k} differs from ${rows[0].file}:${rows[0].line}` };
      merged[k] = v;
    }
  }
  const collections = [...new Set(rows.map((r) => r.collection).filter((c): c is string => c !== null))].sort();
  return { ok: true, row: { ...rows[0], record: merged }, collections };
}

const lines = (v: string | undefined) => (v ?? '').split(/\n|\s\|\s/).map((s) => s.trim()).filter(Boolean);

/** The unit's record, title, citation and searchable text of one concept. */
export function escoRecord(row: EscoRow, collections: string[] = []): SourceRecord {
  const r = row.record;
  const fields: Record<string, string> = { ...r };
  if (row.kind === 'skill') fields.collections = collections.join('; ');
  const label =
    row.kind === 'occupation'
      ? `ESCO occupation “${r.preferredLabel}” (ISCO-08 ${r.iscoGroup})`
      : `ESCO ${r.skillType || 'skill'} “${r.preferredLabel}”${r.reuseLevel ? ` (${r.reuseLevel})` : ''}`;
  return {
    file: row.file,
    where: String(row.line),
    key: [row.kind, row.id],
    title: r.preferredLabel,
    label,
    uri: r.conceptUri,
    url: r.conceptUri,
    fields,
    text: describe(r.preferredLabel, ...lines(r.altLabels), ...lines(r.hiddenLabels), r.description, r.definition, r.scopeNote, r.iscoGroup && `ISCO ${r.iscoGroup}`, r.skillType, r.reuseLevel, ...lines(r.broaderConceptPT), ...collections),
    group: row.kind,
  };
}
