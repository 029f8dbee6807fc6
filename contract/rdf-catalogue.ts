// The whole catalogue in DCAT-AP, one document in three RDF serialisations: where the build
// publishes it and how a request for the one negotiated address picks a file. The generator writes
// the files and the web-server rules from this list and the service answers the negotiated address
// with it, so every form offers the same files. The service weighs q-values (negotiateRdf); the
// web-server rules go by which type Accept names (generator/emit/negotiation-rules.ts).
//
// The negotiated address is `{base_url}/dcat/catalog` (the per-product documents live below it, at
// `{base_url}/dcat/catalog/{product_id}`); each serialisation is a file beside it with its suffix.
// The address answers 303 See Other to the file the Accept header prefers (Vary: Accept), so a
// cache never mixes them up and every file keeps its own URL, type and tag.

export interface RdfSerialisation {
  /** The file's suffix after the negotiated path: `{base_url}/dcat/catalog.ttl`. */
  suffix: string;
  /** The media type the file is served with, and the one Accept names to get it. */
  mediaType: string;
  /** The Content-Type header (with charset where the type takes one). */
  contentType: string;
  /** Other media types that ask for the same file. */
  aliases: string[];
}

/** In order of preference when Accept allows several equally (and JSON-LD when it names none). */
export const RDF_SERIALISATIONS: readonly RdfSerialisation[] = [
  { suffix: '.jsonld', mediaType: 'application/ld+json', contentType: 'application/ld+json; charset=utf-8', aliases: ['application/json'] },
  { suffix: '.ttl', mediaType: 'text/turtle', contentType: 'text/turtle; charset=utf-8', aliases: ['application/x-turtle'] },
  { suffix: '.rdf', mediaType: 'application/rdf+xml', contentType: 'application/rdf+xml; charset=utf-8', aliases: ['application/xml', 'text/xml'] },
];

/** The path below base_url of the negotiated address. */
export const RDF_CATALOGUE_PATH = '/dcat/catalog';

/**
 * The serialisation an Accept header prefers (RFC 9110 12.5.1: the highest q; on a tie, the more
 * specific range, then the order above; `*\/*` and `application/*` count for what they cover), or
 * null when it accepts none of them (406). No Accept at all means JSON-LD.
 */
export function negotiateRdf(accept: string | undefined): RdfSerialisation | null {
  if (!accept || !accept.trim()) return RDF_SERIALISATIONS[0]!;
  const ranges = accept.split(',').map((part) => {
    const [range, ...params] = part.split(';');
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/i.exec(p);
      if (m) q = Number(m[1]);
    }
    return { range: (range ?? '').trim().toLowerCase(), q: Number.isFinite(q) ? q : 0 };
  });
  let best: { s: RdfSerialisation; q: number; specificity: number; order: number } | null = null;
  RDF_SERIALISATIONS.forEach((s, order) => {
    // The most specific range that covers this type decides its q (RFC 9110 12.5.1).
    let match: { q: number; specificity: number } | null = null;
    for (const r of ranges) {
      const types = [s.mediaType, ...s.aliases];
      const specificity = types.includes(r.range) ? (r.range === s.mediaType ? 3 : 2) : r.range === `${s.mediaType.split('/')[0]}/*` ? 1 : r.range === '*/*' ? 0 : -1;
      if (specificity < 0) continue;
      if (!match || specificity > match.specificity || (specificity === match.specificity && r.q > match.q)) match = { q: r.q, specificity };
    }
    if (!match || match.q <= 0) return;
    if (!best || match.q > best.q || (match.q === best.q && match.specificity > best.specificity)) best = { s, q: match.q, specificity: match.specificity, order };
  });
  return best ? (best as { s: RdfSerialisation }).s : null;
}
