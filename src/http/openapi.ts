/**
 * The OpenAPI 3.1 document of the service, generated from the operation declarations
 * (`operation.ts`; `routes/index.ts` lists them) and their zod schemas (`domain/schemas.ts`,
 * `domain/api-schemas.ts`). Request bodies are converted with `io: 'input'`
 * (unknown fields allowed: the API ignores them), responses with `io: 'output'` (every field the
 * service sends is declared, nothing else: `additionalProperties: false`). Schemas with
 * `.meta({ id })` become components; when the response form of a component differs from its
 * request form, the response form is named `<id>Output`.
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import * as api from '../domain/api-schemas';
import { RPC_CODE } from './errors';
import type { DocumentedOperation, JsonSchema, TextResponse } from './operation';

export const OPENAPI_VERSION = '3.1.0';
export const API_VERSION = '0.1.0-alpha';
export const OPENAPI_PATH = '/api/openapi.json';

type Io = 'input' | 'output';

const SECURED = [{ bearerAuth: [], oauth2: [] }];

const PATH_PARAMS: Record<string, string> = {
  id: 'Id of the resource.',
  app_id: 'Id of the app.',
  user_id: 'Id of the user.',
  listener_id: 'Listener id, generated when the automation trigger is saved.',
  role_slug: 'Role slug under which the ownership is recorded.',
  app_entitlement_ref_app_id: 'Id of the entitlement’s app.',
  app_entitlement_ref_id: 'Id of the entitlement.',
  name: 'Name of the secret.',
};

const STATUS_TEXT: Record<number, string> = {
  200: 'OK',
  400: 'Invalid argument: the field path is named in message and details.',
  401: 'Missing, invalid or expired credentials.',
  403: 'The caller’s roles do not allow this operation.',
  404: 'Not found.',
  408: 'The request body did not arrive in time.',
  409: 'Already exists.',
  412: 'If-Match does not match the current ETag: nothing changed; the answer carries the current ETag.',
  413: 'Request body too large.',
  429: 'Too many requests in progress; retry after Retry-After seconds.',
  500: 'Internal error (no details).',
  503: 'A dependency is unavailable; retry later.',
};

const PAGE_PARAMETERS = [
  { name: 'page_size', description: 'Page size, clamped to 10..100; default 25.', schema: { type: 'integer' } },
  {
    name: 'page_token',
    description: 'nextPageToken of the previous page; empty or absent for the first page.',
    schema: { type: 'string' },
  },
  { name: 'pageSize', description: 'Alias of page_size.', schema: { type: 'integer' } },
  { name: 'pageToken', description: 'Alias of page_token.', schema: { type: 'string' } },
];

// ---------------------------------------------------------------- zod → JSON Schema components

interface Converted {
  root: JsonSchema;
  defs: Record<string, JsonSchema>;
}

function convert(schema: z.ZodType, io: Io): Converted {
  const json = z.toJSONSchema(schema, {
    target: 'draft-2020-12',
    io,
    unrepresentable: 'any',
    cycles: 'ref',
    reused: 'inline',
  }) as JsonSchema;
  const { $schema: _schema, $defs, ...root } = json;
  return { root, defs: ($defs ?? {}) as Record<string, JsonSchema> };
}

/** Replaces every `{ $ref: '#/$defs/X' }` by a reference to component `name(X)`. */
function rewriteRefs(value: unknown, name: (id: string) => string): unknown {
  if (Array.isArray(value)) return value.map((item) => rewriteRefs(item, name));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === '$ref' && typeof child === 'string' && child.startsWith('#/$defs/')) {
      out[key] = `#/components/schemas/${name(child.slice('#/$defs/'.length))}`;
    } else {
      out[key] = rewriteRefs(child, name);
    }
  }
  return out;
}

/** The ids a JSON schema refers to. */
function refsOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) value.forEach((item) => refsOf(item, into));
  else if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (key === '$ref' && typeof child === 'string' && child.startsWith('#/$defs/'))
        into.add(child.slice('#/$defs/'.length));
      else refsOf(child, into);
    }
  }
  return into;
}

/** Collects request (input) and response (output) schemas, then names and emits the components. */
class ComponentBuilder {
  private readonly inputDefs = new Map<string, JsonSchema>();
  private readonly outputDefs = new Map<string, JsonSchema>();
  private readonly roots: Array<{ io: Io; root: JsonSchema; target: { schema?: unknown } }> = [];

  /** Registers `schema`; the returned holder gets its JSON schema when `finish` runs. */
  add(schema: z.ZodType, io: Io): { schema?: unknown } {
    const { root, defs } = convert(schema, io);
    const store = io === 'input' ? this.inputDefs : this.outputDefs;
    for (const [id, def] of Object.entries(defs)) {
      const known = store.get(id);
      if (known && !isDeepStrictEqual(known, def)) throw new Error(`OpenAPI: two different schemas carry the id ${id}`);
      store.set(id, def);
    }
    const target: { schema?: unknown } = {};
    this.roots.push({ io, root, target });
    return target;
  }

  finish(): Record<string, unknown> {
    // An output schema keeps its id unless the request form of the same id differs from it (directly
    // or through a schema it refers to); then it is `<id>Output`.
    const differs = new Set<string>();
    for (const [id, def] of this.outputDefs) {
      const input = this.inputDefs.get(id);
      if (input && !isDeepStrictEqual(input, def)) differs.add(id);
    }
    for (let changed = true; changed;) {
      changed = false;
      for (const [id, def] of this.outputDefs) {
        if (differs.has(id) || !this.inputDefs.has(id)) continue;
        if ([...refsOf(def)].some((ref) => differs.has(ref))) {
          differs.add(id);
          changed = true;
        }
      }
    }
    const inputName = (id: string) => id;
    const outputName = (id: string) => (differs.has(id) ? `${id}Output` : id);
    const components: Record<string, unknown> = {};
    for (const [id, def] of this.inputDefs) components[inputName(id)] = rewriteRefs(def, inputName);
    for (const [id, def] of this.outputDefs) components[outputName(id)] = rewriteRefs(def, outputName);
    for (const { io, root, target } of this.roots)
      target.schema = rewriteRefs(root, io === 'input' ? inputName : outputName);
    return Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b)));
  }
}

// ---------------------------------------------------------------- document

function isText(ok: DocumentedOperation['ok']): ok is TextResponse {
  return 'contentType' in ok && typeof (ok as TextResponse).contentType === 'string';
}

function pathParameters(path: string): Array<Record<string, unknown>> {
  return [...path.matchAll(/\{([^}]+)\}/g)].map(([, name = '']) => ({
    name,
    in: 'path',
    required: true,
    description: PATH_PARAMS[name] ?? name,
    schema: { type: 'string' },
  }));
}

export interface OpenApiOptions {
  /** The tenant base URL (`servers[0].url`). */
  baseUrl: string;
}

/** Builds the whole document of `operations` (call once and cache: building converts every schema). */
export function buildOpenApiDocument(
  options: OpenApiOptions,
  operations: readonly DocumentedOperation[],
): Record<string, unknown> {
  const builder = new ComponentBuilder();
  const errorHolder = builder.add(api.ErrorBody, 'output');
  const paths: Record<string, Record<string, unknown>> = {};
  const pending: Array<() => void> = [];

  for (const op of operations) {
    const secured = op.access !== 'public';
    const item = (paths[op.path] ??= {});
    const statusText = { ...STATUS_TEXT, ...op.statusText };
    const parameters: Array<Record<string, unknown>> = [...pathParameters(op.path)];
    if (op.paged) parameters.push(...PAGE_PARAMETERS.map((p) => ({ ...p, in: 'query', required: false })));
    for (const q of op.query ?? [])
      parameters.push({ name: q.name, in: 'query', required: false, description: q.description, schema: q.schema });
    for (const header of op.headers ?? []) {
      parameters.push({
        name: header.name,
        in: 'header',
        required: header.required,
        description: header.description,
        schema: header.schema ?? { type: 'string' },
      });
    }
    const bodyHolder = op.body ? builder.add(op.body.schema, 'input') : undefined;
    const okHolder = isText(op.ok) ? undefined : builder.add(op.ok, 'output');
    const acceptedHolder = op.accepted ? builder.add(op.accepted, 'output') : undefined;
    const errorBodyHolder = op.errorSchema ? builder.add(op.errorSchema, 'output') : errorHolder;

    const operation: Record<string, unknown> = {
      operationId: op.operationId,
      tags: [op.tag],
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
    };
    if (parameters.length > 0) operation.parameters = parameters;
    operation.security = secured ? SECURED : [];
    item[op.method] = operation;

    pending.push(() => {
      if (op.body && bodyHolder) {
        const media = { schema: bodyHolder.schema };
        operation.requestBody = {
          required: op.body.required,
          ...(op.body.description ? { description: op.body.description } : {}),
          content: op.body.form
            ? { 'application/x-www-form-urlencoded': media, 'application/json': media }
            : { 'application/json': media },
        };
      }
      const responses: Record<string, unknown> = {};
      if (isText(op.ok)) {
        responses['200'] = {
          description: op.ok.description,
          content: { [op.ok.contentType]: { schema: op.ok.schema ?? { type: 'string' } } },
        };
      } else {
        const okBody = {
          description: statusText[200] ?? 'OK',
          ...(op.etag
            ? {
                headers: {
                  ETag: {
                    description: 'Strong ETag naming the revision; send it back in If-Match.',
                    schema: { type: 'string' },
                  },
                },
              }
            : {}),
          content: { 'application/json': { schema: okHolder?.schema } },
        };
        responses['200'] = okBody;
        for (const status of op.okAlso ?? [])
          responses[String(status)] = { ...okBody, description: STATUS_TEXT[status] ?? String(status) };
        if (acceptedHolder)
          responses['202'] = {
            description: statusText[202] ?? 'Accepted',
            content: { 'application/json': { schema: acceptedHolder.schema } },
          };
      }
      for (const status of op.errors) {
        const code = RPC_CODE[status];
        const text = statusText[status] ?? String(status);
        responses[String(status)] = {
          description: op.errorSchema || code === undefined ? text : `${text} (code ${code})`,
          ...(status === 401 && secured
            ? { headers: { 'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } } } }
            : {}),
          ...(status === 429 || status === 503
            ? { headers: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'string' } } } }
            : {}),
          content: {
            'application/json': { schema: (op.serviceErrors?.includes(status) ? errorHolder : errorBodyHolder).schema },
          },
        };
      }
      operation.responses = responses;
    });
  }

  const schemas = builder.finish();
  for (const fill of pending) fill();

  const tags = [...new Set(operations.map((op) => op.tag))].map((name) => ({ name }));
  return {
    openapi: OPENAPI_VERSION,
    info: {
      title: 'Automation and access-governance API',
      version: API_VERSION,
      description:
        'Inbound webhooks that run durable automations on Temporal, and an access-governance API (apps, users, ' +
        'entitlements, service-account entitlement owners). Errors: `{code, message, details}` with a google.rpc.Code.',
    },
    servers: [{ url: options.baseUrl }],
    tags,
    paths,
    components: {
      schemas,
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'JWT',
          description: 'Access token from /auth/v1/token.',
        },
        oauth2: {
          type: 'oauth2',
          description: 'OAuth 2.0 client credentials; client_id and client_secret in the request body.',
          flows: { clientCredentials: { tokenUrl: '/auth/v1/token', scopes: {} } },
        },
      },
    },
  };
}
