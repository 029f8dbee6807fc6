// dist/ served by the real nginx, started by `lds preview nginx` (the command a publisher runs to see
// a build as it will be hosted), with the generated include: every path listed in dist/_headers
// answers 200 with exactly the headers listed there (content type, strong ETag = catalogue version,
// cache rule, ...), the file's bytes, and 304 to If-None-Match; the hosting files are not served,
// and every path the build did not publish answers 404 with its problem document.
// A client that accepts gzip gets the build's precompressed .gz as it is (gzip_static), with
// Content-Encoding, Vary and the gzip representation's own strong ETag. Then `lds publish`: a
// second version published to a web root nginx serves through current/_nginx/release.conf, with
// `nginx -s reload` as the hook, reaches a client that cached the first (helpers/publish-flow.ts).
import * as assert from 'uvu/assert';
import { gunzipSync } from 'node:zlib';
import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import type { BuildResult } from '../generator/build.ts';
import { cliAsync, tempDir } from './helpers/build.ts';
import { checkConditional, checkFolders, checkHidden, checkListedPaths, checkNegotiatedCatalogue, checkNotFound, checkPrecompressed, fileFor, header, previewStops, type Site } from './helpers/hosting-checks.ts';
import { buildFor, failLoudly, parseHeadersFile, startNginxWith, type Nginx } from './helpers/nginx.ts';
import { slotPort } from './helpers/http.ts';
import { startPreview, type Preview } from './helpers/preview.ts';
import { NGINX, suiteNeeding } from './helpers/programs.ts';
import { publishCli, publishFlow, twoBuilds } from './helpers/publish-flow.ts';
import { nginxServer } from '../generator/emit/nginx.ts';

const test = suiteNeeding('hosting-nginx.test.ts', [NGINX]);

let hosted: { distDir: string; build: BuildResult; preview: Preview };
let site: Site;
let published: Nginx | undefined;

test.before(() =>
  failLoudly(async () => {
    const port = await slotPort();
    const { distDir, result } = await buildFor(port);
    hosted = { distDir, build: result, preview: await startPreview('nginx', distDir, port) };
    const rules = parseHeadersFile(await readFile(join(hosted.distDir, '_headers'), 'utf8'));
    const catalogue = JSON.parse(await readFile(join(hosted.distDir, 'v1/lds/_catalog'), 'utf8'));
    site = { origin: hosted.preview.origin, distDir: hosted.distDir, rules, version: catalogue.version };
  }),
);

test.after(async () => {
  await hosted?.preview.stop();
  await published?.stop();
});

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) out.push(relative(dir, join(e.parentPath, e.name)));
  }
  return out.sort();
}

test('the build is versioned and _headers lists every published file', async () => {
  assert.match(site.version, /^catalogue-[0-9a-f]{12}$/);
  assert.is(site.version, hosted.build.version);
  const listed = new Set(site.rules.map((r) => r.path));
  const published = (await listFiles(hosted.distDir)).filter((f) => f !== '_headers' && !/^_(nginx|apache|caddy)\//.test(f) && !/\.(gz|br)$/.test(f));
  assert.ok(published.length > 0);
  for (const f of published) assert.ok(listed.has(`/${f}`), `_headers does not list /${f}`);
  // and every listed path has a content type, a strong ETag and a cache rule
  for (const r of site.rules) {
    assert.ok(header(r, 'Content-Type'), `${r.path}: no Content-Type in _headers`);
    assert.is(header(r, 'ETag'), `"${site.version}"`, `${r.path}: ETag in _headers`);
    assert.ok(header(r, 'Cache-Control'), `${r.path}: no Cache-Control in _headers`);
  }
});

test('every published path answers 200 with exactly its listed headers and the file bytes', () => checkListedPaths(site));

test('If-None-Match with the catalogue version answers 304; another tag answers 200', () => checkConditional(site));

test('the build writes .gz and .br beside the documents; nginx sends the .gz to a gzip client (gzip_static)', async () => {
  const file = await readFile(await fileFor(site.distDir, '/v1/lds/_catalog'));
  const gz = await readFile(`${await fileFor(site.distDir, '/v1/lds/_catalog')}.gz`);
  const br = await readFile(`${await fileFor(site.distDir, '/v1/lds/_catalog')}.br`);
  assert.ok(gz.length < file.length / 4 && br.length < gz.length, `catalogue ${file.length} B, .gz ${gz.length} B, .br ${br.length} B`);
  assert.ok(gunzipSync(gz).equals(file), 'the .gz is the file');
  // Debian's nginx has no brotli module: the .br files are sent by Apache, Caddy and the service.
  await checkPrecompressed(site, ['gzip']);
});

test('the hosting files are not served', () => checkHidden(site));

test('every path the build did not publish answers 404 with the build\'s problem document', () => checkNotFound(site));

test('issue 51: the whole DCAT-AP catalogue is negotiated (303 to the file Accept names, Vary: Accept)', () => checkNegotiatedCatalogue(site));

test('folder URLs of the index pages are served', () => checkFolders(site));

test('lds publish: a client holding v1\'s ETag gets v2 after the publish, no request fails during the switch, --rollback brings v1 back', async () => {
  const port = await slotPort();
  const builds = await twoBuilds(`http://127.0.0.1:${port}`);
  const web = join(await tempDir('web'), 'root');
  const first = await publishCli(['--from', builds[0].dir, '--to', web]);
  assert.is(first.code, 0, first.stderr);
  published = await startNginxWith(nginxServer('127.0.0.1', port, `include ${web}/current/_nginx/release.conf;`), port);
  await publishFlow(web, { origin: published.origin, reloadCommand: published.reloadCommand }, builds);
});

test('lds preview --no-start writes and checks the whole configuration and prints the command that runs it; no build, no server', async () => {
  const dir = join(await tempDir('preview-written'), 'nginx');
  const r = await cliAsync(['preview', 'nginx', '--from', hosted.distDir, '--port', '18099', '--dir', dir, '--no-start']);
  assert.is(r.code, 0, r.stderr);
  const conf = join(dir, 'nginx.conf');
  assert.match(r.stdout.trim(), new RegExp(`nginx -p ${dir} -c ${conf} -e ${join(dir, 'error.log')}$`));
  const text = await readFile(conf, 'utf8');
  for (const line of ['daemon off;', `pid ${dir}/nginx.pid;`, `error_log ${dir}/error.log warn;`, `client_body_temp_path ${dir}/tmp/client_body;`, 'listen 127.0.0.1:18099;', `/_nginx/lds.conf";`])
    assert.ok(text.includes(line), `nginx.conf has ${line}`);
  assert.match(r.stderr, /\(checked\)/);
  const none = await cliAsync(['preview', 'nginx', '--from', join(dir, 'no-build')]);
  assert.is(none.code, 1);
  assert.match(none.stderr, /holds no build .*run `lds build` first/);
});

test('Ctrl-C stops lds preview and its nginx', () => previewStops(hosted.preview));

test.run();
