#!/usr/bin/env node
// The `lds` command of this checkout: `npx lds …` and `npm exec lds …` run it without asking a
// registry, because npm resolves a project's own `bin` before it looks anywhere else (package.json
// names this file). It compiles the TypeScript in this same process (tsx), as `npm run dev` does, so
// signals reach the server directly and there is no build step to go stale.
import { fileURLToPath } from 'node:url';
import { register } from 'tsx/esm/api';

// This checkout's tsconfig, whatever the working directory (an agent host starts `lds mcp` from its
// own): its paths make `lds-catalogue-client` the client package's source, as in development.
register({ tsconfig: fileURLToPath(new URL('../tsconfig.json', import.meta.url)) });
const { main } = await import('../cli.ts');
await main();
