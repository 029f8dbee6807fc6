// The catalog-src most suites build: the repository's own, except that the EUR-Lex-Triples cut
// (1,504 acts, 1.37 M paragraphs, a minute of CPU to build) is replaced by a small real subset of
// it, the same lines byte for byte. Suites that test publishing, drawing, hosting or the build's
// mechanics need a catalogue with every product selling, not a million paragraphs; the few that
// need the shipped catalogue itself (the README's buyer example, issue 49's done-when, the
// adapter's counts on real acts) use SHIPPED_CATALOG_SRC (helpers/build.ts) and its one cached
// build (realCatalogue in helpers/real-catalogue.ts).
//
// test/run.ts makes the copy once per machine (cached by the bytes of catalog-src and this file)
// and names it in LDS_TEST_CATALOG_SRC, which helpers/build.ts's CATALOG_SRC follows.
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises';
import { gunzipSync, gzipSync } from 'node:zlib';
import { join, relative } from 'node:path';
import { cachedFixture } from './fixture-cache.ts';
import { REPO } from './build.ts';

/** The cut's path inside catalog-src. */
export const TRIPLES = 'data/eurlex_triples/eurlex_triples_acts.jsonl.gz';

/**
 * The acts kept, each for a reason: the two culture acts of the done-when (Directive 2014/60/EU on
 * the return of cultural objects; Regulation 116/2009 on the export of cultural goods), and the
 * smallest acts that, with today's product routing, give every one of the 14 products units:
 * agriculture, energy, green deal (31989R2219); language, media, public administration
 * (31994D0140); finance, research (32005D0037); health, with "vaccine" (32009H1019); language
 * (32010D0131); agriculture, mobility, skills (32015D0799); finance, manufacturing (32015R2017);
 * language, tourism (32017D0865). About 1,000 lines of text.
 */
export const SUBSET_CELEX = ['31989R2219', '31994D0140', '32005D0037', '32009H1019', '32009R0116', '32010D0131', '32014L0060', '32015D0799', '32015R2017', '32017D0865'];

/** The lines of the cut whose act is in SUBSET_CELEX, in the cut's order, as a gzip (mtime 0, like the cut). */
export async function subsetOfTriples(gz: Buffer): Promise<Buffer> {
  const keep = new Set(SUBSET_CELEX);
  const lines = gunzipSync(gz).toString('utf8').split('\n');
  const kept = lines.filter((l) => {
    const m = /^\{"celex_id": "([^"]+)"/.exec(l);
    return m !== null && keep.has(m[1]);
  });
  if (kept.length !== keep.size) throw new Error(`the EUR-Lex-Triples cut holds ${kept.length} of the ${keep.size} acts the test catalogue keeps`);
  return gzipSync(`${kept.join('\n')}\n`);
}

/** Makes the test copy of `src` in `dir`: every file as it is, the cut replaced by its subset. */
export async function makeTestCatalogSrc(src: string, dir: string): Promise<void> {
  const cut = join(src, TRIPLES);
  await cp(src, dir, { recursive: true, filter: (f) => relative(cut, f) !== '' });
  await mkdir(join(dir, 'data', 'eurlex_triples'), { recursive: true });
  await writeFile(join(dir, TRIPLES), await subsetOfTriples(await readFile(cut)));
}

/** The test catalog-src, made once per machine for these inputs; its folder. */
export async function testCatalogSrc(): Promise<string> {
  const entry = await cachedFixture('test-catalog-src', { paths: ['catalog-src', 'test/helpers/test-catalog.ts'], params: 'v1' }, (dir) =>
    makeTestCatalogSrc(join(REPO, 'catalog-src'), join(dir, 'catalog-src')),
  );
  return join(entry, 'catalog-src');
}
