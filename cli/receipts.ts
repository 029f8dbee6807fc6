// `lds receipts verify` and `lds receipts reconcile`: the buyer's receipts journal checked against
// the service, not against itself (over the client package, lds-catalogue-client).
//
// - verify: every receipt's signature against the service's live JWKS (fetched from the origin of
//   each journal line's base_url), or a saved JWKS (--jwks), or only the journal's own keys whose id
//   the buyer pinned (--pin, offline). When the service's keys could not be had and nothing was
//   pinned, the receipts are checked against the keys the journal itself recorded, and the output
//   says plainly that this proves nothing against a rewritten journal.
//   What the live check trusts, said as it is: whatever keys the host a line's base_url names
//   serves now. A line forged with the forger's key and a base_url of a host serving that key passes
//   it; so a journal naming more than one origin is warned about, a receipt whose key the journal
//   recorded only after it (or never) fails (the client records keys before it accepts a receipt),
//   and evidence is checked with pinned keys (--pin) or a saved JWKS (--jwks).
// - reconcile: the journal's draws and top-ups of one balance against the service's statement of
//   that balance (client/reconcile.ts): each difference named, exit 1.
// Not to be confused with `lds ledger reconcile` (the operator's: receipts against the ledger).
import { readFile } from 'node:fs/promises';
import { parseJournal, reconcileJournal, tokenHintOf, verifyJournal, type JournalReport, type Jwks, type StatementLine } from 'lds-catalogue-client';
import { BuyCliError, clientFor, readToken, type BuyerIo } from './buy.ts';
import { TOKEN_ENV } from './topup.ts';

async function readJournal(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new BuyCliError(`${file}: ${(err as Error).message}`);
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The JWKS at a URL or in a file. */
async function loadJwks(where: string): Promise<Jwks> {
  // Keys are taken from the address named, never from one it redirects to.
  const jwks = /^https?:\/\//.test(where) ? await (await fetch(where, { redirect: 'error' })).json() : JSON.parse(await readFile(where, 'utf8'));
  if (!Array.isArray((jwks as Jwks)?.keys)) throw new Error('not a JWKS (no keys array)');
  return jwks as Jwks;
}

export interface JournalCheck {
  report: JournalReport;
  /** what the receipts were checked against, in words */
  against: string;
  /** set when only the journal's own keys could be used, or the journal names several services: why that proves little */
  warning?: string;
  /** what the live check trusts, in words (absent with pinned keys or a saved JWKS) */
  trust?: string;
}

/**
 * Verifies a journal's receipts against the service's keys: the live JWKS of the origin of each
 * line's base_url (default), a saved JWKS (`jwks`), or the journal's keys narrowed to pinned ids
 * (`pin`); `offline` (or a service that does not answer) leaves only the journal's own keys, and the
 * answer then carries a warning saying so.
 */
export async function checkJournal(text: string, o: { jwks?: string; pin?: string[]; offline?: boolean }): Promise<JournalCheck> {
  let keysFor: ((e: { base_url?: string }) => Jwks | undefined) | undefined;
  let against: string;
  let trust: string | undefined;
  const unreachable: string[] = [];
  if (o.jwks) {
    let jwks: Jwks;
    try {
      jwks = await loadJwks(o.jwks);
    } catch (err) {
      throw new BuyCliError(`--jwks ${o.jwks}: ${(err as Error).message}`);
    }
    keysFor = () => jwks;
    against = `the JWKS ${o.jwks}`;
  } else if (o.pin?.length) {
    against = `the journal's keys pinned by id (${o.pin.join(', ')})`;
  } else if (o.offline) {
    against = 'the keys recorded in the journal only';
  } else {
    const origins = [...new Set(parseJournal(text).entries.map((e) => e.base_url).filter((b): b is string => typeof b === 'string').map((b) => new URL(b).origin))];
    const live = new Map<string, Jwks>();
    for (const origin of origins) {
      try {
        live.set(origin, await loadJwks(`${origin}/.well-known/jwks.json`));
      } catch (err) {
        const cause = (err as Error).cause as Error | undefined;
        unreachable.push(`${origin}/.well-known/jwks.json could not be read (${cause?.message ?? (err as Error).message})`);
      }
    }
    keysFor = (e) => live.get(e.base_url ? new URL(e.base_url).origin : ''); // undefined: the journal's own keys
    against = unreachable.length
      ? "the service's live JWKS where it answered, otherwise only the keys recorded in the journal"
      : `the service's live JWKS (${origins.map((x) => `${x}/.well-known/jwks.json`).join(', ') || 'no service named in the journal'})`;
    trust = "the live check trusts whatever keys the host each line's base_url names serves now, as it serves them; for evidence, pin the service's keys (--pin KID) or give its saved JWKS (--jwks)";
  }
  const report = verifyJournal(text, { ...(keysFor ? { keysFor } : {}), ...(o.pin?.length ? { pinned: o.pin } : {}) });
  const warnings: string[] = [];
  if (report.origins.length > 1 && !o.jwks && !o.pin?.length)
    warnings.push(
      `the journal names ${report.origins.length} services (${report.origins.join(', ')}): each line was checked against the keys of the host its own base_url names, so a line pointing at another host is only as good as that host. If you bought from one service, a line naming another is suspect: check with that service's keys pinned (--pin KID) or its saved JWKS (--jwks)`,
    );
  if (o.offline || unreachable.length)
    warnings.push(
      `checked only against keys recorded in the journal itself${unreachable.length ? `: ${unreachable.join('; ')}` : ''}. That shows the receipts match the journal's own keys, not that the service signed them: a journal rewritten with a key of its own passes this check. Run it where the service answers, give its JWKS (--jwks), or pin its key (--pin KID)`,
    );
  return { report, against, ...(trust ? { trust } : {}), ...(warnings.length ? { warning: warnings.join('. Also: ') } : {}) };
}

export async function runReceiptsVerify(file: string, o: { jwks?: string; pin?: string[]; offline?: boolean; json?: boolean }, io: BuyerIo): Promise<void> {
  const { report, against, warning, trust } = await checkJournal(await readJournal(file), o);
  if (o.json) io.stdout(JSON.stringify({ ...report, against, ...(trust ? { trust } : {}), ...(warning ? { warning } : {}) }));
  if (trust && !o.json) io.stderr(`note: ${trust}`);
  for (const bad of report.invalid) io.stderr(`${file}:${bad.line}: ${bad.kind} ${bad.id} NOT verified: ${bad.reason}`);
  for (const n of report.unreadable) io.stderr(`${file}:${n}: not a JSON line`);
  if (warning) io.stderr(`warning: ${warning}`);
  const summary = `${plural(report.verified, 'receipt')} verified (${plural(report.drawsPaid, 'paid draw')}, ${report.spent} EUR) against ${against}; ${report.invalid.length} not verified; ${plural(report.recordedFailures, 'refused receipt')} recorded as failures`;
  if (!o.json) io.stdout(summary);
  if (report.invalid.length || report.unreadable.length) throw new BuyCliError(`${file}: ${plural(report.invalid.length, 'line')} did not verify${report.unreadable.length ? `, ${plural(report.unreadable.length, 'unreadable line')}` : ''}`);
}

export async function runReceiptsReconcile(file: string, o: { baseUrl?: string; tokenFile?: string; since?: string; json?: boolean }, io: BuyerIo): Promise<void> {
  const text = await readJournal(file);
  const bases = [...new Set(parseJournal(text).entries.map((e) => e.base_url).filter((b): b is string => typeof b === 'string'))];
  const baseUrl = o.baseUrl ?? (bases.length === 1 ? bases[0]! : undefined);
  if (!baseUrl) throw new BuyCliError(bases.length ? `${file} holds lines of ${bases.length} services (${bases.join(', ')}): name one with --base-url` : `${file} names no service: give --base-url`);
  const since = o.since === undefined ? undefined : Date.parse(o.since);
  if (since !== undefined && Number.isNaN(since)) throw new BuyCliError(`--since must be an ISO 8601 instant, e.g. 2026-01-01T00:00:00Z; got ${JSON.stringify(o.since)}`);
  const src = await readToken(io.env, o.tokenFile);
  if (!src.token) throw new BuyCliError(`reconcile reads the statement of a balance: set ${TOKEN_ENV} or give --token-file FILE`);
  const { client } = await clientFor({ baseUrl, ...(o.tokenFile ? { tokenFile: o.tokenFile } : {}) }, io, {}, src);
  const statement: StatementLine[] = [];
  for await (const line of client.statement({ limit: 1000 })) statement.push(line);
  const r = reconcileJournal(text, statement, { baseUrl: client.baseUrl, tokenHint: tokenHintOf(src.token), ...(since !== undefined ? { since } : {}) });
  if (o.json) io.stdout(JSON.stringify(r));
  for (const d of r.differences) io.stderr(`${d.line ? `${file}:${d.line}` : 'statement'}: ${d.what}`);
  for (const c of r.corrections) io.stderr(`note: the operator's ${c.kind} ${c.id} (${c.amount} EUR at ${c.at}${c.reason ? `: ${c.reason}` : ''}) is in the statement; no journal holds corrections`);
  if (r.otherServices.length)
    io.stderr(
      `note: ${plural(r.otherServices.length, 'other service')} named in the journal (${r.otherServices.join(', ')}): their lines are not compared with this statement. If you bought only from ${client.origin}, such a line is suspect: \`lds receipts verify --pin KID\` checks every line with this service's keys`,
    );
  const summary = `${plural(r.matched, 'line')} of balance ${tokenHintOf(src.token)} match the service's statement${r.from ? ` since ${r.from}` : ''}; ${plural(r.differences.length, 'difference')}${r.otherBalances ? `; ${plural(r.otherBalances, 'journal line')} of other balances or services left out` : ''}`;
  if (!o.json) io.stdout(summary);
  if (r.differences.length) throw new BuyCliError(`${file}: ${plural(r.differences.length, 'difference')} with the service's statement (listed above)`);
}
