// v1/specification: the OpenAPI 3.1 document of the service. It is the one contract between the
// build and the payments service: the service reads this file at start and validates every request
// body and path parameter against it (payments/http/openapi-validate.ts), so the bounds written here
// (units 1..100, limit 1..100, query <= 500 characters, body <= 16 KiB) are the bounds enforced.
import { type Emitter, JSON_TYPE, distPath, jsonBody } from './types.ts';
import { CREDENTIAL_SHAPE, TOPUP_REPLAY_RULE, topupCodeSamples } from './topup-docs.ts';
import { PREVIEW_OPENAPI_SCHEMAS, previewOpenApiPaths } from './preview.ts';
// Problem types come from the shared contract (contract/problems.ts); their base is the build's
// docs_url, which the service reads back from dist/ (the generator imports no service code).
import { PROBLEM_TYPES, problemBase } from '../../contract/problems.ts';
import { DRAW_BOUNDS, STATEMENT_PAGE, TOPUP_MAXIMUM_CENTS, TOPUP_MINIMUM_CENTS } from '../../contract/limits.ts';
import { CURRENCY, formatCents } from '../../contract/money.ts';

/** Request and quote bounds (contract/limits.ts): the service enforces exactly these (it reads them from this document). */
export { DRAW_BOUNDS };


const money = (description: string) => ({ type: 'string', pattern: '^(0|[1-9][0-9]{0,9})\\.[0-9]{2}$', description, examples: ['5.00'] });

const schemas: Record<string, unknown> = {
  // `x-lds-expected`: what a valid value is, in words. The service quotes it in the 400 problem that
  // refuses a value (payments/http/openapi-validate.ts), so no one is shown a regular expression.
  ProductId: { type: 'string', minLength: 1, maxLength: 64, pattern: '^[a-z0-9][a-z0-9-]*$', description: 'A product id from the catalogue, e.g. `svc-language-eu`.', 'x-lds-expected': 'a product id from the catalogue: 1 to 64 lower-case letters, digits and hyphens, e.g. "svc-language-eu"' },
  Currency: { type: 'string', minLength: 3, maxLength: 3, pattern: '^[A-Za-z]{3}$', description: 'ISO 4217 code, in any case (`EUR` and `eur` are the same). Only `EUR` is accepted (the default); any other code is refused with `unsupported-currency`.', 'x-lds-expected': 'a three-letter ISO 4217 currency code; only "EUR" (in any case) is accepted' },
  Money: money('Decimal amount in the currency, two decimals, no sign, no exponent.'),
  UnitRef: { type: 'string', minLength: 3, maxLength: 200, pattern: '^[a-z][a-z0-9_]*\\.[a-z0-9_]+:\\S+$', description: 'A unit reference `<source>:<local id>`, e.g. `eu.eurlex:32016R0679#p12`.', 'x-lds-expected': 'a unit reference <source>:<local id> of 3 to 200 characters without spaces, e.g. "eu.eurlex:32016R0679#p12"' },
  DrawRequest: {
    type: 'object',
    description:
      'Without `quote_id`: asks for a quote (answer 402). With `quote_id` and a balance token: pays that quote (answer 200). The paying request repeats the quoted request: `product_id`, `currency` and `units` (as a set) or `query` + `limit` must equal what was quoted, or the draw is refused as `quote-tampered`.',
    additionalProperties: false,
    required: ['product_id'],
    properties: {
      product_id: { $ref: '#/components/schemas/ProductId' },
      currency: { $ref: '#/components/schemas/Currency' },
      units: {
        type: 'array',
        minItems: 1,
        maxItems: DRAW_BOUNDS.maxUnitItems,
        'x-lds-max-distinct': DRAW_BOUNDS.maxUnits,
        items: { $ref: '#/components/schemas/UnitRef' },
        description: `1 to ${DRAW_BOUNDS.maxUnits} distinct unit references. Duplicates count once: they are removed first, then the limit of ${DRAW_BOUNDS.maxUnits} applies (so 101 copies of one reference are one unit; the list itself may have at most ${DRAW_BOUNDS.maxUnitItems} entries). Give either \`units\` or \`query\`.`,
        'x-lds-expected': `a list of 1 to ${DRAW_BOUNDS.maxUnits} distinct unit references, e.g. ["eu.eurlex:32016R0679#p12"]`,
      },
      query: { type: 'string', minLength: 1, maxLength: DRAW_BOUNDS.maxQueryChars, description: 'Full-text query (BM25, any word matches) over the product\'s units: English pivot paragraphs, provisions, the descriptive columns of records, and every term (any language) of an IATE concept. Case and accents are folded; a hyphenated term matches whole and by its parts (`COVID-19`, `covid 19` and `covid` find the same records). It is resolved to a unit list when the quote is made.', 'x-lds-expected': `a search text of 1 to ${DRAW_BOUNDS.maxQueryChars} characters, e.g. "data protection"` },
      limit: { type: 'integer', minimum: 1, maximum: DRAW_BOUNDS.maxLimit, default: 10, description: 'With `query`: how many units at most (default 10).', 'x-lds-expected': `a whole number from 1 to ${DRAW_BOUNDS.maxLimit}` },
      quote_id: { type: 'string', minLength: 1, maxLength: 512, description: 'The `quote_id` of a 402 quote, when paying it.', 'x-lds-expected': 'the quote_id string of a 402 quote, as it was given' },
    },
    oneOf: [
      { required: ['units'], not: { anyOf: [{ required: ['query'] }, { required: ['limit'] }] } },
      { required: ['query'], not: { required: ['units'] } },
    ],
  },
  BreakdownLine: {
    type: 'object',
    required: ['source', 'unit_count', 'unit_price', 'amount'],
    properties: {
      source: { type: 'string' },
      unit_count: { type: 'integer', minimum: 1 },
      unit_price: { type: 'string', description: 'Per-unit draw rate in EUR, six decimals (micro-euro exact).' },
      amount: { type: 'string', description: 'Exact subtotal of this source in EUR, six decimals; the quote amount is the sum rounded up to the cent (at least 0.01).' },
    },
  },
  Quote: {
    type: 'object',
    description: `A chargeable quote. Stateless: \`quote_id\` carries an HMAC over the product, the resolved unit list, amount, currency, unit store version and expiry. Valid ${DRAW_BOUNDS.quoteLifetimeSeconds / 60} minutes.`,
    required: ['quote_id', 'product_id', 'unit_count', 'amount', 'currency', 'expires_at', 'breakdown', 'how_to_pay'],
    properties: {
      quote_id: { type: 'string' },
      product_id: { type: 'string' },
      units: { type: 'array', items: { type: 'string' }, description: 'As requested (unit mode).' },
      query: { type: 'string', description: 'As requested (query mode).' },
      limit: { type: 'integer' },
      resolved_units: { type: 'array', items: { type: 'string' }, description: 'The unit list the quote is bound to.' },
      unit_count: { type: 'integer', minimum: 1 },
      amount: { $ref: '#/components/schemas/Money' },
      currency: { const: CURRENCY },
      expires_at: { type: 'string', format: 'date-time' },
      breakdown: { type: 'array', items: { $ref: '#/components/schemas/BreakdownLine' } },
      store_version: { type: 'string' },
      catalogue_version: { type: 'string', pattern: '^catalogue-[0-9a-f]{12}$' },
      payable_from_balance: { type: 'boolean', description: 'True when the request carried a balance token that covers the amount; the response then has `Link: <…/lds/draw>; rel="payment"`.' },
      how_to_pay: { type: 'string' },
      pay_with: { type: 'object', description: 'The request to send to pay this quote (add `Authorization: Bearer <BALANCE_TOKEN>`).' },
      topup_url: { type: 'string', format: 'uri' },
    },
  },
  Citation: {
    type: 'object',
    required: ['label', 'publisher'],
    properties: {
      label: { type: 'string' },
      publisher: { type: 'string', description: 'Who published the unit (its source\'s publisher).' },
      part: { type: 'string', description: 'Which part of a document, e.g. `article 2 of 3`, `citations and recitals`.' },
      uri: { type: 'string', description: 'The record\'s own identifier, e.g. an ESCO concept URI or an OpenAIRE id.' },
      doi: { type: 'string' },
      celex: { type: 'string' },
      eli: { type: 'string' },
      akn: { type: 'string' },
      eid: { type: 'string' },
      para: { type: 'integer' },
      iate: { type: 'string', description: 'An IATE concept id (the entry is at `url`).' },
      record: { type: 'string' },
      url: { type: 'string' },
    },
  },
  UnitLicence: {
    type: 'object',
    required: ['source', 'verdict', 'licence', 'attribution', 'terms_url', 'quote_sha256'],
    properties: { source: { type: 'string' }, verdict: { type: 'string' }, licence: { type: 'string' }, attribution: { type: 'string' }, terms_url: { type: 'string' }, quote_sha256: { type: 'string' } },
  },
  Unit: {
    type: 'object',
    required: ['ref', 'source', 'kind', 'citation', 'rows', 'licence'],
    properties: {
      ref: { $ref: '#/components/schemas/UnitRef' },
      source: { type: 'string' },
      kind: { enum: ['P', 'R', 'A'], description: 'P: a pivot paragraph with its language versions; R: a source row; A: an Akoma Ntoso provision with its versions.' },
      title: { type: 'string', description: 'A short title (an act\'s title, a record\'s label), where the source has one.' },
      citation: { $ref: '#/components/schemas/Citation' },
      rows: {
        type: 'array',
        items: {
          type: 'object',
          required: ['lang', 'text'],
          properties: {
            lang: { type: 'string' },
            kind: { type: 'string' },
            text: { type: 'string' },
            term_type: { type: 'string', description: 'IATE term rows: the term type (Term, Redirection, Abbrev, Short Form, ...).' },
            evaluation: { type: 'string', description: 'IATE term rows: the evaluation (preferred, admitted, deprecated, obsolete, proposed), where the release gives one.' },
          },
        },
      },
      record: { type: 'object', additionalProperties: { type: 'string' } },
      licence: { $ref: '#/components/schemas/UnitLicence' },
    },
  },
  Attribution: {
    type: 'object',
    required: ['source', 'attribution', 'licence', 'licence_url', 'terms_url', 'conditions'],
    properties: { source: { type: 'string' }, attribution: { type: 'string' }, licence: { type: 'string' }, licence_url: { type: 'string' }, terms_url: { type: 'string' }, conditions: { type: 'string' } },
  },
  ReceiptSignature: {
    type: 'object',
    required: ['alg', 'kid', 'value'],
    description: 'Ed25519 signature over the RFC 8785 canonical JSON of the receipt without its `signature` member. Verify it with the key of the same `kid` in /.well-known/jwks.json.',
    properties: {
      alg: { const: 'EdDSA' },
      kid: { type: 'string', description: 'RFC 7638 JWK thumbprint of the signing key' },
      value: { type: 'string', pattern: '^[A-Za-z0-9_-]{86}$', description: 'base64url (no padding) of the 64-byte signature' },
    },
  },
  Receipt: {
    type: 'object',
    description: 'The signed receipt of a paid draw. Paying the same quote again returns the same receipt.',
    required: ['type', 'draw_id', 'quote_id', 'product_id', 'unit_count', 'units_sha256', 'amount', 'currency', 'balance_after', 'catalogue_version', 'paid_at', 'signature'],
    properties: {
      type: { const: 'draw' },
      draw_id: { type: 'string' },
      quote_id: { type: 'string' },
      product_id: { type: 'string' },
      unit_count: { type: 'integer', minimum: 1 },
      units_sha256: { type: 'string', pattern: '^[0-9a-f]{64}$', description: 'SHA-256 (hex) of the canonical JSON (RFC 8785) of the delivered `units` array.' },
      amount: { $ref: '#/components/schemas/Money' },
      currency: { const: CURRENCY },
      balance_after: { $ref: '#/components/schemas/Money' },
      catalogue_version: { type: 'string' },
      paid_at: { type: 'string', format: 'date-time' },
      signature: { $ref: '#/components/schemas/ReceiptSignature' },
    },
  },
  TopupReceipt: {
    type: 'object',
    description: 'The signed receipt of a top-up. Resending the credential that paid returns the same receipt.',
    required: ['type', 'topup_id', 'amount', 'currency', 'balance_after', 'processor', 'payment_ref', 'paid_at', 'signature'],
    properties: {
      type: { const: 'topup' },
      topup_id: { type: 'string' },
      amount: { $ref: '#/components/schemas/Money' },
      currency: { const: CURRENCY },
      balance_after: { $ref: '#/components/schemas/Money' },
      processor: { type: 'string' },
      payment_ref: { type: 'string', description: 'The processor\'s payment reference (Stripe PaymentIntent id)' },
      paid_at: { type: 'string', format: 'date-time' },
      signature: { $ref: '#/components/schemas/ReceiptSignature' },
    },
  },
  Jwks: {
    type: 'object',
    required: ['keys'],
    description: 'The receipt keys (RFC 7517 JWK Set): the current signing key first, then retired keys still published.',
    properties: {
      keys: {
        type: 'array',
        items: {
          type: 'object',
          required: ['kty', 'crv', 'x', 'kid'],
          properties: { kty: { const: 'OKP' }, crv: { const: 'Ed25519' }, x: { type: 'string' }, kid: { type: 'string' }, alg: { const: 'EdDSA' }, use: { const: 'sig' } },
        },
      },
    },
  },
  TokenRotation: {
    type: 'object',
    required: ['balance_token', 'balance', 'currency'],
    properties: {
      balance_token: { type: 'string', description: 'The new balance token, shown once. The old one no longer works.' },
      balance: { $ref: '#/components/schemas/Money' },
      currency: { const: CURRENCY },
    },
  },
  Correction: {
    type: 'object',
    description: 'An operator\'s refund or adjustment: one double-entry transaction, in the buyer\'s statement.',
    required: ['correction_id', 'kind', 'amount', 'currency', 'balance_id', 'balance_after', 'reason', 'idempotency_key', 'at', 'replayed'],
    properties: {
      correction_id: { type: 'string' },
      kind: { enum: ['refund', 'credit', 'debit', 'topup_refund'] },
      amount: { $ref: '#/components/schemas/Money' },
      currency: { const: CURRENCY },
      balance_id: { type: 'string', pattern: '^[0-9a-f]{64}$' },
      balance_after: { $ref: '#/components/schemas/Money' },
      reason: { type: 'string' },
      idempotency_key: { type: 'string' },
      at: { type: 'string', format: 'date-time' },
      draw_id: { type: 'string' },
      topup_id: { type: 'string' },
      replayed: { type: 'boolean', description: 'true when this Idempotency-Key was applied before (nothing changed now)' },
      processor_refund: { type: 'object', properties: { id: { type: 'string' }, status: { type: 'string' }, amount: { $ref: '#/components/schemas/Money' } } },
    },
  },
  PaidDraw: {
    type: 'object',
    required: ['units', 'attribution', 'receipt'],
    properties: {
      units: { type: 'array', items: { $ref: '#/components/schemas/Unit' } },
      attribution: { type: 'array', items: { $ref: '#/components/schemas/Attribution' } },
      receipt: { $ref: '#/components/schemas/Receipt' },
    },
  },
  TopupRequest: {
    type: 'object',
    required: ['amount'],
    properties: {
      amount: {
        type: 'string',
        pattern: '^(0|[1-9][0-9]{0,9})(\\.[0-9]{1,2})?$',
        description: `Amount to add in ${CURRENCY}, a decimal string with at most two decimals (never rounded); at least ${formatCents(TOPUP_MINIMUM_CENTS)}.`,
        examples: ['5.00'],
        'x-lds-expected': `a decimal string in ${CURRENCY} with up to two decimals and no sign or exponent, e.g. "${formatCents(TOPUP_MINIMUM_CENTS)}"; at least ${formatCents(TOPUP_MINIMUM_CENTS)} and at most ${formatCents(TOPUP_MAXIMUM_CENTS)}`,
      },
      currency: { $ref: '#/components/schemas/Currency' },
    },
  },
  TopupResponse: {
    type: 'object',
    required: ['balance', 'currency'],
    properties: {
      balance_token: { type: 'string', description: 'Only when the top-up opened a new balance (no Bearer token sent); shown once (only the same credential resent before its challenge expires sees it again). Send it as `Authorization: Bearer <BALANCE_TOKEN>`.' },
      balance: { $ref: '#/components/schemas/Money' },
      currency: { const: CURRENCY },
      receipt: { $ref: '#/components/schemas/TopupReceipt' },
    },
  },
  Balance: {
    type: 'object',
    required: ['balance', 'currency', 'statement'],
    properties: {
      balance: { $ref: '#/components/schemas/Money' },
      currency: { const: CURRENCY },
      statement: {
        type: 'array',
        description: 'Top-ups, draws, refunds and adjustments, newest first (one page: `limit`, default 20).',
        items: {
          type: 'object',
          required: ['kind', 'id', 'amount', 'balance_after', 'at'],
          properties: {
            kind: { enum: ['topup', 'draw', 'refund', 'credit', 'debit', 'topup_refund'] },
            id: { type: 'string' },
            amount: { type: 'string', description: 'Signed: positive adds to the balance, negative takes from it.' },
            balance_after: { $ref: '#/components/schemas/Money' },
            at: { type: 'string', format: 'date-time' },
            quote_id: { type: 'string' },
            product_id: { type: 'string' },
            reason: { type: 'string', description: 'The operator\'s reason (refunds and adjustments)' },
            draw_id: { type: 'string', description: 'The draw the line is about: the draw itself on a `draw` line (equal to `id`), the refunded draw on a `refund` line' },
            topup_id: { type: 'string', description: 'The top-up the line is about: the top-up itself on a `topup` line (equal to `id`), the refunded one on a `topup_refund` line' },
          },
        },
      },
      next_after: { type: 'string', description: 'Present when older lines exist: pass it as `after` for the next page (also in `Link: rel="next"`).' },
    },
  },
  Catalogue: {
    type: 'object',
    description: 'The catalogue snapshot (spec 2.1); additional properties are allowed.',
    required: ['@context', '@type', 'dct:license', 'dct:publisher', 'dct:title', 'products', 'total'],
    properties: {
      '@context': { type: 'string' },
      '@type': { type: 'string' },
      'dct:license': { type: 'string' },
      'dct:publisher': { type: 'string' },
      'dct:title': { type: 'string' },
      version: { type: 'string', pattern: '^catalogue-[0-9a-f]{12}$' },
      products: { type: 'array', items: { $ref: '#/components/schemas/Product' } },
      total: { type: 'integer' },
    },
  },
  Product: {
    type: 'object',
    description: 'A product (spec 2.2); additional properties are allowed. `pricing` holds the live prices.',
    required: ['product_id', 'slug', 'title', 'description', 'dcat_url', 'live_unit_count', 'live_row_count', '_health'],
    properties: {
      product_id: { type: 'string' },
      slug: { type: 'string' },
      title: { type: 'string' },
      description: { type: 'string' },
      sectoral_ds: { type: 'string' },
      dcat_url: { type: 'string' },
      mcp_endpoint: { type: 'string' },
      live_row_count: { type: 'integer' },
      live_unit_count: { type: 'integer' },
      subscribe_url: { type: 'null' },
      pricing: { type: 'object' },
      _health: { type: 'object' },
    },
  },
};

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

const commonProblems = {
  '429': { $ref: '#/components/responses/RateLimited' },
  '500': { $ref: '#/components/responses/Internal' },
};

/** What the first leg of a top-up answers in WWW-Authenticate (values shortened). */
const TOPUP_CHALLENGE_EXAMPLE =
  'Payment id="AZ1FZPILYDMNuLBgw--q_3bgeahvlvWn9LwOAkzz7hE", realm="lds.example", method="stripe", intent="charge", request="eyJhbW91bnQiOiI1MDAiLCJjdXJyZW5jeSI6ImV1ciIs…", description="Prepaid balance top-up 5.00 EUR", expires="2026-01-01T00:05:00.000Z", opaque="eyJuIjoiM3FfUmZPZ2Z4d1lVb3d0MiJ9"';

const jsonContent = (ref: string, type = 'application/json') => ({ [type]: { schema: { $ref: `#/components/schemas/${ref}` } } });

const etagHeaders = {
  ETag: { description: 'The catalogue version (strong). Send it back in `If-None-Match` for a 304.', schema: { type: 'string' } },
  'Cache-Control': { schema: { type: 'string' } },
};

const notModified = { description: 'Not modified (the `If-None-Match` matched the ETag).' };

/**
 * The operator endpoints (payments/http/ops.ts): at the root of the origin, outside the API base
 * path, hence their own `servers`. Not rate limited.
 */
function opsPaths(origin: string): Record<string, unknown> {
  const servers = [{ url: origin }];
  return {
    '/healthz': {
      servers,
      get: {
        operationId: 'getHealth',
        tags: ['operations'],
        summary: 'Liveness: the process answers (no I/O)',
        responses: { '200': { description: 'Alive', content: { 'application/json': { schema: { type: 'object', required: ['status'], properties: { status: { const: 'ok' } } } } } } },
      },
    },
    '/readyz': {
      servers,
      get: {
        operationId: 'getReadiness',
        tags: ['operations'],
        summary: 'Readiness: ledger writable, unit store open, catalogue loaded, not draining',
        responses: {
          '200': {
            description: 'Ready for traffic',
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['status', 'checks'],
                  properties: {
                    status: { const: 'ready' },
                    checks: { type: 'object', additionalProperties: { const: 'ok' } },
                    catalogue_version: { type: 'string', description: 'The catalogue version serving new quotes (it changes when a new build is published, without a restart)' },
                    store_version: { type: 'string', description: 'The unit store version serving new quotes' },
                  },
                },
              },
            },
          },
          '503': problemResponse('`not-ready`: `not_ready` names what is not ready'),
        },
      },
    },
    '/metrics': {
      servers,
      get: {
        operationId: 'getMetrics',
        tags: ['operations'],
        summary: 'Prometheus metrics (metrics token)',
        description: 'Prometheus text exposition: requests and latency per route, quotes, paid draws, units and cents sold per product, top-ups by outcome, ledger commit latency and group-commit batch sizes, PostgreSQL pool use and retries, rate-limit refusals, process metrics. Never names a buyer or a token.',
        security: [{ metricsToken: [] }],
        responses: {
          '200': { description: 'Metrics', content: { 'text/plain': { schema: { type: 'string' } } } },
          '401': problemResponse('`metrics-token-required`'),
        },
      },
    },
  };
}

const idempotencyHeader = {
  name: 'Idempotency-Key',
  in: 'header',
  required: true,
  schema: { type: 'string', minLength: 1, maxLength: 200 },
  description: 'Any unique string per intended change: the change is applied at most once per key (201), repeats answer 200 with the same correction; another request under a used key is a 409.',
};

const adminOp = (operationId: string, summary: string, description: string, body: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  post: {
    operationId,
    tags: ['admin'],
    summary,
    description,
    security: [{ operatorToken: [] }],
    parameters: [idempotencyHeader],
    requestBody: { required: true, content: { 'application/json': { schema: body } } },
    responses: {
      '200': { description: 'Applied before under this Idempotency-Key: the same correction, nothing changed', content: jsonContent('Correction') },
      '201': { description: 'Applied', content: jsonContent('Correction') },
      '400': problemResponse('`malformed-request` (`field` names the failing field, or `Idempotency-Key`)'),
      '401': problemResponse('`operator-token-required`'),
      '404': problemResponse('`unknown-draw`, `unknown-topup` or `unknown-balance`'),
      '409': problemResponse('`idempotency-key-reused`'),
      '422': problemResponse('`refund-exceeds-payment`, `adjustment-below-zero`, `adjustment-above-maximum` or `nothing-to-refund`'),
      ...extra,
      ...commonProblems,
    },
  },
});

const reasonSchema = { type: 'string', minLength: 1, maxLength: 500, description: 'Why; shown in the buyer\'s statement' };
const amountSchema = { type: 'string', pattern: '^(0|[1-9][0-9]{0,9})(\\.[0-9]{1,2})?$', description: 'EUR, a decimal string with at most two decimals' };

/** The operator's admin API (payments/http/admin.ts), behind LDS_OPERATOR_TOKEN. */
function adminPaths(): Record<string, unknown> {
  return {
    '/lds/admin/refunds': adminOp(
      'refundDraw',
      'Refund a draw (operator)',
      'Credits the balance that paid the draw, from revenue: in full (no `amount`: all that is left) or in part; never more than paid, less earlier refunds.',
      { type: 'object', required: ['draw_id', 'reason'], properties: { draw_id: { type: 'string' }, amount: amountSchema, reason: reasonSchema } },
    ),
    '/lds/admin/adjustments': adminOp(
      'adjustBalance',
      'Credit or debit a balance (operator)',
      'Name the balance by `balance_id`, or by the `draw_id` or `topup_id` of something it paid. A debit never takes the balance below zero.',
      {
        type: 'object',
        required: ['direction', 'amount', 'reason'],
        properties: { balance_id: { type: 'string', pattern: '^[0-9a-f]{64}$' }, draw_id: { type: 'string' }, topup_id: { type: 'string' }, direction: { enum: ['credit', 'debit'] }, amount: amountSchema, reason: reasonSchema },
      },
    ),
    '/lds/admin/topup-refunds': adminOp(
      'refundTopup',
      'Refund a top-up through the payment processor (operator)',
      'Debits the balance first - at most the unspent remainder of the top-up (money already spent on draws is not refunded) - then refunds exactly that through the processor (idempotency key `lds_refund_<correction_id>`). If the processor fails the answer is 502 with `correction_id`; resend with the same Idempotency-Key to retry the refund without debiting again.',
      { type: 'object', required: ['topup_id', 'reason'], properties: { topup_id: { type: 'string' }, amount: amountSchema, reason: reasonSchema } },
      { '502': problemResponse('`payment-processor-unavailable`: the balance was debited, the processor refund failed; resend the same request') },
    ),
    '/lds/admin/tokens/revoke': {
      post: {
        operationId: 'revokeBalanceToken',
        tags: ['admin'],
        summary: 'Revoke a balance token (operator)',
        description: 'The token stops working at once, on every instance; the balance stays. Give `token_hash` (hex SHA-256 of the token) or the `token` itself.',
        security: [{ operatorToken: [] }],
        requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', properties: { token_hash: { type: 'string', pattern: '^[0-9a-f]{64}$' }, token: { type: 'string' } } } } } },
        responses: {
          '200': {
            description: 'Revoked',
            content: { 'application/json': { schema: { type: 'object', required: ['token_hash', 'revoked', 'already_revoked'], properties: { token_hash: { type: 'string' }, revoked: { const: true }, already_revoked: { type: 'boolean' } } } } },
          },
          '400': problemResponse('`malformed-request`'),
          '401': problemResponse('`operator-token-required`'),
          '404': problemResponse('`unknown-balance-token`'),
          ...commonProblems,
        },
      },
    },
  };
}

/** The Problem schema: `type` is one of the contract's types under this build's docs_url. */
function problemSchema(docsUrl: string): Record<string, unknown> {
  const base = problemBase(docsUrl);
  return {
    type: 'object',
    description: `RFC 9457 problem details. \`type\` is one of the following; each resolves to a page that says what it means and what to do:\n${PROBLEM_TYPES.map((t) => `- \`${base}${t.slug}\` (${t.status}): ${t.meaning}`).join('\n')}`,
    required: ['type', 'title', 'status'],
    properties: {
      type: { type: 'string', format: 'uri', enum: PROBLEM_TYPES.map((t) => base + t.slug) },
      title: { type: 'string' },
      status: { type: 'integer' },
      detail: { type: 'string' },
      instance: { type: 'string' },
      field: { type: 'string', description: 'The failing request field (dotted path), for malformed-request and quote-tampered.' },
      policy: { enum: ['addr', 'token'], description: 'For rate-limited: the limit that refused the request (per client address, per balance token).' },
      not_ready: { type: 'array', items: { type: 'string' }, description: 'For not-ready: the failing checks.' },
      checks: { type: 'object', additionalProperties: { type: 'string' }, description: 'For not-ready: every check, `ok` or what is wrong.' },
      available: { type: 'string', description: 'For refund-exceeds-payment: what is left to refund.' },
      correction_id: { type: 'string', description: 'For idempotency-key-reused and a failed processor refund: the correction concerned.' },
      unknown: { type: 'array', items: { type: 'string' }, description: 'For unknown-units.' },
      store_version: { type: 'string', description: 'For quote-store-unavailable: the unit store version the quote was made against.' },
      expires_at: { type: 'string', format: 'date-time', description: 'For quote-store-unavailable: when the quote expires (after that, repeating the request answers quote-expired with a fresh quote).' },
      retry_after: { type: 'integer', description: 'For quote-store-unavailable and rate-limited: seconds to wait before repeating the request (also in Retry-After).' },
      quote: { $ref: '#/components/schemas/Quote' },
    },
  };
}

export function openApiDocument(ctx: Parameters<Emitter>[0]): Record<string, unknown> {
  const { base_url, mcp_url, docs_url } = ctx.addresses;
  const minTopup = ctx.catalogue.minimum_topup;
  return {
    openapi: '3.1.0',
    info: {
      title: `${ctx.cat.settings.title} API`,
      version: ctx.version,
      summary: 'Catalogue of EU legal data products and metered, prepaid draws.',
      description: [
        `Read the catalogue, ask for a draw (402 with a quote), fund a prepaid balance through the Machine Payments Protocol (minimum ${minTopup} EUR), and repeat the draw with \`quote_id\` and \`Authorization: Bearer <BALANCE_TOKEN>\` to receive cited, licensed units.`,
        '',
        'Money on the wire is a decimal string in EUR (`"5.00"`). Errors are RFC 9457 `application/problem+json` with a stable `type` per case (see the Problem schema). A paid quote is charged exactly once: paying it again returns the same draw.',
        '',
        `Bounds: \`units\` 1..${DRAW_BOUNDS.maxUnits} references, \`limit\` 1..${DRAW_BOUNDS.maxLimit}, \`query\` at most ${DRAW_BOUNDS.maxQueryChars} characters, request body at most ${DRAW_BOUNDS.maxBodyBytes} bytes, quotes valid ${DRAW_BOUNDS.quoteLifetimeSeconds / 60} minutes. Clients are rate limited per address and per balance token (429 with Retry-After; \`RateLimit-Policy\` and \`RateLimit\` headers describe the limits).`,
        '',
        `Agents: the MCP tool endpoint is ${mcp_url}; the A2A endpoint is named in /.well-known/agent-card.json.`,
      ].join('\n'),
      license: { name: ctx.catalogue.licence.title, url: ctx.catalogue.licence.url },
      contact: { name: ctx.cat.settings.publisher.name, url: ctx.addresses.publisher_url },
    },
    // Machine-readable bounds the service enforces beside the schemas (body size and quote lifetime are not schema keywords).
    'x-lds-limits': { max_body_bytes: DRAW_BOUNDS.maxBodyBytes, quote_lifetime_seconds: DRAW_BOUNDS.quoteLifetimeSeconds, minimum_topup: minTopup },
    externalDocs: { url: docs_url, description: 'How to browse, quote, top up and draw' },
    servers: [{ url: base_url }],
    tags: [
      { name: 'catalogue', description: 'Read-only catalogue documents (public, cacheable)' },
      { name: 'draw', description: 'Quotes and paid draws' },
      { name: 'balance', description: 'Prepaid balance' },
      { name: 'operations', description: 'Health, readiness and metrics for operators (at the origin root, not rate limited)' },
    ],
    paths: {
      '/lds/_catalog': {
        get: {
          operationId: 'getCatalogue',
          tags: ['catalogue'],
          summary: 'The catalogue snapshot: every product with live counts, prices, licences and health',
          responses: {
            '200': { description: 'The catalogue', headers: etagHeaders, content: jsonContent('Catalogue') },
            '304': notModified,
            ...commonProblems,
          },
        },
      },
      '/dcat/catalog/{product_id}': {
        get: {
          operationId: 'getProductDcat',
          tags: ['catalogue'],
          summary: 'The DCAT-AP 3.0.1 JSON-LD description of one product',
          parameters: [{ name: 'product_id', in: 'path', required: true, schema: { $ref: '#/components/schemas/ProductId' } }],
          responses: {
            '200': { description: 'DCAT-AP JSON-LD', headers: etagHeaders, content: { 'application/ld+json': { schema: { type: 'object' } } } },
            '304': notModified,
            '404': problemResponse('No such product (`not-found`)'),
            ...commonProblems,
          },
        },
      },
      ...previewOpenApiPaths(etagHeaders, notModified, problemResponse('No such product (`not-found`)'), commonProblems),
      '/lds/draw': {
        post: {
          operationId: 'draw',
          tags: ['draw'],
          summary: 'Quote a draw (402) or pay a quote from the balance (200)',
          description:
            'Without `quote_id`: 402 with a quote and `Cache-Control: no-store`; nothing is written. If the request carries a balance token whose balance covers the amount, the 402 also has `Link: <' +
            `${base_url}/lds/draw` +
            '>; rel="payment"`. With `quote_id` and `Authorization: Bearer <BALANCE_TOKEN>`: the balance is debited once and the units are returned.',
          security: [{}, { balanceToken: [] }],
          requestBody: { required: true, content: jsonContent('DrawRequest') },
          responses: {
            '200': { description: 'The paid draw: units with citations and licences, attribution, receipt', content: jsonContent('PaidDraw') },
            '400': problemResponse('`malformed-request`, `unsupported-currency` or `quote-tampered`'),
            '401': problemResponse('`balance-token-required` or `invalid-balance-token` (paying only)'),
            '402': {
              description: 'A quote (no `quote_id` given); or `quote-expired` (problem with a fresh `quote`); or `insufficient-balance` (problem with the `quote`)',
              headers: {
                Link: { description: '`<…/lds/draw>; rel="payment"` when the caller\'s balance covers the quote', schema: { type: 'string' } },
                'Cache-Control': { schema: { const: 'no-store' } },
              },
              content: { ...jsonContent('Quote'), ...jsonContent('Problem', 'application/problem+json') },
            },
            '404': problemResponse('`unknown-product`, `product-unavailable` (no live units yet; `reason` says why), `unknown-units` (listed in `unknown`) or `no-matching-units`'),
            '409': problemResponse('`quote-paid-by-another-balance`'),
            '413': problemResponse('`body-too-large`'),
            '415': problemResponse('`unsupported-media-type`'),
            '503': {
              description: '`quote-store-unavailable`: the quote names a unit store version this instance does not hold (during a rolling publish); nothing was charged, repeat the same request after `Retry-After` seconds. Or `ledger-unavailable`.',
              headers: { 'Retry-After': { description: 'seconds to wait before repeating the request', schema: { type: 'integer', minimum: 1 } } },
              content: jsonContent('Problem', 'application/problem+json'),
            },
            ...commonProblems,
          },
        },
      },
      '/lds/balance/topup': {
        post: {
          operationId: 'topUp',
          tags: ['balance'],
          summary: `Fund a prepaid balance through MPP (minimum ${minTopup} EUR)`,
          description:
            'The first request answers 402 with `WWW-Authenticate: Payment` (method `stripe`, intent `charge`). Repeat it with the MPP credential carrying a Shared Payment Token in `Authorization: Payment …` to open a new balance; to credit an existing balance send `Authorization: Bearer <BALANCE_TOKEN>` and the credential in `Payment-Authorization`. The 200 answer carries `Payment-Receipt`. A credential in `Payment-Authorization` without the Bearer token is refused (401 `balance-token-required`), never answered with a new challenge.\n\n' +
            TOPUP_REPLAY_RULE +
            '\n\nThe credential: ' +
            CREDENTIAL_SHAPE +
            ' The `x-codeSamples` run both legs with curl.',
          'x-codeSamples': topupCodeSamples(ctx),
          security: [{}, { mpp: [] }, { mpp: [], balanceToken: [] }],
          requestBody: { required: true, content: jsonContent('TopupRequest') },
          responses: {
            '200': { description: 'Credited', headers: { 'Payment-Receipt': { schema: { type: 'string' } } }, content: jsonContent('TopupResponse') },
            '400': problemResponse('`malformed-request` (amount below the minimum, bad decimal) or `unsupported-currency`'),
            '401': problemResponse('`invalid-balance-token` (the balance token to credit is not known) or `balance-token-required` (a credential in `Payment-Authorization` without `Authorization: Bearer <BALANCE_TOKEN>`)'),
            '402': {
              description: 'MPP Challenge (`WWW-Authenticate: Payment …`), or the payment was declined',
              headers: { 'WWW-Authenticate': { schema: { type: 'string' }, example: TOPUP_CHALLENGE_EXAMPLE } },
              content: jsonContent('Problem', 'application/problem+json'),
            },
            '409': problemResponse('`topup-already-credited` (see the replay rule above) or `topup-in-progress`: the same credential is being processed right now, at this or another instance of the service; resend it after `Retry-After` seconds to learn the outcome'),
            '413': problemResponse('`body-too-large`'),
            '415': problemResponse('`unsupported-media-type`'),
            ...commonProblems,
          },
        },
      },
      '/lds/balance': {
        get: {
          operationId: 'getBalance',
          tags: ['balance'],
          summary: 'The prepaid balance and its statement, paged; as JSON or CSV',
          description: `Newest first. \`limit\` lines per page (1 to ${STATEMENT_PAGE.maxLines}, default ${STATEMENT_PAGE.defaultLines}); \`after\` is the \`next_after\` of the previous page (also in \`Link: rel="next"\`). \`format=csv\` answers the same page as RFC 4180 CSV (\`text/csv\`, header row \`at,kind,id,amount,currency,balance_after,quote_id,product_id,draw_id,topup_id,reason\`).`,
          security: [{ balanceToken: [] }],
          parameters: [
            { name: 'after', in: 'query', required: false, schema: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' }, description: 'Cursor: the `next_after` of the previous page' },
            { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: STATEMENT_PAGE.maxLines, default: STATEMENT_PAGE.defaultLines } },
            { name: 'format', in: 'query', required: false, schema: { enum: ['json', 'csv'], default: 'json' } },
          ],
          responses: {
            '200': {
              description: 'The balance',
              headers: { 'Cache-Control': { schema: { const: 'no-store' } }, Link: { schema: { type: 'string' }, description: 'rel="next" when older lines exist' } },
              content: { ...jsonContent('Balance'), 'text/csv': { schema: { type: 'string' } } },
            },
            '400': problemResponse('`malformed-request` (`field` names after, limit or format)'),
            '401': problemResponse('`balance-token-required`, `invalid-balance-token` or `balance-token-revoked`'),
            ...commonProblems,
          },
        },
      },
      '/lds/balance/token': {
        post: {
          operationId: 'rotateBalanceToken',
          tags: ['balance'],
          summary: 'Rotate the balance token',
          description: 'Send the current token as `Authorization: Bearer`. The answer carries a new token for the same balance (shown once); the old token stops working at once, on every instance.',
          security: [{ balanceToken: [] }],
          responses: {
            '200': { description: 'The new token', content: jsonContent('TokenRotation') },
            '401': problemResponse('`balance-token-required`, `invalid-balance-token` or `balance-token-revoked`'),
            ...commonProblems,
          },
        },
      },
      ...opsPaths(new URL(base_url).origin),
      ...adminPaths(),
      '/.well-known/jwks.json': {
        servers: [{ url: new URL(base_url).origin }],
        get: {
          operationId: 'getReceiptKeys',
          tags: ['receipts'],
          summary: 'The public keys of signed receipts (JWKS)',
          description:
            'Every paid draw and top-up answer carries a `receipt` with `signature` {alg EdDSA, kid, value}. To verify one with nothing but this JWKS: take the key whose `kid` equals `signature.kid`; remove `signature` from the receipt; serialise the rest as RFC 8785 canonical JSON (UTF-8); check `value` (base64url) as an Ed25519 signature of those bytes. Keys rotate by `kid`: the first key signs, retired keys stay listed while their receipts matter. Served at the origin (not under the API base).',
          responses: {
            '200': { description: 'The JWKS', content: { 'application/jwk-set+json': { schema: { $ref: '#/components/schemas/Jwks' } } } },
          },
        },
      },
      '/specification': {
        get: {
          operationId: 'getSpecification',
          tags: ['catalogue'],
          summary: 'This OpenAPI document',
          responses: {
            '200': { description: 'OpenAPI 3.1', headers: etagHeaders, content: { 'application/json': { schema: { type: 'object' } } } },
            '304': notModified,
            ...commonProblems,
          },
        },
      },
    },
    components: {
      schemas: { ...schemas, Problem: problemSchema(docs_url), ...PREVIEW_OPENAPI_SCHEMAS },
      responses: {
        RateLimited: {
          ...problemResponse('`rate-limited`'),
          headers: {
            'Retry-After': { description: 'Seconds until one request is allowed again.', schema: { type: 'integer' } },
            'RateLimit-Policy': { description: 'draft-ietf-httpapi-ratelimit-headers (structured fields): each limit as quota `q` per window `w` seconds, e.g. `"addr";q=40;w=2, "token";q=40;w=2`. Sent on every rate-limited route.', schema: { type: 'string' } },
            RateLimit: { description: 'What is left of each limit: `r` requests now, full again in `t` seconds, e.g. `"addr";r=0;t=2`.', schema: { type: 'string' } },
          },
        },
        Internal: problemResponse('`internal`'),
      },
      securitySchemes: {
        balanceToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'The balance token returned by a top-up: 256 random bits, shown once, stored by the service only as its SHA-256.',
        },
        operatorToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'The operator token (LDS_OPERATOR_TOKEN; on a local start generated once in var/secrets/operator.token): the admin API only; never a balance token.',
        },
        metricsToken: {
          type: 'http',
          scheme: 'bearer',
          description: 'The scrape token (LDS_METRICS_TOKEN; on a local start generated once in var/secrets/metrics.token): GET /metrics only, read-only; production refuses the operator token for it.',
        },
        mpp: {
          type: 'http',
          scheme: 'payment',
          description:
            'Machine Payments Protocol (HTTP Payment authentication scheme). The service challenges with `WWW-Authenticate: Payment` (method `stripe`, intent `charge`, amount and currency); the client answers with `Authorization: Payment <credential>` (or `Payment-Authorization` when `Authorization` carries the balance token) whose payload carries a Stripe Shared Payment Token. The answer carries `Payment-Receipt`. The credential: ' + CREDENTIAL_SHAPE,
        },
      },
    },
  };
}

export const emitOpenApi: Emitter = (ctx) => [
  { path: distPath(`${ctx.addresses.base_url}/specification`), contentType: JSON_TYPE, body: jsonBody(openApiDocument(ctx)), cache: 'static' },
];
