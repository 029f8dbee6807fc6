#!/usr/bin/env -S npx tsx
// The one command-line entry (`npx lds …`): check, build, diff, publish, preview, serve, topup, the
// buyer's commands (buy, balance, statement, rotate, receipts verify and reconcile, mcp), ledger,
// receipt, admin, licence. Each has --help.
import { Argument, Command, Option } from 'commander';
import { realpathSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { dataPaths } from './payments/config.ts';
import { CatalogErrors } from './generator/errors.ts';
import { DEFAULT_BASE_URL, DEFAULT_SPT, TOKEN_ENV, TopupCliError } from './cli/topup.ts';
import { DEFAULT_KEEP } from './generator/publish.ts';

export const program = new Command()
  .name('lds')
  .description('Data-product catalogue and metered draw service for EU legal data')
  .showHelpAfterError()
  .version(await versionText(), '-V, --version', 'print the package version and the catalogue and unit store format versions');

/** `lds --version`: this package's version and the formats it writes and reads. */
async function versionText(): Promise<string> {
  const { readFile } = await import('node:fs/promises');
  const { CATALOGUE_FORMAT } = await import('./contract/catalogue.ts');
  const { STORE_FORMAT } = await import('./contract/store-format.ts');
  // cli.ts sits beside package.json; its compiled form (npm start) one folder down, in build/.
  let pkg: { name: string; version: string } | undefined;
  for (const rel of ['./package.json', '../package.json']) {
    try {
      pkg = JSON.parse(await readFile(new URL(rel, import.meta.url), 'utf8'));
      if (pkg?.version) break;
    } catch {
      // try the next one
    }
  }
  return `lds ${pkg?.version ?? 'unknown'} (${pkg?.name ?? 'lds'}); catalogue format ${CATALOGUE_FORMAT} (API /v${CATALOGUE_FORMAT}); unit store format ${STORE_FORMAT}`;
}

const DEFAULT_ORIGIN = 'http://127.0.0.1:8080';

/**
 * The API base of every buyer command (topup, buy, balance, statement, rotate, mcp): --base-url,
 * else LDS_BASE_URL, as the client package, `lds mcp` and `lds build` read it, else the local service.
 */
const buyerBaseUrl = () => process.env.LDS_BASE_URL || DEFAULT_BASE_URL;
const BUYER_BASE_URL_HELP = "the service's API base (also LDS_BASE_URL)";

/**
 * Commander checks required options before unknown ones, so `lds buy --prodcut x` said "required
 * option '--product' not specified" instead of naming the typo. For every command, the required
 * options are checked just before the action instead (a preAction hook runs after commander's
 * unknown-option check, which suggests the nearest option: "unknown option '--prodcut' (Did you
 * mean --product?)"). Call it once every command is defined.
 */
function reportUnknownOptionsFirst(root: Command): void {
  const required = new Map<Command, Option[]>();
  const walk = (c: Command) => {
    const mandatory = c.options.filter((o) => o.mandatory);
    for (const o of mandatory) o.makeOptionMandatory(false);
    if (mandatory.length) required.set(c, mandatory);
    c.commands.forEach(walk);
  };
  walk(root);
  root.hook('preAction', (_root, action) => {
    for (const o of required.get(action) ?? []) if (action.getOptionValue(o.attributeName()) === undefined) action.error(`error: required option '${o.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
  });
}

/** A default path as the user would type it: relative inside the checkout, absolute elsewhere. */
function shown(path: string): string {
  const rel = relative(process.cwd(), path);
  return rel === '' || rel.startsWith('..') ? path : rel;
}

program
  .command('check')
  .description('validate catalog-src/ (every file against its JSON Schema and across files) and report every error and warning in one run, each with its file, line and column')
  .option('--src <dir>', 'publisher definitions', 'catalog-src')
  .addOption(new Option('--format <format>', 'text (file:line:col: …), github (workflow commands: annotations on a pull request) or json (one document)').choices(['text', 'json', 'github']).default('text'))
  .option('--fix', 'write the licence text hashes (quote_sha256) the check expects into the source files, say what changed, then check again')
  .addHelpText('after', `
Each finding: <path>:<line>:<col>: error|warning: <file>#<json-pointer>: <reason>, then a summary line
naming the folder. Errors stop a build; warnings (a licence nothing uses) do not.

Exit status: 0 no errors (warnings allowed), 1 errors, 2 could not run (no such folder, no schemas).

Examples:
  npx lds check
  npx lds check --src my-catalog --format github
  npx lds check --fix`)
  .action(async (o: { src: string; format: 'text' | 'json' | 'github'; fix?: boolean }) => {
    const { runCheck } = await import('./cli/check.ts');
    process.exitCode = await runCheck(o, { stdout: (l) => console.log(l), stderr: (l) => console.error(l) });
  });

const licence = program.command('licence').description('licence texts: compute what a ruling must say about them');
licence
  .command('hash')
  .description('print the SHA-256 of a licence text: the value of quote_sha256 in a ruling that quotes it (the same digest `check` computes)')
  .argument('<file>', 'the licence text, e.g. catalog-src/licences/texts/cc-by-4.0-summary.txt')
  .action(async (file: string) => {
    const { licenceHash } = await import('./cli/check.ts');
    const digest = await licenceHash(file);
    if (digest === null) {
      console.error(`error: ${file}: no such file`);
      process.exitCode = 2;
    } else console.log(digest);
  });

program
  .command('build')
  .description('build dist/ (catalogue, DCAT, agent card, machine index, OpenAPI, docs, pages, hosting config) and the private unit store')
  .option('--src <dir>', 'publisher definitions', 'catalog-src')
  .option('--out <dir>', 'output folder, replaced only when the build succeeds (also LDS_DIST_DIR)', shown(dataPaths().distDir))
  .option('--store-root <dir>', 'unit store root, private, never published (also LDS_STORE_DIR, LDS_VAR_DIR)', shown(dataPaths().storeRoot))
  .option('--local [origin]', `point every service address at a local origin (default ${DEFAULT_ORIGIN})`)
  .option('--base-url <url>', 'override base_url (also LDS_BASE_URL); must end in /v1')
  .option('--mcp-url <url>', 'override mcp_url (also LDS_MCP_URL)')
  .option('--docs-url <url>', 'override docs_url (also LDS_DOCS_URL)')
  .option('--publisher-url <url>', 'override publisher_url (also LDS_PUBLISHER_URL)')
  .option('--skip-bad-records', 'skip malformed input records (counted in the report) instead of failing the build')
  .option('--no-store', 'do not ingest data: counts stay zero and _health says why')
  .addOption(new Option('--source-date-epoch <seconds>', 'build clock for reproducible output (also SOURCE_DATE_EPOCH)').argParser((v) => Number(v)))
  .addHelpText('after', `\nThe .br and .gz variants of each document are cached by content in $XDG_CACHE_HOME/lds/compress (~/.cache/lds/compress): a rebuild compresses only what changed. LDS_BUILD_CACHE=<dir> puts the cache elsewhere, LDS_BUILD_CACHE=off builds without it.\n\nExit status: 0 built; 1 catalog-src has errors (each reported as \`lds check\` reports it) or the build failed, and the previous dist/ stays served; 2 could not run (no such folder, no schemas), as for \`lds check\`.`)
  .action(async (o) => {
    const { build } = await import('./generator/build.ts');
    const addresses: Record<string, string> = {};
    for (const [flag, key] of [['baseUrl', 'base_url'], ['mcpUrl', 'mcp_url'], ['docsUrl', 'docs_url'], ['publisherUrl', 'publisher_url']] as const)
      if (o[flag]) addresses[key] = o[flag];
    const started = Date.now();
    const result = await build({
      srcDir: o.src,
      outDir: o.out,
      storeRoot: o.storeRoot,
      addresses,
      localOrigin: o.local ? (o.local === true ? DEFAULT_ORIGIN : o.local) : undefined,
      noStore: o.store === false,
      skipBadRecords: !!o.skipBadRecords,
      sourceDateEpoch: o.sourceDateEpoch,
      progress: (msg) => console.error(`[build] ${msg}`),
    });
    console.log(result.report);
    console.log(`built ${result.version} (${result.files} files in ${result.outDir}; store ${result.storeVersion ?? 'not built'}) in ${((Date.now() - started) / 1000).toFixed(1)}s`);
  });

program
  .command('diff')
  .description('what a new catalogue changes for buyers: products added, removed or renamed, prices, unit and row counts, licences, sources held or released, addresses, version')
  .argument('<old>', 'the published catalogue: a built dist/ folder or a catalogue file (dist/v1/lds/_catalog, or one fetched from <base_url>/lds/_catalog)')
  .argument('<new>', 'the new catalogue: a built dist/ folder or a catalogue file')
  .addOption(new Option('--format <format>', 'markdown (for a pull-request comment) or json (one document)').choices(['markdown', 'json']).default('markdown'))
  .addHelpText('after', `\nExit status: 0 nothing a buyer sees changed (the version and build time alone do not count); 1 a buyer sees changes (CI can ask for a review label); 2 could not run (a missing or unreadable input, a bad option).\n\nExamples:\n  npx lds diff published-catalog.json dist\n  npx lds diff old-dist dist --format json > changes.json`)
  // A bad option is "could not run" (2), never "changed" (1): CI reads 1 as a change to review.
  .exitOverride((err) => process.exit(err.exitCode === 0 ? 0 : 2))
  .action(async (oldPath: string, newPath: string, o: { format: 'markdown' | 'json' }) => {
    const { runDiff } = await import('./cli/diff.ts');
    process.exitCode = await runDiff(oldPath, newPath, o, { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) });
  });

program
  .command('publish')
  .description('put a build on a web root as releases/<version>/, switch DIR/current to it atomically and run the reload command; --rollback switches back')
  .requiredOption('--to <dir>', 'the web root (a local or mounted folder): releases/, current and previous live there')
  .option('--from <dir>', 'the build to publish (also LDS_DIST_DIR)', shown(dataPaths().distDir))
  .option('--reload <command>', 'shell command that makes the web server load the new release, e.g. "nginx -s reload", "apachectl graceful", "caddy reload --config /etc/caddy/Caddyfile"')
  .addOption(new Option('--keep <n>', 'releases to keep; older ones are deleted (never the current or the previous one)').default(DEFAULT_KEEP).argParser((v) => Number(v)))
  .option('--server-dir <dir>', 'the web root as the web server sees it, when it mounts DIR elsewhere (written into the release pins)')
  .option('--rollback', 'switch current back to the release before the last switch (again: undo the rollback)')
  .addHelpText(
    'after',
    `
Point the web server at the release through current, read once per reload:
  nginx:  server { ...; include DIR/current/_nginx/release.conf; }
  Apache: <VirtualHost ...> Include DIR/current/_apache/release.conf </VirtualHost>
  Caddy:  example.org { import DIR/current/_caddy/release.caddy }

Examples:
  npx lds build && npx lds publish --to /srv/lds --reload "nginx -s reload"
  npx lds publish --to /srv/lds --rollback --reload "nginx -s reload"

Exit codes: 0 published (or already current: nothing to do); 1 refused or failed, nothing switched;
2 switched, but the reload command failed (the message says what the web server most likely serves).`,
  )
  .action(async (o: { to: string; from: string; reload?: string; keep: number; serverDir?: string; rollback?: boolean }) => {
    const { publish, rollback } = await import('./generator/publish.ts');
    const opts = { to: o.to, reload: o.reload, serverDir: o.serverDir, progress: (msg: string) => console.error(`[publish] ${msg}`) };
    const result = o.rollback ? await rollback(opts) : await publish(o.from, { ...opts, keep: o.keep });
    console.log(result.summary);
  });

program
  .command('preview')
  .description('serve a build with nginx, Apache httpd or Caddy on a local port, as it will be hosted: writes a whole configuration for the server (pid file, logs, temporary files in a folder of its own) and runs it until Ctrl-C')
  .addArgument(new Argument('<server>', 'the web server').choices(['nginx', 'apache', 'caddy']))
  .option('--from <dir>', 'the build to serve (also LDS_DIST_DIR)', shown(dataPaths().distDir))
  .option('--port <n>', 'port to listen on', '8081')
  .option('--host <addr>', 'address to listen on', '127.0.0.1')
  .option('--dir <dir>', `folder for the server's configuration, pid file, logs and temporary files (default ${shown(join(dataPaths().varDir, 'preview'))}/<server>)`)
  .option('--no-start', 'only write and check the configuration, and print the command that runs it')
  .addHelpText(
    'after',
    `
The server is the one on PATH (or /usr/sbin; NGINX_BIN, APACHE_BIN, CADDY_BIN name another). It
serves the build by its real path, with the rules the build wrote (_nginx/lds.conf, _apache/lds.conf,
_caddy/lds.caddy); every other path answers 404. A build made while it runs is not shown: start it
again. As root, Apache's children run as www-data, which must be able to reach the build.

Examples:
  npm run build && npx lds preview nginx
  npx lds preview caddy --port 9000
  npx lds preview apache --no-start     # prints the command that runs the written configuration`,
  )
  .action(async (server: 'nginx' | 'apache' | 'caddy', o: { from: string; port: string; host: string; dir?: string; start: boolean }) => {
    const { runPreview } = await import('./cli/preview.ts');
    const stopRequested = new Promise<string>((resolveStop) => {
      for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => resolveStop(signal));
    });
    const dir = o.dir ?? join(dataPaths().varDir, 'preview', server);
    process.exitCode = await runPreview(server, { from: o.from, port: Number(o.port), host: o.host, dir, start: o.start }, { stdout: (l) => console.log(l), stderr: (l) => console.error(l), stopRequested });
  });

// Stopping: the server drains on SIGTERM and SIGINT (payments/serve.ts), so the signal must reach
// this process. `npm start` runs its script as `sh -c '<script>'` and forwards SIGTERM/SIGINT only
// to that shell; Debian's sh (dash) neither execs the last command of `-c` nor passes the signal
// on: it just dies, npm exits, and the server is orphaned and keeps answering. The tsx CLI made it
// worse: it runs the program in a second Node process behind a signal relay of its own. So the npm
// scripts `exec` node: `npm start` is `node scripts/ensure-build.mjs && exec node build/cli.js serve`
// (compiled JavaScript; the check exits before the server starts) and `npm run dev` is
// `exec node --import tsx cli.ts serve` (tsx compiles in this same process): `exec` replaces the
// shell and npm's one child is the server. Keep the `exec` when a script changes;
// test/service-stop.test.ts checks it through `npm start`.
program
  .command('serve')
  .description('serve dist/, the draw and balance API, MCP and A2A (builds first when dist/ or the store is missing, and rebuilds a local build made for another port or host)')
  .option('--port <n>', 'port (also PORT)', process.env.PORT || '8080')
  .option('--host <addr>', 'address to listen on (also HOST)', process.env.HOST || '127.0.0.1')
  .option('--rebuild', 'rebuild dist/ and the unit store before serving')
  .action(async (o: { port: string; host: string; rebuild?: boolean }) => {
    const { existsSync } = await import('node:fs');
    const { loadConfig } = await import('./payments/config.ts');
    const config = await loadConfig({ port: Number(o.port), host: o.host });
    const { distDir, storeRoot } = config;
    const host = o.host.includes(':') ? `[${o.host}]` : o.host;
    const origin = `http://${host}:${o.port}`;
    // A local build (npm run build, or an earlier start) names its origin in every address it
    // publishes; started on another port or host, it would send buyers there. Rebuild it for this one.
    const { readLocalBuild } = await import('./generator/local-build.ts');
    const local = await readLocalBuild(distDir);
    const missing = !existsSync(resolve(distDir, 'v1/lds/_catalog')) || !existsSync(resolve(storeRoot, 'CURRENT'));
    // Port 0 (any free port) is only known once listening: such a start serves dist/ as it is.
    const moved = !o.rebuild && !missing && local !== null && o.port !== '0' && local.local_origin !== origin;
    if (moved)
      console.error(`[serve] ${shown(distDir)} was built for ${local.local_origin} but this start listens on ${origin}: rebuilding it so every address (catalogue base_url, agent card, top-up link) names ${origin}`);
    // A fresh clone has neither: build them for the address we are about to listen on.
    if (o.rebuild || missing || moved) {
      const { build } = await import('./generator/build.ts');
      const result = await build({
        srcDir: local?.src ?? 'catalog-src',
        outDir: distDir,
        storeRoot,
        localOrigin: origin,
        progress: (msg) => console.error(`[build] ${msg}`),
      });
      console.error(`[build] ${result.version} ready`);
    }
    const { serveFromCli } = await import('./payments/serve.ts');
    await serveFromCli(config);
  });

program
  .command('topup')
  .description('fund a prepaid balance through MPP with the mppx client (402 challenge, credential, 200) and print the balance; a new balance also prints its token, once')
  .requiredOption('--amount <eur>', 'amount in EUR as a decimal string, e.g. 5.00 (at least the service\'s minimum)')
  .option('--token <token>', `add to this existing balance instead of opening a new one; "-" reads the token from standard input. Without --token, the balance in ${TOKEN_ENV} is credited when that is set. Prefer "-" or the variable: a token on the command line shows in shell history and ps`)
  .option('--spt <token>', 'Stripe Shared Payment Token that pays; the sandbox processor accepts any spt_… except spt_sandbox_decline (declined) and spt_sandbox_requires_action (needs customer action)', DEFAULT_SPT)
  .option('--base-url <url>', BUYER_BASE_URL_HELP, buyerBaseUrl())
  .option('--json', 'print the answer as one JSON object (balance_token only for a new balance)')
  .addHelpText('after', `\nExamples:\n  npx lds topup --amount 5.00\n  ${TOKEN_ENV}=lds_bal_… npx lds topup --amount 20.00\n  npx lds topup --amount 20.00 --token - < token.txt\n\nExits 1 with the service\'s reason when the top-up is refused (declined, below the minimum, unknown balance, …).`)
  .action(async (o: { amount: string; token?: string; spt: string; baseUrl: string; json?: boolean }) => {
    const { runTopup } = await import('./cli/topup.ts');
    await runTopup(o, { env: process.env, stdin: process.stdin, stdout: (l) => console.log(l), stderr: (l) => process.stderr.write(l) });
  });

// ---- the buyer's commands (cli/buy.ts over the client library, client/) ----
const buyerIo = () => ({ env: process.env, stdout: (l: string) => console.log(l), stderr: (l: string) => process.stderr.write(`${l}\n`) });
const TOKEN_HELP = `the balance token comes from ${TOKEN_ENV} or --token-file, never from the command line`;
const buyerOptions = (c: Command) =>
  c
    .option('--base-url <url>', BUYER_BASE_URL_HELP, buyerBaseUrl())
    .option('--token-file <file>', `file holding the balance token (mode 0600); ${TOKEN_ENV} takes precedence`)
    .option('--json', 'print the result as JSON on standard output');

buyerOptions(
  program
    .command('buy')
    .description(`quote a draw, check it against the spending policy, pay it from the balance (topping up first with --auto-topup), verify the receipt against the service's JWKS and record it in the receipts journal; ${TOKEN_HELP}`)
    .requiredOption('--product <product_id>', 'the product to draw from')
    .option('--query <text>', 'full-text query (with --limit)')
    .option('--unit <ref...>', 'unit references to draw (instead of --query)')
    .option('--limit <n>', 'most units a query draws')
    .requiredOption('--max <eur>', 'refuse, before paying, a draw that costs more than this, e.g. 0.50')
    .option('--max-per-day <eur>', 'refuse a draw that would take the paid draws of the last 24 hours (counted in the journal) above this')
    .option('--auto-topup <eur>', 'when the balance does not cover the draw, top up this much (and never more in one top-up) through MPP, then pay; without a token it opens a balance whose token is written to --token-file')
    .option('--spt <token>', 'Stripe Shared Payment Token for --auto-topup (sandbox: any spt_…)', DEFAULT_SPT)
    .option('--journal <file>', 'the receipts journal (NDJSON, appended, mode 0600); default $XDG_STATE_HOME/lds/receipts.ndjson')
    .option('--out <file>', 'write the units, attribution and receipt (the paid answer) to this JSON file'),
)
  .addHelpText('after', `\nExamples:\n  ${TOKEN_ENV}=lds_bal_… npx lds buy --product svc-language-eu --query court --limit 5 --max 0.50\n  npx lds buy --product svc-language-eu --unit REF1 REF2 --max 0.20 --auto-topup 5.00 --token-file ~/.config/lds/balance-token --out ~/units.json\n\nA refusal by the spending policy names the limit and the amount asked, pays nothing and exits 1.`)
  .action(async (o) => {
    const { runBuy } = await import('./cli/buy.ts');
    await runBuy(o, buyerIo());
  });
buyerOptions(program.command('balance').description(`print the balance; ${TOKEN_HELP}`)).action(async (o) => {
  const { runBalance } = await import('./cli/buy.ts');
  await runBalance(o, buyerIo());
});
buyerOptions(
  program
    .command('statement')
    .description(`print the whole statement, newest first (every page); ${TOKEN_HELP}`)
    .option('--csv', 'as CSV (the service\'s columns, one header line)')
    .option('--limit <n>', 'lines fetched per page (1 to 1000)', '100'),
).action(async (o) => {
  const { runStatement } = await import('./cli/buy.ts');
  await runStatement(o, buyerIo());
});
buyerOptions(
  program
    .command('rotate')
    .description(`replace the balance token with a new one (the old one stops working at once): written over --token-file, or printed once when the token came from ${TOKEN_ENV}; the journal records the change (token hints, never a token)`)
    .option('--journal <file>', 'the receipts journal to record the rotation in; default $XDG_STATE_HOME/lds/receipts.ndjson'),
).action(async (o) => {
  const { runRotate } = await import('./cli/buy.ts');
  await runRotate(o, buyerIo());
});
const receipts = program.command('receipts').description('the receipts journal of `lds buy`, `lds mcp` and the client package, checked against the service');
receipts
  .command('verify')
  .description("re-verify every receipt of a receipts journal against the service's live JWKS (or a saved --jwks, or the journal's keys pinned with --pin); says plainly when only the journal's own keys could be used; exits 1 naming each line that does not verify")
  .argument('<journal>', 'the NDJSON journal')
  .option('--jwks <url-or-file>', "check against this JWKS (a URL or a saved copy of /.well-known/jwks.json) instead of the live one of each journal line's service")
  .option('--pin <kid...>', "offline: trust only the journal's keys with these key ids (RFC 7638 thumbprints, the kid of the service's JWKS); receipts signed by any other key fail")
  .option('--offline', "check only against the keys recorded in the journal (proves nothing against a rewritten journal: say so)")
  .option('--json', 'print the report as JSON')
  .action(async (file: string, o: { jwks?: string; pin?: string[]; offline?: boolean; json?: boolean }) => {
    const { runReceiptsVerify } = await import('./cli/receipts.ts');
    await runReceiptsVerify(file, o, buyerIo());
  });
receipts
  .command('reconcile')
  .description(`compare the journal's draws and top-ups of one balance with the service's statement of that balance over the same period: each receipt has its statement line (same id and amount), each statement draw and top-up its journal line; each difference named, exit 1; ${TOKEN_HELP}. (The operator's receipts-against-ledger check is \`lds ledger reconcile\`.)`)
  .argument('<journal>', 'the NDJSON journal')
  .option('--base-url <url>', "the service's API base (default: the one base_url the journal names)")
  .option('--token-file <file>', `file holding the balance token (mode 0600); ${TOKEN_ENV} takes precedence`)
  .option('--since <instant>', "compare from this ISO 8601 instant (default: the balance's first journal line)")
  .option('--json', 'print the reconciliation as JSON')
  .action(async (file: string, o: { baseUrl?: string; tokenFile?: string; since?: string; json?: boolean }) => {
    const { runReceiptsReconcile } = await import('./cli/receipts.ts');
    await runReceiptsReconcile(file, o, buyerIo());
  });

program
  .command('mcp')
  .description(`a stdio MCP server for agent hosts (Claude Desktop and Code, VS Code, Cursor) over the client package: find products, quote, buy within the spending policy (above --approve-above: the person approves, or nothing is paid), balance, statement, verify the journal. The token and the policy come from this configuration, never from the model; ${TOKEN_HELP}`)
  .option('--base-url <url>', BUYER_BASE_URL_HELP, buyerBaseUrl())
  .option('--token-file <file>', `file holding the balance token (mode 0600); ${TOKEN_ENV} takes precedence`)
  .option('--max <eur>', 'required: refuse a draw that costs more than this (also LDS_MAX_PER_DRAW)', process.env.LDS_MAX_PER_DRAW)
  .option('--max-per-day <eur>', 'required: refuse a draw that would take the paid draws of the last 24 hours (counted in the journal, across processes) above this (also LDS_MAX_PER_DAY)', process.env.LDS_MAX_PER_DAY)
  .option('--approve-above <eur>', 'draws costing more than this need the person\'s approval: asked through the host (MCP elicitation) when it can, else nothing is paid and the result says how to approve (also LDS_APPROVE_ABOVE)', process.env.LDS_APPROVE_ABOVE)
  .option('--journal <file>', 'the receipts journal (also LDS_JOURNAL); default $XDG_STATE_HOME/lds/receipts.ndjson', process.env.LDS_JOURNAL)
  .addHelpText('after', `\nStandard output is the MCP channel; progress and errors go to standard error. An agent host starts it, e.g.:\n  {"command": "npx", "args": ["lds", "mcp", "--max", "0.50", "--max-per-day", "2.00", "--token-file", "/home/me/.lds-token"]}\n(docs/agents.md has the snippets for Claude Desktop, Claude Code, VS Code and Cursor.)`)
  .action(async (o) => {
    const { runMcp } = await import('./cli/mcp.ts');
    await runMcp(o, { env: process.env, stderr: (l: string) => process.stderr.write(`${l}\n`) });
  });

const ledger = program
  .command('ledger')
  .description('ledger operations, on the LevelDB ledger (LDS_LEDGER_DIR) or, when LDS_LEDGER_URL / --url is set, the PostgreSQL ledger; verify and export also work while the service runs');
const ledgerOptions = (c: Command) =>
  c
    .option('--dir <dir>', 'LevelDB ledger directory (also LDS_LEDGER_DIR, LDS_VAR_DIR)', shown(dataPaths().ledgerDir))
    .option('--url <url>', 'PostgreSQL ledger, postgres://user:password@host/db or several servers, postgres://user:password@h1:5432,h2:5432/db?target_session_attrs=read-write (also LDS_LEDGER_URL, which a typed --dir overrides); overrides --dir');
// A --dir typed on the command line names the ledger to work on: it wins over an LDS_LEDGER_URL left in
// the environment (which otherwise silently sent `verify --dir <missing>` to PostgreSQL and said "clean").
ledger.hook('preAction', (_ledger, action) => {
  if (action.getOptionValueSource('dir') === 'cli') action.setOptionValue('dirTyped', true);
});
/** The ledger a `ledger` command works on: --url, else a typed --dir, else LDS_LEDGER_URL, else the LevelDB directory. */
function ledgerAt(o: { dir: string; url?: string; dirTyped?: boolean }) {
  return { ledgerDir: resolve(o.dir), ledgerUrl: o.url ?? (o.dirTyped ? undefined : dataPaths().ledgerUrl) };
}

ledgerOptions(
  ledger
    .command('verify')
    .description('verify the whole ledger over one consistent snapshot: entries sum to zero, balances match, statements match, nothing debited or credited twice; exits 1 on any violation'),
).action(async (o: { dir: string; url?: string }) => {
  const { verifyLedgerAt, describeLedger } = await import('./payments/ledger/ops.ts');
  const { formatViolations } = await import('./payments/ledger/verify.ts');
  const at = ledgerAt(o);
  const violations = await verifyLedgerAt(at);
  if (violations.length) {
    console.error(formatViolations(violations));
    process.exitCode = 1;
  } else console.log(`ledger ${describeLedger(at)}: clean`);
});

ledgerOptions(
  ledger
    .command('export')
    .description('write the whole ledger (accounts, draws, entries, top-ups) as newline-delimited JSON, from one consistent snapshot; the same bytes from either backend')
    .option('--out <file>', 'write to this new file (mode 0600) instead of standard output; an existing file is never replaced, and a failed export leaves none'),
).action(async (o: { dir: string; url?: string; out?: string }) => {
  const { exportLedgerAt, exportLedgerToFile, describeLedger } = await import('./payments/ledger/ops.ts');
  const at = ledgerAt(o);
  if (o.out) {
    await exportLedgerToFile(at, o.out);
    console.error(`ledger ${describeLedger(at)}: exported to ${o.out}`);
    return;
  }
  await exportLedgerAt(at, (chunk) => (process.stdout.write(chunk) ? undefined : new Promise<void>((r) => process.stdout.once('drain', () => r()))));
});

ledgerOptions(
  ledger
    .command('import')
    .description('load a `ledger export` file into an empty ledger of either backend (e.g. move from LevelDB to PostgreSQL), then verify it; a damaged or truncated file imports nothing')
    .argument('<file>', 'the export file'),
).action(async (file: string, o: { dir: string; url?: string }) => {
  const { importLedgerAt, describeLedger } = await import('./payments/ledger/ops.ts');
  const { formatViolations } = await import('./payments/ledger/verify.ts');
  const at = ledgerAt(o);
  const violations = await importLedgerAt(at, file);
  if (violations.length) {
    console.error(`imported into ${describeLedger(at)}, but it does not verify:\n${formatViolations(violations)}`);
    process.exitCode = 1;
  } else console.log(`imported ${file} into ${describeLedger(at)}: verified clean`);
});

ledgerOptions(ledger.command('migrate').description('create or upgrade the PostgreSQL ledger schema (the service also does this at start)')).action(async (o: { dir: string; url?: string }) => {
  const { migrateLedgerAt } = await import('./payments/ledger/ops.ts');
  console.log(await migrateLedgerAt(ledgerAt(o)));
});

ledgerOptions(
  ledger
    .command('reconcile')
    .description("check signed receipts against the ledger: names each draw or top-up receipt whose record is missing from the ledger or differs from it (an acknowledgment lost in a failover to a standby that had not received it); exits 1 when there is one")
    .argument('<receipts...>', "a buyer's receipts journal (as `lds buy` writes it), or files of saved receipts / paid-draw and top-up answers (JSON, or one per line)")
    .option('--jwks <url-or-file>', "the service's keys: https://<host>/.well-known/jwks.json or a saved copy (default: the keys the journal recorded)")
    .option('--all', 'also list the receipts found in the ledger')
    .option('--json', 'print the findings as JSON')
    .addHelpText('after', `\nExit status: 0 every receipt is in the ledger as signed; 1 one is missing, differs or does not verify; 2 could not run.\n\nExamples:\n  npx lds ledger reconcile ~/.local/state/lds/receipts.ndjson --url "$LDS_LEDGER_URL"\n  npx lds ledger reconcile saved/*.json --jwks https://api.example/.well-known/jwks.json`),
).action(async (files: string[], o: { dir: string; url?: string; jwks?: string; all?: boolean; json?: boolean }) => {
  const { runReconcile } = await import('./cli/reconcile.ts');
  try {
    process.exitCode = await runReconcile(files, o, ledgerAt(o), { stdout: (l) => console.log(l), stderr: (l) => console.error(l) });
  } catch (err) {
    console.error(`error: ${(err as Error).message}`);
    process.exitCode = 2; // could not run: 1 is kept for "a receipt is not in the ledger"
  }
});

const receipt = program.command('receipt').description('signed receipts: verify a saved one offline, or make a signing key');
receipt
  .command('verify')
  .description('check the signature of a saved receipt (a receipt, or a whole paid-draw or top-up answer) against the service\'s JWKS; exits 1 when it does not verify')
  .argument('<file>', 'the saved JSON')
  .option('--jwks <url-or-file>', 'the JWKS: a URL or a saved copy of /.well-known/jwks.json', 'http://127.0.0.1:8080/.well-known/jwks.json')
  .action(async (file: string, o: { jwks: string }) => {
    const { verifyReceiptFile } = await import('./cli/admin.ts');
    console.log(await verifyReceiptFile(file, o.jwks));
  });
receipt
  .command('keygen')
  .description('print a new Ed25519 signing key as LDS_RECEIPT_KEYS JSON; to rotate, put it first and keep the old keys after it')
  .action(async () => {
    const { generateReceiptKey } = await import('./payments/receipts.ts');
    console.log(JSON.stringify([generateReceiptKey()]));
  });

const admin = program
  .command('admin')
  .description('operator commands over the running service\'s admin API (Authorization: Bearer LDS_OPERATOR_TOKEN; a local start keeps it in var/secrets/operator.token). Money changes are idempotent on --key');
const adminOptions = (c: Command) => c.option('--base-url <url>', 'the service\'s API base', DEFAULT_BASE_URL);
const printJson = (j: unknown) => console.log(JSON.stringify(j, null, 2));
adminOptions(
  admin
    .command('refund')
    .description('refund a draw to the balance that paid it, in full or in part (never more than paid, less earlier refunds)')
    .requiredOption('--draw <draw_id>', 'the draw (draw_id of its receipt)')
    .option('--amount <eur>', 'part of the draw to refund, e.g. 0.05 (default: all that is left)')
    .requiredOption('--reason <text>', 'why; shown in the buyer\'s statement')
    .requiredOption('--key <idempotency-key>', 'unique per intended refund: resending with the same key never refunds twice'),
).action(async (o: { draw: string; amount?: string; reason: string; key: string; baseUrl: string }) => {
  const { adminPost } = await import('./cli/admin.ts');
  printJson(await adminPost(o.baseUrl, 'refunds', { draw_id: o.draw, ...(o.amount ? { amount: o.amount } : {}), reason: o.reason }, { key: o.key }));
});
adminOptions(
  admin
    .command('adjust')
    .description('credit or debit a balance (a debit never takes it below zero)')
    .option('--balance <balance_id>', 'the balance id (64 hex)')
    .option('--draw <draw_id>', 'or: the balance that paid this draw')
    .option('--topup <topup_id>', 'or: the balance this top-up credited')
    .option('--credit <eur>', 'add this amount')
    .option('--debit <eur>', 'take this amount')
    .requiredOption('--reason <text>', 'why; shown in the buyer\'s statement')
    .requiredOption('--key <idempotency-key>', 'unique per intended adjustment'),
).action(async (o: { balance?: string; draw?: string; topup?: string; credit?: string; debit?: string; reason: string; key: string; baseUrl: string }) => {
  const { adminPost, AdminCliError } = await import('./cli/admin.ts');
  if (!o.credit === !o.debit) throw new AdminCliError('give exactly one of --credit and --debit');
  const who = o.balance ? { balance_id: o.balance } : o.draw ? { draw_id: o.draw } : o.topup ? { topup_id: o.topup } : null;
  if (!who) throw new AdminCliError('name the balance: --balance, --draw or --topup');
  printJson(await adminPost(o.baseUrl, 'adjustments', { ...who, direction: o.credit ? 'credit' : 'debit', amount: o.credit ?? o.debit, reason: o.reason }, { key: o.key }));
});
adminOptions(
  admin
    .command('refund-topup')
    .description('refund a top-up through the payment processor; debits the balance first, at most its unspent remainder (money spent on draws is not refunded)')
    .requiredOption('--topup <topup_id>', 'the top-up (topup_id of its receipt)')
    .option('--amount <eur>', 'part to refund (default: all of it that is unspent)')
    .requiredOption('--reason <text>', 'why; shown in the buyer\'s statement')
    .requiredOption('--key <idempotency-key>', 'unique per intended refund'),
).action(async (o: { topup: string; amount?: string; reason: string; key: string; baseUrl: string }) => {
  const { adminPost } = await import('./cli/admin.ts');
  printJson(await adminPost(o.baseUrl, 'topup-refunds', { topup_id: o.topup, ...(o.amount ? { amount: o.amount } : {}), reason: o.reason }, { key: o.key }));
});
adminOptions(
  admin
    .command('revoke-token')
    .description('revoke a balance token at once, on every instance (the balance stays; the buyer needs a token that still works)')
    .requiredOption('--token-hash <sha256>', 'hex SHA-256 of the token'),
).action(async (o: { tokenHash: string; baseUrl: string }) => {
  const { adminPost } = await import('./cli/admin.ts');
  printJson(await adminPost(o.baseUrl, 'tokens/revoke', { token_hash: o.tokenHash }, {}));
});

reportUnknownOptionsFirst(program);

/** Runs the command the arguments name (process.argv), reporting a failure as one line and an exit status. */
export async function main(): Promise<void> {
  try {
    await program.parseAsync();
  } catch (err) {
    if (err instanceof CatalogErrors || err instanceof TopupCliError) {
      console.error(err instanceof TopupCliError ? `error: ${err.message}` : err.message);
    } else {
      console.error(`error: ${(err as Error).message}`);
    }
    // An error may name its exit status: lds publish's 2 says the release was switched but the web
    // server's reload failed; a catalog-src that cannot be read is 2, "could not run", as for check.
    const named = (err as { exitCode?: unknown }).exitCode;
    process.exitCode = typeof named === 'number' && named > 0 ? named : 1;
  }
}

// Run as the program (`node --import tsx cli.ts`, `node build/cli.js`): parse the arguments.
// bin/lds.mjs (`npx lds`) calls main() itself; a script that only reads the command definitions
// (cli/reference.ts: docs/reference/cli.md) imports this file and runs nothing.
if (process.argv[1] !== undefined && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url))) await main();
