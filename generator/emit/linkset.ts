// .well-known/api-catalog (RFC 9727) and .well-known/svc-catalog.json (spec 4: the machine index):
// the same RFC 9264 linkset under both names. The first link context is the catalogue itself and
// lists the APIs (item); the second describes the draw API: OpenAPI (service-desc), docs
// (service-doc), catalogue snapshot and agent card (service-meta), licence, and the 14
// per-product DCAT descriptions (describedby).
import { a2aUrl, origin } from '../addresses.ts';
import { dcatUrl } from '../catalog.ts';
import { agentCardUrl } from './agent-card.ts';
import { machineDocuments, siteUrls } from './site.ts';
import { type EmitContext, type Emitter, LINKSET_TYPE, jsonBody } from './types.ts';

export const API_CATALOG_PATH = '.well-known/api-catalog';
export const SVC_CATALOG_PATH = '.well-known/svc-catalog.json';
/** The profile URI RFC 9727 registers for API catalog linksets. */
export const RFC9727_PROFILE = 'https://www.rfc-editor.org/info/rfc9727';

interface LinkTarget { href: string; type?: string; title?: string; [ext: string]: string | string[] | undefined }
type LinkContext = { anchor: string } & Record<string, string | LinkTarget[]>;

export function linkset(ctx: EmitContext): { linkset: LinkContext[] } {
  const { cat, addresses: a, catalogue } = ctx;
  const s = cat.settings;
  const host = origin(a.base_url);
  const lic = cat.licences.get(s.licence)!;
  const byId = new Map(catalogue.products.map((p) => [p.product_id, p]));
  // Same order as the agent card's skills (spec 2.9); any product not named there follows.
  const ordered = [...s.agent_skill_order.filter((id) => byId.has(id)), ...catalogue.products.map((p) => p.product_id).filter((id) => !s.agent_skill_order.includes(id))];
  return {
    linkset: [
      {
        anchor: `${host}/${API_CATALOG_PATH}`,
        item: [
          { href: a.base_url, title: `${s.title}: catalogue and metered draw API, v1` },
          { href: a.mcp_url, title: 'MCP tool endpoint shared by all products (Streamable HTTP)' },
          { href: a2aUrl(a), title: 'A2A JSON-RPC endpoint (protocolVersion 0.3.0)' },
        ],
        alternate: [{ href: `${host}/${SVC_CATALOG_PATH}`, type: 'application/linkset+json', title: 'The same machine index' }],
        profile: [{ href: RFC9727_PROFILE }],
      },
      {
        anchor: a.base_url,
        'service-desc': [{ href: `${a.base_url}/specification`, type: 'application/json', title: 'OpenAPI 3.1 description of every endpoint' }],
        // The documentation for people (an HTML page at docs_url) and its Markdown for agents, as every page lists them.
        'service-doc': machineDocuments(ctx)
          .filter((d) => d.label.startsWith('Documentation'))
          .map((d) => ({ href: d.url, type: d.type, title: d.what[0]!.toUpperCase() + d.what.slice(1) })),
        'service-meta': [
          { href: `${a.base_url}/lds/_catalog`, type: 'application/json', title: 'Catalogue snapshot (live counts and prices)' },
          { href: agentCardUrl(ctx), type: 'application/json', title: 'A2A Agent Card (protocolVersion 0.3.0)' },
          { href: `${host}/.well-known/jwks.json`, type: 'application/jwk-set+json', title: 'Public keys of signed receipts (JWKS; Ed25519, by kid)' },
          // Where a data-space connector starts: the Dataspace Protocol's version metadata.
          { href: siteUrls(ctx).dspVersion, type: 'application/json', title: 'Dataspace Protocol 2025-1 version metadata (catalog protocol, HTTPS binding)' },
        ],
        license: [
          { href: lic.deed_url, title: lic.title },
          { href: lic.iri, title: `${lic.spdx} (EU licence vocabulary)` },
        ],
        // The whole catalogue in DCAT-AP (one file per serialisation), then each product's description.
        describedby: [
          ...siteUrls(ctx).dcatCatalogueFiles.map((f) => ({ href: f.url, type: f.type, title: `${s.title}: every product (DCAT-AP 3.0.1)` })),
          ...ordered.map((id) => ({
          href: dcatUrl(a, id),
          type: 'application/ld+json',
          title: byId.get(id)!.title,
          product_id: [id],
          })),
        ],

      },
    ],
  };
}

export const emitLinkset: Emitter = (ctx) => {
  const body = jsonBody(linkset(ctx));
  return [
    // No live counts or prices inside: it changes only with the catalogue version.
    { path: API_CATALOG_PATH, contentType: LINKSET_TYPE, body, cache: 'static' },
    { path: SVC_CATALOG_PATH, contentType: LINKSET_TYPE, body, cache: 'static' },
  ];
};
