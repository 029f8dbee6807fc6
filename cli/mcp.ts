// `lds mcp`: a stdio MCP server for agent hosts, over the client package (lds-catalogue-client), so an
// agent buys with the person's controls between the model and the money:
//   - the balance token and the spending policy come from this process's configuration (flags,
//     environment, a 0600 token file), never from a tool argument (the input schemas are strict: an
//     unknown argument such as balance_token is refused), and never appear in a tool result, a log
//     line or an error (the client never puts the token in one; the tests look for it everywhere);
//   - every purchase goes through LdsClient.pay: the per-draw cap and the day budget (counted in the
//     shared receipts journal, under its lock, so concurrent `lds buy` runs and other MCP servers
//     count too) refuse before anything is sent; a draw above the approval threshold is put to the
//     person through the host (MCP elicitation) when the host can ask, and otherwise nothing is paid
//     and the result says so and how the person can approve;
//   - every receipt is verified against the service's JWKS and journaled with the payment;
//   - the agent cannot add money: no top-up tool (the person tops up with `lds topup`).
// Standard output is the MCP channel: everything else goes to standard error.
import { resolve } from 'node:path';
import * as z from 'zod';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { DRAW_BOUNDS, LdsClient, LdsError, PolicyRefusal, STATEMENT_PAGE, formatCents, parseAmountCents, type DrawBounds, type Quote } from 'lds-catalogue-client';
import { BuyCliError, checkBaseUrl, defaultJournal, readToken, shortId } from './buy.ts';
import { checkJournal } from './receipts.ts';
import { TOKEN_ENV } from './topup.ts';

export interface McpCliOptions {
  baseUrl: string;
  tokenFile?: string;
  max?: string;
  maxPerDay?: string;
  approveAbove?: string;
  journal?: string;
}

/** Quotes this server made, by id, so buy_draw pays exactly the quote the model was shown. */
const QUOTES_KEPT = 100;

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** One argument for a POSIX shell: as is when it holds only safe characters, else in single quotes. */
export function shellQuote(arg: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(arg) ? arg : `'${arg.replace(/'/g, `'\\''`)}'`;
}

/**
 * The `lds buy` a person runs to approve a quote themselves, as an argv and as one shell line with
 * every argument quoted: the query and unit references come from the model (or a prompt injected
 * into it) and from the service, so none may be read by the shell as code, nor as another option
 * (each value is given in the --flag=value form).
 */
export function approvalCommand(baseUrl: string, quote: Pick<Quote, 'product_id' | 'units' | 'query' | 'limit'>, max: string): { argv: string[]; line: string } {
  const argv = ['lds', 'buy', `--base-url=${baseUrl}`, `--product=${quote.product_id}`];
  if (quote.units) argv.push(...quote.units.map((u) => `--unit=${u}`));
  else argv.push(`--query=${quote.query ?? ''}`, ...(quote.limit !== undefined ? [`--limit=${quote.limit}`] : []));
  argv.push(`--max=${max}`);
  return { argv, line: argv.map(shellQuote).join(' ') };
}

/** The bounds of the service's draw requests, as its OpenAPI document states them. */
type ToolBounds = DrawBounds & { productId: number; unitRef: number; quoteId: number };
/** Assumed only when the service's document cannot be read at start (the service checks its own anyway). */
const ASSUMED_BOUNDS: ToolBounds = { ...DRAW_BOUNDS, defaultLimit: 10, productId: 64, unitRef: 200, quoteId: 512 };

const result = (text: string, structured: Record<string, unknown>, isError = false): CallToolResult => ({
  content: [{ type: 'text', text }],
  structuredContent: structured,
  ...(isError ? { isError: true } : {}),
});

/** A refusal or failure as a tool error: the client's message (which never holds the token). */
const failure = (err: unknown): CallToolResult => {
  if (err instanceof PolicyRefusal) return result(err.message, { status: 'refused', limit: err.limit, limit_amount: err.limitAmount, asked: err.asked, paid: false }, true);
  if (err instanceof LdsError || err instanceof TypeError) return result(err.message, { status: 'error', error: err.name, message: err.message }, true);
  throw err;
};

/** A draw request's fields, bounded as the service bounds them (its OpenAPI document). */
const drawRequestOf = (b: ToolBounds) => ({
  product_id: z.string().min(1).max(b.productId).describe('the product, e.g. svc-agriculture-eu (find_products lists them)'),
  query: z.string().min(1).max(b.maxQueryChars).optional().describe(`full-text query selecting the units (with limit), at most ${b.maxQueryChars} characters`),
  limit: z.number().int().min(1).max(b.maxLimit).optional().describe(`most units the query draws (1 to ${b.maxLimit}, default ${b.defaultLimit})`),
  units: z.array(z.string().min(1).max(b.unitRef)).min(1).max(b.maxUnitItems).optional().describe(`unit references, instead of a query (1 to ${b.maxUnits} distinct)`),
});

export async function runMcp(o: McpCliOptions, io: { env: NodeJS.ProcessEnv; stderr: (line: string) => void }): Promise<void> {
  checkBaseUrl(o.baseUrl);
  for (const [flag, env, v] of [['--max', 'LDS_MAX_PER_DRAW', o.max], ['--max-per-day', 'LDS_MAX_PER_DAY', o.maxPerDay]] as const)
    if (v === undefined) throw new BuyCliError(`${flag} (or ${env}) is required: the most ${flag === '--max' ? 'one draw' : 'the draws of any 24 hours'} may cost, e.g. ${flag === '--max' ? '0.50' : '2.00'}; an agent gets no spending without a limit`);
  for (const [flag, v] of [['--max', o.max], ['--max-per-day', o.maxPerDay], ['--approve-above', o.approveAbove]] as const)
    if (v !== undefined && parseAmountCents(v) === null) throw new BuyCliError(`${flag} must be an amount in EUR with at most two decimals, e.g. 0.50; got ${JSON.stringify(v)}`);
  // Shown to the model and the person as the service writes amounts ("0.50", not "0.5").
  const eur = (v: string | undefined) => (v === undefined ? undefined : formatCents(parseAmountCents(v)!));
  o = { ...o, max: eur(o.max), maxPerDay: eur(o.maxPerDay), approveAbove: eur(o.approveAbove) };
  const src = await readToken(io.env, o.tokenFile);
  const journal = resolve(o.journal ?? defaultJournal(io.env));
  const log = (line: string) => io.stderr(`[lds mcp] ${line}`);

  const server = new McpServer({ name: 'lds-buyer', version: '1.0.0' }, { capabilities: { tools: {} }, instructions: `Buys draws of EU legal data from ${o.baseUrl} on the person's prepaid balance, within their spending policy: at most ${o.max} EUR a draw and ${o.maxPerDay} EUR a day${o.approveAbove ? `; draws above ${o.approveAbove} EUR need the person's approval` : ''}. Quote first (quote_draw), then buy the quote (buy_draw with its quote_id).` });
  /** Whether the person approves `quote` (the policy asks only above --approve-above). */
  const approve = async (quote: Quote): Promise<boolean> => {
    if (!server.server.getClientCapabilities()?.elicitation) return false;
    const answer = await server.server.elicitInput({
      message: `Pay ${quote.amount} ${quote.currency} from your LDS balance for ${plural(quote.unit_count, 'unit')} of ${quote.product_id} (quote ${shortId(quote.quote_id)})? It is above your approval threshold of ${o.approveAbove} EUR.`,
      requestedSchema: { type: 'object', properties: { approve: { type: 'boolean', title: 'Pay', description: `Pay ${quote.amount} ${quote.currency}` } }, required: ['approve'] },
    });
    return answer.action === 'accept' && answer.content?.approve === true;
  };
  const client = await LdsClient.create({
    baseUrl: o.baseUrl,
    ...(src.token ? { token: src.token } : {}),
    journal,
    policy: { maxPerDraw: o.max, maxPerDay: o.maxPerDay, ...(o.approveAbove ? { approveAbove: o.approveAbove, approve } : {}) },
    onProgress: log,
  });
  // Every tool bound is the service's own: read from its OpenAPI document once, at start.
  let bounds: ToolBounds;
  try {
    bounds = await client.drawBounds();
  } catch (err) {
    bounds = ASSUMED_BOUNDS;
    log(`the service's bounds could not be read (${(err as Error).message}); the tools assume the published defaults (limit 1 to ${bounds.maxLimit}, query at most ${bounds.maxQueryChars} characters) and the service checks its own`);
  }
  const drawRequest = drawRequestOf(bounds);
  const noToken = () => result(`no balance token is configured for this MCP server: the person sets ${TOKEN_ENV} or --token-file in the agent host's configuration (it is never a tool argument); nothing was paid`, { status: 'error', error: 'no-token', paid: false }, true);

  const quotes = new Map<string, Quote>();
  /** Keeps a quote the service made for buy_draw: in memory, and in the journal for any `lds mcp` sharing it (a restarted one too). */
  const keep = async (q: Quote) => {
    quotes.set(q.quote_id, q);
    if (quotes.size > QUOTES_KEPT) quotes.delete(quotes.keys().next().value!);
    const { pay_with: _p, how_to_pay: _h, topup_url: _t, breakdown: _b, ...kept } = q;
    await client.journal.append({ kind: 'quote', base_url: client.baseUrl, quote_id: q.quote_id, quote: kept });
  };
  /** A quote made by this or another `lds mcp` process for this service, from memory or the shared journal. */
  const known = async (id: string): Promise<Quote | undefined> => {
    if (quotes.has(id)) return quotes.get(id);
    await client.journal.refresh();
    const entries = client.journal.entries;
    for (let i = entries.length - 1; i >= 0; i--) if (entries[i]!.kind === 'quote' && entries[i]!.quote_id === id && entries[i]!.base_url === client.baseUrl) return entries[i]!.quote as Quote;
    return undefined;
  };

  server.registerTool(
    'find_products',
    {
      description: 'Find data products in the catalogue: each with its id, title, description, live unit count, price per unit drawn and an example query. Free.',
      inputSchema: z.object({ text: z.string().max(200).optional().describe('words every product found must contain (title, description, id, tag); none: all products'), limit: z.number().int().min(1).max(50).optional() }).strict(),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ text, limit }) => {
      try {
        const catalogue = await client.catalogue();
        const words = (text ?? '').toLowerCase().split(/\s+/).filter(Boolean);
        const found = catalogue.products
          .filter((p) => words.every((w) => `${p.product_id} ${p.title} ${p.description} ${p.tag} ${p.sectoral_ds} ${(p.keywords ?? []).join(' ')}`.toLowerCase().includes(w)))
          .slice(0, limit ?? 20)
          .map((p) => ({ product_id: p.product_id, title: p.title, description: p.description, live_unit_count: p.live_unit_count, draw_unit_price: p.pricing.draw_unit_price, draw_minimum_charge: p.pricing.draw_minimum_charge, currency: p.pricing.currency, health: p._health.rollup, example_query: p.example_query.query }));
        return result(found.length ? found.map((p) => `${p.product_id}: ${p.title} (${plural(p.live_unit_count, 'unit')}, ${p.draw_unit_price} EUR a unit)`).join('\n') : 'no product matches', { products: found, catalogue_version: catalogue.version });
      } catch (err) {
        return failure(err);
      }
    },
  );

  server.registerTool(
    'quote_draw',
    {
      description: "Quote a draw: how many units, what it costs and until when the quote holds; nothing is paid. Give a query (and limit) or unit references. The answer says whether the person's policy lets buy_draw pay it.",
      inputSchema: z.object(drawRequest).strict(),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async (req) => {
      if (!req.query === !req.units) return result('give exactly one of query and units', { status: 'error', error: 'bad-arguments' }, true);
      try {
        const q = await client.quote(req);
        await keep(q);
        const cents = parseAmountCents(q.amount)!;
        const policy = cents > parseAmountCents(o.max!)! ? `over the per-draw limit of ${o.max} EUR: buy_draw will refuse it` : o.approveAbove && cents > parseAmountCents(o.approveAbove)! ? `above the approval threshold of ${o.approveAbove} EUR: the person must approve it` : 'within the per-draw limit';
        return result(`quote ${q.quote_id}: ${plural(q.unit_count, 'unit')} of ${q.product_id} for ${q.amount} ${q.currency}, valid until ${q.expires_at}; ${policy}`, { quote_id: q.quote_id, product_id: q.product_id, unit_count: q.unit_count, amount: q.amount, currency: q.currency, expires_at: q.expires_at, resolved_units: q.resolved_units, policy });
      } catch (err) {
        return failure(err);
      }
    },
  );

  server.registerTool(
    'buy_draw',
    {
      description: `Buy a draw from the prepaid balance, within the person's spending policy (at most ${o.max} EUR a draw, ${o.maxPerDay} EUR a day${o.approveAbove ? `, approval above ${o.approveAbove} EUR` : ''}). Give the quote_id of a quote_draw answer (preferred: pays exactly that quote, until it expires; quotes are kept in the person's receipts journal, so one made before this server restarted can still be bought), or the draw request itself. Returns the units, their attribution and the verified receipt.`,
      inputSchema: z.object({ quote_id: z.string().min(1).max(bounds.quoteId).optional().describe('a quote_id from quote_draw'), ...drawRequest, product_id: drawRequest.product_id.optional() }).strict(),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true },
    },
    async (req) => {
      if (!client.hasToken) return noToken();
      let quote: Quote;
      try {
        if (req.quote_id) {
          const kept = await known(req.quote_id);
          if (!kept) return result(`quote ${shortId(req.quote_id)} is not one quote_draw made for this service (in this server or another sharing its journal): ask quote_draw for a quote, then buy it`, { status: 'error', error: 'unknown-quote', paid: false }, true);
          quote = kept;
        } else {
          if (!req.product_id || !req.query === !req.units) return result('give a quote_id, or product_id with exactly one of query and units', { status: 'error', error: 'bad-arguments', paid: false }, true);
          quote = await client.quote({ product_id: req.product_id, ...(req.query ? { query: req.query } : {}), ...(req.limit ? { limit: req.limit } : {}), ...(req.units ? { units: req.units } : {}) });
        }
        const paid = await client.pay(quote);
        const r = paid.receipt;
        log(`paid ${r.amount} EUR for ${plural(r.unit_count, 'unit')} of ${r.product_id} (draw ${r.draw_id}), receipt verified and journaled`);
        return result(`paid ${r.amount} ${r.currency} for ${plural(r.unit_count, 'unit')} of ${r.product_id} (draw ${r.draw_id}); receipt verified (key ${r.signature.kid}); balance ${r.balance_after} ${r.currency}`, { status: 'paid', draw_id: r.draw_id, amount: r.amount, currency: r.currency, unit_count: r.unit_count, balance_after: r.balance_after, receipt_verified: true, receipt: r, units: paid.units, attribution: paid.attribution });
      } catch (err) {
        if (err instanceof PolicyRefusal && err.limit === 'approval') {
          const command = approvalCommand(o.baseUrl, quote!, err.asked);
          const how = `ask the person to approve: a host that supports MCP elicitation asks them when buy_draw is called; otherwise they can buy it themselves (the command in approve_command, every argument quoted for a POSIX shell: ${command.line}) or raise --approve-above in this server's configuration`;
          log(`approval needed: ${err.asked} EUR for quote ${shortId(quote!.quote_id)} (above ${err.limitAmount} EUR); nothing paid`);
          return result(`not paid: ${err.asked} EUR is above the approval threshold of ${err.limitAmount} EUR and the person did not approve it; ${how}`, { status: 'approval_required', quote_id: quote!.quote_id, amount: err.asked, approve_above: err.limitAmount, paid: false, how_to_approve: how, approve_command: command.line, approve_argv: command.argv });
        }
        if (err instanceof PolicyRefusal) log(`refused by the policy: ${err.message}`);
        return failure(err);
      }
    },
  );

  server.registerTool(
    'get_balance',
    { description: 'The prepaid balance left to spend (EUR).', inputSchema: z.object({}).strict(), annotations: { readOnlyHint: true, openWorldHint: true } },
    async () => {
      if (!client.hasToken) return noToken();
      try {
        const b = await client.balance();
        return result(`${b.balance} ${b.currency}`, b);
      } catch (err) {
        return failure(err);
      }
    },
  );

  server.registerTool(
    'get_statement',
    {
      description: "The balance's statement, newest first: top-ups, draws, refunds and corrections with their amounts and the balance after each.",
      inputSchema: z.object({ limit: z.number().int().min(1).max(STATEMENT_PAGE.maxLines).optional().describe(`lines, newest first (1 to ${STATEMENT_PAGE.maxLines}, default 20)`) }).strict(),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async ({ limit }) => {
      if (!client.hasToken) return noToken();
      try {
        const lines = [];
        for await (const line of client.statement({ limit: limit ?? 20 })) {
          lines.push(line);
          if (lines.length >= (limit ?? 20)) break;
        }
        return result(lines.map((l) => `${l.at} ${l.kind} ${l.amount} -> ${l.balance_after} ${l.id}`).join('\n') || 'no lines', { statement: lines });
      } catch (err) {
        return failure(err);
      }
    },
  );

  server.registerTool(
    'verify_journal',
    {
      description: "Re-verify every receipt in the person's receipts journal against the service's published keys, and say what was spent.",
      inputSchema: z.object({}).strict(),
      annotations: { readOnlyHint: true, openWorldHint: true },
    },
    async () => {
      try {
        const { readFile } = await import('node:fs/promises');
        const { report, against, warning, trust } = await checkJournal(await readFile(journal, 'utf8'), {});
        const text = `${plural(report.verified, 'receipt')} verified against ${against}; ${report.invalid.length} not verified (${report.invalid.map((b) => `line ${b.line}: ${b.reason}`).join('; ') || 'none'}); ${plural(report.drawsPaid, 'paid draw')}, ${report.spent} EUR${trust ? ` (${trust})` : ''}${warning ? `. Warning: ${warning}` : ''}`;
        return result(text, { verified: report.verified, invalid: report.invalid, draws_paid: report.drawsPaid, spent: report.spent, against, ...(trust ? { trust } : {}), ...(warning ? { warning } : {}) }, report.invalid.length > 0);
      } catch (err) {
        return failure(err);
      }
    },
  );

  const transport = new StdioServerTransport();
  const closed = new Promise<void>((done) => {
    transport.onclose = () => done();
    process.stdin.once('end', () => done());
  });
  await server.connect(transport);
  log(`serving ${o.baseUrl} over stdio; journal ${journal}; ${src.token ? `balance token from ${src.from}` : 'no balance token (quotes only)'}; policy: at most ${o.max} EUR a draw, ${o.maxPerDay} EUR a day${o.approveAbove ? `, approval above ${o.approveAbove} EUR` : ''}`);
  await closed;
  await client.close();
}
