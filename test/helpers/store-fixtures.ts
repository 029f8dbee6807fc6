// Test helpers for the unit store tests. The expected numbers are recomputed here straight from
// the fixture files with plain JSON.parse, csv-parse and string search; nothing here calls the
// generator's adapters, routing or unit builders, so a bug there cannot hide in the expectation.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parse as parseCsv } from 'csv-parse/sync';
import { Level } from 'level';
import { loadCatalogSrc } from '../../generator/load.ts';
import type { CatalogSrc } from '../../generator/model.ts';
import { CATALOG_SRC } from './build.ts';

export { CATALOG_SRC };
export const BUILT_AT = '2026-11-01T00:00:00.000Z';

export async function catalog(root = CATALOG_SRC): Promise<CatalogSrc> {
  return loadCatalogSrc(root);
}

export const EURLEX57K_FILES = ['data/eurlex57k/eurlex57k_dom32_36.jsonl', 'data/eurlex57k/eurlex57k_dom28.jsonl'];
const ESCO_SKILL_FILES = ['data/esco/transversalSkillsCollection_en.csv', 'data/esco/ictSkillsCollection_en.csv'];

export const TRIPLES_FILE = 'data/eurlex_triples/eurlex_triples_acts.jsonl.gz';

/**
 * The paragraphs of an act of the EUR-Lex-Triples cut, counted independently of the adapter
 * (generator/ingest/eurlex-triples.ts) from the rule its unit_definition states: the non-empty
 * lines, less the page furniture among the first 8, less the title lines (before "Having regard",
 * "THE ", "HAVE ", "HAS ", "Whereas" or "Article n" within the first 8 lines, each at most 300
 * characters; else the first line), less every line that only introduces the next one (a label,
 * a heading, the article title after "Article n" outside the annexes), plus one when the text ends
 * in such lines.
 */
export function countTriplesParagraphs(celex: string, reference: string): number {
  const furniture = /^(\d{1,2}\.\d{1,2}\.\d{4}|EN|Official Journal of the European Union|[LC] \d+[A-Z]?\s*\/\s*\d+|EUR-Lex - .+ - EN|Important legal notice|Avis juridique important|\||Official Journal [LC] \d+[A-Z]? ?, .*)$/;
  let lines = reference.split('\n').map((l) => l.trim()).filter(Boolean);
  lines = lines.filter((l, i) => i >= 8 || !(l === celex || furniture.test(l)));
  const end = lines.slice(0, 8).findIndex((l) => /^(Having regard|THE |HAVE |HAS |Whereas|Article \d)/.test(l));
  const title = end === 0 ? 0 : end > 0 && lines.slice(0, end).every((l) => l.length <= 300) ? end : lines.length > 1 && lines[0].length <= 300 ? 1 : 0;
  lines = lines.slice(title);
  const label = /^([‘'"(]?(\d{1,3}[a-z]?|[a-z]{1,2}|[ivxlc]{1,6})[.)]|\(\d{1,3}[a-z]?\)|[—–•-])$/;
  const heading = /^(ANNEX( ([IVXLC]+|\d+[A-Z]?|[A-Z]))?|(CHAPTER|TITLE|SECTION|PART|Chapter|Title|Section|Part) ([IVXLC]+|\d+[A-Z]?|[A-Z])|Whereas:?)$/;
  let inAnnex = false;
  let introducers = 0;
  let trailing = 0;
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i];
    const article = !inAnnex && /^Article \d+[a-z]*$/.test(l);
    if (/^ANNEX\b/.test(l) && heading.test(l)) inAnnex = true;
    const articleTitle = !inAnnex && i > 0 && /^Article \d+[a-z]*$/.test(lines[i - 1]) && l.length <= 150 && !/[.;:,]$/.test(l) && !label.test(l) && !heading.test(l) && i + 1 < lines.length;
    const intro = article || articleTitle || (heading.test(l) && !(inAnnex && /^Whereas/.test(l))) || label.test(l);
    if (intro) introducers++;
    trailing = intro ? trailing + 1 : 0;
  }
  return lines.length - introducers + (trailing > 0 ? 1 : 0);
}

/** The acts of the EUR-Lex-Triples cut in `root` (JSON lines of a gzip). */
export function triplesActs(root: string): { celex_id: string; reference: string; tags: string[] }[] {
  return gunzipSync(readFileSync(join(root, TRIPLES_FILE))).toString('utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));
}

const jsonl = (path: string) => readFileSync(path, 'utf8').split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l));

export interface Expected {
  /** product -> source -> counts */
  counts: Record<string, Record<string, { units: number; rows: number }>>;
  /** CELEX -> products its descriptors route to (over all product rules) */
  actProducts: Map<string, string[]>;
}

/** Every count the store should report, recomputed from catalog-src's files. */
export function expectedCounts(cat: CatalogSrc): Expected {
  const root = cat.root;
  const descriptors = new Map<string, { mts: string[]; domains: string[] }>();
  for (const r of parseCsv(readFileSync(join(root, 'data/eurovoc/descriptors.csv')), { columns: true }) as Record<string, string>[])
    descriptors.set(r.descriptor_id, { mts: r.mt_eurovoc_ids.split(';').filter(Boolean), domains: r.domain_codes.split(';').filter(Boolean) });

  const actProducts = new Map<string, string[]>();
  const route = (celex: string, ds: string[]) => {
    const hits = cat.products.filter(({ routing: r }) =>
      ds.some((d) => r.descriptors.includes(d) || (descriptors.get(d)?.mts ?? []).some((m) => r.microthesauri.includes(m)) || (descriptors.get(d)?.domains ?? []).some((x) => r.domains.includes(x))),
    );
    actProducts.set(celex, hits.map((p) => p.product_id).sort());
  };
  for (const act of jsonl(join(root, 'data/eurlex/multi_eurlex_sample.jsonl'))) route(act.celex_id, act.eurovoc_concepts.all_levels);
  // EURLEX57K acts: one unit per non-empty block (heading, recitals, each article, closing part)
  const blocks = new Map<string, number>();
  for (const f of EURLEX57K_FILES) {
    for (const act of jsonl(join(root, f))) {
      route(act.celex_id, act.eurovoc_concepts);
      const texts: string[] = [act.header, act.recitals ?? '', ...act.main_body, act.attachments ?? ''];
      blocks.set(act.celex_id, texts.filter((t) => t.trim() !== '').length);
    }
  }

  // EUR-Lex-Triples acts: EuroVoc labels matched to the table's English labels (trimmed, any case)
  const byLabel = new Map<string, string>();
  for (const r of parseCsv(readFileSync(join(root, 'data/eurovoc/descriptors.csv')), { columns: true }) as Record<string, string>[]) byLabel.set(r.label_en.trim().toLowerCase(), r.descriptor_id);
  const tripleParagraphs = new Map<string, number>();
  for (const act of triplesActs(root)) {
    route(act.celex_id, act.tags.map((t) => byLabel.get(t.trim().toLowerCase())).filter((d): d is string => d !== undefined));
    tripleParagraphs.set(act.celex_id, countTriplesParagraphs(act.celex_id, act.reference));
  }

  const paragraphs = jsonl(join(root, 'data/eurlex/multi_eurlex_paragraphs_aligned.jsonl'));
  // Finlex: provisions = elements with an eId between <body> and </body>, counted by string search
  let provisions = 0;
  const walk = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith('.xml')) {
        const xml = readFileSync(p, 'utf8');
        const body = xml.slice(xml.indexOf('<body>'), xml.indexOf('</body>'));
        provisions += body.split(' eId="').length - 1;
      }
    }
  };
  walk(join(root, 'data/akn/finlex/act'));
  const ecdcRecords = (parseCsv(readFileSync(join(root, 'data/ecdc/covid19_weekly_cases_deaths_2023w27-w46.csv')), { columns: true }) as unknown[]).length;
  const csvRows = (f: string, delimiter = ',') => parseCsv(readFileSync(join(root, f)), { columns: true, bom: true, delimiter }) as Record<string, string>[];
  // ESCO: one unit per concept; a skill listed in several collections counts once
  const escoUnits = csvRows('data/esco/occupations_en_sample.csv').length + new Set(ESCO_SKILL_FILES.flatMap((f) => csvRows(f).map((r) => r.conceptUri))).size;
  // OpenAIRE: the JSON lines, and one result per raw OAF XML record beside them
  const oaf = readdirSync(join(root, 'data/openaire')).filter((f) => f.endsWith('.xml'));
  const openaireUnits = jsonl(join(root, 'data/openaire/h2020_results_sample.jsonl')).length + oaf.reduce((n, f) => n + (readFileSync(join(root, 'data/openaire', f), 'utf8').split('<oaf:result>').length - 1), 0);
  const eeaUnits = csvRows('data/eea_airbase/DENW053.csv').length + csvRows('data/eea_airbase/DENW212.csv').length;
  const clcUnits = csvRows('data/copernicus_clc/clc_legend.csv', ';').length;
  // IATE: one unit per concept of the release or the API pull; rows: one per release term row, and
  // per pulled concept its definition (if any), one per language with terms, one per domain path
  const iateTerms = csvRows('data/iate/OP_Covid19_IATE_2872020.csv');
  const iatePull = JSON.parse(readFileSync(join(root, 'data/iate/iate_data_covid19_first330.json'), 'utf8')) as Record<string, string>[];
  const iateUnits = new Set([...iateTerms.map((r) => r['IATE ID']), ...iatePull.map((e) => String(e.id_concept))]).size;
  const iateRows =
    iateTerms.length +
    iatePull.reduce((n, e) => n + (e.en_def.trim() ? 1 : 0) + ['en', 'cs', 'da', 'de', 'es', 'fi', 'fr', 'it', 'nl', 'pt'].filter((l) => (e[l] ?? '').trim()).length + e.domains.split(', ').length, 0);

  const counts: Expected['counts'] = {};
  for (const p of cat.products) {
    counts[p.product_id] = {};
    for (const { source } of p.sources) {
      const src = cat.sources.get(source)!;
      let units = 0;
      let rows = 0;
      if (!src.held && src.ruling) {
        // a source marked `routed` sells only the acts the product's EuroVoc rule selects; otherwise every act
        const routedHere = (celex: string) => !src.routed || (actProducts.get(celex) ?? []).includes(p.product_id);
        if (source === 'eu.eurlex') for (const x of paragraphs.filter((x) => routedHere(x.celex_id))) { units++; rows += x.langs.length; }
        if (source === 'eu.aligned_paragraphs') rows = units = paragraphs.filter((x) => routedHere(x.celex_id)).length;
        if (source === 'fi.finlex') rows = units = provisions;
        if (source === 'global.ecdc') rows = units = ecdcRecords;
        if (source === 'eu.eurlex') for (const [celex, n] of blocks) if (routedHere(celex)) { units += n; rows += n; }
        if (source === 'eu.eurlex') for (const [celex, n] of tripleParagraphs) if (routedHere(celex)) { units += n; rows += n; }
        if (source === 'global.esco') rows = units = escoUnits;
        if (source === 'global.openaire') rows = units = openaireUnits;
        if (source === 'global.eea') rows = units = eeaUnits;
        if (source === 'global.copernicus') rows = units = clcUnits;
        if (source === 'eu.iate') [units, rows] = [iateUnits, iateRows];
        // eu.efsa: ruled, but its sample is not attached (licence not confirmed): zero
      }
      counts[p.product_id][source] = { units, rows };
    }
  }
  return { counts, actProducts };
}

/**
 * Reads every unit record of a built store directly (no reader code): [unit, products], from
 * units.dat (a u32 length, then the record's JSON, as contract/store-format.ts documents it), and
 * every key of the store's LevelDB.
 */
export async function scanStore(storeDir: string): Promise<{ units: { ref: string; source: string; rows: unknown[] }[]; products: string[][]; keys: string[] }> {
  const units: { ref: string; source: string; rows: unknown[] }[] = [];
  const products: string[][] = [];
  const data = readFileSync(join(storeDir, 'units.dat'));
  for (let at = 0; at < data.length; ) {
    const len = data.readUInt32LE(at);
    const v = JSON.parse(data.toString('utf8', at + 4, at + 4 + len));
    units.push(v.unit);
    products.push(v.products);
    at += 4 + len;
  }
  const db = new Level<string, string>(storeDir, { createIfMissing: false });
  await db.open();
  const keys: string[] = [];
  try {
    for await (const key of db.keys()) keys.push(key);
  } finally {
    await db.close();
  }
  return { units, products, keys };
}

/**
 * The OpenAIRE abstracts of the fixtures (JSON lines `descriptions`, OAF XML `<description>`), as
 * plain text: what must never be stored or delivered.
 */
export function openAireAbstracts(root = CATALOG_SRC): string[] {
  const dir = join(root, 'data/openaire');
  const fromJson = jsonl(join(dir, 'h2020_results_sample.jsonl')).flatMap((x) => x.descriptions as string[]);
  const fromXml = readdirSync(dir).filter((f) => f.endsWith('.xml')).flatMap((f) => [...readFileSync(join(dir, f), 'utf8').matchAll(/<description>([\s\S]*?)<\/description>/g)].map((m) => m[1]));
  return [...fromJson, ...fromXml].map((d) => d.replace(/<[^>]+>|&lt;[^&]*&gt;/g, ' ').replace(/\s+/g, ' ').trim()).filter((d) => d.length > 60);
}
