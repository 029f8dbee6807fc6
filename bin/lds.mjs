#!/usr/bin/env node
// The `lds` command of this checkout: `npx lds …` and `npm exec lds …` run it without asking a
// registry, because npm resolves a project's own `bin` before it looks anywhere else (package.json
// names this file). It runs in this same process, so signals reach the server directly:
//   - the compiled build/cli.js (the bundle `npm start` runs) when build/ is the compile of the
//     sources as they are (scripts/build-state.mjs: modification times, a few ms); it starts in a
//     third of the CPU time, which agent hosts starting `lds mcp` and publishers' CI feel;
//   - else cli.ts through tsx, as `npm run dev` does: a fresh clone or an edit never runs stale
//     JavaScript, and this command never compiles (`npm start` and `npm run build:js` do).
import { fileURLToPath } from 'node:url';
import { buildStaleness } from '../scripts/build-state.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
let main;
if (buildStaleness(root) === null && process.env.LDS_TSX !== '1') {
  ({ main } = await import('../build/cli.js'));
} else {
  const { register } = await import('tsx/esm/api');
  // This checkout's tsconfig, whatever the working directory (an agent host starts `lds mcp` from its
  // own): its paths make `lds-catalogue-client` the client package's source, as in development.
  register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
  ({ main } = await import('../cli.ts'));
}
await main();
