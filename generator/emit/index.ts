// Every document the build publishes, in emit order. _headers and the nginx config are derived
// from the list of files the others produce (see headers.ts), so they are not listed here.
import { emitCatalogue } from './catalogue.ts';
import { emitDcat } from './dcat.ts';
import { emitDcatCatalogue } from './dcat-catalogue.ts';
import { emitDsp } from './dsp.ts';
import { emitAgentCard } from './agent-card.ts';
import { emitLinkset } from './linkset.ts';
import { emitDocs } from './docs.ts';
import { emitHtml } from './html.ts';
import { emitOpenApi } from './openapi.ts';
import { emitPreview } from './preview.ts';
import { emitProblems } from './problems.ts';
import type { Emitter } from './types.ts';

export const EMITTERS: Emitter[] = [
  emitCatalogue,
  emitDcat,
  emitDcatCatalogue,
  emitDsp,
  emitAgentCard,
  emitLinkset,
  emitDocs,
  emitHtml,
  emitOpenApi,
  emitPreview,
  emitProblems,
];
