// `lds preview <nginx|apache|caddy>`: a build served by the web server it will be hosted with, on a
// local port, so a publisher sees what that server sends (content types, cache headers, tags,
// precompressed variants, the 404 of an unknown address) before publishing. It writes a whole,
// ready-to-run configuration into a folder of its own (default var/preview/<server>/: the
// configuration, pid file, logs, temporary files), checks it and runs the server in the
// foreground until Ctrl-C; with --no-start it only writes it and prints the command that runs it.
// generator/web-servers.ts does the work; the hosting tests run their servers through this command.
//
// The server serves the build by its real path (dist/ is a link each build switches, and the rules
// name their own build's version): a build made while a preview runs is not what it shows. Start
// the preview again to see the new build.
import { realpath } from 'node:fs/promises';
import { relative, resolve } from 'node:path';
import { buildVersion } from '../generator/publish.ts';
import { apacheMachine, servesBuild, startWebServer, WEB_SERVERS, writeWebServer, type WebServerKind } from '../generator/web-servers.ts';
import { closedToOthers } from '../contract/private-dir.ts';

export interface PreviewOptions {
  from: string;
  port: number;
  host: string;
  /** The folder for the server's configuration, pid file, logs and temporary files. */
  dir: string;
  /** false: write and check the configuration, print the command that runs it, and stop there. */
  start: boolean;
}

export interface PreviewIo {
  stdout: (line: string) => void;
  stderr: (line: string) => void;
  /** Resolves when the user asks to stop (Ctrl-C, SIGTERM). */
  stopRequested: Promise<string>;
}

export class PreviewError extends Error {}

const shown = (p: string) => {
  const rel = relative(process.cwd(), p);
  return rel === '' || rel.startsWith('..') ? p : rel;
};

/**
 * As root, Apache's children run as another user (it refuses to serve as root), which needs to pass
 * through every folder above the build: a checkout under /root (0700) is not readable to it.
 */
function checkReachable(kind: WebServerKind, folder: string): void {
  if (kind !== 'apache') return;
  const runAs = apacheMachine().runAs;
  if (!runAs) return;
  const closed = closedToOthers(folder);
  if (closed)
    throw new PreviewError(
      `Apache's children run as ${runAs.user} (it refuses to serve as root), which cannot reach ${folder}: ${closed.dir} is closed to other users (mode ${closed.mode.toString(8)}). Run the preview as a user other than root, or open the folder to others: chmod o+x ${closed.dir}`,
    );
}

/** `lds preview`: returns the exit status (0: stopped on request, or configuration written with --no-start). */
export async function runPreview(kind: WebServerKind, o: PreviewOptions, io: PreviewIo): Promise<number> {
  if (!Number.isInteger(o.port) || o.port < 1 || o.port > 65535) throw new PreviewError(`--port must be a port number from 1 to 65535 (got ${o.port})`);
  const version = await buildVersion(resolve(o.from));
  // dist/ is a link to the build it names: serve that build, whose rules are its own.
  const folder = await realpath(resolve(o.from));
  checkReachable(kind, folder);
  const server = WEB_SERVERS[kind].name;
  const options = { dir: resolve(o.dir), host: o.host, port: o.port, site: servesBuild(kind, folder) };
  if (!o.start) {
    const written = await writeWebServer(kind, options);
    io.stderr(`[preview] wrote ${shown(written.config)} for ${server} (checked), serving ${shown(o.from)} (${version}) at http://${o.host}:${o.port}/`);
    io.stdout(written.startCommand);
    return 0;
  }
  const running = await startWebServer(kind, { ...options, output: (chunk) => io.stderr(chunk.trimEnd()) });
  io.stderr(`[preview] ${server} serves ${shown(o.from)} (${version}, ${folder}) at ${running.origin}/`);
  io.stderr(`[preview] its configuration: ${shown(running.config)}; to run it yourself: ${running.startCommand}`);
  io.stderr(`[preview] every path the build did not publish answers 404; the API links of the pages go to the addresses the build names (npm start serves them locally)`);
  io.stderr(`[preview] a build made now is not shown: start the preview again to see it. Ctrl-C stops ${server}.`);
  io.stdout(`${running.origin}/`);
  const ended = await Promise.race([io.stopRequested.then((signal) => ({ signal })), running.exited.then((code) => ({ code }))]);
  if ('signal' in ended) {
    await running.stop();
    io.stderr(`[preview] ${server} stopped (${ended.signal})`);
    return 0;
  }
  io.stderr(`[preview] ${server} exited by itself (code ${ended.code}); its log: ${shown(resolve(o.dir, 'error.log'))}`);
  return 1;
}
