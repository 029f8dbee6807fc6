// Reads catalog-src/, validates every file against its JSON Schema, then cross-checks the files
// against each other, on whatever parsed (valid or not), so `check` reports every finding in one run,
// each located at its line and column. `build` loads through the same checks.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, readFile, stat as statPath } from 'node:fs/promises';
import { join, relative } from 'node:path';
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { CatalogErrors, formatFinding, isError, pointer, type SourceError } from './errors.ts';
import { jsonSpans, JsonSyntaxError, lineCol, spanAt, type Span } from './json-positions.ts';
import type { CatalogSrc, CatalogueSettings, Licence, ProductSrc, Source } from './model.ts';
import { labelKey, readTriplesTags } from './ingest/eurlex-triples.ts';
import { readEuroVocDescriptors } from './ingest/eurovoc.ts';

const SCHEMAS = ['catalogue', 'licence', 'source', 'product'] as const;
type SchemaName = (typeof SCHEMAS)[number];

/**
 * Compiled schemas by the schema files' texts: a process that checks or builds several times (a
 * publisher's watch, the test suites) compiles each set once. A few sets are kept.
 */
const compiledSchemas = new Map<string, Record<SchemaName, ValidateFunction>>();
const KEPT_SCHEMA_SETS = 4;

async function compileSchemas(root: string): Promise<Record<SchemaName, ValidateFunction>> {
  const texts = await Promise.all(SCHEMAS.map((name) => readFile(join(root, 'schemas', `${name}.schema.json`), 'utf8')));
  const key = texts.join('\0');
  let out = compiledSchemas.get(key);
  if (out) return out;
  // verbose: each error carries the value it is about (`data`), which a type error shows.
  const ajv = new Ajv2020.default({ allErrors: true, strict: true, strictRequired: false, verbose: true });
  addFormats.default(ajv);
  out = {} as Record<SchemaName, ValidateFunction>;
  for (const [i, name] of SCHEMAS.entries()) out[name] = ajv.compile(JSON.parse(texts[i]!));
  compiledSchemas.set(key, out);
  if (compiledSchemas.size > KEPT_SCHEMA_SETS) compiledSchemas.delete(compiledSchemas.keys().next().value!);
  return out;
}

const TYPE_WORDS: Record<string, string> = { integer: 'an integer', number: 'a number', string: 'a string', boolean: 'true or false', object: 'an object', array: 'a list', null: 'null' };

/** A JSON value in words, for "found …": its type and, for a scalar, the value itself (shortened). */
function foundValue(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `a list of ${v.length} item${v.length === 1 ? '' : 's'}`;
  if (typeof v === 'string') return `the string ${JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v)}`;
  if (typeof v === 'number') return `the ${Number.isInteger(v) ? 'integer' : 'number'} ${v}`;
  if (typeof v === 'boolean') return `the boolean ${v}`;
  return 'an object';
}

/** What a `type` keyword asks for and what the file holds instead: `must be an integer, found the string "5000"`. */
function typeReason(e: ErrorObject): string {
  const expected = ([] as string[]).concat((e.params as { type: string | string[] }).type).map((t) => TYPE_WORDS[t] ?? t);
  return `must be ${expected.join(' or ')}, found ${foundValue(e.data)}`;
}

function ajvErrors(file: string, errors: ErrorObject[] | null | undefined): SourceError[] {
  return (errors ?? [])
    // oneOf/if branches repeat what the concrete errors already say
    .filter((e) => !['oneOf', 'if'].includes(e.keyword) || (errors ?? []).length === 1)
    .map((e) => {
      let reason = e.message ?? 'invalid';
      if (e.keyword === 'additionalProperties') {
        const name = (e.params as { additionalProperty: string }).additionalProperty;
        return { file, pointer: e.instancePath + pointer(name), reason: `unknown property "${name}"` };
      }
      if (e.keyword === 'required') return { file, pointer: e.instancePath + pointer((e.params as { missingProperty: string }).missingProperty), reason: 'required field is missing' };
      if (e.keyword === 'type') reason = typeReason(e);
      if (e.keyword === 'enum') reason += `: ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
      if (e.keyword === 'not' && e.schemaPath.includes('oneOf')) reason = 'a held source has no licence ruling and no data';
      return { file, pointer: e.instancePath, reason };
    });
}

/** Parses JSON and locates its values; a syntax error becomes a finding at the offending character. */
function parseJson(file: string, text: string, errors: SourceError[]): { doc: unknown; spans: Map<string, Span> } | undefined {
  let spans: Map<string, Span>;
  let badAt: number | undefined;
  try {
    spans = jsonSpans(text);
  } catch (err) {
    if (!(err instanceof JsonSyntaxError)) throw err;
    spans = new Map();
    badAt = err.offset;
  }
  try {
    return { doc: JSON.parse(text), spans };
  } catch (err) {
    const msg = (err as Error).message;
    const pos = badAt ?? Number(/position (\d+)/.exec(msg)?.[1] ?? 0);
    const { line, col } = lineCol(text, pos);
    errors.push({ file, pointer: '', reason: `invalid JSON (line ${line}, column ${col}): ${msg}`, line, col });
    return undefined;
  }
}

async function jsonFiles(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((f) => f.endsWith('.json')).sort();
  } catch {
    return [];
  }
}

/** SHA-256 of a file, streamed (data exports may be many GiB); null when there is no such file. */
export async function sha256File(path: string): Promise<string | null> {
  const h = createHash('sha256');
  try {
    for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  } catch (err) {
    if (['ENOENT', 'EISDIR', 'ENOTDIR'].includes((err as NodeJS.ErrnoException).code ?? '')) return null;
    throw err;
  }
  return h.digest('hex');
}

/**
 * One digest over every input file, so that any change under catalog-src/ (a EuroVoc label that only
 * the DCAT documents show, a data file) changes the catalogue version.
 */
async function treeSha256(root: string): Promise<string> {
  const files = (await readdir(root, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => relative(root, join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)))
    .sort();
  const h = createHash('sha256');
  for (const f of files) {
    const digest = await sha256File(join(root, f));
    if (digest === null) throw new Error(`catalog-src/${f} vanished while it was being read`);
    h.update(`${f}\0${digest}\n`);
  }
  return h.digest('hex');
}

/** The folder could not be checked at all (missing, unreadable, no schemas): `check` and `build` exit 2, "could not run" (1: the input has errors). */
export class CatalogUnreadable extends Error {
  readonly exitCode = 2;
}

export interface CheckResult {
  /** Every error and warning, located, in file order. */
  findings: SourceError[];
  /** The definitions, when there is no error. */
  cat: CatalogSrc | null;
}

// Fields of a document that may have failed its schema: the cross-file checks still run on what is
// there (so one pass reports a schema error and an unknown source in the same file), reading only
// values of the expected type.
type Loose = Record<string, unknown>;
const obj = (v: unknown): Loose | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Loose) : undefined);
const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);

/**
 * Checks catalog-src/ in one pass: every file against its JSON Schema, then the files against
 * each other (on whatever parsed, valid or not), then locates every finding in its file.
 */
export async function checkCatalogSrc(root: string): Promise<CheckResult> {
  let stat;
  try {
    stat = await statPath(root);
  } catch {
    throw new CatalogUnreadable(`${root} does not exist`);
  }
  if (!stat.isDirectory()) throw new CatalogUnreadable(`${root} is not a folder`);
  let validate: Record<SchemaName, ValidateFunction>;
  try {
    validate = await compileSchemas(root);
  } catch (err) {
    throw new CatalogUnreadable(`cannot read the JSON Schemas in ${join(root, 'schemas')}: ${(err as Error).message}`);
  }

  const errors: SourceError[] = [];
  const spansOf = new Map<string, Map<string, Span>>();
  const valid = new Set<string>();

  const read = async (rel: string, schema: SchemaName): Promise<Loose | undefined> => {
    let text: string;
    try {
      text = await readFile(join(root, rel), 'utf8');
    } catch {
      errors.push({ file: rel, pointer: '', reason: 'file is missing' });
      return undefined;
    }
    const parsed = parseJson(rel, text, errors);
    if (!parsed) return undefined;
    spansOf.set(rel, parsed.spans);
    if (validate[schema](parsed.doc)) valid.add(rel);
    else errors.push(...ajvErrors(rel, validate[schema].errors));
    return obj(parsed.doc) ?? {};
  };
  /** Reports a second file claiming an id. */
  const claimed = new Map<string, string>();
  const claim = (kind: string, id: string | undefined, rel: string, ptr: string) => {
    if (id === undefined) return;
    const other = claimed.get(`${kind}\0${id}`);
    if (other) errors.push({ file: rel, pointer: ptr, reason: `${kind} "${id}" is also used by ${other}` });
    else claimed.set(`${kind}\0${id}`, rel);
  };
  const fileNameMatches = (rel: string, f: string, field: string, id: string | undefined) => {
    const expected = f.replace(/\.json$/, '');
    if (id !== undefined && id !== expected)
      errors.push({ file: rel, pointer: pointer(field), reason: `${field} "${id}" does not match the file name: it must be "${expected}" (or rename the file to ${id}.json)`, expected });
  };

  const settings = await read('catalogue.json', 'catalogue');

  const licences = new Map<string, Loose>();
  const licenceFile = new Map<string, string>();
  for (const f of await jsonFiles(join(root, 'licences'))) {
    const rel = `licences/${f}`;
    const lic = await read(rel, 'licence');
    if (!lic) continue;
    const id = str(lic.id);
    fileNameMatches(rel, f, 'id', id);
    claim('licence id', id, rel, '/id');
    const text = str(lic.text);
    if (text !== undefined && (await sha256File(join(root, 'licences', text))) === null) errors.push({ file: rel, pointer: '/text', reason: `licence text ${text} not found (the path is relative to licences/)` });
    if (id !== undefined) {
      licences.set(id, lic);
      licenceFile.set(id, rel);
    }
  }
  const usedLicences = new Set<string>();
  const catalogueLicence = str(settings?.licence);
  if (catalogueLicence !== undefined) usedLicences.add(catalogueLicence);

  const sources = new Map<string, Loose>();
  const sourceFiles = new Set<string>();
  for (const f of await jsonFiles(join(root, 'sources'))) {
    const rel = `sources/${f}`;
    // A file that exists but is broken is reported once, not again by every product naming it.
    sourceFiles.add(f.replace(/\.json$/, ''));
    const src = await read(rel, 'source');
    if (!src) continue;
    const id = str(src.id);
    fileNameMatches(rel, f, 'id', id);
    claim('source id', id, rel, '/id');
    const r = obj(src.ruling);
    if (r) {
      const lic = str(r.licence);
      if (lic !== undefined) {
        usedLicences.add(lic);
        if (!licences.has(lic)) errors.push({ file: rel, pointer: '/ruling/licence', reason: `unknown licence "${lic}" (no licences/${lic}.json; known: ${[...licences.keys()].join(', ') || 'none'})` });
      }
      const quoteFile = str(r.quote_file);
      const actual = quoteFile === undefined ? null : await sha256File(join(root, quoteFile));
      if (quoteFile !== undefined && actual === null) errors.push({ file: rel, pointer: '/ruling/quote_file', reason: `licence text ${quoteFile} not found (the path is relative to the catalog-src folder)` });
      const given = r.quote_sha256;
      if (actual !== null && given !== actual) {
        const where = rel + '\0/ruling/quote_sha256';
        const missing = errors.find((e) => e.file + '\0' + e.pointer === where);
        const reason = `quote_sha256 is ${JSON.stringify(given)} but the licence text ${quoteFile} hashes to ${actual}`;
        // A missing or malformed value already has its schema error: say the value there, once.
        if (missing) Object.assign(missing, { reason: `${missing.reason}: it must be the SHA-256 of ${quoteFile}, ${actual}`, expected: actual });
        else errors.push({ file: rel, pointer: '/ruling/quote_sha256', reason, expected: actual });
      }
    }
    for (const [i, d] of arr(src.data).entries()) {
      for (const key of ['path', 'acts'] as const) {
        const p = str(obj(d)?.[key]);
        if (p === undefined) continue;
        try {
          await readdir(join(root, p)).catch(async () => readFile(join(root, p)).then(() => []));
        } catch {
          errors.push({ file: rel, pointer: pointer('data', i, key), reason: `data path ${p} not found (the path is relative to the catalog-src folder)` });
        }
      }
    }
    if (r && src.unit && !arr(src.data).length && !src.no_data_reason)
      errors.push({ file: rel, pointer: '/no_data_reason', reason: 'a served source without data must say why (no_data_reason)' });
    if (id !== undefined) sources.set(id, src);
  }

  const products: Loose[] = [];
  const productFiles = new Set<string>();
  const seenSlugs = new Map<string, string>();
  for (const f of await jsonFiles(join(root, 'products'))) {
    const rel = `products/${f}`;
    productFiles.add(f.replace(/\.json$/, ''));
    const p = await read(rel, 'product');
    if (!p) continue;
    const id = str(p.product_id);
    fileNameMatches(rel, f, 'product_id', id);
    claim('product_id', id, rel, '/product_id');
    const slug = str(p.slug);
    if (slug !== undefined && seenSlugs.has(slug)) errors.push({ file: rel, pointer: '/slug', reason: `slug "${slug}" is also used by ${seenSlugs.get(slug)}` });
    if (slug !== undefined) seenSlugs.set(slug, rel);
    const seen = new Set<string>();
    arr(p.sources).forEach((entry, i) => {
      const s = str(obj(entry)?.source);
      if (s === undefined) return;
      if (!sourceFiles.has(s)) errors.push({ file: rel, pointer: pointer('sources', i, 'source'), reason: `unknown source "${s}" (no sources/${s}.json)` });
      if (seen.has(s)) errors.push({ file: rel, pointer: pointer('sources', i, 'source'), reason: `source "${s}" is listed twice` });
      seen.add(s);
      if (sources.get(s)?.held && obj(entry)?.required) errors.push({ file: rel, pointer: pointer('sources', i, 'required'), reason: `held source "${s}" cannot be required: set "required": false` });
    });
    // Prices are integers of micro-euros; past 2^53 they are no longer exact in JSON numbers.
    const pricing = obj(p.pricing);
    for (const key of ['bulk_unit_rate_micro_eur', 'draw_unit_price_micro_eur']) {
      const v = pricing?.[key];
      if (typeof v === 'number' && Number.isInteger(v) && !Number.isSafeInteger(v))
        errors.push({ file: rel, pointer: pointer('pricing', key), reason: `${v} micro-euros is more than the largest exact amount, ${Number.MAX_SAFE_INTEGER}` });
    }
    products.push(p);
  }
  if (productFiles.size === 0) errors.push({ file: 'products/', pointer: '', reason: 'no product definitions found: add one products/<product_id>.json' });
  if (catalogueLicence !== undefined && !licences.has(catalogueLicence))
    errors.push({ file: 'catalogue.json', pointer: '/licence', reason: `unknown licence "${catalogueLicence}" (no licences/${catalogueLicence}.json)` });

  if (settings) {
    const order = arr(settings.agent_skill_order);
    const listed = new Set<string>();
    order.forEach((v, i) => {
      const id = str(v);
      if (id === undefined) return;
      if (!productFiles.has(id)) errors.push({ file: 'catalogue.json', pointer: pointer('agent_skill_order', i), reason: `unknown product "${id}" (no products/${id}.json)` });
      // listed twice: the schema's uniqueItems says so
      listed.add(id);
    });
    for (const id of [...productFiles].sort())
      if (!listed.has(id)) errors.push({ file: 'catalogue.json', pointer: '/agent_skill_order', reason: `product "${id}" is missing: add "${id}" where agents should list it` });
  }
  for (const [id, rel] of licenceFile)
    if (!usedLicences.has(id))
      errors.push({ file: rel, pointer: '/id', severity: 'warning', reason: `licence "${id}" is not used by catalogue.json or any source's ruling: remove the file, or name it in a ruling` });

  // Counts of what the catalogue holds are the build's to state (docs, llms.txt, pages, agent card):
  // a number written into a description goes stale when a product or source is added.
  if (settings) {
    const said = statedCount(String((settings as { description?: unknown }).description ?? ''));
    if (said) errors.push({ file: 'catalogue.json', pointer: '/description', reason: countReason(said) });
  }
  errors.push(...(await checkActsData(root, sources)));

  for (const p of products as { product_id?: unknown; description?: unknown }[]) {
    const said = statedCount(String(p.description ?? ''));
    if (said) errors.push({ file: `products/${String(p.product_id)}.json`, pointer: '/description', reason: countReason(said) });
  }

  for (const e of errors) {
    const at = spansOf.get(e.file) && spanAt(spansOf.get(e.file)!, e.pointer);
    if (at && e.line === undefined) Object.assign(e, { line: at.line, col: at.col });
  }
  const order = (f: string) => (f === 'catalogue.json' ? 0 : f.startsWith('licences/') ? 1 : f.startsWith('sources/') ? 2 : 3);
  errors.sort((a, b) => order(a.file) - order(b.file) || a.file.localeCompare(b.file) || (a.line ?? 0) - (b.line ?? 0) || (a.col ?? 0) - (b.col ?? 0));

  const allValid = valid.size === spansOf.size;
  if (errors.some(isError) || !allValid || !settings) return { findings: errors, cat: null };
  const cat: CatalogSrc = {
    root,
    settings: settings as unknown as CatalogueSettings,
    licences: licences as unknown as Map<string, Licence>,
    sources: sources as unknown as Map<string, Source>,
    products: (products as unknown as ProductSrc[]).sort((a, b) => a.product_id.localeCompare(b.product_id)),
    inputs_sha256: await treeSha256(root),
  };
  return { findings: errors, cat };
}

/**
 * Loads catalog-src/ for a build. Throws CatalogErrors (every finding, in `check`'s text format)
 * when there is any error; warnings go to `onWarning`.
 */
export async function loadCatalogSrc(root: string, opts: { folder?: string; onWarning?: (text: string) => void } = {}): Promise<CatalogSrc> {
  const { findings, cat } = await checkCatalogSrc(root);
  if (!cat) throw new CatalogErrors(findings, opts.folder ?? root, root);
  for (const w of findings) opts.onWarning?.(formatFinding(w, root));
  return cat;
}

const NUMBER_WORDS = 'two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|hundred';

/** A count of products, sources or data spaces written into a text ("Fourteen cited data products"), or null. */
export function statedCount(text: string): string | null {
  const m = new RegExp(`\\b(?:${NUMBER_WORDS}|\\d[\\d,]*)(?:[- ]\\w+)?\\s+(?:[\\w-]+\\s+){0,3}?(?:data products|products|sources|data spaces|sectoral data spaces)\\b`, 'i').exec(text);
  return m ? m[0] : null;
}

const countReason = (said: string) =>
  `states a count ("${said}"): the build states how many products and sources there are (docs, llms.txt, pages), from the catalogue itself; describe them without the number`;

/**
 * What `lds check` says about acts that carry EuroVoc labels (eurlex-triples data) and acts that
 * come through more than one data entry:
 *  - a label that matches no descriptor of the EuroVoc table (exact, trimmed, case-insensitive) is a
 *    warning naming the act and the label: it is never guessed, and the act is routed by its others;
 *  - an act in two P data entries (of any served source) is an error: one act is one set of units,
 *    or a buyer could buy the same paragraph twice under two references.
 * Only served sources (a ruling, not held) are read: the build reads nothing else.
 */
async function checkActsData(root: string, sources: Map<string, Loose>): Promise<SourceError[]> {
  const out: SourceError[] = [];
  const served = [...sources.entries()].filter(([, s]) => obj(s.ruling) && !s.held).sort(([a], [b]) => (a < b ? -1 : 1));
  const entries = served.flatMap(([id, s]) => arr(s.data).map((d, i) => ({ id, i, adapter: str(obj(d)?.adapter), path: str(obj(d)?.path) })));
  const triples = entries.filter((e) => e.adapter === 'eurlex-triples' && e.path !== undefined);
  if (!triples.length) return out;
  const tables = entries.find((e) => e.adapter === 'eurovoc' && e.path !== undefined);
  const labels = new Set<string>();
  if (tables) for (const p of (await readEuroVocDescriptors(join(root, tables.path!), tables.path!, () => {})).values()) if (p.label) labels.add(labelKey(p.label));
  const owner = new Map<string, string>();
  for (const e of triples) {
    const rel = `sources/${e.id}.json`;
    const misses: string[] = [];
    try {
      for await (const a of readTriplesTags(join(root, e.path!))) {
        const other = owner.get(a.celex);
        if (other !== undefined && other !== e.path)
          out.push({ file: rel, pointer: pointer('data', e.i, 'path'), reason: `act ${a.celex} (line ${a.line} of ${e.path}) also comes through ${other}: one act is one set of units (a buyer must not buy a paragraph twice under two references); keep it in one data file` });
        else owner.set(a.celex, e.path!);
        if (tables) for (const t of a.tags) if (!labels.has(labelKey(t))) misses.push(`${a.celex} ${JSON.stringify(t)}`);
      }
    } catch {
      continue; // unreadable: the data path check or the build says so
    }
    if (misses.length)
      out.push({ file: rel, pointer: pointer('data', e.i, 'path'), severity: 'warning', reason: `${misses.length} EuroVoc label(s) in ${e.path} match no descriptor of ${tables!.path}/descriptors.csv (exact, trimmed, case-insensitive); not guessed, each act is routed by its other labels: ${misses.join(', ')}` });
  }
  return out;
}
