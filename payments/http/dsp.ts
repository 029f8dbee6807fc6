// The Dataspace Protocol catalog (DSP 2025-1, catalog protocol, HTTPS binding) and the negotiated
// address of the whole DCAT-AP catalogue. Both answer from documents the build published in dist/
// (generator/emit/dsp.ts, generator/emit/dcat-catalogue.ts): nothing here builds a catalogue.
//
//   POST {base}/dsp/catalog/request        CatalogRequestMessage -> the Catalog (200)
//   GET  {base}/dsp/catalog/datasets/{id}  the Dataset, by product id or by its @id (URL-encoded)
//   GET  {base}/dcat/catalog               303 to the serialisation Accept prefers (Vary: Accept)
//
// No authorization: the catalog is as public as the static documents it repeats (the DSP binding
// makes the Authorization header optional; one sent is ignored). The routes sit behind the
// per-address rate limit like every API route (app.ts). Every refusal is a DSP CatalogError in
// application/json, as the binding requires, carrying the RFC 9457 members too (type, title,
// status, detail, field), so a DSP client and a person read the same answer; nothing changes state.
import type { Context, Middleware } from 'koa';
import { DSP_CONTEXT } from '../../contract/dsp.ts';
import { problemBase } from '../../contract/problems.ts';
import { RDF_CATALOGUE_PATH, negotiateRdf, RDF_SERIALISATIONS } from '../../contract/rdf-catalogue.ts';
import { Problem } from '../problem.ts';
import { readJsonBody } from './body.ts';
import type { StaticSite } from './static.ts';

const JSON_TYPE = 'application/json; charset=utf-8';
/** A CatalogRequestMessage is a few hundred bytes; a filter we refuse anyway need not be read whole. */
const MAX_REQUEST_BYTES = 16 * 1024;

interface DspOptions { site: StaticSite; basePath: string; docsUrl: string }

type Dataset = Record<string, unknown> & { '@id': string; 'dct:identifier'?: string };

function catalogError(ctx: Context, o: { docsUrl: string; status: number; code: string; title: string; detail: string; field?: string }): void {
  ctx.status = o.status;
  ctx.set('Content-Type', JSON_TYPE);
  ctx.set('Cache-Control', 'no-store');
  ctx.body = {
    '@context': [DSP_CONTEXT],
    '@type': 'CatalogError',
    code: o.code,
    reason: [o.detail],
    type: `${problemBase(o.docsUrl)}${o.code}`,
    title: o.title,
    status: o.status,
    detail: o.detail,
    ...(o.field ? { field: o.field } : {}),
    instance: ctx.path,
  };
}

/** Why a body is not a CatalogRequestMessage this service answers, or undefined when it is one. */
export function catalogRequestRefusal(body: unknown): { field: string; detail: string } | undefined {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return { field: '(body)', detail: 'The body must be a JSON object: a CatalogRequestMessage.' };
  const b = body as Record<string, unknown>;
  const context = b['@context'];
  if (!Array.isArray(context) || !context.every((c) => typeof c === 'string') || !context.includes(DSP_CONTEXT))
    return { field: '@context', detail: `@context must be an array of strings that contains "${DSP_CONTEXT}".` };
  if (b['@type'] !== 'CatalogRequestMessage') return { field: '@type', detail: `@type must be "CatalogRequestMessage" (got ${JSON.stringify(b['@type'] ?? null)?.slice(0, 80)}).` };
  if ('filter' in b) {
    if (!Array.isArray(b.filter)) return { field: 'filter', detail: 'filter must be an array.' };
    // DSP: a filter the implementation does not support MUST answer 400.
    if (b.filter.length) return { field: 'filter', detail: 'This catalog supports no filter expressions: send no filter (or an empty array) and get every dataset.' };
  }
  return undefined;
}

export function dspMiddleware(o: DspOptions): Middleware {
  const dsp = `${o.basePath}/dsp/catalog`;
  const requestPath = `${dsp}/request`;
  const datasetsPrefix = `${dsp}/datasets/`;
  const negotiated = `${o.basePath}${RDF_CATALOGUE_PATH}`;
  const files = RDF_SERIALISATIONS.filter((s) => o.site.entries.has(`${negotiated}${s.suffix}`));
  const catalogEntry = o.site.entries.get(dsp);
  let byId: Map<string, Dataset> | undefined;
  const datasets = (): Map<string, Dataset> => {
    if (!byId) {
      byId = new Map();
      for (const d of (o.site.json(dsp) as { dataset: Dataset[] }).dataset) {
        byId.set(d['@id'], d);
        if (typeof d['dct:identifier'] === 'string') byId.set(d['dct:identifier'], d);
      }
    }
    return byId;
  };
  const err = (ctx: Context, status: number, code: string, title: string, detail: string, field?: string) =>
    catalogError(ctx, { docsUrl: o.docsUrl, status, code, title, detail, ...(field ? { field } : {}) });
  const notAllowed = (ctx: Context, allow: string) => {
    ctx.set('Allow', allow);
    err(ctx, 405, 'method-not-allowed', 'Method not allowed', `${ctx.path} answers ${allow} only.`);
  };

  return async (ctx, next) => {
    const path = ctx.path;
    if (path === negotiated && files.length) {
      (ctx.state as { route?: string }).route = negotiated;
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return notAllowed(ctx, 'GET, HEAD');
      ctx.set('Vary', 'Accept');
      const chosen = negotiateRdf(ctx.get('accept') || undefined);
      const file = chosen && files.includes(chosen) ? chosen : null;
      if (!file) {
        throw new Problem(406, 'not-acceptable', 'Not acceptable', `The catalogue is published as ${files.map((s) => s.mediaType).join(', ')}; the Accept header names none of them.`, { field: 'Accept' });
      }
      ctx.status = 303;
      ctx.set('Location', `${negotiated}${file.suffix}`);
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = '';
      return;
    }
    if (!catalogEntry || !path.startsWith(`${dsp}/`)) return next();
    if (path === requestPath) {
      (ctx.state as { route?: string }).route = requestPath;
      if (ctx.method !== 'POST') return notAllowed(ctx, 'POST');
      let body: unknown;
      try {
        body = await readJsonBody(ctx, MAX_REQUEST_BYTES);
      } catch (e) {
        if (!(e instanceof Problem)) throw e;
        const p = e.toJSON(path) as { type: string; title: string; detail: string; field?: string };
        return err(ctx, e.status, p.type.replace(/^.*\//, ''), p.title, p.detail, p.field);
      }
      const refusal = catalogRequestRefusal(body);
      if (refusal) return err(ctx, 400, 'malformed-request', 'Not a CatalogRequestMessage this catalog answers', refusal.detail, refusal.field);
      ctx.status = 200;
      ctx.set('Content-Type', JSON_TYPE);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = catalogEntry.body;
      return;
    }
    if (path.startsWith(datasetsPrefix)) {
      (ctx.state as { route?: string }).route = `${datasetsPrefix}:id`;
      if (ctx.method !== 'GET' && ctx.method !== 'HEAD') return notAllowed(ctx, 'GET, HEAD');
      let id: string;
      try {
        id = decodeURIComponent(path.slice(datasetsPrefix.length));
      } catch {
        return err(ctx, 400, 'malformed-request', 'Malformed request', 'The dataset id is not valid percent-encoding.', 'id');
      }
      const d = datasets().get(id);
      if (!d) return err(ctx, 404, 'not-found', 'No such dataset', `No dataset ${JSON.stringify(id.slice(0, 200))} in this catalog: use a product id (svc-…) or a dataset's @id from POST ${requestPath}.`, 'id');
      ctx.status = 200;
      ctx.set('Content-Type', JSON_TYPE);
      ctx.set('Cache-Control', 'no-store');
      ctx.body = { '@context': [DSP_CONTEXT], ...d };
      return;
    }
    return err(ctx, 404, 'not-found', 'Not found', `The catalog protocol answers POST ${requestPath} and GET ${datasetsPrefix}{id}.`);
  };
}
