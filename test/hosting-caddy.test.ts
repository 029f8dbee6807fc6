// dist/ served by the real Caddy (Debian's caddy), started by `lds preview caddy` (the command a
// publisher runs to see a build as it will be hosted), with the generated rules (_caddy/...): every
// path listed in dist/_headers answers 200 with exactly the headers listed there, the file's bytes
// and 304 to If-None-Match with the catalogue version; a client that accepts br or gzip gets the
// build's .br or .gz as it is, with Content-Encoding, Vary and that representation's own strong
// ETag; the hosting files, the variant URLs and every other path the build did not publish answer
// 404 with its problem document (Caddy answered 200 with an empty body before issue 34). Then
// `lds publish` with `caddy reload` as the hook: a client holding v1's ETag gets v2, no request
// fails during the switch, --rollback brings v1 back (helpers/publish-flow.ts).
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { tempDir } from './helpers/build.ts';
import { checkConditional, checkFolders, checkHidden, checkListedPaths, checkNegotiatedCatalogue, checkNotFound, checkPrecompressed, previewStops, type Site } from './helpers/hosting-checks.ts';
import { startPreview, type Preview } from './helpers/preview.ts';
import { failLoudly, freePort, parseHeadersFile } from './helpers/nginx.ts';
import { slotPort } from './helpers/http.ts';
import { CADDY, suiteNeeding } from './helpers/programs.ts';
import { publishCli, publishFlow, twoBuilds, type Built } from './helpers/publish-flow.ts';
import { startCaddy as startServer, type Caddy as Server } from './helpers/caddy.ts';

const test = suiteNeeding('hosting-caddy.test.ts', [CADDY]);

let builds: [Built, Built];
let plain: Preview | undefined;
let published: Server | undefined;
let site: Site;

test.before(() =>
  failLoudly(async () => {
    const port = await slotPort();
    builds = await twoBuilds(`http://127.0.0.1:${port}`);
    const dist = builds[0].dir;
    plain = await startPreview('caddy', dist, port);
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

test('Caddy sends the build\'s .br and .gz as they are to a client that accepts them, each with its own strong ETag', () => checkPrecompressed(site, ['br', 'gzip']));

test('the hosting files and the variants at their own URLs are not served', () => checkHidden(site));

test('folder URLs of the index pages are served', () => checkFolders(site));

test('every path the build did not publish answers 404 with the build\'s problem document', () => checkNotFound(site));

test('issue 51: the whole DCAT-AP catalogue is negotiated (303 to the file Accept names, Vary: Accept)', () => checkNegotiatedCatalogue(site));

test('lds publish: a client holding v1\'s ETag gets v2 after the publish, no request fails during the switch, --rollback brings v1 back', async () => {
  const port = await freePort();
  const web = join(await tempDir('web'), 'root');
  const first = await publishCli(['--from', builds[0].dir, '--to', web]);
  assert.is(first.code, 0, first.stderr);
  published = await startServer(`\timport ${web}/current/_caddy/release.caddy`, port);
  // Caddy 2.6 (Debian 12) listens with SO_REUSEPORT: a reload opens a second socket on the port and
  // closes the old one, and the kernel resets a connection still queued on the old socket. Every
  // answer must still be right; a reset (never a wrong or failed answer) is bounded and reported.
  const resetsDuringReload = 'Caddy 2.6 reload: SO_REUSEPORT listener hand-over, docs/hosting.md "Publishing a new version"';
  await publishFlow(web, { origin: published.origin, reloadCommand: published.reloadCommand, resetsDuringReload }, builds);
});

test('Ctrl-C stops lds preview and its Caddy', () => previewStops(plain!));

test.run();
