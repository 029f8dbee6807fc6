// The web-server rules of the one negotiated address of the whole DCAT-AP catalogue
// (`{base_url}/dcat/catalog`, contract/rdf-catalogue.ts): nginx, Apache httpd and Caddy each answer
// it 303 See Other to one of the files beside it, with `Vary: Accept` and `Cache-Control: no-cache`,
// as the service does. A static rule cannot weigh q-values, so the servers go by name: an Accept
// that names `text/turtle` gets the Turtle, else one that names `application/rdf+xml` the RDF/XML,
// else the JSON-LD (the service weighs q-values and answers 406 when none is acceptable; for every
// Accept that names one type, or none, they agree). `_headers` hosts (CDNs) cannot negotiate: there
// the three files are the addresses.
//
// Derived from the hosted paths: the negotiated address exists when the build published the
// files, so a build without them writes no rule.
import { RDF_CATALOGUE_PATH, RDF_SERIALISATIONS } from '../../contract/rdf-catalogue.ts';
import type { HostedPath } from './hosted-paths.ts';

export interface NegotiatedAddress {
  urlPath: string; // /v1/dcat/catalog
  /** The Accept pattern (a regular expression, case-insensitive) and the file, in the order tried; the last has no pattern. */
  choices: { accept: string | null; urlPath: string }[];
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, (c) => `\\${c}`);

export function negotiatedAddress(paths: HostedPath[]): NegotiatedAddress | null {
  const jsonld = paths.find((p) => p.urlPath.endsWith(`${RDF_CATALOGUE_PATH}.jsonld`));
  if (!jsonld) return null;
  const urlPath = jsonld.urlPath.slice(0, -'.jsonld'.length);
  const published = new Set(paths.map((p) => p.urlPath));
  const [first, ...others] = RDF_SERIALISATIONS;
  const choices = others
    .filter((s) => published.has(`${urlPath}${s.suffix}`))
    .map((s) => ({ accept: escape(s.mediaType), urlPath: `${urlPath}${s.suffix}` }));
  return { urlPath, choices: [...choices, { accept: null, urlPath: `${urlPath}${first!.suffix}` }] };
}

export function nginxNegotiation(paths: HostedPath[]): string[] {
  const n = negotiatedAddress(paths);
  if (!n) return [];
  return [
    `# ${n.urlPath}: the whole DCAT-AP catalogue, 303 to the serialisation the Accept header names (generator/emit/negotiation-rules.ts).`,
    `location = ${n.urlPath} {`,
    `  add_header Vary Accept always;`,
    `  add_header Cache-Control "no-cache" always;`,
    ...n.choices.map((c) => (c.accept ? `  if ($http_accept ~* "${c.accept}") { return 303 ${c.urlPath}; }` : `  return 303 ${c.urlPath};`)),
    `}`,
  ];
}

export function apacheNegotiation(paths: HostedPath[]): string[] {
  const n = negotiatedAddress(paths);
  if (!n) return [];
  const url = `^${escape(n.urlPath)}$`;
  return [
    '',
    `# ${n.urlPath}: the whole DCAT-AP catalogue, 303 to the serialisation the Accept header names (generator/emit/negotiation-rules.ts).`,
    ...n.choices.flatMap((c) => [...(c.accept ? [`RewriteCond %{HTTP:Accept} ${c.accept} [NC]`] : []), `RewriteRule ${url} ${c.urlPath} [R=303,L]`]),
    `Header always set Vary Accept "expr=%{REQUEST_URI} == '${n.urlPath}'"`,
    `Header always set Cache-Control no-cache "expr=%{REQUEST_URI} == '${n.urlPath}'"`,
  ];
}

export function caddyNegotiation(paths: HostedPath[]): string[] {
  const n = negotiatedAddress(paths);
  if (!n) return [];
  return [
    '',
    `\t# ${n.urlPath}: the whole DCAT-AP catalogue, 303 to the serialisation the Accept header names (generator/emit/negotiation-rules.ts).`,
    `\t@lds_rdf path ${n.urlPath}`,
    `\thandle @lds_rdf {`,
    `\t\theader Vary Accept`,
    `\t\theader Cache-Control no-cache`,
    ...n.choices.flatMap((c, i) => (c.accept ? [`\t\t@lds_rdf_${i} header_regexp Accept (?i)${c.accept}`] : [])),
    `\t\troute {`,
    ...n.choices.map((c, i) => (c.accept ? `\t\t\tredir @lds_rdf_${i} ${c.urlPath} 303` : `\t\t\tredir * ${c.urlPath} 303`)),
    `\t\t}`,
    `\t}`,
  ];
}
