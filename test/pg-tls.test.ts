// Issue 52 item 2, TLS said plainly: the multi-host URL over TLS to a primary and its standby
// (Debian's PostgreSQL, test/helpers/pg-cluster.ts) whose certificate a self-signed CA made with
// openssl signed. With `sslmode=verify-full&sslrootcert=<the CA>` (what docs/operations.md tells an
// operator to write) the ledger pays over TLS, follows a failover over TLS, and a server whose
// certificate that CA did not sign is refused. `sslmode=require`, `prefer` and `verify-ca`, which
// node-postgres would read as verify-full (unlike libpq), are refused at start with a message that
// names verify-full and sslrootcert. What failed before: `require` was taken and silently meant
// verify-full, so a URL that works in psql failed against a self-signed server.
import { spawnSync } from 'node:child_process';
import { chownSync } from 'node:fs';
import { join } from 'node:path';
import * as assert from 'uvu/assert';
import { loadConfig } from '../payments/config.ts';
import { SSL_MODES } from '../payments/ledger/postgres/hosts.ts';
import { readDoc } from './helpers/docs.ts';
import { PgLedger } from '../payments/ledger/postgres/ledger.ts';
import { cliAsync } from './helpers/build.ts';
import { debit, fund } from './helpers/ledgers.ts';
import { reachableDir, startPgCluster, type PgCluster } from './helpers/pg-cluster.ts';
import { runAs } from './helpers/pg-start.ts';
import { POSTGRES_SERVER, suiteNeeding, type Program } from './helpers/programs.ts';

const OPENSSL: Program = { name: 'OpenSSL', names: ['openssl'], dirs: ['/usr/bin'], install: 'apt-get update && apt-get install -y openssl' };
const test = suiteNeeding('pg-tls', [POSTGRES_SERVER, OPENSSL]);
let cluster: PgCluster;
let dir: string;
let db: string;

function openssl(args: string[]): void {
  const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args[0]}: ${r.stderr}`);
}

/** docs/operations.md "TLS: what each sslmode does here", as this file runs it. */
const GUIDE = readDoc('docs/operations.md').split('### TLS: what each sslmode does here')[1]!.split('\n### ')[0]!;

test.before(async () => {
  dir = reachableDir('tls-');
  // The guide's commands, literally, with this test's server names (the URL names 127.0.0.1).
  const commands = GUIDE.split('```sh\n')[1]!.split('```')[0]!;
  assert.match(commands, /^SAN='DNS:db1\.internal,DNS:db2\.internal'/);
  const r = spawnSync('bash', ['-euc', commands.replace(/^SAN='[^']*'/, "SAN='IP:127.0.0.1,DNS:localhost'")], { cwd: dir, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`the guide's openssl commands failed: ${r.stderr}`);
  // Another CA, which did not sign the servers' certificate.
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'other-ca.key', '-out', 'other-ca.crt', '-days', '2', '-subj', '/CN=other']);
  // PostgreSQL wants its key private to the user it runs as.
  const who = runAs();
  if (who.uid !== undefined) for (const f of ['server.key', 'server.crt']) chownSync(join(dir, f), who.uid, who.gid ?? who.uid);
  cluster = await startPgCluster({ standbys: 1, synchronous: false, settings: { ssl: 'on', ssl_cert_file: join(dir, 'server.crt'), ssl_key_file: join(dir, 'server.key') } });
  db = await cluster.createDatabase();
});

test.after(async () => {
  await cluster?.stop();
});

/** The deployment's URL: both servers, the writable one wanted, with `tls` appended. */
const url = (tls: string) => `${cluster.url(db, 'read-write')}&connect_timeout=2&${tls}`;
const verifyFull = (ca = 'ca') => `sslmode=verify-full&sslrootcert=${join(dir, `${ca}.crt`)}`;

/** Whether every connection of the service to `node` uses TLS (pg_stat_ssl), and how many there are. */
async function tlsConnections(node: PgCluster['primary']): Promise<{ ssl: number; plain: number }> {
  const rows = await node.sql<{ ssl: boolean; n: string }>("SELECT s.ssl, count(*) AS n FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid) WHERE a.application_name = 'lds-payments' GROUP BY s.ssl");
  return { ssl: Number(rows.find((r) => r.ssl)?.n ?? 0), plain: Number(rows.find((r) => !r.ssl)?.n ?? 0) };
}

test('the guide states what each sslmode does here, as the service does it, against libpq; its URL is the one this file runs', () => {
  for (const [mode, { here, libpq }] of Object.entries(SSL_MODES)) assert.ok(GUIDE.includes(`| \`${mode}\` | ${here ?? 'refused at start'} | ${libpq} |`), `the table's row for sslmode=${mode}`);
  assert.match(GUIDE, /\?target_session_attrs=read-write&sslmode=verify-full&sslrootcert=\/etc\/lds\/ca\.crt'/);
});

test('sslmode=require, prefer and verify-ca are refused at start (service and ledger commands), naming verify-full and sslrootcert; uselibpqcompat=true gives libpq its meaning', async () => {
  for (const mode of ['require', 'prefer', 'verify-ca']) {
    const err = await loadConfig({}, { LDS_LEDGER_URL: url(`sslmode=${mode}`), NODE_ENV: 'development' }).then(
      () => null,
      (e: Error) => e,
    );
    assert.ok(err, `sslmode=${mode} is refused by the service's configuration`);
    assert.match(err!.message, /verify-full/);
    assert.match(err!.message, /sslrootcert/);
    assert.match(err!.message, new RegExp(`sslmode=${mode}`));
  }
  const r = await cliAsync(['ledger', 'verify', '--url', url('sslmode=require')]);
  assert.is.not(r.code, 0);
  assert.match(r.stderr, /sslmode=require does not mean here what it means to libpq/);
  assert.match(r.stderr, /sslmode=verify-full&sslrootcert=/);
  // libpq's require, asked for by name: TLS, the self-signed certificate not checked.
  const ledger = await PgLedger.open({ url: url('sslmode=require&uselibpqcompat=true') });
  try {
    assert.is((await debit(ledger, await fund(ledger, 100), 'q_libpq_require', 10)).kind, 'ok');
    assert.ok((await tlsConnections(cluster.writer())).ssl > 0);
  } finally {
    await ledger.close();
  }
});

test('verify-full with the self-signed CA: paid draws over TLS on the multi-host URL, a failover followed over TLS; a CA that did not sign the certificate is refused', async () => {
  const ledger = await PgLedger.open({ url: url(verifyFull()), queryTimeoutMs: 3000 });
  try {
    const hash = await fund(ledger, 1000);
    for (let i = 0; i < 5; i++) assert.is((await debit(ledger, hash, `q_tls_${i}`, 10)).kind, 'ok');
    const before = await tlsConnections(cluster.primary);
    assert.ok(before.ssl > 0, JSON.stringify(before));
    assert.is(before.plain, 0);
    assert.is(ledger.serverInUse()?.server, `127.0.0.1:${cluster.primary.port}`);

    const promoted = await cluster.failover();
    // The first calls after the primary died may answer 503 (none committed, or outcome unknown:
    // the same quote is safe to repeat); the ledger then pays on the promoted standby, over TLS.
    let paid = false;
    for (let i = 0; i < 20 && !paid; i++) {
      try {
        paid = (await debit(ledger, hash, 'q_tls_after_failover', 10)).kind === 'ok';
      } catch {
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    assert.ok(paid, 'paid on the promoted standby');
    assert.is(ledger.serverInUse()?.server, `127.0.0.1:${promoted.port}`);
    const after = await tlsConnections(promoted);
    assert.ok(after.ssl > 0, JSON.stringify(after));
    assert.is(after.plain, 0);
    assert.is((await ledger.getBalance(hash))?.cents, 1000 - 6 * 10);
  } finally {
    await ledger.close();
  }
  // The certificate checked: a CA that did not sign it, and no CA at all (Node's public CAs), are refused.
  for (const tls of [verifyFull('other-ca'), 'sslmode=verify-full']) {
    const err = await PgLedger.open({ url: url(tls), queryTimeoutMs: 3000 }).then(
      (l) => (void l.close(), null),
      (e: Error) => e,
    );
    assert.ok(err, `${tls} is refused`);
    assert.match(err!.message, /certificate/i);
  }
});

test.run();
