// The payment credential of a top-up, written down exactly: its wire shape (what mppx's
// Credential.serialize writes), a copyable POSIX shell script for the two legs with curl, and the
// test tokens of the sandbox processor. docs.ts places credentialSection after the top-up section
// and uses llmsTopupStep in llms.txt; openapi.ts puts the scripts in the top-up operation's
// x-codeSamples and the shape in the `mpp` security scheme. test/docs-topup.test.ts runs the
// scripts as the served docs print them against the real service, with every documented SPT.
//
// Like the rest of the generator this imports nothing from payments/ (the seam is dist/); the test
// checks that the sandbox values below are the ones payments/processors/sandbox.ts acts on.
import type { EmitContext } from './types.ts';
import { type DocSection, fence, shq } from './markdown.ts';

/** Shared Payment Tokens the sandbox processor answers as Stripe would. */
export const SANDBOX_SPTS = {
  /** any other `spt_…` value is accepted; this is the one the examples use */
  accepted: 'spt_test_example',
  declined: 'spt_sandbox_decline',
  requiresAction: 'spt_sandbox_requires_action',
} as const;

/** The top-up request body the examples send: the minimum, in the catalogue's currency. */
export function exampleTopupBody(ctx: Pick<EmitContext, 'catalogue'>): { amount: string; currency: string } {
  return { amount: ctx.catalogue.minimum_topup, currency: ctx.catalogue.currency };
}

/** The decoded credential, as mppx's Credential.serialize writes it (placeholders in angle brackets). */
export const CREDENTIAL_JSON =
  '{"challenge":{"id":"<id>","realm":"<realm>","method":"stripe","intent":"charge","request":"<request>","description":"<description>","expires":"<expires>","opaque":"<opaque>"},"payload":{"spt":"<SHARED_PAYMENT_TOKEN>"}}';

const CREDENTIAL_HEADER =
  '`Authorization: Payment <credential>` (or `Payment-Authorization: Payment <credential>` when `Authorization` carries a balance token), where `<credential>` is the base64url encoding (RFC 4648 section 5, no `=` padding) of the UTF-8 JSON';
const CREDENTIAL_FIELDS =
  '`challenge` holds every auth-param of the `WWW-Authenticate: Payment …` challenge copied unchanged as a JSON string (`request` and `opaque` stay base64url; `header` too when present), `payload.spt` the Stripe Shared Payment Token. This is what `Credential.serialize` of the `mppx` library writes.';

/** The header and its value in one paragraph. Used by llms.txt and the OpenAPI document. */
export const CREDENTIAL_SHAPE = `${CREDENTIAL_HEADER} \`${CREDENTIAL_JSON}\`: ${CREDENTIAL_FIELDS}`;

export interface TopupScriptInput {
  topup_url: string;
  body: { amount: string; currency: string };
}

export function topupScriptInput(ctx: Pick<EmitContext, 'addresses' | 'catalogue'>): TopupScriptInput {
  return { topup_url: `${ctx.addresses.base_url}/lds/balance/topup`, body: exampleTopupBody(ctx) };
}

/**
 * Both legs of a top-up in POSIX sh with curl, sed, tr and base64. `existing`: credit the balance
 * in $BALANCE_TOKEN (Bearer on both legs, the credential in Payment-Authorization). $SPT overrides
 * the sandbox token. The parameter rewrite relies on the challenge's quoted-string escapes (`\"`,
 * `\\`, `\uXXXX`), which are JSON escapes too.
 */
export function topupScript(x: TopupScriptInput, existing = false): string {
  const bearer = existing ? `\n  -H "Authorization: Bearer $BALANCE_TOKEN" \\` : '';
  const credentialHeader = existing ? 'Payment-Authorization' : 'Authorization';
  return [
    `TOPUP_URL=${shq(x.topup_url)}`,
    `BODY=${shq(JSON.stringify(x.body))}`,
    `SPT="\${SPT:-${SANDBOX_SPTS.accepted}}"  # your Shared Payment Token`,
    '# Leg 1: the 402 answer carries the challenge in WWW-Authenticate.',
    `CHALLENGE=$(curl -s -o /dev/null -D - -X POST "$TOPUP_URL" \\${bearer}`,
    `  -H 'Content-Type: application/json' -d "$BODY" \\`,
    `  | tr -d '\\r' | grep -i '^www-authenticate: *payment ' | sed 's/^[^:]*: *[Pp]ayment *//')`,
    '# The credential: base64url, no padding, of {"challenge": {the auth-params as JSON strings}, "payload": {"spt": ...}}.',
    `PARAMS=$(printf '%s' "$CHALLENGE" | sed -e 's/^\\([a-z][a-z0-9_-]*\\)="/"\\1":"/' -e 's/", \\([a-z][a-z0-9_-]*\\)="/", "\\1":"/g')`,
    `CREDENTIAL=$(printf '{"challenge":{%s},"payload":{"spt":"%s"}}' "$PARAMS" "$SPT" | base64 | tr -d '\\n=' | tr '+/' '-_')`,
    `# Leg 2: the same request with the credential: 200 with ${existing ? 'the new balance' : 'balance_token and balance'}.`,
    `curl -s -X POST "$TOPUP_URL" \\${bearer}`,
    `  -H 'Content-Type: application/json' \\`,
    `  -H "${credentialHeader}: Payment $CREDENTIAL" \\`,
    `  -d "$BODY"`,
  ].join('\n');
}

/** The sandbox test tokens and what each does, as table rows: [SPT, outcome]. */
export function sandboxTokenRows(): [string, string][] {
  return [
    [`any other \`spt_…\`, e.g. \`${SANDBOX_SPTS.accepted}\``, 'accepted: 200 with the balance'],
    [`\`${SANDBOX_SPTS.declined}\``, '402 `payment-declined`: the card was declined; nothing credited'],
    [`\`${SANDBOX_SPTS.requiresAction}\``, '402 `payment-requires-action`: the payment needs customer authentication (e.g. 3-D Secure); nothing credited'],
    ['anything not starting with `spt_`', '402 `payment-token-rejected`'],
  ];
}

export function credentialSection(ctx: EmitContext): string {
  const x = topupScriptInput(ctx);
  return [
    `The second leg of a top-up carries an MPP credential: ${CREDENTIAL_HEADER}:`,
    '',
    fence('json', CREDENTIAL_JSON),
    '',
    `${CREDENTIAL_FIELDS} The challenge \`id\` is the service's HMAC over \`realm\`, \`method\`, \`intent\`, \`request\`, \`expires\` (and \`header\`, \`opaque\`, which carries a nonce: every challenge is a new one, even for the same amount at the same instant), so a credential that changes one of them is refused (\`payment-credential-invalid\`, with a fresh challenge); a challenge is good until its \`expires\` and credits at most once. Its \`request\` decodes (base64url JSON) to what the Shared Payment Token must be minted for: \`amount\` in cents, \`currency\` (\`eur\`) and \`methodDetails.networkId\` (the Stripe profile).`,
    '',
    'Both legs in a POSIX shell with curl: the script reads the challenge, builds the credential as above and sends it. Set `SPT` to your Shared Payment Token:',
    '',
    fence('sh', topupScript(x)),
    '',
    'To add to an existing balance, send its token on both legs and the credential in `Payment-Authorization` (with `BALANCE_TOKEN` set in the shell):',
    '',
    fence('sh', topupScript(x, true)),
    '',
    'Test tokens: a deployment of this service that runs its sandbox payment processor (local and test deployments; production charges through Stripe and refuses these) answers these values of `SPT` as Stripe would:',
    '',
    '| SPT | Outcome |',
    '|---|---|',
    ...sandboxTokenRows().map(([spt, outcome]) => `| ${spt} | ${outcome} |`),
  ].join('\n');
}

/** The one rule for a used top-up credential (payments/topup/handler.ts answerAgain); README and docs say the same. */
export const TOPUP_REPLAY_RULE =
  'A used credential: the very credential that paid, resent in the same form (with or without the Bearer token) while its challenge is valid (its `expires`, 5 minutes), is answered again with the same result - 200, the same `balance_token` if that top-up opened the balance, the current balance, the same receipt - and credits nothing; this is how a buyer who lost the answer recovers it. After the challenge expired, once the balance token it opened was rotated or revoked, or for any other credential of a credited challenge, the answer is 409 `topup-already-credited`: the credit happened, nothing is charged or credited again, and the balance token is not shown again. A challenge credits at most once.';

/** Step 2 of llms.txt's buying flow: the challenge, the exact credential, the test tokens. */
export function llmsTopupStep(ctx: EmitContext): string {
  const x = topupScriptInput(ctx);
  const c = ctx.catalogue;
  return (
    `2. Top up (once): POST ${x.topup_url} with ${JSON.stringify(x.body)}. Answer: 402 with an MPP challenge: WWW-Authenticate: Payment id="…", realm="…", method="stripe", intent="charge", request="…", description="…", expires="…", opaque="…". ` +
    `Repeat the request with ${CREDENTIAL_SHAPE.replace(/`/g, '')} ` +
    `Answer: 200 with balance_token (shown once) and balance. Minimum ${c.minimum_topup} ${c.currency}. ` +
    `To credit an existing balance send Authorization: Bearer <BALANCE_TOKEN> and the credential in Payment-Authorization (without the Bearer token that is a 401 balance-token-required). ` +
    `${TOPUP_REPLAY_RULE.replace(/`/g, '')} ` +
    `Sandbox test tokens: any spt_… is accepted (e.g. ${SANDBOX_SPTS.accepted}), ${SANDBOX_SPTS.declined} is declined, ${SANDBOX_SPTS.requiresAction} requires customer action. The documentation has a curl script for both legs.`
  );
}

/** The top-up operation's `x-codeSamples` (the same scripts as the docs). */
export function topupCodeSamples(ctx: Pick<EmitContext, 'addresses' | 'catalogue'>): { lang: string; label: string; source: string }[] {
  const x = topupScriptInput(ctx);
  return [
    { lang: 'Shell', label: 'curl: open a balance (both legs)', source: topupScript(x) },
    { lang: 'Shell', label: 'curl: add to the balance in $BALANCE_TOKEN', source: topupScript(x, true) },
  ];
}

export const CREDENTIAL_DOC_SECTIONS: DocSection[] = [{ title: 'The payment credential', render: credentialSection }];
