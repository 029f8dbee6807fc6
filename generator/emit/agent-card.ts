// .well-known/agent-card.json: the A2A 0.3.0 Agent Card. One skill per product, in the order of
// catalogue.json `agent_skill_order` (spec 2.9: green-deal before finance). JSON in, JSON out.
// The card names the real A2A JSON-RPC endpoint (a2aUrl) and describes the balance token as an
// HTTP bearer scheme without requiring it: asking for a quote needs no credentials.
import type { AgentCard, AgentSkill } from '@a2a-js/sdk';
import { a2aUrl } from '../addresses.ts';
import type { CatalogueProduct } from '../catalog.ts';
import { exampleClaim } from './examples.ts';
import { type EmitContext, type Emitter, JSON_TYPE, jsonBody } from './types.ts';

export const AGENT_CARD_PATH = '.well-known/agent-card.json';
export const A2A_PROTOCOL_VERSION = '0.3.0';
export const BALANCE_TOKEN_SCHEME = 'balanceToken';
const JSON_MODE = 'application/json';

export function agentCardUrl(ctx: Pick<EmitContext, 'addresses'>): string {
  return `${new URL(ctx.addresses.base_url).origin}/${AGENT_CARD_PATH}`;
}

/** Sources as the catalogue states them: served, not yet available (with why), held. */
function sourcesText(p: CatalogueProduct): string {
  const s = p._health.sources;
  const served = s.filter((x) => x.status === 'served' && (x.available || x.unit === null)).map((x) => x.source);
  const notYet = s.filter((x) => x.status === 'served' && !x.available && x.unit !== null).map((x) => `${x.source} (${(x.note ?? '').replace(/^not yet available: /, '')})`);
  const held = s.filter((x) => x.status === 'held').map((x) => x.source);
  return [served.join(', '), notYet.length ? `not yet available: ${notYet.join('; ')}` : '', held.length ? `held, no rows served yet: ${held.join(', ')}` : ''].filter(Boolean).join('; ');
}

/** The `limit` of the agent card's examples. */
const CARD_EXAMPLE_LIMIT = 10;

function skill(ctx: EmitContext, p: CatalogueProduct): AgentSkill {
  const pr = p.pricing;
  const tags = [...new Set([p.tag, p.slug, ...p.keywords])];
  const claim = exampleClaim(p, CARD_EXAMPLE_LIMIT);
  return {
    id: p.product_id,
    name: p.title,
    description:
      `${p.description} Sources: ${sourcesText(p)}. Priced at ${pr.draw_unit_price} ${pr.currency} per unit drawn (a draw costs at least ${pr.draw_minimum_charge} ${pr.currency}). ` +
      `To ask, send a message with a data part {"product_id": "${p.product_id}", "query": "<text>", "limit": <n>} or {"product_id": "${p.product_id}", "units": [<unit references>]}: ` +
      `the answer is a quote with the price and a quote_id (HTTP 402 on the REST draw endpoint). ` +
      `To pay, send the same data part with "quote_id" added and your balance token as "Authorization: Bearer <balance token>" (or as "balance_token" in the data part); the balance token comes from a prepaid top-up ` +
      `(POST ${ctx.addresses.base_url}/lds/balance/topup, minimum ${ctx.catalogue.minimum_topup} ${ctx.catalogue.currency}). ` +
      `Example: ${claim.sentence.replace(/`/g, '')} Free preview (no text): ${p.preview_url}.`,
    tags,
    examples: [JSON.stringify(claim.request), JSON.stringify({ ...claim.request, quote_id: '<quote_id from the quote>' })],
    inputModes: [JSON_MODE],
    outputModes: [JSON_MODE],
  };
}

export function agentCard(ctx: EmitContext): AgentCard {
  const { cat, addresses: a, catalogue } = ctx;
  const s = cat.settings;
  const byId = new Map(catalogue.products.map((p) => [p.product_id, p]));
  const order = s.agent_skill_order;
  const missing = catalogue.products.filter((p) => !order.includes(p.product_id)).map((p) => p.product_id);
  const unknown = order.filter((id) => !byId.has(id));
  if (missing.length || unknown.length || new Set(order).size !== order.length) {
    throw new Error(`agent_skill_order must name every product exactly once (missing: ${missing.join(', ') || 'none'}; unknown: ${unknown.join(', ') || 'none'})`);
  }
  const url = a2aUrl(a);
  return {
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: s.title,
    description:
      `${s.description} Each of the ${catalogue.total} products is one skill. ` +
      `A draw without payment answers with its price: HTTP 402 Payment Required carrying a chargeable quote (amount and quote_id). ` +
      `Pay by topping up a prepaid balance (minimum ${catalogue.minimum_topup} ${catalogue.currency}, through the Machine Payments Protocol) and repeating the draw with the quote_id and the balance token as a bearer token. ` +
      `Catalogue: ${a.base_url}/lds/_catalog.`,
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    version: ctx.version,
    documentationUrl: a.docs_url,
    provider: { organization: s.publisher.name, url: a.publisher_url },
    capabilities: {
      streaming: false,
      pushNotifications: false,
      stateTransitionHistory: false,
      // Draw and top-up receipts are signed; the keys are published as a JWKS served by the service.
      extensions: [
        {
          uri: `${new URL(a.base_url).origin}/.well-known/jwks.json`,
          description: 'Signed receipts: every paid draw carries receipt.signature {alg EdDSA, kid, value}, an Ed25519 signature over the RFC 8785 canonical JSON of the receipt without its signature; verify it with the key of that kid in this JWKS.',
          required: false,
        },
      ],
    },
    securitySchemes: {
      [BALANCE_TOKEN_SCHEME]: {
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'opaque balance token',
        description:
          `Prepaid balance token, returned once by a successful top-up (POST ${a.base_url}/lds/balance/topup). ` +
          'Needed only to pay a quote; browsing and asking for a quote need no credentials.',
      },
    },
    defaultInputModes: [JSON_MODE],
    defaultOutputModes: [JSON_MODE],
    skills: order.map((id) => skill(ctx, byId.get(id)!)),
  };
}

export const emitAgentCard: Emitter = (ctx) => [
  { path: AGENT_CARD_PATH, contentType: JSON_TYPE, body: jsonBody(agentCard(ctx)), cache: 'catalogue' },
];
