// Adapter 'openaire-oaf': OpenAIRE results as OAF XML records (the format inside the Research
// Graph Dump v1.0.0-beta: one <record> per document, header/dri:objIdentifier and
// metadata/oaf:entity/oaf:result), every *.xml under the configured path, streamed by saxes.
// The same metadata as the JSON Lines adapter (openaire.ts) is read: the result's own direct
// children of <oaf:result> (title, resulttype, language, dateofacceptance, publisher, subject,
// pid, creator) and its <rels> to projects and organisations. <description> (the abstract) is
// never collected, for the reason the source's ruling gives. A document is yielded only once it
// parsed whole, so a broken file never contributes half a record.
import { createReadStream } from 'node:fs';
import { relative } from 'node:path';
import { SaxesParser, type SaxesTagNS } from 'saxes';
import { xmlFiles } from './akoma-ntoso.ts';
import { type BadRecordHandler, IngestError } from './errors.ts';
import { NOT_UTF8 } from './lines.ts';
import { OPENAIRE_ID, openAireRecord, type OpenAireResult } from './openaire.ts';
import type { SourceRecord } from './records.ts';

const OAF_NS = 'http://namespace.openaire.eu/oaf';
const DRI_NS = 'http://www.driver-repository.eu/namespace/dri';

// Direct children of <oaf:result> whose text is kept (never <description>).
const KEPT = new Set(['title', 'resulttype', 'language', 'dateofacceptance', 'publisher', 'subject', 'pid', 'creator']);

type Project = OpenAireResult['projects'][number];

/** Parses one OAF document; throws IngestError (line:column and XML path) when it is not usable. */
export async function parseOafFile(file: string, displayName: string): Promise<OpenAireResult[]> {
  const parser = new SaxesParser({ xmlns: true, fileName: displayName });
  const stack: string[] = [];
  const out: OpenAireResult[] = [];
  let error: IngestError | null = null;
  let id: string | null = null;
  let cur: OpenAireResult | null = null; // the <oaf:result> being read
  let resultDepth = 0;
  let text: string[] | null = null; // text of the element being kept
  let keep: { name: string; attrs: Record<string, string> } | null = null;
  let rel: { type: string; to: string; fields: Record<string, string>; funder: string } | null = null;
  const xpath = () => '/' + stack.join('/');
  const fail = (reason: string) => {
    error ??= new IngestError(displayName, `${parser.line}:${parser.column + 1} ${xpath()}`, reason);
  };

  parser.on('error', (err) => fail(err.message.replace(`${displayName}:`, '').replace(/^\d+:\d+: /, '').trim()));
  parser.on('opentag', (tag: SaxesTagNS) => {
    stack.push(tag.local);
    const attrs = Object.fromEntries(Object.entries(tag.attributes).map(([k, a]) => [a.local || k, a.value]));
    const depth = stack.length;
    if (tag.local === 'objIdentifier' && tag.uri === DRI_NS) text = [];
    if (tag.local === 'result' && tag.uri === OAF_NS) {
      cur = { id: id ?? '', resulttype: '', language: '', dateofacceptance: '', titles: [], publisher: '', subjects: [], pids: [], creators: [], projects: [], organizations: [] };
      resultDepth = depth;
      return;
    }
    if (!cur) return;
    if (depth === resultDepth + 1 && KEPT.has(tag.local)) {
      keep = { name: tag.local, attrs };
      text = [];
      if (tag.local === 'resulttype') cur.resulttype = attrs.classid ?? '';
      if (tag.local === 'language') cur.language = attrs.classid ?? '';
    }
    if (tag.local === 'rel' && stack[depth - 2] === 'rels' && depth === resultDepth + 2) rel = { type: '', to: '', fields: {}, funder: '' };
    if (rel && depth === resultDepth + 3) {
      if (tag.local === 'to') rel.type = attrs.type ?? '';
      if (['to', 'code', 'acronym', 'title', 'legalname'].includes(tag.local)) text = [];
      if (tag.local === 'country') rel.fields.country = attrs.classid ?? '';
    }
    if (rel && tag.local === 'funder') rel.funder = attrs.shortname ?? '';
    if (rel && tag.local === 'funding_level_0') text = [];
  });
  parser.on('text', (t) => {
    if (text) text.push(t);
  });
  parser.on('closetag', (tag: SaxesTagNS) => {
    const depth = stack.length;
    const value = () => (text ?? []).join('').replace(/\s+/g, ' ').trim();
    if (tag.local === 'objIdentifier' && tag.uri === DRI_NS) {
      id = value();
      text = null;
    } else if (cur && keep && depth === resultDepth + 1 && tag.local === keep.name) {
      const v = value();
      const a = keep.attrs;
      if (keep.name === 'title' && v) cur.titles.push({ classid: a.classid ?? '', value: v });
      if (keep.name === 'dateofacceptance') cur.dateofacceptance = v;
      if (keep.name === 'publisher') cur.publisher = v;
      if (keep.name === 'subject' && v) cur.subjects.push(v);
      if (keep.name === 'pid' && v && a.classid) cur.pids.push({ type: a.classid, value: v });
      if (keep.name === 'creator' && v) cur.creators.push(v);
      keep = null;
      text = null;
    } else if (rel && depth === resultDepth + 3 && ['to', 'code', 'acronym', 'title', 'legalname'].includes(tag.local)) {
      rel.fields[tag.local] = value();
      text = null;
    } else if (rel && tag.local === 'funding_level_0') {
      rel.fields.funding = value();
      text = null;
    } else if (cur && rel && tag.local === 'rel' && depth === resultDepth + 2) {
      const f = rel.fields;
      if (rel.type === 'project') cur.projects.push({ id: f.to ?? '', code: f.code ?? '', acronym: f.acronym ?? '', title: f.title ?? '', funder: rel.funder, funding: f.funding ?? '' } satisfies Project);
      if (rel.type === 'organization') cur.organizations.push({ legalname: f.legalname ?? '', country: f.country ?? '' });
      rel = null;
    } else if (cur && tag.local === 'result' && tag.uri === OAF_NS && depth === resultDepth) {
      cur.id = id ?? '';
      if (!OPENAIRE_ID.test(cur.id)) fail(`dri:objIdentifier must be an OpenAIRE identifier (prefix::32 hex), got ${JSON.stringify(cur.id)}`);
      else if (cur.titles.length === 0) fail(`${cur.id} has no title`);
      else out.push(cur);
      cur = null;
    }
    stack.pop();
  });

  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 16 })) {
    const bad = (chunk as string).indexOf('\uFFFD'); // bad bytes decode to U+FFFD: report the line they are on
    if (bad >= 0) throw new IngestError(displayName, String(parser.line + ((chunk as string).slice(0, bad).match(/\n/g)?.length ?? 0)), NOT_UTF8);
    parser.write(chunk as string);
    if (error) throw error;
  }
  parser.close();
  if (error) throw error;
  if (out.length === 0) throw new IngestError(displayName, '/record', 'no oaf:result in this document');
  return out;
}

export async function* readOafResults(path: string, root: string, onBad: BadRecordHandler): AsyncGenerator<SourceRecord> {
  for (const file of await xmlFiles(path)) {
    const display = relative(root, file);
    let results: OpenAireResult[];
    try {
      results = await parseOafFile(file, display);
    } catch (err) {
      if (!(err instanceof IngestError)) throw err;
      onBad(err); // a broken document is skipped whole (one bad record) when skipping is allowed
      continue;
    }
    for (const r of results) yield openAireRecord(r, display, '/record/result');
  }
}
