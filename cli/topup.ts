// `lds topup`: fund a prepaid balance from the command line, as a buyer does, with the official mppx
// client (through the client package's lds-catalogue-client/mpp): the first request gets the 402 MPP challenge, the client answers
// it with a credential carrying the Shared Payment Token, the service answers 200. Works against any
// deployment (--base-url). Secrets stay out of the way: the balance token to credit comes from
// LDS_BALANCE_TOKEN or standard input (`--token -`) when it should not appear in shell history or
// `ps`, and neither it nor the SPT is ever printed; a new balance's token is printed once, as the
// service shows it once.
// The mppx client is imported when a top-up runs, so cli.ts can read the defaults below cheaply.
import { formatCents, parseAmountCents } from '../contract/money.ts';
import { apiBase, isWellFormedToken } from 'lds-catalogue-client';
import { cannotReach, isUnreachable } from './reach.ts';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080/v1';
/** Any `spt_…` value works with the sandbox processor (the default of a local `npm start`). */
export const DEFAULT_SPT = 'spt_test_cli';
export const TOKEN_ENV = 'LDS_BALANCE_TOKEN';

export interface TopupCliOptions {
  amount: string;
  baseUrl: string;
  spt: string;
  /** a balance token, or '-' to read it from standard input */
  token?: string;
  json?: boolean;
}

export interface TopupIo {
  env: NodeJS.ProcessEnv;
  stdin: NodeJS.ReadableStream & { isTTY?: boolean };
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

/** A problem the user can act on: cli.ts prints the message and exits 1. */
export class TopupCliError extends Error {}

/** The balance to credit and where it came from, or none (a new balance). */
export async function balanceToCredit(flag: string | undefined, io: TopupIo): Promise<{ token: string; from: string } | null> {
  let token: string | undefined;
  let from: string;
  if (flag === '-') {
    if (io.stdin.isTTY) io.stderr('balance token: ');
    token = (await firstLine(io.stdin)).trim();
    from = 'standard input';
    if (!token) throw new TopupCliError('--token -: standard input held no balance token');
  } else if (flag !== undefined) {
    token = flag.trim();
    from = '--token';
  } else if (io.env[TOKEN_ENV]) {
    token = io.env[TOKEN_ENV]!.trim();
    from = TOKEN_ENV;
  } else return null;
  // Never echo a secret back, not even a wrong one.
  if (!isWellFormedToken(token)) throw new TopupCliError(`the balance token from ${from} is not a balance token (lds_bal_ followed by 43 base64url characters)`);
  return { token, from };
}

function firstLine(stream: NodeJS.ReadableStream): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const done = () => {
      stream.removeListener('data', onData);
      stream.removeListener('end', done);
      stream.removeListener('error', reject);
      if ('pause' in stream) stream.pause();
      resolve(text.split('\n')[0] ?? '');
    };
    const onData = (d: Buffer | string) => {
      text += d;
      if (text.includes('\n')) done();
    };
    stream.on('data', onData);
    stream.once('end', done);
    stream.once('error', reject);
  });
}

/** The top-up endpoint under a base URL such as http://127.0.0.1:8080/v1 (checked as the client package checks it). */
export function topupUrl(baseUrl: string): string {
  try {
    return `${apiBase(baseUrl, '--base-url').base}/lds/balance/topup`;
  } catch (err) {
    throw new TopupCliError((err as Error).message);
  }
}

/** One readable line for a refused top-up: the problem's title, status, type and detail. */
async function refusal(res: Response, url: string): Promise<string> {
  const hint = res.status === 404 ? `; is --base-url the API base (${DEFAULT_BASE_URL} for a local service)?` : '';
  if ((res.headers.get('content-type') ?? '').includes('json')) {
    const p = (await res.json().catch(() => null)) as { type?: string; title?: string; detail?: string } | null;
    if (p && (p.title || p.detail)) {
      const slug = p.type ? ` [${p.type.replace(/^.*\//, '')}]` : '';
      return `top-up refused (HTTP ${res.status}${slug}): ${[p.title, p.detail].filter(Boolean).join(': ')}${hint}`;
    }
  }
  return `top-up failed: HTTP ${res.status} ${res.statusText} from ${url}${hint}`;
}

async function paymentReference(receipt: string): Promise<string | undefined> {
  const { Receipt } = await import('mppx');
  try {
    return Receipt.deserialize(receipt).reference;
  } catch {
    return undefined; // the top-up is done; a receipt we cannot read only costs the reference
  }
}

export async function runTopup(o: TopupCliOptions, io: TopupIo): Promise<void> {
  const url = topupUrl(o.baseUrl);
  const credit = await balanceToCredit(o.token, io);
  const { payTopup } = await import('lds-catalogue-client/mpp');
  let res: Response;
  try {
    res = await payTopup(url, o.amount, { spt: o.spt, ...(credit ? { balanceToken: credit.token } : {}) });
  } catch (err) {
    if (isUnreachable(err)) throw new TopupCliError(cannotReach(err, url, 'is the service running (npm start) and --base-url right?'));
    // The mppx client refuses a challenge it cannot pay (no stripe charge method offered, expired, ...).
    throw new TopupCliError(`the service at ${url} asked for a payment this client cannot make: ${(err as Error).message}`);
  }
  if (res.status !== 200) throw new TopupCliError(await refusal(res, url));

  const body = (await res.json()) as { balance_token?: string; balance: string; currency: string };
  const receipt = res.headers.get('Payment-Receipt');
  const payment = receipt ? await paymentReference(receipt) : undefined;
  const paid = parseAmountCents(o.amount); // the service accepted it, so it parses
  if (o.json) {
    io.stdout(JSON.stringify({ ...body, amount: o.amount, ...(payment ? { payment } : {}) }));
    return;
  }
  io.stdout(`Paid ${paid === null ? o.amount : formatCents(paid)} ${body.currency}${payment ? ` (payment ${payment})` : ''}.`);
  if (credit) {
    io.stdout(`Balance (the one from ${credit.from}): ${body.balance} ${body.currency}`);
  } else {
    io.stdout(`New balance: ${body.balance} ${body.currency}`);
    io.stdout('Balance token (shown once; whoever holds it can spend the balance; keep it secret):');
    io.stdout(body.balance_token ?? '(the service sent none)');
  }
}
