// The RFC 9457 problem types of the service: one table both halves use. The generator publishes a
// documentation page per type (docs/problems/<slug>, generator/emit/problems.ts) and lists them in
// the OpenAPI Problem schema; the service answers `type` = problemBase(docs_url) + slug, with the
// docs_url it reads from the built catalogue in dist/. So every `type` resolves to its own page,
// which says the status, what it means and what to do.

export interface ProblemType {
  slug: string;
  status: number;
  /** When it is answered, in a sentence (Markdown allowed). */
  meaning: string;
  /** What the client should do about it. */
  todo: string;
}

/** The folder of the problem pages under the documentation address: `<docs_url>problems/`. */
export function problemBase(docsUrl: string): string {
  return new URL('problems/', docsUrl.endsWith('/') ? docsUrl : `${docsUrl}/`).href;
}

const p = (slug: string, status: number, meaning: string, todo: string): ProblemType => ({ slug, status, meaning, todo });
const fixRequest = 'Correct the request as `detail` says and send it again; nothing was charged or stored.';

export const PROBLEM_TYPES: readonly ProblemType[] = [
  p('malformed-request', 400, 'the body or a parameter does not match the OpenAPI document, the body is not a JSON object, or the request is not valid HTTP/1.1 (e.g. no `Host` header); `field` names the failing field and `detail` says in words what is allowed and what was received', fixRequest),
  p('unsupported-currency', 400, 'a currency other than EUR (codes are compared case-insensitively: `eur` is EUR)', 'Send `"currency": "EUR"` or leave it out (EUR is the default).'),
  p('quote-tampered', 400, 'the quote_id does not verify, or the paying request changes a field the quote is bound to; `field` names it (`units`, `query`, `limit`, `product_id`, `currency` or `quote_id`)', 'Repeat the quoted request exactly (same product, currency and units, or the same query and limit) with its quote_id, or ask for a new quote without quote_id. Nothing was charged.'),
  p('balance-token-required', 401, 'no `Authorization: Bearer <BALANCE_TOKEN>`: paying a quote, reading a balance, or a top-up credential sent in `Payment-Authorization` (which credits the balance the Bearer token names)', 'Send the balance token as `Authorization: Bearer <token>`; a first top-up (without it) opens a balance and shows its token once.'),
  p('invalid-balance-token', 401, 'the balance token is not known', 'Check the token you send (it is shown once, in the answer of the top-up that opened the balance); a new top-up without a token opens a new balance.'),
  p('quote-expired', 402, 'the quote expired (or the unit store changed); `quote` carries a fresh quote', 'Pay the fresh quote in `quote` (same request, its new quote_id).'),
  p('insufficient-balance', 402, 'the balance does not cover the quote; `quote`, `balance` and `how_to_pay` say how to top up', 'Top up the balance (POST /v1/lds/balance/topup with your Bearer token, at least 5.00 EUR), then pay the same quote again while it is valid.'),
  p('unknown-product', 404, 'no product with that product_id', 'Pick a product_id from the catalogue (GET /v1/lds/_catalog).'),
  p('unknown-units', 404, 'unit references not in the product; `unknown` lists them', 'Remove the references listed in `unknown`, or find units with a `query` instead.'),
  p('product-unavailable', 404, "the product is in the catalogue but has no live units yet (`live_unit_count` 0); `reason` says why, from the catalogue's `_health.rollup_reason`", 'Choose another product; the catalogue shows when this one has live units.'),
  p('no-matching-units', 404, 'the query matched no unit of the product', "Try other words (the product's `example_query` shows one that matches), or another product."),
  p('not-found', 404, 'no such document', 'Check the address; the well-known index (/.well-known/api-catalog) and the OpenAPI document list every one.'),
  p('foreign-origin', 403, "the MCP endpoint was asked under an address that is not the service's own: its `Host` or `Origin` names another site (a web page that resolved its own name to this service's address: DNS rebinding); `detail` names the header", "Send the request to the service's own address (the catalogue's `mcp_url`), without an `Origin` of another site; nothing was done."),
  p('method-not-allowed', 405, 'the path exists but not with this method', 'Use the method the OpenAPI document gives for this path (`Allow` lists them).'),
  p('not-acceptable', 406, 'the whole catalogue (`/v1/dcat/catalog`) is published as JSON-LD, Turtle and RDF/XML, and the `Accept` header names none of them', 'Send `Accept: application/ld+json`, `text/turtle` or `application/rdf+xml` (or none), or fetch one of the files `/v1/dcat/catalog.jsonld`, `.ttl`, `.rdf` directly.'),
  p('request-timeout', 408, "the request (headers and body) was not received within the server's request timeout; the connection is closed", 'Send the whole request at once, on a new connection.'),
  p('quote-paid-by-another-balance', 409, 'the quote was already paid from a different balance', 'Ask for a new quote (the same request without quote_id) and pay that one.'),
  p('body-too-large', 413, 'the request body is larger than the service accepts (the OpenAPI document says how large a body may be)', 'Send a smaller body: fewer units per draw (split them over several draws).'),
  p('unsupported-media-type', 415, 'the body is not `application/json` with no parameter or `charset=utf-8` (other charsets and `+json` types are refused)', 'Send the body as UTF-8 JSON with `Content-Type: application/json`.'),
  p('request-header-fields-too-large', 431, 'the request headers are too large', 'Send only the headers the API documents.'),
  p('rate-limited', 429, 'too many requests from this client address or balance token (`policy`: `addr`, `token`, or `edge` for the proxy in front); `Retry-After` says when to retry, `RateLimit` and `RateLimit-Policy` describe the limits', 'Wait `Retry-After` seconds, then send fewer requests (within the quota the `RateLimit-Policy` header gives).'),
  p('operator-token-required', 401, 'the admin API without `Authorization: Bearer <LDS_OPERATOR_TOKEN>`', "Operators only: send the operator token (LDS_OPERATOR_TOKEN) as a Bearer token."),
  p('metrics-token-required', 401, '`GET /metrics` without `Authorization: Bearer <LDS_METRICS_TOKEN>` (the scrape token; the operator token is not accepted there)', "Scrapers only: send the metrics token (LDS_METRICS_TOKEN) as a Bearer token."),
  p('admin-address-refused', 403, 'the admin API from an address the proxy in front does not allow (`deploy/nginx/lds.conf`, `ADJUST 4`); the request never reached the service', 'Operators: send admin requests from an allowed address (or add yours to the allow-list). Nothing was changed.'),
  p('not-ready', 503, '`/readyz`: the instance cannot take traffic; `not_ready` names the failing checks', 'Send traffic to another instance; operators: fix the checks named in `not_ready`.'),
  p('service-unavailable', 503, 'the proxy in front of the service found no instance to answer; nothing was charged', 'Retry after `Retry-After` seconds.'),
  p('internal', 500, 'an unexpected error; nothing was charged and no internals are shown', 'Retry: a paid draw is charged at most once per quote_id and a top-up credential at most once. If it persists, tell the operator.'),
  p('invalid-amount', 400, 'top-up: amount is not a decimal string with at most two decimals', 'Send the amount as a string with at most two decimals, e.g. `"5.00"`.'),
  p('topup-below-minimum', 400, 'top-up: below the 5.00 EUR minimum', 'Top up at least 5.00 EUR.'),
  p('topup-above-maximum', 400, 'top-up: above the maximum of one top-up', 'Top up less at a time (`detail` names the maximum).'),
  p('payment-required', 402, 'top-up: the MPP challenge (`WWW-Authenticate: Payment`)', 'Pay the challenge: send the same request again with the MPP credential (a Shared Payment Token) in `Authorization: Payment …` (or `Payment-Authorization` with your Bearer token).'),
  p('payment-credential-invalid', 402, 'top-up: the credential does not match a valid challenge; a fresh challenge is attached', 'Build a new credential for the fresh challenge in `WWW-Authenticate` and send it.'),
  p('payment-declined', 402, 'top-up: the card was declined', 'Use another payment method; nothing was charged.'),
  p('payment-requires-action', 402, 'top-up: the payment needs customer action', 'Complete the action the payment method asks for, then pay a fresh challenge.'),
  p('payment-not-completed', 402, 'top-up: the payment did not complete', 'Pay a fresh challenge; nothing was credited.'),
  p('payment-token-rejected', 402, 'top-up: the processor does not accept the Shared Payment Token', 'Mint a new Shared Payment Token and pay a fresh challenge.'),
  p('topup-already-credited', 409, "top-up: this credential's challenge was already credited. The very credential that paid, resent in the same form before its challenge expires, is instead answered again (200, the same result, nothing credited) unless the balance token it opened was rotated or revoked since; after that, or for any other credential, this 409: the credit happened and a new balance token is not shown again", 'Nothing to do: the money is on the balance (GET /v1/lds/balance shows it). For another top-up, start with a new challenge.'),
  p('topup-in-progress', 409, 'top-up: the same credential is being processed', 'Wait a moment and send the same credential again: it is credited at most once.'),
  p('payment-processor-unavailable', 502, 'top-up: the processor failed; nothing credited, resending the same credential is safe', 'Send the same credential again in a little while.'),
  p('quote-store-unavailable', 503, "paying a quote made against a unit store version this instance does not hold (a new catalogue version is being rolled out to the instances, or this instance restarted since the quote); nothing was charged; `store_version` and `expires_at` name the quote's store and its expiry", 'Repeat the same request after `Retry-After` seconds (possibly at another instance): it is then paid with exactly the quoted units and price. After `expires_at` the answer is quote-expired with a fresh quote.'),
  p('ledger-unavailable', 503, "the ledger is not accepting changes, or did not confirm this one in time (its database failed over, is read-only, or did not answer within the service's bound); `outcome` says `none` (nothing was changed) or `unknown` (the change may have been made); `Retry-After` says when to retry", 'Send the same request again after `Retry-After` seconds: with the same quote_id a draw that was paid is answered again without a second charge and one that was not is paid once; the same top-up credential is credited at most once.'),
  p('balance-token-revoked', 401, 'the balance token was rotated or revoked', 'Use the token that replaced it (the answer of POST /v1/lds/balance/token showed it); after an operator revoked it, ask the operator.'),
  p('unknown-draw', 404, 'admin API: no such draw_id', 'Check the draw_id (it is in the receipt of the paid draw and in the statement).'),
  p('unknown-topup', 404, 'admin API: no such topup_id', 'Check the topup_id (it is in the receipt of the top-up and in the statement).'),
  p('unknown-balance', 404, 'admin API: no such balance_id', 'Name the balance by the draw_id or topup_id of something it paid, or check the balance_id.'),
  p('unknown-balance-token', 404, 'admin API: no balance has this token', 'Check the token hash (hex SHA-256 of the token).'),
  p('idempotency-key-reused', 409, 'admin API: this Idempotency-Key was used for another request', 'Use a new Idempotency-Key for a new correction; `correction_id` names the one the key already made.'),
  p('processor-mismatch', 409, 'admin API: the top-up was paid through another processor', 'Refund it with the processor that took the payment.'),
  p('refund-exceeds-payment', 422, 'admin API: more than what is left to refund of the draw or top-up; `available` says how much', 'Refund at most `available`.'),
  p('adjustment-below-zero', 422, 'admin API: a debit would take the balance below zero; `balance` says what it holds', 'Debit at most `balance`.'),
  p('adjustment-above-maximum', 422, 'admin API: one adjustment above the most one correction may move (LDS_MAX_ADJUSTMENT, default the top-up maximum); `maximum` says how much', 'Adjust at most `maximum` per correction, or raise LDS_MAX_ADJUSTMENT.'),
  p('nothing-to-refund', 422, 'admin API: the top-up was refunded already or its money spent', 'Nothing is left to refund; refund the draws that spent it instead if that is what is owed.'),
];
