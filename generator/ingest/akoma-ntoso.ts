// Adapter 'akoma-ntoso': one record per provision (every element carrying an eId inside <body>)
// of every *.xml under the configured path, parsed as a stream by saxes (a conforming,
// namespace-aware XML parser). A provision's text is all of its descendant text, so a section
// includes its subsections, as in Finlex's own provision index. Provisions of a document are
// yielded only once the whole document parsed, so a broken file never contributes half an act.
import { createReadStream } from 'node:fs';
import { readdir, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { SaxesParser, type SaxesTagNS } from 'saxes';
import { type BadRecordHandler, IngestError } from './errors.ts';

export const AKN_NS = 'http://docs.oasis-open.org/legaldocml/ns/akn/3.0';

export interface AknProvision {
  file: string;
  path: string; // XML path of the provision, for messages
  work: string; // FRBRWork/FRBRuri, e.g. /akn/fi/act/statute/2026/1
  expression: string; // FRBRExpression/FRBRuri, e.g. /akn/fi/act/statute/2026/1/fin@
  eli: string | null; // FRBRWork FRBRalias name="eli"
  kind: string; // FRBRsubtype (statute, statute-consolidated, ...)
  lang: string; // FRBRlanguage as given (ISO 639-2, e.g. fin)
  docNumber: string | null;
  eid: string;
  element: string;
  parentEid: string | null;
  num: string | null;
  heading: string | null;
  text: string; // descendant text, whitespace collapsed
}

/** Every *.xml file under a path (or the path itself), sorted so builds are reproducible. */
export async function xmlFiles(path: string): Promise<string[]> {
  if (!(await stat(path)).isDirectory()) return [path];
  const out: string[] = [];
  const walk = async (dir: string) => {
    const entries = (await readdir(dir, { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const e of entries) {
      if (e.isDirectory()) await walk(join(dir, e.name));
      else if (e.isFile() && e.name.endsWith('.xml')) out.push(join(dir, e.name));
    }
  };
  await walk(path);
  return out;
}

// Inline elements do not end a word; every other element boundary counts as a space.
const INLINE = new Set(['i', 'b', 'u', 'sup', 'sub', 'span', 'ref', 'affectedDocument', 'date', 'term', 'abbr', 'inline', 'mref', 'rref', 'docNumber', 'docTitle', 'def', 'entity', 'person', 'organization', 'location', 'quantity', 'role', 'noteRef']);

// Runs of XML whitespace become one space; typographic spaces inside the text (no-break, en
// space) are content and stay, but none is kept at either end.
const collapse = (parts: string[]) => parts.join('').replace(/[ \t\r\n]+/g, ' ').trim();

interface Open {
  eid: string;
  element: string;
  depth: number;
  path: string;
  parts: string[];
  num: string[] | null;
  heading: string[] | null;
}

/** Parses one Akoma Ntoso document; throws IngestError (with line:column and XML path) if it is not usable. */
export async function parseAknFile(file: string, displayName: string): Promise<AknProvision[]> {
  const parser = new SaxesParser({ xmlns: true, fileName: displayName });
  const stack: string[] = []; // local names from the root
  const frbr: Record<string, string> = {};
  let eli: string | null = null;
  let docNumber: string[] | null = null;
  let docNumberText: string | null = null;
  let inBody = 0; // depth of <body>, 0 when outside
  const open: Open[] = [];
  const done: Omit<AknProvision, 'work' | 'expression' | 'eli' | 'kind' | 'lang' | 'docNumber'>[] = [];
  const seen = new Set<string>();
  let numOf: Open | null = null; // provision whose <num> is being read
  let headingOf: Open | null = null;
  let error: IngestError | null = null;
  const xpath = () => '/' + stack.join('/');
  const fail = (reason: string) => {
    error ??= new IngestError(displayName, `${parser.line}:${parser.column + 1} ${xpath()}`, reason);
  };

  parser.on('error', (err) => fail(err.message.replace(`${displayName}:`, '').replace(/^\d+:\d+: /, '').trim()));
  parser.on('opentag', (tag: SaxesTagNS) => {
    const name = tag.local;
    stack.push(name);
    const attr = (n: string) => tag.attributes[n]?.value;
    const parent = stack[stack.length - 2];
    if (stack.length === 1 && (name !== 'akomaNtoso' || tag.uri !== AKN_NS)) fail(`not an Akoma Ntoso 3.0 document (root ${tag.name} in ${tag.uri || 'no namespace'})`);
    if (parent === 'FRBRWork' || parent === 'FRBRExpression') {
      const v = attr('value');
      if (name === 'FRBRuri' && v) frbr[`${parent}/uri`] = v;
      if (name === 'FRBRsubtype' && v && parent === 'FRBRWork') frbr.subtype = v;
      if (name === 'FRBRalias' && attr('name') === 'eli' && parent === 'FRBRWork' && v) eli = v;
    }
    if (name === 'FRBRlanguage' && parent === 'FRBRExpression') frbr.language = attr('language') ?? '';
    if (name === 'docNumber' && docNumberText === null && !inBody) docNumber = [];
    if (name === 'body' && !inBody) inBody = stack.length;
    const eid = attr('eId');
    if (inBody && eid !== undefined && stack.length > inBody) {
      if (seen.has(eid)) fail(`eId "${eid}" occurs twice`);
      seen.add(eid);
      open.push({ eid, element: name, depth: stack.length, path: xpath() + `[@eId='${eid}']`, parts: [], num: null, heading: null });
    }
    const top = open[open.length - 1];
    if (top && stack.length === top.depth + 1) {
      if (name === 'num') { top.num = []; numOf = top; }
      if (name === 'heading') { top.heading = []; headingOf = top; }
    }
  });
  parser.on('text', (t) => {
    for (const o of open) o.parts.push(t);
    if (numOf) numOf.num!.push(t);
    if (headingOf) headingOf.heading!.push(t);
    if (docNumber) docNumber.push(t);
  });
  parser.on('closetag', (tag: SaxesTagNS) => {
    const name = tag.local;
    if (!INLINE.has(name)) for (const o of open) o.parts.push(' ');
    if (name === 'num' && numOf && stack.length === numOf.depth + 1) numOf = null;
    if (name === 'heading' && headingOf && stack.length === headingOf.depth + 1) headingOf = null;
    if (name === 'docNumber' && docNumber) { docNumberText = collapse(docNumber); docNumber = null; }
    const top = open[open.length - 1];
    if (top && top.depth === stack.length) {
      open.pop();
      done.push({
        file: displayName,
        path: top.path,
        eid: top.eid,
        element: top.element,
        parentEid: open.length ? open[open.length - 1].eid : null,
        num: top.num ? collapse(top.num) || null : null,
        heading: top.heading ? collapse(top.heading) || null : null,
        text: collapse(top.parts),
      });
    }
    if (name === 'body' && stack.length === inBody) inBody = 0;
    stack.pop();
  });

  for await (const chunk of createReadStream(file, { encoding: 'utf8', highWaterMark: 1 << 16 })) {
    parser.write(chunk as string);
    if (error) throw error;
  }
  parser.close();
  if (error) throw error;
  const missing = ['FRBRWork/uri', 'FRBRExpression/uri', 'subtype', 'language'].filter((k) => !frbr[k]);
  if (missing.length) throw new IngestError(displayName, '/akomaNtoso/*/meta/identification', `missing FRBR ${missing.join(', ')}`);
  return done.map((p) => ({
    ...p,
    work: frbr['FRBRWork/uri'],
    expression: frbr['FRBRExpression/uri'],
    eli,
    kind: frbr.subtype,
    lang: frbr.language,
    docNumber: docNumberText,
  }));
}

export async function* readAkomaNtoso(path: string, root: string, onBad: BadRecordHandler): AsyncGenerator<AknProvision> {
  for (const file of await xmlFiles(path)) {
    let provisions: AknProvision[];
    try {
      provisions = await parseAknFile(file, relative(root, file));
    } catch (err) {
      if (!(err instanceof IngestError)) throw err;
      onBad(err); // a broken document is skipped whole (one bad record) when skipping is allowed
      continue;
    }
    yield* provisions;
  }
}
