// Request validation against the OpenAPI document the build published (dist/v1/specification).
// The document is the contract: the service compiles its request-body and path-parameter schemas
// at start with ajv (JSON Schema 2020-12, as OpenAPI 3.1 uses), and turns the first failure into a
// 400 problem naming the field. The draw bounds (units, limit, query length, body size) are read
// from the same document so the HTTP API, MCP and A2A all refuse exactly what it documents.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import { Problem } from '../problem.ts';
import { drawBoundsOf, type DrawBounds } from '../../contract/limits.ts';
import { problems } from '../draw/problems.ts';

// ajv-formats is CommonJS; under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

interface OpenApiDoc {
  servers?: { url: string }[];
  paths: Record<string, Record<string, { operationId?: string; requestBody?: { content?: Record<string, { schema?: unknown }> }; parameters?: { name: string; in: string; required?: boolean; schema?: unknown }[] }>>;
  components?: { schemas?: Record<string, unknown> };
}

export interface RequestValidator {
  /** Throws a 400 `malformed-request` Problem naming the first failing field. */
  body(operationId: string, body: unknown): void;
  params(operationId: string, params: Record<string, string>): void;
  bounds: DrawBounds;
  operations: { operationId: string; method: string; path: string }[];
  /** Compiles every schema not compiled yet (each is otherwise compiled on its first request). */
  warm(): Promise<void>;
}

const DOC_ID = 'urn:lds:openapi';

/** `/units/3` -> `units.3`; a missing or extra property names itself. */
export function fieldOf(e: ErrorObject): string {
  const base = e.instancePath.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
  if (e.keyword === 'required') base.push(String((e.params as { missingProperty: string }).missingProperty));
  if (e.keyword === 'additionalProperties') base.push(String((e.params as { additionalProperty: string }).additionalProperty));
  return base.join('.') || '(body)';
}

/** What a value of JSON type `t` is called in a sentence. */
const TYPE_WORDS: Record<string, string> = {
  object: 'a JSON object',
  array: 'a list (JSON array)',
  string: 'a string',
  integer: 'a whole number',
  number: 'a number',
  boolean: 'true or false',
  null: 'null',
};

/** The JSON type of a value, in words: "an array", "null", "a string"... */
export function jsonTypeOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'a list (JSON array)';
  if (typeof v === 'object') return 'a JSON object';
  if (typeof v === 'string') return 'a string';
  if (typeof v === 'number') return 'a number';
  if (typeof v === 'boolean') return String(v);
  return typeof v;
}

/**
 * One sentence a person can act on: the field, and what is allowed, in words. The OpenAPI document
 * says what a valid value is in `x-lds-expected` (ajv's `parentSchema`, with `verbose`); without it
 * the sentence is built from the keyword. Never a regular expression or ajv's own phrasing.
 */
function describe(e: ErrorObject): string {
  const field = fieldOf(e);
  const expected = (e.parentSchema as { 'x-lds-expected'?: string } | undefined)?.['x-lds-expected'];
  const p = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'required':
      return `${field} is required`;
    case 'additionalProperties':
      return `${field} is not a known field`;
    case 'oneOf':
    case 'not':
      return 'give either `units` (unit references) or `query` (with an optional `limit`), not both';
    case 'type': {
      const want = String(p.type).split(',').map((t) => TYPE_WORDS[t] ?? t).join(' or ');
      return `${field} must be ${expected ?? want} (got ${jsonTypeOf(e.data)})`;
    }
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum':
      // The value received, so whoever reads the refusal sees what was sent (it is a number here).
      return `${field} must be ${expected ?? `a number ${e.keyword.includes('inimum') ? 'at least' : 'at most'} ${String(p.limit)}`} (got ${JSON.stringify(e.data)})`;
    case 'minItems':
    case 'maxItems':
      return `${field} must be ${expected ?? 'a list'}${e.keyword === 'maxItems' ? ` (at most ${String(p.limit)} entries)` : ''}`;
    case 'minLength':
    case 'maxLength':
      return `${field} must be ${expected ?? `${e.keyword === 'minLength' ? 'at least' : 'at most'} ${String(p.limit)} characters`}`;
    case 'const':
      return `${field} must be ${JSON.stringify(p.allowedValue)}`;
    case 'enum':
      return `${field} must be one of ${(p.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`;
    default:
      // pattern, format and anything else: say what a valid value is.
      return expected ? `${field} must be ${expected}` : `${field} is not valid here; see the OpenAPI document for its form`;
  }
}

/**
 * Picks the error a person would fix first. ajv reports a oneOf failure together with the errors of
 * every branch; a concrete field error (type, bound, pattern) is more useful than the oneOf summary.
 */
function firstError(errors: ErrorObject[]): ErrorObject {
  const concrete = errors.filter((e) => !['oneOf', 'not', 'anyOf', 'if'].includes(e.keyword) && !e.schemaPath.includes('/oneOf/'));
  return concrete[0] ?? errors.find((e) => e.keyword === 'oneOf') ?? errors[0];
}

/** 400 for a body that parsed as JSON but is not an object (`[1,2]`, `null`, `"x"`, `5`). */
const BODY_EXAMPLES: Record<string, string> = {
  draw: '{"product_id": "svc-language-eu", "query": "data protection"}',
  topUp: '{"amount": "5.00", "currency": "EUR"}',
};

export function notAnObject(body: unknown, operationId?: string): Problem {
  const example = operationId ? BODY_EXAMPLES[operationId] : undefined;
  return problems.malformed('(body)', `the request body must be a JSON object${example ? ` such as ${example}` : ''}, not ${jsonTypeOf(body)}`);
}

export function malformed(errors: ErrorObject[] | null | undefined, where: string): Problem {
  const e = firstError(errors ?? []);
  if (!e) return new Problem(400, 'malformed-request', 'Malformed request', `${where} is invalid`);
  const field = e.keyword === 'oneOf' || e.keyword === 'not' ? 'units' : fieldOf(e);
  return new Problem(400, 'malformed-request', 'Malformed request', `${where}: ${describe(e)}`, { field });
}

/**
 * The JSON Schema 2020-12 meta-schema check of a document's schemas, one per process: each Ajv
 * instance compiles the meta-schema again on its first `addSchema` (~40 ms, a third of a start's
 * request validation), and a process that loads several builds (a new release, a test suite's
 * servers) would pay it each time. The per-document instances skip their own check and ask this one.
 */
let metaCheck: Ajv2020 | undefined;
function checkSchema(schema: object): void {
  metaCheck ??= new Ajv2020({ strict: false });
  if (!metaCheck.validateSchema(schema)) throw new Error(`the OpenAPI document's schemas are not valid JSON Schema 2020-12: ${metaCheck.errorsText(metaCheck.errors)}`);
}

/**
 * Request validators by their document's text, newest last: a release whose OpenAPI document is
 * the same as one already loaded (a rebuild that changed only data, a second server in the same
 * process) reuses its compiled schemas instead of compiling them again. The validators are pure
 * functions of the document, so sharing one is safe. A few are kept: the serving release and the
 * ones kept open for their quotes.
 */
const validators = new Map<string, RequestValidator>();
const KEPT_VALIDATORS = 8;

export function createRequestValidator(document: unknown): RequestValidator {
  const doc = document as OpenApiDoc;
  if (!doc || typeof doc !== 'object' || !doc.paths) throw new Error('not an OpenAPI document');
  const key = JSON.stringify(doc);
  const known = validators.get(key);
  if (known) {
    validators.delete(key);
    validators.set(key, known);
    return known;
  }
  const made = compileRequestValidator(doc);
  validators.set(key, made);
  if (validators.size > KEPT_VALIDATORS) validators.delete(validators.keys().next().value!);
  return made;
}

function compileRequestValidator(doc: OpenApiDoc): RequestValidator {
  // strict: false because the document carries OpenAPI-only keywords beside the schemas.
  // verbose: errors carry the failing schema, whose `x-lds-expected` words the message.
  // validateSchema: false, since checkSchema checks the document against the meta-schema once.
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true, verbose: true, validateSchema: false });
  addFormats(ajv);
  const wrapper = { $id: DOC_ID, components: doc.components ?? {} };
  checkSchema(wrapper);
  ajv.addSchema(wrapper);
  // Schemas in the document point at '#/components/...'; resolve them against the added document.
  const rebase = (schema: unknown): unknown => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${DOC_ID}#/components/`));

  // Each schema is compiled on first use (ajv's code generation for the whole document is ~10 % of
  // start-up); warm() compiles the rest, which the service calls once it listens.
  const lazy = (schema: unknown): (() => ValidateFunction) => {
    let fn: ValidateFunction | undefined;
    return () => {
      if (!fn) {
        const rebased = rebase(schema) as object;
        checkSchema(rebased);
        fn = ajv.compile(rebased);
      }
      return fn;
    };
  };
  const bodies = new Map<string, () => ValidateFunction>();
  const params = new Map<string, { name: string; required: boolean; validate: () => ValidateFunction }[]>();
  const operations: RequestValidator['operations'] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op.operationId) continue;
      operations.push({ operationId: op.operationId, method: method.toUpperCase(), path });
      const schema = op.requestBody?.content?.['application/json']?.schema;
      if (schema) bodies.set(op.operationId, lazy(schema));
      params.set(
        op.operationId,
        (op.parameters ?? []).filter((p) => p.in === 'path').map((p) => ({ name: p.name, required: !!p.required, validate: lazy(p.schema ?? {}) })),
      );
    }
  }

  return {
    bounds: drawBoundsOf(doc),
    operations,
    async warm() {
      for (const v of bodies.values()) {
        v();
        await new Promise((r) => setImmediate(r)); // one schema at a time: requests go between
      }
      for (const ps of params.values()) for (const p of ps) p.validate();
    },
    body(operationId, body) {
      const get = bodies.get(operationId);
      if (!get) throw new Error(`no request body schema for ${operationId}`);
      // Every JSON body of this API is an object; say so before the schema's combinators (oneOf)
      // produce a message about its fields.
      if (body === null || typeof body !== 'object' || Array.isArray(body)) throw notAnObject(body, operationId);
      const v = get();
      if (!v(body)) throw malformed(v.errors, 'request body');
    },
    params(operationId, values) {
      for (const p of params.get(operationId) ?? []) {
        const value = values[p.name];
        if (value === undefined) {
          if (p.required) throw new Problem(400, 'malformed-request', 'Malformed request', `path parameter ${p.name} is required`, { field: p.name });
          continue;
        }
        const validate = p.validate();
        if (!validate(value)) {
          const e = validate.errors?.[0];
          const expected = (e?.parentSchema as { 'x-lds-expected'?: string } | undefined)?.['x-lds-expected'];
          throw new Problem(400, 'malformed-request', 'Malformed request', `path parameter ${p.name} must be ${expected ?? 'a valid value as the OpenAPI document describes'}`, { field: p.name });
        }
      }
    },
  };
}
