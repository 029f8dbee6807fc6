// `lds buy`, `lds balance`, `lds statement` and `lds rotate`: the buyer's commands, thin over the
// client package (lds-catalogue-client, imported by its name as any buyer imports it; the receipts
// commands are cli/receipts.ts). The balance token comes from LDS_BALANCE_TOKEN
// or a file only readable by its owner (--token-file, mode 0600), never from the command line (shell
// history, ps). Progress goes to standard error, results to standard output (--json: one object).
//
// Decisions (README, "Buying from code"):
// - the receipts journal defaults to $XDG_STATE_HOME/lds/receipts.ndjson (~/.local/state/…), so
//   the daily budget (--max-per-day) holds across runs without a flag;
// - a balance that `buy --auto-topup` opens has its token written to --token-file (created 0600,
//   never overwritten) before the draw is paid; without --token-file such a buy is refused before
//   any money moves, as the token would otherwise be lost;
// - `rotate` writes the new token over the --token-file (0600, atomically); with the token from
//   LDS_BALANCE_TOKEN it prints the new one once, as the service shows it once. It records the
//   rotation in the journal (the hints of the old and new token, never a token), so `receipts
//   reconcile` knows the lines of the old token belong to the same balance.
import { chmod, mkdir, readFile, rename, stat, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { LdsClient, LdsError, apiBase, isWellFormedToken, parseAmountCents, type ClientOptions } from 'lds-catalogue-client';
import { STATEMENT_PAGE } from '../contract/limits.ts';
import { DEFAULT_SPT, TOKEN_ENV } from './topup.ts';

export class BuyCliError extends LdsError {}

export interface BuyerIo {
  env: NodeJS.ProcessEnv;
  stdout: (line: string) => void;
  stderr: (line: string) => void;
}

export function defaultJournal(env: NodeJS.ProcessEnv): string {
  return join(env.XDG_STATE_HOME || join(env.HOME || homedir(), '.local', 'state'), 'lds', 'receipts.ndjson');
}

export interface TokenSource {
  token?: string;
  /** where the token came from, for messages (never the token) */
  from: string;
  /** the token file, when one was named (it may not exist yet) */
  file?: string;
}

/**
 * The token: LDS_BALANCE_TOKEN, else --token-file (which must not be readable by others). A token
 * file that does not exist is an error naming it, unless `mayCreate` (a buy that may open a balance
 * writes its token there); an empty one too.
 */
export async function readToken(env: NodeJS.ProcessEnv, tokenFile?: string, o: { mayCreate?: boolean } = {}): Promise<TokenSource> {
  const check = (token: string, from: string) => {
    if (!isWellFormedToken(token)) throw new BuyCliError(`the balance token from ${from} is not a balance token (lds_bal_ followed by 43 base64url characters)`);
    return token;
  };
  if (env[TOKEN_ENV]?.trim()) return { token: check(env[TOKEN_ENV]!.trim(), TOKEN_ENV), from: TOKEN_ENV, ...(tokenFile ? { file: resolve(tokenFile) } : {}) };
  if (!tokenFile) return { from: 'nowhere' };
  const file = resolve(tokenFile);
  let mode: number;
  try {
    mode = (await stat(file)).mode;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw new BuyCliError(`--token-file ${tokenFile}: ${(err as Error).message}`);
    if (o.mayCreate) {
      // Made now, before anything is paid, so that the token of a balance opened later has a place
      // to go: owner-only when this makes it (an existing folder is left as it is).
      await mkdir(dirname(file), { recursive: true, mode: 0o700 }).catch((e: Error) => {
        throw new BuyCliError(`--token-file ${tokenFile}: cannot make its folder (${e.message}); nothing was sent`);
      });
      return { from: tokenFile, file };
    }
    throw new BuyCliError(`--token-file ${tokenFile}: no such file (${file}). Save the balance token there (one line, chmod 600), or set ${TOKEN_ENV}; \`lds buy --auto-topup 5.00 --token-file ${tokenFile}\` opens a balance and writes its token there`);
  }
  if (mode & 0o077) throw new BuyCliError(`--token-file ${tokenFile} can be read by others (mode ${(mode & 0o777).toString(8)}): run chmod 600 ${tokenFile}`);
  const token = (await readFile(file, 'utf8')).split('\n')[0]!.trim();
  if (!token) throw new BuyCliError(`--token-file ${tokenFile} is empty: its first line must be the balance token (lds_bal_…)`);
  return { token: check(token, `--token-file ${tokenFile}`), from: `--token-file ${tokenFile}`, file };
}

/** Writes a token file readable only by its owner; `replace` swaps it in atomically. */
async function saveToken(file: string, token: string, replace: boolean): Promise<void> {
  if (!replace) {
    await writeFile(file, `${token}\n`, { mode: 0o600, flag: 'wx' });
    return;
  }
  const tmp = join(dirname(file), `.${Date.now()}.${process.pid}.token`);
  await writeFile(tmp, `${token}\n`, { mode: 0o600, flag: 'wx' });
  await chmod(tmp, 0o600);
  await rename(tmp, file);
}

/** --base-url checked as the client checks it, named as the command line names it. */
export function checkBaseUrl(baseUrl: string): void {
  try {
    apiBase(baseUrl, '--base-url');
  } catch (err) {
    throw new BuyCliError((err as Error).message);
  }
}

interface CommonOptions {
  baseUrl: string;
  tokenFile?: string;
  json?: boolean;
}

export async function clientFor(o: CommonOptions & { journal?: string }, io: BuyerIo, extra: Partial<ClientOptions> = {}, known?: TokenSource) {
  checkBaseUrl(o.baseUrl);
  const src = known ?? (await readToken(io.env, o.tokenFile));
  const client = await LdsClient.create({
    baseUrl: o.baseUrl,
    ...(src.token ? { token: src.token } : {}),
    ...(o.journal ? { journal: o.journal } : {}),
    onProgress: (line) => io.stderr(line),
    ...extra,
  });
  return { client, src };
}

export interface BuyOptions extends CommonOptions {
  product: string;
  query?: string;
  unit?: string[];
  limit?: string;
  max: string;
  maxPerDay?: string;
  autoTopup?: string;
  spt: string;
  journal?: string;
  out?: string;
}

export async function runBuy(o: BuyOptions, io: BuyerIo): Promise<void> {
  checkBaseUrl(o.baseUrl);
  if (!o.query === !o.unit?.length) throw new BuyCliError('give exactly one of --query Q and --unit REF…');
  const limit = o.limit === undefined ? undefined : Number(o.limit);
  if (limit !== undefined && !(Number.isInteger(limit) && limit > 0)) throw new BuyCliError(`--limit must be a positive whole number; got ${JSON.stringify(o.limit)}`);
  for (const [flag, v] of [['--max', o.max], ['--max-per-day', o.maxPerDay], ['--auto-topup', o.autoTopup]] as const)
    if (v !== undefined && parseAmountCents(v) === null) throw new BuyCliError(`${flag} must be an amount in EUR with at most two decimals, e.g. 0.50; got ${JSON.stringify(v)}`);
  const journal = resolve(o.journal ?? defaultJournal(io.env));
  const src = await readToken(io.env, o.tokenFile, { mayCreate: !!o.autoTopup });
  if (!src.token && !o.autoTopup) throw new BuyCliError(`no balance token: set ${TOKEN_ENV} or give --token-file FILE (mode 0600); or add --auto-topup 5.00 --token-file FILE to open a balance and keep its token in FILE`);
  if (!src.token && !src.file) throw new BuyCliError('--auto-topup would open a new balance: give --token-file FILE so its token is kept (created with mode 0600); nothing was paid');
  io.stderr(`journal: ${journal}`);
  const { client } = await clientFor({ ...o, journal }, io, {
    policy: { maxPerDraw: o.max, ...(o.maxPerDay ? { maxPerDay: o.maxPerDay } : {}), ...(o.autoTopup ? { maxPerTopup: o.autoTopup } : {}) },
    ...(o.autoTopup ? { autoTopup: { amount: o.autoTopup } } : {}),
    spt: o.spt,
    onNewToken: async (token) => {
      await saveToken(src.file!, token, false);
      io.stderr(`new balance: its token is in ${src.file} (mode 0600); keep it secret`);
    },
  }, src);
  try {
    io.stderr(`quoting ${o.product}…`);
    const quote = await client.quote({ product_id: o.product, ...(o.query !== undefined ? { query: o.query } : { units: o.unit }), ...(limit !== undefined ? { limit } : {}) });
    io.stderr(`quote ${shortId(quote.quote_id)}: ${quote.unit_count} unit${quote.unit_count === 1 ? '' : 's'}, ${quote.amount} ${quote.currency}`);
    const paid = await client.pay(quote);
    const r = paid.receipt;
    const kid = r.signature.kid;
    if (o.out) await writeFile(o.out, `${JSON.stringify(paid, null, 2)}\n`);
    if (o.json) {
      io.stdout(JSON.stringify({ draw_id: r.draw_id, quote_id: r.quote_id, product_id: r.product_id, unit_count: r.unit_count, amount: r.amount, currency: r.currency, balance_after: r.balance_after, receipt_kid: kid, journal, ...(o.out ? { out: o.out } : { units: paid.units, attribution: paid.attribution, receipt: r }) }));
      return;
    }
    io.stdout(`Paid ${r.amount} ${r.currency} for ${r.unit_count} unit${r.unit_count === 1 ? '' : 's'} of ${r.product_id} (draw ${r.draw_id}); receipt verified (key ${kid}). Balance: ${r.balance_after} ${r.currency}.`);
    if (o.out) io.stdout(`Units, attribution and receipt written to ${o.out}.`);
    else for (const u of paid.units) io.stdout(`${u.ref}${typeof u.citation_text === 'string' ? `  ${u.citation_text}` : ''}`);
  } finally {
    await client.close();
  }
}

/** A quote id shortened for a person to read (issued ones are ~300 characters): its start and end; the journal keeps it whole. */
export function shortId(id: string): string {
  return id.length <= 24 ? id : `${id.slice(0, 12)}…${id.slice(-8)}`;
}

export async function runBalance(o: CommonOptions, io: BuyerIo): Promise<void> {
  const { client } = await clientFor(o, io);
  const b = await client.balance();
  io.stdout(o.json ? JSON.stringify(b) : `${b.balance} ${b.currency}`);
}

export async function runStatement(o: CommonOptions & { csv?: boolean; limit?: string }, io: BuyerIo): Promise<void> {
  const { client } = await clientFor(o, io);
  const limit = o.limit === undefined ? 100 : Number(o.limit);
  if (!(Number.isInteger(limit) && limit >= 1 && limit <= STATEMENT_PAGE.maxLines)) throw new BuyCliError(`--limit (lines per page) must be a whole number from 1 to ${STATEMENT_PAGE.maxLines}`);
  if (o.csv) {
    let after: string | undefined;
    let first = true;
    do {
      const page = await client.statementCsvPage({ limit, ...(after ? { after } : {}) });
      const lines = page.csv.replace(/\r\n$/, '').split('\r\n');
      for (const l of first ? lines : lines.slice(1)) io.stdout(l);
      first = false;
      after = page.next;
    } while (after);
    return;
  }
  let n = 0;
  const all = [];
  for await (const line of client.statement({ limit })) {
    if (o.json) all.push(line);
    else io.stdout([line.at, line.kind.padEnd(12), line.amount.padStart(9), line.balance_after.padStart(9), line.id, line.product_id ?? line.reason ?? ''].join('  ').trimEnd());
    if (++n % 1000 === 0) io.stderr(`${n} lines…`);
  }
  if (o.json) io.stdout(JSON.stringify(all));
}

export async function runRotate(o: CommonOptions & { journal?: string }, io: BuyerIo): Promise<void> {
  const src = await readToken(io.env, o.tokenFile);
  if (!src.token) throw new BuyCliError(`no balance token to rotate: set ${TOKEN_ENV} or give --token-file FILE`);
  const { client } = await clientFor({ ...o, journal: resolve(o.journal ?? defaultJournal(io.env)) }, io, {}, src);
  let fresh: string;
  try {
    fresh = await client.rotateToken();
  } finally {
    await client.close();
  }
  if (src.from !== TOKEN_ENV && src.file) {
    await saveToken(src.file, fresh, true);
    io.stderr(`rotated: the new token replaced the old one in ${src.file}; the old token no longer works`);
    if (o.json) io.stdout(JSON.stringify({ rotated: true, token_file: src.file }));
    return;
  }
  io.stderr(`rotated: the old token (${TOKEN_ENV}) no longer works; the new one is shown once, below`);
  io.stdout(o.json ? JSON.stringify({ rotated: true, balance_token: fresh }) : fresh);
}

export { DEFAULT_SPT };
