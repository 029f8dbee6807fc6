// v1/lds/_catalog: the catalogue snapshot, exactly as computed in catalog.ts.
import { type Emitter, JSON_TYPE, distPath, jsonBody } from './types.ts';

export const emitCatalogue: Emitter = (ctx) => [
  { path: distPath(`${ctx.addresses.base_url}/lds/_catalog`), contentType: JSON_TYPE, body: jsonBody(ctx.catalogue), cache: 'catalogue' },
];
