// Issue 33: LDS_LEDGER_URL and every `--url` accept libpq's multi-host form. Before, node-postgres
// read the URL with WHATWG URL, and `postgres://…@h1:p1,h2:p2/lds?target_session_attrs=read-write`
// stopped the service at start ("Invalid URL"). Here the parser (payments/ledger/postgres/hosts.ts)
// against the forms of the PostgreSQL manual ("Connection Strings"), the service's configuration
// check, and the password never shown.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parsePgUrl, PgUrlError } from '../payments/ledger/postgres/hosts.ts';
import { redactUrl } from '../payments/ledger/location.ts';
import { ConfigError, loadConfig, pgTimeouts } from '../payments/config.ts';

test('several host:port pairs, in order, with target_session_attrs', () => {
  const u = parsePgUrl('postgres://lds:s3cr%40t@db1.example:5432,db2.example:5433,[2001:db8::7]/ledger?target_session_attrs=read-write&sslmode=disable&application_name=lds-a');
  assert.equal(u.hosts, [
    { host: 'db1.example', port: 5432 },
    { host: 'db2.example', port: 5433 },
    { host: '2001:db8::7', port: 5432 },
  ]);
  assert.is(u.targetSessionAttrs, 'read-write');
  assert.is(u.loadBalanceHosts, 'disable');
  // Everything else is node-postgres's, the same for every host; our parameters never reach it.
  const c = u.clientConfig(u.hosts[1]!, '10.0.0.2') as Record<string, unknown>;
  assert.is(c.host, '10.0.0.2');
  assert.is(c.port, 5433);
  assert.is(c.user, 'lds');
  assert.is(c.password, 's3cr@t');
  assert.is(c.database, 'ledger');
  assert.is(c.application_name, 'lds-a');
  assert.is(c.ssl, false);
  assert.is(c.target_session_attrs, undefined);
});

test('the host and port parameters, one port for all, and the default port', () => {
  const u = parsePgUrl('postgresql://u@/lds?host=a,b,c&port=6543');
  assert.equal(u.hosts.map((h) => `${h.host}:${h.port}`), ['a:6543', 'b:6543', 'c:6543']);
  const v = parsePgUrl('postgres://u@/lds?host=a,b&port=1,2');
  assert.equal(v.hosts.map((h) => `${h.host}:${h.port}`), ['a:1', 'b:2']);
  assert.equal(parsePgUrl('postgres://u@h/lds').hosts, [{ host: 'h', port: 5432 }]);
  assert.is(parsePgUrl('postgres://u@h/lds').targetSessionAttrs, undefined, 'absent: the caller decides');
  // A socket folder is a host too (no DNS), written encoded in the authority.
  assert.equal(parsePgUrl('postgres://u@%2Fvar%2Frun%2Fpostgresql/lds').hosts, [{ host: '/var/run/postgresql', port: 5432 }]);
});

test('connect_timeout (libpq: seconds, at least 2) and load_balance_hosts', () => {
  assert.is(parsePgUrl('postgres://u@a,b/l?connect_timeout=3').connectTimeoutMs, 3000);
  assert.is(parsePgUrl('postgres://u@a,b/l?connect_timeout=1').connectTimeoutMs, 2000);
  assert.is(parsePgUrl('postgres://u@a,b/l?connect_timeout=0').connectTimeoutMs, undefined);
  assert.is(parsePgUrl('postgres://u@a,b/l?load_balance_hosts=random').loadBalanceHosts, 'random');
});

test('TLS checks the certificate against the name written, not the address it resolved to', () => {
  const u = parsePgUrl('postgres://u:p@db.example:5432,db2.example/l?sslmode=verify-full');
  const c = u.clientConfig(u.hosts[0]!, '192.0.2.10');
  assert.is((c.ssl as { servername?: string }).servername, 'db.example');
  assert.is(c.host, '192.0.2.10');
});

test('mistakes are named: the parameter, what is allowed, what was given', () => {
  assert.throws(() => parsePgUrl('postgres://u@a,b/l?target_session_attrs=writable'), (e: Error) => e instanceof PgUrlError && /target_session_attrs must be one of any, read-write, read-only, primary, standby, prefer-standby; got "writable"/.test(e.message));
  assert.throws(() => parsePgUrl('postgres://u@/l?host=a,b,c&port=1,2'), /3 host\(s\) but 2 ports/);
  assert.throws(() => parsePgUrl('postgres://u@a:99999/l'), /port "99999" of host a is not a port number/);
  assert.throws(() => parsePgUrl('mysql://u@a/l'), /not a postgres:\/\//);
});

test('the password is never shown: in the userinfo or as a parameter, one host or several', () => {
  assert.is(redactUrl('postgres://lds:hunter2@h1:5432,h2:5433/lds?target_session_attrs=read-write'), 'postgres://lds:***@h1:5432,h2:5433/lds?target_session_attrs=read-write');
  assert.is(redactUrl('postgres://lds@h1/lds?password=hunter2&sslmode=require'), 'postgres://lds@h1/lds?password=***&sslmode=require');
  assert.not.match(redactUrl('postgresql://a:b%40c@[::1]:5432/x'), 'b%40c');
  assert.is(redactUrl('not a url'), 'postgres://(unparseable URL)');
});

test('the service takes a multi-host URL; it refuses one that would settle on a server that cannot write', async () => {
  const env = { LDS_VAR_DIR: '/tmp/lds-pg-hosts-test', LDS_QUOTE_SECRET: 'x'.repeat(32), MPP_SECRET_KEY: 'y'.repeat(32), LDS_OPERATOR_TOKEN: 'z'.repeat(32), LDS_RECEIPT_KEYS: '[{"kty":"OKP","crv":"Ed25519","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo","d":"nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A"}]' };
  const c = await loadConfig({}, { ...env, LDS_LEDGER_URL: 'postgres://u:p@h1:5432,h2:5432/lds?target_session_attrs=read-write' });
  assert.is(c.ledgerUrl, 'postgres://u:p@h1:5432,h2:5432/lds?target_session_attrs=read-write');
  for (const attrs of ['standby', 'read-only', 'prefer-standby']) {
    await loadConfig({}, { ...env, LDS_LEDGER_URL: `postgres://u:p@h1,h2/lds?target_session_attrs=${attrs}` }).then(
      () => assert.unreachable(`${attrs} accepted`),
      (e: Error) => {
        assert.instance(e, ConfigError);
        assert.match(e.message, `target_session_attrs=${attrs} would settle on a server that refuses writes`);
      },
    );
  }
  await loadConfig({}, { ...env, LDS_LEDGER_URL: 'postgres://u:p@h1,h2/lds?target_session_attrs=sometimes' }).then(
    () => assert.unreachable(),
    (e: Error) => assert.match(e.message, /^LDS_LEDGER_URL: target_session_attrs must be one of/),
  );
});

test('the query timeout bounds every call; the statement timeout stays below it', () => {
  assert.equal(pgTimeouts({}), { pgQueryTimeoutMs: 5000, pgStatementTimeoutMs: 4000 });
  assert.equal(pgTimeouts({ LDS_PG_QUERY_TIMEOUT_MS: '1500' }), { pgQueryTimeoutMs: 1500, pgStatementTimeoutMs: 1200 });
  assert.equal(pgTimeouts({ LDS_PG_QUERY_TIMEOUT_MS: '8000', LDS_PG_STATEMENT_TIMEOUT_MS: '6000' }), { pgQueryTimeoutMs: 8000, pgStatementTimeoutMs: 6000 });
  assert.throws(() => pgTimeouts({ LDS_PG_QUERY_TIMEOUT_MS: '2000', LDS_PG_STATEMENT_TIMEOUT_MS: '2000' }), /LDS_PG_STATEMENT_TIMEOUT_MS \(2000\) must be below LDS_PG_QUERY_TIMEOUT_MS \(2000\)/);
});

test.run();
