// The PostgreSQL connection URL in libpq's forms (PostgreSQL manual, "Connection Strings"), parsed
// once: the servers it names, which of them a connection may settle on, and everything else a
// connection to one of them needs. Pure: no I/O (connections.ts resolves names and connects).
//
//   postgres://user:pw@h1:5432,h2:5433,[::1]/lds?target_session_attrs=read-write&connect_timeout=2
//   postgres://user:pw@db.example/lds?host=h1,h2&port=5432,5433      (the same list as parameters)
//
// Rules, as libpq has them:
//   - hosts are tried in the order written (load_balance_hosts=random: in a random order each time);
//     a name with several DNS addresses counts as that many servers, tried in turn;
//   - a host without a port takes the `port` parameter when it names one port, else 5432; a `port`
//     list must have one entry per host;
//   - target_session_attrs: any | read-write | read-only | primary | standby | prefer-standby (a
//     connection that is not what it asks for is closed and the next server tried; prefer-standby
//     tries for a standby first, then takes any);
//   - connect_timeout (seconds) bounds each server's attempt: connecting and the check.
// Every other parameter (sslmode, application_name, options, …) is node-postgres's to read
// (pg-connection-string, exactly as for a one-host URL before), the same for every host.
//
// SSLMODE. node-postgres does not read every sslmode as libpq does (SSL_MODES below): `require`,
// `prefer` and `verify-ca` check the certificate and the host name fully there (libpq's
// `verify-full`), where libpq's `require` checks neither, and `prefer` never falls back to plain
// text. A URL that works with psql then fails against a self-signed server, or an operator believes
// it checks less or more than it does. So the service refuses those modes at start and says what to
// write: `sslmode=verify-full&sslrootcert=<the CA's file>`. `uselibpqcompat=true` (node-postgres's
// own switch) asks for libpq's meanings instead, and is accepted with any mode.
import { parseIntoClientConfig } from 'pg-connection-string';
import type pg from 'pg';

export const TARGET_SESSION_ATTRS = ['any', 'read-write', 'read-only', 'primary', 'standby', 'prefer-standby'] as const;
export type TargetSessionAttrs = (typeof TARGET_SESSION_ATTRS)[number];

export interface HostPort {
  host: string;
  port: number;
}

export interface ParsedPgUrl {
  hosts: HostPort[];
  /** As written in the URL; absent: the caller's default (the service: read-write; read-only commands: any). */
  targetSessionAttrs?: TargetSessionAttrs;
  loadBalanceHosts: 'disable' | 'random';
  /** connect_timeout in ms, when the URL gives one. */
  connectTimeoutMs?: number;
  /** The node-postgres settings of a connection to `address` (an IP address or socket path) of `host`. */
  clientConfig(host: HostPort, address: string): pg.ClientConfig;
}

export class PgUrlError extends Error {}

/** Parameters this layer reads; node-postgres never sees them. */
const OURS = new Set(['target_session_attrs', 'load_balance_hosts', 'connect_timeout', 'host', 'port']);

/** `postgres://` + userinfo (up to the authority's last `@`) + host list + the rest (path, query). */
const URL_SHAPE = /^(postgres(?:ql)?:\/\/)([^/?#]*@)?([^/?#]*)([^?#]*)(\?[^#]*)?(#.*)?$/i;

export function parsePgUrl(url: string): ParsedPgUrl {
  const m = URL_SHAPE.exec(url.trim());
  if (!m) throw new PgUrlError('not a postgres:// (or postgresql://) URL');
  const [, scheme, userinfo = '', hostList, path, query = ''] = m;
  const params = new URLSearchParams(query.slice(1));
  const listParam = (name: string) => (params.get(name) ?? '').split(',').map((s) => s.trim());

  // The host list: from the authority, or the host parameter (libpq: the parameter wins).
  const written = params.has('host') ? listParam('host').map((h) => ({ host: h, port: '' })) : splitHostList(hostList!);
  const ports = params.has('port') ? listParam('port') : [];
  if (ports.length > 1 && ports.length !== written.length) throw new PgUrlError(`${written.length} host(s) but ${ports.length} ports: give one port per host, or one for all`);
  const hosts = written.map((h, i) => {
    const raw = h.port || ports[ports.length > 1 ? i : 0] || '5432';
    const port = Number(raw);
    if (!Number.isInteger(port) || port < 1 || port > 65535) throw new PgUrlError(`port ${JSON.stringify(raw)} of host ${h.host || '(default)'} is not a port number`);
    return { host: h.host || 'localhost', port };
  });

  const attrs = params.get('target_session_attrs') ?? undefined;
  if (attrs !== undefined && !(TARGET_SESSION_ATTRS as readonly string[]).includes(attrs)) throw new PgUrlError(`target_session_attrs must be one of ${TARGET_SESSION_ATTRS.join(', ')}; got ${JSON.stringify(attrs)}`);
  const balance = params.get('load_balance_hosts') ?? 'disable';
  if (balance !== 'disable' && balance !== 'random') throw new PgUrlError(`load_balance_hosts must be disable or random; got ${JSON.stringify(balance)}`);
  const timeout = params.get('connect_timeout');
  let connectTimeoutMs: number | undefined;
  if (timeout !== null && timeout !== '') {
    const s = Number(timeout);
    if (!Number.isFinite(s) || s < 0) throw new PgUrlError(`connect_timeout must be a number of seconds; got ${JSON.stringify(timeout)}`);
    // libpq: 0 means wait forever; here every wait has a bound, so 0 means "the default".
    if (s > 0) connectTimeoutMs = Math.max(2, s) * 1000;
  }

  checkSslMode(params);

  // What node-postgres reads: the URL of the first host without our parameters, parsed once.
  for (const k of OURS) params.delete(k);
  const rest = params.toString();
  let base: pg.ClientConfig;
  try {
    base = parseIntoClientConfig(`${scheme}${userinfo}placeholder${path}${rest ? `?${rest}` : ''}`);
  } catch (err) {
    throw new PgUrlError(`cannot read the URL: ${(err as Error).message}`);
  }
  return {
    hosts,
    ...(attrs ? { targetSessionAttrs: attrs as TargetSessionAttrs } : {}),
    loadBalanceHosts: balance,
    ...(connectTimeoutMs ? { connectTimeoutMs } : {}),
    clientConfig(host, address) {
      const config: pg.ClientConfig = { ...base, host: address, port: host.port };
      // TLS checks the certificate against the name written, not the address it resolved to.
      if (config.ssl && address !== host.host && !host.host.startsWith('/')) config.ssl = { ...(config.ssl === true ? {} : config.ssl), servername: host.host };
      return config;
    },
  };
}

/**
 * What each sslmode does in this service (node-postgres 8, pg-connection-string 2) against libpq;
 * docs/operations.md prints this table. null: refused at start.
 */
export const SSL_MODES: Record<string, { here: string | null; libpq: string }> = {
  disable: { here: 'no TLS', libpq: 'no TLS' },
  allow: { here: null, libpq: 'plain text first, TLS if the server insists; no certificate check' },
  prefer: { here: null, libpq: "TLS if the server offers it, else plain text; no certificate check (libpq's default)" },
  require: { here: null, libpq: 'TLS; no certificate check (with a root.crt present: checks the CA like verify-ca)' },
  'verify-ca': { here: null, libpq: 'TLS; the certificate must chain to sslrootcert; the host name is not checked' },
  'verify-full': { here: 'TLS; the certificate must chain to sslrootcert (without it: Node\'s public CAs) and name the host as written', libpq: 'the same' },
  'no-verify': { here: 'TLS; no certificate check (node-postgres only: what libpq calls require)', libpq: 'not a libpq mode' },
};

function checkSslMode(params: URLSearchParams): void {
  const mode = params.get('sslmode');
  if (mode === null || params.get('uselibpqcompat') === 'true') return;
  const known = SSL_MODES[mode];
  if (!known) throw new PgUrlError(`sslmode=${mode} is not a mode: use sslmode=verify-full with sslrootcert=<the file of the CA that signed the server's certificate>, or sslmode=disable`);
  if (known.here === null)
    throw new PgUrlError(
      `sslmode=${mode} does not mean here what it means to libpq (psql): libpq's ${mode}: ${known.libpq}; node-postgres, which the service uses, would check the certificate and host name fully. ` +
        `Write what you want: sslmode=verify-full&sslrootcert=/path/to/root.crt (the CA that signed the server's certificate; the certificate must name the host as written in the URL), ` +
        `or add uselibpqcompat=true to get libpq's meaning of sslmode=${mode}`,
    );
}

/** `h1:5432,[::1]:5433,h3` → hosts with their ports as written ('' when none). */
function splitHostList(list: string): { host: string; port: string }[] {
  if (list === '') return [{ host: '', port: '' }];
  return list.split(',').map((item) => {
    const v6 = /^\[([^\]]+)\](?::(\d*))?$/.exec(item);
    if (v6) return { host: v6[1]!, port: v6[2] ?? '' };
    const at = item.lastIndexOf(':');
    const host = decodeURIComponent(at >= 0 ? item.slice(0, at) : item);
    return { host, port: at >= 0 ? item.slice(at + 1) : '' };
  });
}

/** host:port as logs, /readyz and the metrics name a server. */
export function hostLabel(h: HostPort): string {
  return h.host.includes(':') ? `[${h.host}]:${h.port}` : `${h.host}:${h.port}`;
}
