// dist/ served by the real nginx with the generated include: every path listed in dist/_headers
// answers 200 with exactly the headers listed there (content type, strong ETag = catalogue version,
// cache rule, ...), the file's bytes, and 304 to If-None-Match; the hosting files are not served.
// A client that accepts gzip gets the build's precompressed .gz as it is (gzip_static), with
// Content-Encoding, Vary and the gzip representation's own strong ETag.
import * as assert from 'uvu/assert';
import { request } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { buildAndServe, failLoudly, parseHeadersFile, type HeaderRule, type HostedDist } from './helpers/nginx.ts';
import { NGINX, suiteNeeding } from './helpers/programs.ts';

const test = suiteNeeding('hosting-nginx.test.ts', [NGINX]);

let hosted: HostedDist;
let rules: HeaderRule[];
let version: string;

test.before(() =>
  failLoudly(async () => {
    hosted = await buildAndServe();
    rules = parseHeadersFile(await readFile(join(hosted.distDir, '_headers'), 'utf8'));
    const catalogue = JSON.parse(await readFile(join(hosted.distDir, 'v1/lds/_catalog'), 'utf8'));
    version = catalogue.version;
  }),
);

test.after(async () => {
  await hosted?.stop();
});

const header = (r: HeaderRule, name: string) => r.headers.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)));
  }
  return out.sort();
}

/** The dist/ file a URL path names (folder URLs name their index file). */
async function fileFor(urlPath: string): Promise<string> {
  const rel = decodeURIComponent(urlPath).replace(/^\//, '');
  if (rel === '' || rel.endsWith('/')) {
    for (const index of ['index.html', 'index.md']) {
      const p = join(hosted.distDir, rel, index);
      if (await stat(p).then((s) => s.isFile(), () => false)) return p;
    }
    throw new Error(`no index file for ${urlPath}`);
  }
  return join(hosted.distDir, rel);
}

test('the build is versioned and _headers lists every published file', async () => {
  assert.match(version, /^catalogue-[0-9a-f]{12}$/);
  assert.is(version, hosted.build.version);
  const listed = new Set(rules.map((r) => r.path));
  const published = (await listFiles(hosted.distDir)).filter((f) => f !== '_headers' && !f.startsWith('_nginx/') && !/\.(gz|br)$/.test(f));
  assert.ok(published.length > 0);
  for (const f of published) assert.ok(listed.has(`/${f}`), `_headers does not list /${f}`);
  // and every listed path has a content type, a strong ETag and a cache rule
  for (const r of rules) {
    assert.ok(header(r, 'Content-Type'), `${r.path}: no Content-Type in _headers`);
    assert.is(header(r, 'ETag'), `"${version}"`, `${r.path}: ETag in _headers`);
    assert.ok(header(r, 'Cache-Control'), `${r.path}: no Cache-Control in _headers`);
  }
});

test('every published path answers 200 with exactly its listed headers and the file bytes', async () => {
  for (const r of rules) {
    const res = await fetch(hosted.nginx.origin + r.path, { headers: { 'Accept-Encoding': 'identity' } });
    const body = Buffer.from(await res.arrayBuffer());
    assert.is(res.headers.get('content-encoding'), null, `${r.path}: identity asked, identity sent`);
    assert.is(res.status, 200, `${r.path}: status`);
    assert.is(res.headers.get('content-type'), header(r, 'Content-Type'), `${r.path}: Content-Type`);
    assert.is(res.headers.get('etag'), `"${version}"`, `${r.path}: ETag`);
    for (const [name, value] of r.headers) assert.is(res.headers.get(name), value, `${r.path}: ${name}`);
    // one value per header (no second Content-Type or ETag from nginx defaults)
    assert.not.match(res.headers.get('content-type') ?? '', /,/, `${r.path}: Content-Type repeated`);
    assert.not.match(res.headers.get('etag') ?? '', /,/, `${r.path}: ETag repeated`);
    assert.ok(body.equals(await readFile(await fileFor(r.path))), `${r.path}: body differs from the file in dist/`);
  }
});

test('If-None-Match with the catalogue version answers 304; another tag answers 200', async () => {
  for (const r of rules) {
    const res = await fetch(hosted.nginx.origin + r.path, { headers: { 'If-None-Match': `"${version}"` } });
    const body = await res.text();
    assert.is(res.status, 304, `${r.path}: status with a matching If-None-Match`);
    assert.is(body, '', `${r.path}: 304 has no body`);
    assert.is(res.headers.get('etag'), `"${version}"`, `${r.path}: ETag on 304`);
    assert.is(res.headers.get('cache-control'), header(r, 'Cache-Control'), `${r.path}: Cache-Control on 304`);

    const stale = await fetch(hosted.nginx.origin + r.path, { headers: { 'If-None-Match': '"catalogue-000000000000"' } });
    await stale.arrayBuffer();
    assert.is(stale.status, 200, `${r.path}: status with a stale If-None-Match`);
  }
});

/** One GET without decoding: status, headers and the raw body bytes. */
function rawGet(url: string, headers: Record<string, string>): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: Buffer }> {
  return new Promise((resolve, reject) => {
    request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    })
      .on('error', reject)
      .end();
  });
}

test('the build writes .gz and .br beside the documents; nginx sends the .gz to a gzip client (gzip_static)', async () => {
  const catalogue = rules.find((r) => r.path === '/v1/lds/_catalog')!;
  const file = await readFile(await fileFor(catalogue.path));
  const gz = await readFile(`${await fileFor(catalogue.path)}.gz`);
  const br = await readFile(`${await fileFor(catalogue.path)}.br`);
  assert.ok(gz.length < file.length / 4 && br.length < gz.length, `catalogue ${file.length} B, .gz ${gz.length} B, .br ${br.length} B`);
  assert.ok(gunzipSync(gz).equals(file), 'the .gz is the file');
  let compressed = 0;
  for (const r of rules) {
    const path = await fileFor(r.path);
    const hasGz = await stat(`${path}.gz`).then(() => true, () => false);
    const res = await rawGet(hosted.nginx.origin + r.path, { 'Accept-Encoding': 'gzip' });
    assert.is(res.status, 200, `${r.path}: status`);
    if (!hasGz) {
      assert.is(res.headers['content-encoding'], undefined, `${r.path}: no variant, sent as it is`);
      assert.is(res.headers.etag, `"${version}"`, `${r.path}: ETag`);
      continue;
    }
    compressed++;
    assert.is(res.headers['content-encoding'], 'gzip', `${r.path}: Content-Encoding`);
    assert.match(String(res.headers.vary), /Accept-Encoding/i, `${r.path}: Vary`);
    assert.is(res.headers.etag, `"${version}gzip"`, `${r.path}: the gzip representation's own strong ETag`);
    assert.is(res.headers['content-type'], header(r, 'Content-Type'), `${r.path}: Content-Type`);
    assert.ok(res.body.equals(await readFile(`${path}.gz`)), `${r.path}: the precompressed bytes, as they are`);
    // its tag revalidates too
    const again = await rawGet(hosted.nginx.origin + r.path, { 'Accept-Encoding': 'gzip', 'If-None-Match': `"${version}gzip"` });
    assert.is(again.status, 304, `${r.path}: 304 for the gzip tag`);
  }
  assert.ok(compressed >= 10, `documents with a .gz: ${compressed}`);
  // the variants are not published at URLs of their own
  const direct = await rawGet(`${hosted.nginx.origin}/v1/lds/_catalog.gz`, {});
  assert.is(direct.status, 404);
});

test('the hosting files are not served', async () => {
  const hidden = ['/_headers', '/_nginx/lds.conf', '/_nginx/', '/_nginx'];
  for (const p of hidden) {
    const res = await fetch(hosted.nginx.origin + p);
    const body = await res.text();
    assert.is.not(res.status, 200, `${p} must not be served`);
    assert.not.match(body, /location =|ETag:/, `${p} leaked hosting rules`);
  }
  // both really exist in dist/ (so the 404s above are the rule, not a missing file)
  assert.ok((await stat(join(hosted.distDir, '_headers'))).isFile());
  assert.ok((await stat(join(hosted.distDir, '_nginx/lds.conf'))).isFile());
});

test('folder URLs of the index pages are served', async () => {
  const folders = rules.filter((r) => r.path.endsWith('/')).map((r) => r.path);
  assert.ok(folders.includes('/'), 'the catalogue page is served at /');
  const home = await fetch(hosted.nginx.origin + '/');
  assert.is(home.status, 200);
  assert.match(await home.text(), /^<!doctype html>/);
});

test.run();
