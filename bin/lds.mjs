#!/usr/bin/env node
// The `lds` command of this checkout: `npx lds …` and `npm exec lds …` run it without asking a
// registry, because npm resolves a project's own `bin` before it looks anywhere else (package.json
// names this file). It compiles the TypeScript in this same process (tsx), as `npm run dev` does, so
// signals reach the server directly and there is no build step to go stale.
import { register } from 'tsx/esm/api';

register();
await import('../cli.ts');
