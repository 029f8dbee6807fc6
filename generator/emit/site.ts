// The public addresses of the site, in one place for the pages for people (html.ts) and the
// documentation (docs.ts). Every URL derives from the build's addresses; the fixed paths follow
// DESIGN.md section 5 (the documents the other emitters write there).
import { RDF_CATALOGUE_PATH, RDF_SERIALISATIONS } from '../../contract/rdf-catalogue.ts';
import type { EmitContext } from './types.ts';
import { distPath } from './types.ts';

export interface SiteLink {
  label: string;
  url: string;
  type: string; // media type a client gets (shown to people and agents)
  what: string; // one line: what the document is for
  /** true when url is a URI template ({product_id}), not a link to follow */
  template?: boolean;
}

export interface SiteUrls {
  origin: string; // the origin dist/ is served at (the origin of base_url)
  home: string; // index.html
  catalogue: string;
  dcat: (productId: string) => string;
  /** The whole catalogue in DCAT-AP: the negotiated address, and one file per serialisation. */
  dcatCatalogue: string;
  dcatCatalogueFiles: { url: string; type: string }[];
  dspVersion: string;
  agentCard: string;
  machineIndex: string;
  apiCatalog: string;
  openapi: string;
  docs: string; // the documentation for people: an HTML page when docs_url is a folder
  docsMarkdown: string; // the same documentation as Markdown (for agents and llms.txt)
  llms: string;
  productPage: (productId: string) => string;
  draw: string;
  topup: string;
  balance: string;
  mcp: string;
}

/** dist/ path of a product page (also used for relative links between pages). */
export function productPagePath(productId: string): string {
  return `products/${productId}.html`;
}

/** dist/ path of the documentation's Markdown: index.md in the folder docs_url names, else the file it names. */
export function docsPath(docsUrl: string): string {
  const p = distPath(docsUrl);
  return p === '' || p.endsWith('/') ? `${p}index.md` : p;
}

/**
 * dist/ path of the documentation's page for people, index.html beside index.md: what a folder
 * docs_url (`…/docs/`) serves. A docs_url naming a file is that Markdown file, with no page.
 */
export function docsPagePath(docsUrl: string): string | null {
  const markdown = docsPath(docsUrl);
  return markdown === distPath(docsUrl) ? null : markdown.replace(/index\.md$/, 'index.html');
}

export function siteUrls(ctx: EmitContext): SiteUrls {
  const a = ctx.addresses;
  const origin = new URL(a.base_url).origin;
  return {
    origin,
    home: `${origin}/`,
    catalogue: `${a.base_url}/lds/_catalog`,
    dcat: (id) => `${a.base_url}/dcat/catalog/${id}`,
    dcatCatalogue: `${a.base_url}${RDF_CATALOGUE_PATH}`,
    dcatCatalogueFiles: RDF_SERIALISATIONS.map((x) => ({ url: `${a.base_url}${RDF_CATALOGUE_PATH}${x.suffix}`, type: x.mediaType })),
    dspVersion: `${origin}/.well-known/dspace-version`,
    agentCard: `${origin}/.well-known/agent-card.json`,
    machineIndex: `${origin}/.well-known/svc-catalog.json`,
    apiCatalog: `${origin}/.well-known/api-catalog`,
    openapi: `${a.base_url}/specification`,
    docs: a.docs_url,
    docsMarkdown: `${origin}/${docsPath(a.docs_url)}`,
    llms: `${origin}/llms.txt`,
    productPage: (id) => `${origin}/${productPagePath(id)}`,
    draw: `${a.base_url}/lds/draw`,
    topup: `${a.base_url}/lds/balance/topup`,
    balance: `${a.base_url}/lds/balance`,
    mcp: a.mcp_url,
  };
}

/** What the documentation is for, in the lists of documents and on its page. */
export const DOCS_WHAT = 'how to browse, quote, top up and draw, with curl examples';

/** The machine-readable documents and the documentation, in the order pages list them. */
export function machineDocuments(ctx: EmitContext): SiteLink[] {
  const u = siteUrls(ctx);
  return [
    { label: 'Catalogue (JSON)', url: u.catalogue, type: 'application/json', what: 'all products with live counts, prices, licences and health' },
    { label: 'DCAT-AP descriptions', url: u.dcat('{product_id}'), type: 'application/ld+json', what: 'one DCAT-AP 3.0.1 JSON-LD description per product', template: true },
    ...u.dcatCatalogueFiles.map((f, i) => ({
      label: `DCAT-AP catalogue (${['JSON-LD', 'Turtle', 'RDF/XML'][i] ?? f.type})`,
      url: f.url,
      type: f.type,
      what: `every product in one DCAT-AP 3.0.1 catalogue, for data portals (${u.dcatCatalogue} answers the one Accept asks for)`,
    })),
    { label: 'Dataspace Protocol version', url: u.dspVersion, type: 'application/json', what: 'DSP 2025-1 version metadata: where a data-space connector asks for the catalog (POST /catalog/request)' },
    { label: 'Agent card (A2A)', url: u.agentCard, type: 'application/json', what: 'A2A 0.3.0 agent description, one skill per product' },
    { label: 'Machine index (RFC 9727 linkset)', url: u.machineIndex, type: 'application/linkset+json', what: 'links to every document and endpoint of the service' },
    { label: 'OpenAPI specification', url: u.openapi, type: 'application/json', what: 'OpenAPI 3.1 of every endpoint, with request and response schemas' },
    ...(docsPagePath(ctx.addresses.docs_url) === null
      ? [{ label: 'Documentation', url: u.docsMarkdown, type: 'text/markdown', what: DOCS_WHAT }]
      : [
          { label: 'Documentation', url: u.docs, type: 'text/html', what: DOCS_WHAT },
          { label: 'Documentation (Markdown)', url: u.docsMarkdown, type: 'text/markdown', what: 'the same documentation as Markdown, for agents and language models' },
        ]),
    { label: 'llms.txt', url: u.llms, type: 'text/plain', what: 'a short guide for language models and agents' },
  ];
}
