// The real corpus of `npm run bench:search -- real` (issue 49): the paragraphs of the 1,504 EU acts
// of the EUR-Lex-Triples cut that catalog-src ships, stored by the real store build with the real
// routing, and real queries: each product's example query in its own product, and EuroVoc labels
// the acts carry (seeded), each in a product an act carrying it routes to. Work files live in
// $TMPDIR/lds-bench-search-real/ (or BENCH_DIR).
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { CURRENT_FILE, tokenize } from '../contract/store-format.ts';
import { unitRecords } from '../contract/unit-records.ts';
import { readEurlexTriples } from '../generator/ingest/eurlex-triples.ts';
import { failOnBadRecord } from '../generator/ingest/errors.ts';
import { rng } from '../test/helpers/random.ts';
import { SEED, SRC, type Corpus } from './corpus.ts';

/** eu.eurlex's data entry for the cut, as catalog-src/sources/eu.eurlex.json names it. */
export const TRIPLES_DATA = { adapter: 'eurlex-triples' as const, path: 'data/eurlex_triples/eurlex_triples_acts.jsonl.gz' };

/** How many queries: the 14 products' example queries, the rest EuroVoc labels. */
const QUERY_COUNT = 100;

export function realCorpus(): Corpus {
  const dir = resolve(process.env.BENCH_DIR ?? join(tmpdir(), 'lds-bench-search-real'));
  const cut = join(SRC, TRIPLES_DATA.path);
  return { units: 0, dir, paragraphs: cut, acts: cut, store: join(dir, 'store') };
}

export interface BenchQuery {
  product: string;
  query: string;
}

export interface BenchDoc {
  ref: string;
  products: string[];
  text: string;
}

/**
 * The stored units of the cut with their searchable text (the paragraph, as the adapter cut it:
 * generator/store/units.ts actParagraphUnit) and their products (as the build routed them, read
 * back from the store); and the queries, chosen in the same pass over the acts.
 */
export async function realDocsAndQueries(c: Corpus, products: { product_id: string; example_query: string }[], onDoc: (d: BenchDoc) => Promise<void> | void): Promise<BenchQuery[]> {
  const version = readFileSync(join(c.store, CURRENT_FILE), 'utf8').trim();
  const productsOf = new Map<string, string[]>();
  for await (const su of unitRecords(join(c.store, version))) productsOf.set(su.unit.ref, su.products);
  const labelActs = new Map<string, string[]>(); // label -> the products of the first act carrying it
  for await (const act of readEurlexTriples(c.paragraphs, TRIPLES_DATA.path, failOnBadRecord)) {
    let routed: string[] | undefined;
    for (const p of act.paragraphs) {
      const ref = `eu.eurlex:${act.celex}/${p.pos}`;
      const ps = productsOf.get(ref);
      if (!ps) continue; // not stored (the store holds only units routed to a product)
      routed = ps;
      await onDoc({ ref, products: ps, text: p.text });
    }
    if (routed) for (const t of act.tags) if (!labelActs.has(t) && tokenize(t).length) labelActs.set(t, routed);
  }
  const queries: BenchQuery[] = products.map((p) => ({ product: p.product_id, query: p.example_query }));
  const labels = [...labelActs.keys()].sort();
  const r = rng(SEED ^ 0x7ea1);
  const picked = new Set<string>();
  while (queries.length < QUERY_COUNT && picked.size < labels.length) {
    const label = labels[Math.floor(r() * labels.length)]!;
    if (picked.has(label)) continue;
    picked.add(label);
    const ps = labelActs.get(label)!;
    queries.push({ product: ps[Math.floor(r() * ps.length)]!, query: label });
  }
  return queries;
}
