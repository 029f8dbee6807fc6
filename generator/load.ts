// Reads catalog-src/, validates every file against its JSON Schema, then cross-checks the files
// against each other. Collects every error before failing, so `check` reports them all at once.
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import Ajv2020, { type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { CatalogErrors, pointer, type SourceError } from './errors.ts';
import type { CatalogSrc, CatalogueSettings, Licence, ProductSrc, Source } from './model.ts';

const SCHEMAS = ['catalogue', 'licence', 'source', 'product'] as const;
type SchemaName = (typeof SCHEMAS)[number];

async function compileSchemas(root: string): Promise<Record<SchemaName, ValidateFunction>> {
  const ajv = new Ajv2020.default({ allErrors: true, strict: true, strictRequired: false });
  addFormats.default(ajv);
  const out = {} as Record<SchemaName, ValidateFunction>;
  for (const name of SCHEMAS) {
    const schema = JSON.parse(await readFile(join(root, 'schemas', `${name}.schema.json`), 'utf8'));
    out[name] = ajv.compile(schema);
  }
  return out;
}

function ajvErrors(file: string, errors: ErrorObject[] | null | undefined): SourceError[] {
  return (errors ?? [])
    // oneOf/if branches repeat what the concrete errors already say
    .filter((e) => !['oneOf', 'if'].includes(e.keyword) || (errors ?? []).length === 1)
    .map((e) => {
      let reason = e.message ?? 'invalid';
      if (e.keyword === 'additionalProperties') reason = `unknown property "${(e.params as { additionalProperty: string }).additionalProperty}"`;
      if (e.keyword === 'required') return { file, pointer: e.instancePath + pointer((e.params as { missingProperty: string }).missingProperty), reason: 'required field is missing' };
      if (e.keyword === 'enum') reason += `: ${JSON.stringify((e.params as { allowedValues: unknown[] }).allowedValues)}`;
      if (e.keyword === 'not' && e.schemaPath.includes('oneOf')) reason = 'a held source has no licence ruling and no data';
      return { file, pointer: e.instancePath, reason };
    });
}

/** Parses JSON, turning a syntax error into a located SourceError. */
function parseJson(file: string, text: string, errors: SourceError[]): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    const msg = (err as Error).message;
    const pos = /position (\d+)/.exec(msg);
    let where = '';
    if (pos) {
      const before = text.slice(0, Number(pos[1]));
      const line = before.split('\n').length;
      where = ` (line ${line}, column ${Number(pos[1]) - before.lastIndexOf('\n')})`;
    }
    errors.push({ file, pointer: '', reason: `invalid JSON${where}: ${msg}` });
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
async function sha256File(path: string): Promise<string | null> {
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

/**
 * Loads and validates catalog-src/. Throws CatalogErrors listing every problem found.
 */
export async function loadCatalogSrc(root: string): Promise<CatalogSrc> {
  const errors: SourceError[] = [];
  const validate = await compileSchemas(root);

  const read = async <T>(rel: string, schema: SchemaName): Promise<T | undefined> => {
    let text: string;
    try {
      text = await readFile(join(root, rel), 'utf8');
    } catch {
      errors.push({ file: rel, pointer: '', reason: 'file is missing' });
      return undefined;
    }
    const doc = parseJson(rel, text, errors);
    if (doc === undefined) return undefined;
    if (!validate[schema](doc)) {
      errors.push(...ajvErrors(rel, validate[schema].errors));
      return undefined;
    }
    return doc as T;
  };

  const settings = await read<CatalogueSettings>('catalogue.json', 'catalogue');

  const licences = new Map<string, Licence>();
  for (const f of await jsonFiles(join(root, 'licences'))) {
    const rel = `licences/${f}`;
    const lic = await read<Licence>(rel, 'licence');
    if (!lic) continue;
    if (`${lic.id}.json` !== f) errors.push({ file: rel, pointer: '/id', reason: `id "${lic.id}" does not match the file name` });
    if ((await sha256File(join(root, 'licences', lic.text))) === null) errors.push({ file: rel, pointer: '/text', reason: `licence text ${lic.text} not found` });
    licences.set(lic.id, lic);
  }

  const sources = new Map<string, Source>();
  const sourceFiles = new Set<string>();
  for (const f of await jsonFiles(join(root, 'sources'))) {
    const rel = `sources/${f}`;
    // A file that exists but is broken is reported once, not again by every product naming it.
    sourceFiles.add(f.replace(/\.json$/, ''));
    const src = await read<Source>(rel, 'source');
    if (!src) continue;
    if (`${src.id}.json` !== f) errors.push({ file: rel, pointer: '/id', reason: `id "${src.id}" does not match the file name` });
    if (src.ruling) {
      const r = src.ruling;
      if (!licences.has(r.licence)) errors.push({ file: rel, pointer: '/ruling/licence', reason: `unknown licence "${r.licence}"` });
      const actual = await sha256File(join(root, r.quote_file));
      if (actual === null) errors.push({ file: rel, pointer: '/ruling/quote_file', reason: `licence text ${r.quote_file} not found` });
      else if (actual !== r.quote_sha256)
        errors.push({ file: rel, pointer: '/ruling/quote_sha256', reason: `does not match the SHA-256 of ${r.quote_file} (${actual})` });
    }
    for (const [i, d] of (src.data ?? []).entries()) {
      for (const key of ['path', 'acts'] as const) {
        const p = d[key];
        if (p === undefined) continue;
        try {
          await readdir(join(root, p)).catch(async () => readFile(join(root, p)).then(() => []));
        } catch {
          errors.push({ file: rel, pointer: pointer('data', i, key), reason: `data path ${p} not found` });
        }
      }
    }
    if (src.ruling && src.unit && !src.data?.length && !src.no_data_reason)
      errors.push({ file: rel, pointer: '/no_data_reason', reason: 'a served source without data must say why (no_data_reason)' });
    sources.set(src.id, src);
  }

  const products: ProductSrc[] = [];
  const productFiles = new Set<string>();
  const seenSlugs = new Map<string, string>();
  for (const f of await jsonFiles(join(root, 'products'))) {
    const rel = `products/${f}`;
    productFiles.add(f.replace(/\.json$/, ''));
    const p = await read<ProductSrc>(rel, 'product');
    if (!p) continue;
    if (`${p.product_id}.json` !== f) errors.push({ file: rel, pointer: '/product_id', reason: `product_id "${p.product_id}" does not match the file name` });
    if (seenSlugs.has(p.slug)) errors.push({ file: rel, pointer: '/slug', reason: `slug "${p.slug}" is also used by ${seenSlugs.get(p.slug)}` });
    seenSlugs.set(p.slug, rel);
    const seen = new Set<string>();
    p.sources.forEach((s, i) => {
      if (!sourceFiles.has(s.source)) {
        errors.push({ file: rel, pointer: pointer('sources', i, 'source'), reason: `unknown source "${s.source}" (no sources/${s.source}.json)` });
      }
      if (seen.has(s.source)) errors.push({ file: rel, pointer: pointer('sources', i, 'source'), reason: `source "${s.source}" is listed twice` });
      seen.add(s.source);
      const src = sources.get(s.source);
      if (src?.held && s.required) errors.push({ file: rel, pointer: pointer('sources', i, 'required'), reason: `held source "${s.source}" cannot be required` });
    });
    products.push(p);
  }
  if (products.length === 0) errors.push({ file: 'products/', pointer: '', reason: 'no product definitions found' });
  if (settings && !licences.has(settings.licence))
    errors.push({ file: 'catalogue.json', pointer: '/licence', reason: `unknown licence "${settings.licence}"` });

  if (settings) {
    const ids = new Set(products.map((p) => p.product_id));
    settings.agent_skill_order.forEach((id, i) => {
      if (!productFiles.has(id)) errors.push({ file: 'catalogue.json', pointer: pointer('agent_skill_order', i), reason: `unknown product "${id}"` });
    });
    for (const id of ids)
      if (!settings.agent_skill_order.includes(id)) errors.push({ file: 'catalogue.json', pointer: '/agent_skill_order', reason: `product "${id}" is missing` });
  }
  // Counts of what the catalogue holds are the build's to state (docs, llms.txt, pages, agent card):
  // a number written into a description goes stale when a product or source is added.
  if (settings) {
    const said = statedCount(settings.description);
    if (said) errors.push({ file: 'catalogue.json', pointer: '/description', reason: countReason(said) });
  }
  for (const p of products) {
    const said = statedCount(p.description);
    if (said) errors.push({ file: `products/${p.product_id}.json`, pointer: '/description', reason: countReason(said) });
  }
  if (errors.length || !settings) throw new CatalogErrors(errors);
  products.sort((a, b) => a.product_id.localeCompare(b.product_id));
  return { root, settings, licences, sources, products, inputs_sha256: await treeSha256(root) };
}


const NUMBER_WORDS = 'two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|hundred';

/** A count of products, sources or data spaces written into a text ("Fourteen cited data products"), or null. */
export function statedCount(text: string): string | null {
  const m = new RegExp(`\\b(?:${NUMBER_WORDS}|\\d[\\d,]*)(?:[- ]\\w+)?\\s+(?:[\\w-]+\\s+){0,3}?(?:data products|products|sources|data spaces|sectoral data spaces)\\b`, 'i').exec(text);
  return m ? m[0] : null;
}

const countReason = (said: string) =>
  `states a count ("${said}"): the build states how many products and sources there are (docs, llms.txt, pages), from the catalogue itself; describe them without the number`;
