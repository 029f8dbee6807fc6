// The DCAT documents as RDF triples, and the triples as Turtle and RDF/XML.
//
// The build's DCAT JSON-LD is a restricted form it writes itself (dcat.ts): one inline context of
// prefixes only, an @graph of nodes whose keys are compact IRIs, values that are node references
// ({"@id"}), literals ({"@value"} with @language or @type, or a plain string), nested objects
// without @id (blank nodes) and arrays. `triples` reads exactly that form, synchronously (the
// emitters are pure and synchronous; the jsonld package only works asynchronously) and refuses
// anything else, so a new shape in dcat.ts fails the build instead of being dropped. The tests read
// every serialisation back with libraries that did not write it (the jsonld package, rdflib) and
// check that the graphs are the same.
//
// Deterministic: triples come out in document order, blank nodes are numbered in that order, and
// both writers follow it (Turtle through n3's writer; RDF/XML written here, one rdf:Description
// per subject in order of first appearance).
import { DataFactory, Writer } from 'n3';

export type Term =
  | { kind: 'iri'; value: string }
  | { kind: 'blank'; value: string }
  | { kind: 'literal'; value: string; language?: string; datatype?: string };

export interface Triple { s: Term; p: string; o: Term }

export const RDF_NS = 'http://www.w3.org/1999/02/22-rdf-syntax-ns#';
const XSD_STRING = 'http://www.w3.org/2001/XMLSchema#string';

type Prefixes = Record<string, string>;

/** A compact IRI (prefix:local) or an absolute IRI, expanded with the document's prefixes. */
function expand(prefixes: Prefixes, name: string): string {
  const colon = name.indexOf(':');
  if (colon > 0) {
    const ns = prefixes[name.slice(0, colon)];
    if (ns !== undefined && !name.slice(colon + 1).startsWith('//')) return ns + name.slice(colon + 1);
  }
  if (!/^[a-z][a-z0-9+.-]*:/i.test(name)) throw new Error(`RDF: ${JSON.stringify(name)} is neither a compact IRI of the context nor an absolute IRI`);
  return name;
}

/** The triples of a DCAT JSON-LD document in the build's restricted form. */
export function triples(doc: { '@context': Prefixes; '@graph': Record<string, unknown>[] }): Triple[] {
  const prefixes = doc['@context'];
  const out: Triple[] = [];
  let blanks = 0;

  const object = (value: unknown): Term => {
    if (typeof value === 'string') return { kind: 'literal', value };
    if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`RDF: cannot read value ${JSON.stringify(value)}`);
    const v = value as Record<string, unknown>;
    if ('@value' in v) {
      const keys = Object.keys(v).filter((k) => k !== '@value');
      if (typeof v['@value'] !== 'string' || keys.some((k) => k !== '@language' && k !== '@type') || keys.length > 1) throw new Error(`RDF: cannot read literal ${JSON.stringify(v)}`);
      if (typeof v['@language'] === 'string') return { kind: 'literal', value: v['@value'], language: v['@language'] };
      if (typeof v['@type'] === 'string') return { kind: 'literal', value: v['@value'], datatype: expand(prefixes, v['@type']) };
      return { kind: 'literal', value: v['@value'] };
    }
    return node(v);
  };

  const node = (n: Record<string, unknown>): Term => {
    const id = n['@id'];
    const subject: Term = typeof id === 'string' ? { kind: 'iri', value: expand(prefixes, id) } : { kind: 'blank', value: `b${blanks++}` };
    for (const [key, value] of Object.entries(n)) {
      if (key === '@id') continue;
      if (key === '@type') {
        for (const t of Array.isArray(value) ? value : [value]) out.push({ s: subject, p: `${RDF_NS}type`, o: { kind: 'iri', value: expand(prefixes, String(t)) } });
        continue;
      }
      if (key.startsWith('@')) throw new Error(`RDF: keyword ${key} is not part of the build's JSON-LD form`);
      const p = expand(prefixes, key);
      for (const v of Array.isArray(value) ? value : [value]) out.push({ s: subject, p, o: object(v) });
    }
    return subject;
  };

  for (const n of doc['@graph']) node(n);
  return out;
}

// --- Turtle ---------------------------------------------------------------------------------

const n3Term = (t: Term) =>
  t.kind === 'iri'
    ? DataFactory.namedNode(t.value)
    : t.kind === 'blank'
      ? DataFactory.blankNode(t.value)
      : DataFactory.literal(t.value, t.language ?? (t.datatype ? DataFactory.namedNode(t.datatype) : undefined));

/** Turtle with the document's prefixes, triples in order (n3's writer groups a subject's runs). */
export function turtle(ts: Triple[], prefixes: Prefixes): string {
  const writer = new Writer({ prefixes: { ...prefixes } });
  for (const t of ts) writer.addQuad(DataFactory.quad(n3Term(t.s) as any, DataFactory.namedNode(t.p), n3Term(t.o) as any));
  let text = '';
  // Without an output stream n3's writer ends synchronously.
  writer.end((err, result) => {
    if (err) throw err;
    text = result;
  });
  if (!text) throw new Error('Turtle: the writer produced nothing');
  return text.endsWith('\n') ? text : `${text}\n`;
}

// --- RDF/XML --------------------------------------------------------------------------------

const xmlText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/\r/g, '&#13;');
const xmlAttr = (s: string) => xmlText(s).replace(/"/g, '&quot;').replace(/\n/g, '&#10;').replace(/\t/g, '&#9;');
const NCNAME = /^[A-Za-z_][A-Za-z0-9._-]*$/;

/**
 * RDF/XML (the striped form flattened: one rdf:Description per subject, properties as elements,
 * resources by rdf:resource or rdf:nodeID). Every predicate must split into a namespace of
 * `prefixes` and an XML name, which holds for every predicate the build writes; one that does not
 * is refused rather than written wrong.
 */
export function rdfXml(ts: Triple[], prefixes: Prefixes): string {
  const byNs = Object.entries(prefixes).sort((a, b) => b[1].length - a[1].length);
  const used = new Set<string>(['rdf']);
  const qname = (iri: string): string => {
    for (const [prefix, ns] of byNs) {
      if (iri.startsWith(ns) && NCNAME.test(iri.slice(ns.length))) {
        used.add(prefix);
        return `${prefix}:${iri.slice(ns.length)}`;
      }
    }
    throw new Error(`RDF/XML: the property <${iri}> has no namespace prefix in the document's context`);
  };
  if (prefixes.rdf !== RDF_NS) throw new Error('RDF/XML: the context must bind rdf to the RDF namespace');

  const subjects: string[] = [];
  const bySubject = new Map<string, { s: Term; lines: string[] }>();
  for (const t of ts) {
    const key = `${t.s.kind}:${t.s.value}`;
    let entry = bySubject.get(key);
    if (!entry) {
      entry = { s: t.s, lines: [] };
      bySubject.set(key, entry);
      subjects.push(key);
    }
    const name = qname(t.p);
    const o = t.o;
    if (o.kind === 'iri') entry.lines.push(`    <${name} rdf:resource="${xmlAttr(o.value)}"/>`);
    else if (o.kind === 'blank') entry.lines.push(`    <${name} rdf:nodeID="${o.value}"/>`);
    else {
      const attr = o.language ? ` xml:lang="${xmlAttr(o.language)}"` : o.datatype && o.datatype !== XSD_STRING ? ` rdf:datatype="${xmlAttr(o.datatype)}"` : '';
      entry.lines.push(`    <${name}${attr}>${xmlText(o.value)}</${name}>`);
    }
  }
  const body = subjects.map((key) => {
    const { s, lines } = bySubject.get(key)!;
    const about = s.kind === 'iri' ? `rdf:about="${xmlAttr(s.value)}"` : `rdf:nodeID="${s.value}"`;
    return `  <rdf:Description ${about}>\n${lines.join('\n')}\n  </rdf:Description>`;
  });
  const ns = Object.entries(prefixes)
    .filter(([p]) => used.has(p))
    .map(([p, iri]) => `\n    xmlns:${p}="${xmlAttr(iri)}"`)
    .join('');
  return `<?xml version="1.0" encoding="utf-8"?>\n<rdf:RDF${ns}>\n${body.join('\n')}\n</rdf:RDF>\n`;
}
