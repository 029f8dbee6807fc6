// What every static host must do with a build, checked the same way against each real server
// (nginx, Apache httpd, Caddy): every path listed in _headers answers 200 with exactly the listed
// headers and the file's bytes, 304 to If-None-Match with a current tag, the precompressed variant
// as it is (with Content-Encoding, Vary and its own strong tag) to a client that accepts it, and
// the hosting files and variant URLs are never served; every other path answers 404 with the
// build's one problem document, the same bytes from each server.
import * as assert from 'uvu/assert';
import { request } from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { notFound } from '../../generator/emit/hosted-paths.ts';
import { canConnect } from './http.ts';
import type { HeaderRule } from './nginx.ts';
import type { Preview } from './preview.ts';

export const header = (r: HeaderRule, name: string) => r.headers.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];

/** The dist/ file a URL path names (folder URLs name their index file). */
export async function fileFor(distDir: string, urlPath: string): Promise<string> {
  const rel = decodeURIComponent(urlPath).replace(/^\//, '');
  if (rel === '' || rel.endsWith('/')) {
    for (const index of ['index.html', 'index.md']) {
      const p = join(distDir, rel, index);
      if (await stat(p).then((s) => s.isFile(), () => false)) return p;
    }
    throw new Error(`no index file for ${urlPath}`);
  }
  return join(distDir, rel);
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/** One GET without decoding: status, headers and the raw body bytes. */
export function rawGet(url: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    request(url, { headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    })
      .on('error', reject)
      .end();
  });
}

export interface Site {
  origin: string;
  distDir: string; // the folder the server serves (dist/ or a release)
  rules: HeaderRule[];
  version: string;
}

export async function checkListedPaths(site: Site): Promise<void> {
  for (const r of site.rules) {
    const res = await rawGet(site.origin + r.path, { 'Accept-Encoding': 'identity' });
    assert.is(res.headers['content-encoding'], undefined, `${r.path}: identity asked, identity sent`);
    assert.is(res.status, 200, `${r.path}: status`);
    assert.is(res.headers['content-type'], header(r, 'Content-Type'), `${r.path}: Content-Type`);
    assert.is(res.headers.etag, `"${site.version}"`, `${r.path}: ETag`);
    for (const [name, value] of r.headers) assert.is(res.headers[name.toLowerCase()], value, `${r.path}: ${name}`);
    // one value per header (no second Content-Type or ETag from the server's defaults)
    assert.not.match(String(res.headers['content-type']), /,/, `${r.path}: Content-Type repeated`);
    assert.not.match(String(res.headers.etag), /,/, `${r.path}: ETag repeated`);
    assert.is(res.headers['content-language'], undefined, `${r.path}: no Content-Language`);
    assert.ok(res.body.equals(await readFile(await fileFor(site.distDir, r.path))), `${r.path}: body differs from the file`);
  }
}

/**
 * Issue 51: the whole DCAT-AP catalogue's negotiated address answers 303 to the file the Accept
 * header names (Turtle, then RDF/XML, else JSON-LD), with Vary: Accept, as the service does; each
 * file is a listed path (checkListedPaths checks its type and bytes).
 */
export async function checkNegotiatedCatalogue(site: Site): Promise<void> {
  const jsonld = site.rules.find((r) => r.path.endsWith('/dcat/catalog.jsonld'));
  assert.ok(jsonld, 'the build lists the whole catalogue');
  const address = jsonld!.path.slice(0, -'.jsonld'.length);
  for (const [accept, suffix] of [
    [undefined, '.jsonld'],
    ['*/*', '.jsonld'],
    ['application/ld+json', '.jsonld'],
    ['text/turtle', '.ttl'],
    ['text/turtle;q=0.9, */*;q=0.1', '.ttl'],
    ['application/rdf+xml', '.rdf'],
    ['APPLICATION/RDF+XML', '.rdf'],
  ] as const) {
    const res = await rawGet(site.origin + address, accept ? { Accept: accept } : {});
    assert.is(res.status, 303, `${address} Accept ${accept}: status`);
    assert.is(new URL(String(res.headers.location), site.origin + address).pathname, `${address}${suffix}`, `${address} Accept ${accept}: Location`);
    assert.match(String(res.headers.vary), /Accept(?!-)/, `${address} Accept ${accept}: Vary`);
  }
}

export async function checkConditional(site: Site): Promise<void> {
  for (const r of site.rules) {
    const res = await rawGet(site.origin + r.path, { 'If-None-Match': `"${site.version}"` });
    assert.is(res.status, 304, `${r.path}: status with a matching If-None-Match`);
    assert.is(res.body.length, 0, `${r.path}: 304 has no body`);
    assert.is(res.headers.etag, `"${site.version}"`, `${r.path}: ETag on 304`);
    assert.is(res.headers['cache-control'], header(r, 'Cache-Control'), `${r.path}: Cache-Control on 304`);

    const stale = await rawGet(site.origin + r.path, { 'If-None-Match': '"catalogue-000000000000"' });
    assert.is(stale.status, 200, `${r.path}: status with a stale If-None-Match`);
    // The server's own tag scheme must not answer 304 for a tag that only looks like ours.
    const near = await rawGet(site.origin + r.path, { 'If-None-Match': `"${site.version}x"` });
    assert.is(near.status, 200, `${r.path}: status with a tag that is not this version`);
  }
}

const EXT = { gzip: 'gz', br: 'br' } as const;

/** Each coding in `codings` is sent as the build wrote it to a client that accepts only that coding. */
export async function checkPrecompressed(site: Site, codings: ('gzip' | 'br')[]): Promise<void> {
  for (const coding of codings) {
    let compressed = 0;
    for (const r of site.rules) {
      const path = await fileFor(site.distDir, r.path);
      const variant = `${path}.${EXT[coding]}`;
      const has = await stat(variant).then(() => true, () => false);
      const res = await rawGet(site.origin + r.path, { 'Accept-Encoding': coding });
      assert.is(res.status, 200, `${r.path} (${coding}): status`);
      if (!has) {
        assert.is(res.headers['content-encoding'], undefined, `${r.path}: no ${coding} variant, sent as it is`);
        assert.is(res.headers.etag, `"${site.version}"`, `${r.path}: ETag`);
        assert.ok(res.body.equals(await readFile(path)), `${r.path}: the file's bytes`);
        continue;
      }
      compressed++;
      assert.is(res.headers['content-encoding'], coding, `${r.path}: Content-Encoding`);
      assert.match(String(res.headers.vary), /Accept-Encoding/i, `${r.path}: Vary`);
      assert.is(res.headers.etag, `"${site.version}${coding}"`, `${r.path}: the ${coding} representation's own strong ETag`);
      assert.is(res.headers['content-type'], header(r, 'Content-Type'), `${r.path}: Content-Type`);
      assert.is(res.headers['content-language'], undefined, `${r.path}: no Content-Language (Debian's Apache calls .br Breton)`);
      assert.ok(res.body.equals(await readFile(variant)), `${r.path}: the precompressed ${coding} bytes, as they are`);
      const again = await rawGet(site.origin + r.path, { 'Accept-Encoding': coding, 'If-None-Match': `"${site.version}${coding}"` });
      assert.is(again.status, 304, `${r.path}: 304 for the ${coding} tag`);
      // nginx answers this 304 before gzip_static has chosen the representation, so it names the
      // identity tag; Apache and Caddy name the coding's. Either is a tag of this version.
      assert.match(String(again.headers.etag), new RegExp(`^"${site.version}(${coding})?"$`), `${r.path}: a current tag on its 304`);
    }
    assert.ok(compressed >= 10, `documents with a .${EXT[coding]}: ${compressed}`);
    // q=0 refuses a coding
    const refused = await rawGet(`${site.origin}/v1/lds/_catalog`, { 'Accept-Encoding': `${coding};q=0, identity` });
    assert.is(refused.headers['content-encoding'], undefined, `${coding};q=0 is not sent ${coding}`);
    // the variants are not published at URLs of their own
    const direct = await rawGet(`${site.origin}/v1/lds/_catalog.${EXT[coding]}`);
    assert.is(direct.status, 404, `/v1/lds/_catalog.${EXT[coding]} is not served`);
  }
}

export async function checkHidden(site: Site): Promise<void> {
  const hidden = ['/_headers', '/_nginx/lds.conf', '/_nginx/', '/_nginx', '/_apache/lds.conf', '/_apache/', '/_caddy/lds.caddy', '/_caddy'];
  for (const p of hidden) {
    const res = await rawGet(site.origin + p);
    assert.is(res.status, 404, `${p} must not be served`);
    assert.not.match(res.body.toString(), /location =|ETag:|RewriteRule|handle @/, `${p} leaked hosting rules`);
  }
  // they really exist (so the 404s above are the rule, not a missing file)
  for (const f of ['_headers', '_nginx/lds.conf', '_apache/lds.conf', '_caddy/lds.caddy']) assert.ok((await stat(join(site.distDir, f))).isFile(), f);
}

export async function checkFolders(site: Site): Promise<void> {
  const folders = site.rules.filter((r) => r.path.endsWith('/')).map((r) => r.path);
  assert.ok(folders.includes('/'), 'the catalogue page is served at /');
  for (const f of folders) {
    const res = await rawGet(site.origin + f, { 'Accept-Encoding': 'identity' });
    assert.is(res.status, 200, `${f}: status`);
    assert.ok(res.body.equals(await readFile(await fileFor(site.distDir, f))), `${f}: its index file`);
  }
}

/** Paths the build did not publish: unknown ones, folders, a file URL with a slash, the hosting files, a variant. */
export const UNPUBLISHED = ['/nonexistent', '/products/nope.html', '/products/', '/products', '/v1', '/docs', '/v1/lds/_catalog/', '/v1/dcat/catalog/', '/.lds-not-published', '/_headers', '/_nginx/lds.conf', '/_caddy/', '/v1/lds/_catalog.gz'];

/**
 * Issue 34: every server answers a path the build did not publish with 404 and the build's problem
 * document (Caddy answered 200 with an empty body): the very bytes notFound() gives the three
 * configurations, so nginx, Apache and Caddy send the same; a GET, a HEAD and a POST alike.
 */
export async function checkNotFound(site: Site): Promise<void> {
  const catalogue = JSON.parse(await readFile(join(site.distDir, 'v1/lds/_catalog'), 'utf8'));
  const expected = notFound({ addresses: catalogue });
  const doc = JSON.parse(expected.body);
  assert.equal([doc.type, doc.title, doc.status], [new URL('problems/not-found', catalogue.docs_url).href, 'Not found', 404], 'the not-found problem of the service');
  for (const path of UNPUBLISHED) {
    const res = await rawGet(site.origin + path);
    assert.is(res.status, 404, `${path}: status`);
    for (const [name, value] of expected.headers) assert.is(res.headers[name.toLowerCase()], value, `${path}: ${name}`);
    assert.is(res.body.toString(), expected.body, `${path}: the build's problem document`);
    assert.is(res.headers.etag, undefined, `${path}: no ETag of a document`);
  }
  for (const method of ['HEAD', 'POST']) {
    const res = await new Promise<{ status: number; type: string | undefined }>((resolve, reject) =>
      request(`${site.origin}/nonexistent`, { method, agent: false }, (r) => {
        r.resume();
        r.on('end', () => resolve({ status: r.statusCode ?? 0, type: r.headers['content-type'] }));
      })
        .on('error', reject)
        .end(),
    );
    assert.equal([res.status, res.type], [404, 'application/problem+json'], `${method} /nonexistent`);
  }
}

/** `lds preview` stops its server on Ctrl-C and exits 0; nothing listens on the port afterwards. */
export async function previewStops(preview: Preview): Promise<void> {
  assert.is(await preview.stop(), 0, preview.stderr());
  assert.match(preview.stderr(), /\[preview\] .* stopped \(SIGINT\)/);
  assert.not.ok(await canConnect(Number(new URL(preview.origin).port)), 'the server is gone');
}
