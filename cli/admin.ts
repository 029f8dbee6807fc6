// `lds admin …` (operator commands over the admin API, with LDS_OPERATOR_TOKEN) and
// `lds receipt verify` (a buyer's offline check of a saved receipt against the JWKS).
// The admin commands call the running service rather than opening the ledger, so they work the
// same on LevelDB (held by the service) and PostgreSQL, and a top-up refund reaches the processor.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { OPERATOR_TOKEN_FILE, dataPaths } from '../payments/config.ts';
import { verifyReceipt } from '../payments/receipts.ts';
import { cannotReach, isUnreachable } from './reach.ts';

export class AdminCliError extends Error {}

/** The operator token: LDS_OPERATOR_TOKEN, else the one a local start generated under var/secrets. */
export async function operatorToken(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  if (env.LDS_OPERATOR_TOKEN) return env.LDS_OPERATOR_TOKEN.trim();
  const file = join(dataPaths(env).secretsDir, OPERATOR_TOKEN_FILE);
  try {
    return (await readFile(file, 'utf8')).trim();
  } catch {
    throw new AdminCliError(`no operator token: set LDS_OPERATOR_TOKEN (a local start writes one to ${file})`);
  }
}

/** POSTs to an admin endpoint; prints the JSON answer; a problem becomes an error with its detail. */
export async function adminPost(baseUrl: string, path: string, body: unknown, o: { key?: string; env?: NodeJS.ProcessEnv }): Promise<Record<string, unknown>> {
  const token = await operatorToken(o.env);
  const url = `${baseUrl.replace(/\/$/, '')}/lds/admin/${path}`;
  let res: Response;
  try {
    res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${token}`, ...(o.key ? { 'idempotency-key': o.key } : {}) },
      body: JSON.stringify(body),
    });
  } catch (err) {
    if (isUnreachable(err)) throw new AdminCliError(cannotReach(err, url, 'is the service running (npm start) and --base-url right?'));
    throw err;
  }
  const text = await res.text();
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text);
  } catch {
    throw new AdminCliError(`the service answered ${res.status} without JSON`);
  }
  if (!res.ok) throw new AdminCliError(`${res.status} ${String(json.title ?? '')}: ${String(json.detail ?? '')}`);
  return json;
}

const JWKS_HELP =
  'give the JWKS with --jwks: the URL of the service that signed the receipt (https://<its host>/.well-known/jwks.json), or a saved copy of that file to verify offline';

/** Reads a JWKS from a URL (http/https) or a file. */
export async function loadJwks(where: string): Promise<unknown> {
  if (/^https?:\/\//.test(where)) {
    let res: Response;
    try {
      res = await fetch(where);
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      throw new AdminCliError(cannotReach(err, where, `${JWKS_HELP} (without --jwks the service's local address is tried)`));
    }
    if (!res.ok) throw new AdminCliError(`${where} answered ${res.status}: ${JWKS_HELP}`);
    try {
      return await res.json();
    } catch {
      throw new AdminCliError(`${where} did not answer JSON: ${JWKS_HELP}`);
    }
  }
  let text: string;
  try {
    text = await readFile(where, 'utf8');
  } catch (err) {
    throw new AdminCliError(`cannot read the JWKS file ${where} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): ${JWKS_HELP}`);
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new AdminCliError(`${where} is not JSON: ${JWKS_HELP}`);
  }
}

/**
 * Verifies a saved receipt: FILE holds the receipt itself or a whole answer with a `receipt`
 * member (a paid draw, a top-up). Returns the line to print; throws AdminCliError on failure.
 */
export async function verifyReceiptFile(file: string, jwksFrom: string): Promise<string> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(file, 'utf8'));
  } catch (err) {
    throw new AdminCliError(`${file}: ${(err as Error).message}`);
  }
  const receipt = doc && typeof doc === 'object' && 'receipt' in doc && !('signature' in doc) ? (doc as { receipt: unknown }).receipt : doc;
  const r = verifyReceipt(receipt, await loadJwks(jwksFrom));
  if (!r.ok) throw new AdminCliError(`receipt NOT verified: ${r.reason}`);
  const rec = receipt as Record<string, unknown>;
  return `receipt verified: ${String(rec.type ?? 'receipt')} ${String(rec.draw_id ?? rec.topup_id ?? '')} ${String(rec.amount ?? '')} ${String(rec.currency ?? '')}, signed by key ${r.kid}`;
}
