// dist/ served by the real Apache httpd (Debian's apache2 with its default modules plus rewrite and
// headers), started by `lds preview apache` (the command a publisher runs to see a build as it will
// be hosted), with the generated rules (_apache/...): every path listed in dist/_headers answers 200
// with exactly the headers listed there, the file's bytes and 304 to If-None-Match with the
// catalogue version; a client that accepts br or gzip gets the build's .br or .gz as it is, with
// Content-Encoding, Vary and that representation's own strong ETag; the hosting files, the variant
// URLs and every other path the build did not publish answer 404 with its problem document. Then
// `lds publish` with `apache2 -k graceful` as the hook: a client holding v1's ETag gets v2, no request
// fails during the switch, --rollback brings v1 back (helpers/publish-flow.ts).
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tempDir } from './helpers/build.ts';
import { checkConditional, checkFolders, checkHidden, checkListedPaths, checkNegotiatedCatalogue, checkNotFound, checkPrecompressed, previewStops, type Site } from './helpers/hosting-checks.ts';
import { startPreview, type Preview } from './helpers/preview.ts';
import { failLoudly, freePort, parseHeadersFile } from './helpers/nginx.ts';
import { slotPort } from './helpers/http.ts';
import { APACHE, suiteNeeding } from './helpers/programs.ts';
import { publishCli, publishFlow, twoBuilds, type Built } from './helpers/publish-flow.ts';
import { readableByServer, startApache as startServer, type Apache as Server } from './helpers/apache.ts';

const test = suiteNeeding('hosting-apache.test.ts', [APACHE]);

let builds: [Built, Built];
let plain: Preview | undefined;
let published: Server | undefined;
let site: Site;

test.before(() =>
  failLoudly(async () => {
    const port = await slotPort();
    builds = await twoBuilds(`http://127.0.0.1:${port}`);
    const dist = builds[0].dir;
    await readableByServer(dirname(dist), dirname(builds[1].dir));
    plain = await startPreview('apache', dist, port);
    const rules = parseHeadersFile(await readFile(join(dist, '_headers'), 'utf8'));
    site = { origin: plain.origin, distDir: dist, rules, version: builds[0].version };
  }),
);

test.after(async () => {
  await plain?.stop();
  await published?.stop();
});

test('every published path answers 200 with exactly its listed headers and the file bytes', () => checkListedPaths(site));

test('If-None-Match with the catalogue version answers 304; another tag answers 200', () => checkConditional(site));

test('Apache sends the build\'s .br and .gz as they are to a client that accepts them, each with its own strong ETag', () => checkPrecompressed(site, ['br', 'gzip']));

test('the hosting files and the variants at their own URLs are not served', () => checkHidden(site));

test('folder URLs of the index pages are served', () => checkFolders(site));

test('every path the build did not publish answers 404 with the build\'s problem document', () => checkNotFound(site));

test('issue 51: the whole DCAT-AP catalogue is negotiated (303 to the file Accept names, Vary: Accept)', () => checkNegotiatedCatalogue(site));

test('lds publish: a client holding v1\'s ETag gets v2 after the publish, no request fails during the switch, --rollback brings v1 back', async () => {
  const port = await freePort();
  const web = join(await tempDir('web'), 'root');
  await readableByServer(dirname(web));
  const first = await publishCli(['--from', builds[0].dir, '--to', web]);
  assert.is(first.code, 0, first.stderr);
  published = await startServer(`  Include ${web}/current/_apache/release.conf`, port);
  await publishFlow(web, { origin: published.origin, reloadCommand: published.reloadCommand }, builds);
});

test('Ctrl-C stops lds preview and its Apache httpd', () => previewStops(plain!));

test.run();
