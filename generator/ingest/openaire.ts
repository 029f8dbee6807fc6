// Adapter 'openaire-results': OpenAIRE Research Graph results (publications, datasets, software,
// other), one JSON object per line as cut from the Graph Dump v1.0.0-beta (see PROVENANCE.md):
// openaire_id, resulttype, language, dateofacceptance, titles, descriptions, publisher, subjects,
// pids, creators, projects, organizations.
//
// Abstracts (`descriptions`) are never read into a record: they are harvested from publishers and
// repositories, whose copyright the dump's CC BY 4.0 cannot license (see the source's ruling). The
// unit is the result's metadata: identifiers, titles, people, subjects and project links.
import { type BadRecordHandler, IngestError } from './errors.ts';
import { isObject, readJsonLines } from './lines.ts';
import { describe, joinList, type SourceRecord } from './records.ts';

/** The metadata of one result, as both OpenAIRE adapters read it (JSON lines here, OAF XML in oaf.ts). */
export interface OpenAireResult {
  id: string; // dri:objIdentifier, e.g. dedup_wf_001::685e2587f6e6a64115f1c3c1ace9243a
  resulttype: string;
  language: string;
  dateofacceptance: string;
  titles: { classid: string; value: string }[];
  publisher: string;
  subjects: string[];
  pids: { type: string; value: string }[];
  creators: string[];
  projects: { id: string; code: string; acronym: string; title: string; funder: string; funding: string }[];
  organizations: { legalname: string; country: string }[];
}

export const OPENAIRE_ID = /^[A-Za-z0-9_]+::[0-9a-f]{32}$/;

const str = (v: unknown) => (typeof v === 'string' ? v : v === null || v === undefined ? '' : null);
const arr = (v: unknown) => (Array.isArray(v) ? v : v === null || v === undefined ? [] : null);

export function checkOpenAireLine(v: unknown): { ok: true; value: OpenAireResult } | { ok: false; reason: string } {
  if (!isObject(v)) return { ok: false, reason: 'expected a JSON object' };
  const id = v.openaire_id;
  if (typeof id !== 'string' || !OPENAIRE_ID.test(id)) return { ok: false, reason: `openaire_id must be an OpenAIRE identifier (prefix::32 hex), got ${JSON.stringify(id)}` };
  const fields = { resulttype: str(v.resulttype), language: str(v.language), dateofacceptance: str(v.dateofacceptance), publisher: str(v.publisher) };
  for (const [k, x] of Object.entries(fields)) if (x === null) return { ok: false, reason: `${k} of ${id} must be a string or null` };
  const lists = { titles: arr(v.titles), subjects: arr(v.subjects), pids: arr(v.pids), creators: arr(v.creators), projects: arr(v.projects), organizations: arr(v.organizations) };
  for (const [k, x] of Object.entries(lists)) if (x === null || !x.every((e) => k === 'creators' ? typeof e === 'string' : isObject(e))) return { ok: false, reason: `${k} of ${id} must be an array of ${k === 'creators' ? 'strings' : 'objects'}` };
  const titles = (lists.titles as Record<string, unknown>[]).map((t) => ({ classid: String(t.classid ?? ''), value: String(t.value ?? '').trim() })).filter((t) => t.value);
  if (titles.length === 0) return { ok: false, reason: `${id} has no title` };
  const s = (o: Record<string, unknown>, k: string) => String(o[k] ?? '');
  return {
    ok: true,
    value: {
      id,
      resulttype: fields.resulttype!,
      language: fields.language!,
      dateofacceptance: fields.dateofacceptance!,
      titles,
      publisher: fields.publisher!,
      subjects: (lists.subjects as Record<string, unknown>[]).map((x) => s(x, 'value')).filter(Boolean),
      pids: (lists.pids as Record<string, unknown>[]).map((x) => ({ type: s(x, 'type'), value: s(x, 'value') })).filter((p) => p.type && p.value),
      creators: lists.creators as string[],
      projects: (lists.projects as Record<string, unknown>[]).map((x) => ({ id: s(x, 'id'), code: s(x, 'code'), acronym: s(x, 'acronym'), title: s(x, 'title'), funder: s(x, 'funder'), funding: s(x, 'funding_level_0') })),
      organizations: (lists.organizations as Record<string, unknown>[]).map((x) => ({ legalname: s(x, 'legalname'), country: s(x, 'country') })),
    },
  };
}

const FUNDING = /::([A-Za-z0-9]+)$/; // ec__________::EC::H2020 -> H2020

/** The unit's record, title, citation and searchable text of one result. */
export function openAireRecord(r: OpenAireResult, file: string, where: string): SourceRecord {
  const main = r.titles.find((t) => t.classid === 'main title') ?? r.titles[0];
  const doi = r.pids.find((p) => p.type === 'doi')?.value;
  const projects = r.projects.map((p) => describe([p.funder, FUNDING.exec(p.funding)?.[1]].filter(Boolean).join(' '), p.code, p.acronym, p.title));
  const fields: Record<string, string> = {
    openaire_id: r.id,
    resulttype: r.resulttype,
    language: r.language,
    dateofacceptance: r.dateofacceptance,
    title: main.value,
    other_titles: joinList(r.titles.filter((t) => t !== main).map((t) => t.value)),
    publisher: r.publisher,
    subjects: joinList(r.subjects),
    pids: joinList(r.pids.map((p) => `${p.type}:${p.value}`)),
    creators: joinList(r.creators),
    projects: joinList(projects),
    organisations: joinList(r.organizations.map((o) => (o.country ? `${o.legalname} (${o.country})` : o.legalname))),
  };
  return {
    file,
    where,
    key: [r.id],
    title: main.value,
    label: `OpenAIRE ${r.resulttype || 'result'} ${r.id}${doi ? `, doi:${doi}` : ''}`,
    uri: r.id,
    ...(doi ? { doi, url: `https://doi.org/${doi}` } : {}),
    fields,
    text: describe(main.value, fields.other_titles, fields.subjects, fields.creators, r.publisher, fields.projects, fields.organisations, r.resulttype, r.dateofacceptance.slice(0, 4)),
    group: r.projects[0]?.code,
  };
}

export async function* readOpenAireResults(file: string, displayName: string, onBad: BadRecordHandler): AsyncGenerator<SourceRecord> {
  for await (const { line, value } of readJsonLines(file, displayName, onBad)) {
    const checked = checkOpenAireLine(value);
    if (!checked.ok) {
      onBad(new IngestError(displayName, String(line), checked.reason));
      continue;
    }
    yield openAireRecord(checked.value, displayName, String(line));
  }
}
