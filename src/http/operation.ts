/**
 * One declaration per HTTP operation: what the OpenAPI document says of it (src/http/openapi.ts
 * reads these fields and nothing else), who may call it, how its request is read and validated,
 * and its handler. `mountOperations` registers the declarations as Koa routes; the handler gets
 * the path parameters, the page of a listing and the body, typed from the declaration.
 *
 * The request is checked in the order the API has always answered: authentication (401), the
 * caller's roles (403), the operation's own guards (`before`), then whatever the handler does in
 * its order: it reads the body with `input.body()` where the contract puts the body's checks
 * (after a 404 for the parent resource, for example). A body declared with `validation: 'schema'`
 * is parsed by its schema there (400 naming each field; its `validator` when the rules depend on
 * the configuration); `validation: 'handler'` hands the handler
 * the JSON object, for bodies whose rules (and messages) live in the handler or in the domain
 * function it calls; the schema then documents them.
 */
import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import type { z } from 'zod';
import type { Area, Mode, Principal } from '../auth/roles';
import { readPageRequest, type PageRequest } from '../domain/pagination';
import { parseOrThrow } from '../domain/validation';
import { actorOf, authenticate, principalOf, requireAccess } from './auth';
import { readJsonObject } from './body';
import type { AppDeps } from './context';
import { authenticateSession, CONSOLE_PREFIX } from './console-session';

export type Method = 'get' | 'post' | 'put' | 'delete';
export type JsonSchema = Record<string, unknown>;

/** Bearer token whose roles allow `mode` access to `area` (src/auth/roles.ts says which roles). */
export interface Grant {
  area: Area;
  mode: Mode;
}
/** `public`: no bearer token is asked for (the operation may still have guards of its own). */
export type Access = Grant | 'public';

/** A response not described by a zod schema. */
export interface TextResponse {
  contentType: string;
  description: string;
  schema?: JsonSchema;
}

export interface BodySpec<S extends z.ZodType = z.ZodType> {
  schema: S;
  required: boolean;
  /** Also accepted as application/x-www-form-urlencoded. */
  form?: boolean;
  description?: string;
  /** 'schema': `input.body()` parses it with `schema`; 'handler': the handler (or the domain function it calls) validates it. */
  validation: 'schema' | 'handler';
  /**
   * The schema that parses the body where its rules depend on the configuration: `schema` as
   * documented, with those rules bound (built once in src/compose.ts). Default: `schema`.
   */
  validator?: (deps: AppDeps) => z.ZodType<z.output<S>>;
  /** Bytes; the API's default limit unless given. */
  limit?: number;
}

/** What the OpenAPI document shows of an operation. */
export interface DocumentedOperation {
  method: Method;
  /** OpenAPI form (`/api/v1/apps/{app_id}`); the Koa route is the same with `:app_id`. */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  access: Access;
  /** Adds page_size / page_token / pageSize / pageToken query parameters; `input.page` reads them. */
  paged?: boolean;
  headers?: Array<{ name: string; required: boolean; description: string; schema?: JsonSchema }>;
  /** Query parameters other than the page ones. */
  query?: Array<{ name: string; description: string; schema: JsonSchema }>;
  body?: BodySpec;
  ok: z.ZodType | TextResponse;
  /** The answer carries an `ETag` header (the resource's revision). */
  etag?: boolean;
  /** Other documented statuses that carry a body of `ok`'s schema (e.g. /ready's 503). */
  okAlso?: number[];
  /** A 202 answer of its own schema (the handler sets `ctx.status` and `ctx.body` and answers undefined). */
  accepted?: z.ZodType;
  errors: number[];
  /** Schema of the error bodies; the service's error shape unless given. */
  errorSchema?: z.ZodType;
  /** Statuses answered in the service's error shape although `errorSchema` is given (flood guards). */
  serviceErrors?: number[];
  /** What a status means for this operation, where it differs from the usual text (src/http/openapi.ts). */
  statusText?: Record<number, string>;
}

type ParamNames<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? Name | ParamNames<Rest> : never;
/** The path parameters of an OpenAPI path template, by name. */
export type PathParams<P extends string> = { readonly [K in ParamNames<P>]: string };

type BodyOf<B> = B extends { schema: infer S extends z.ZodType; validation: 'schema' }
  ? z.output<S>
  : Record<string, unknown>;

/** What a handler gets besides the Koa context. */
export interface Input<P extends string, B, A extends Access> {
  params: PathParams<P>;
  /** `page_size`/`pageSize`, `page_token`/`pageToken` (never an error). */
  page: PageRequest;
  /** Reads the JSON body (400 bad JSON, 413 too large) and, with `validation: 'schema'`, parses it. */
  body(): Promise<BodyOf<B>>;
  /** The caller of an operation that asks for a bearer token. */
  principal: A extends Grant ? Principal : undefined;
  /** The caller as an actor (`client:<clientId>` or `person:<issuer>#<subject>`); operations with a bearer token only. */
  actor: A extends Grant ? string : undefined;
}

/**
 * What `handle` answers for an operation whose `ok` is `Ok`: the JSON body of the declared schema
 * (a handler that returns another shape does not compile), or `undefined` when it set `ctx.body`
 * itself. A response that no zod schema describes (`TextResponse`) is the handler's business.
 */
export type Answer<Ok> = Ok extends z.ZodType ? z.output<Ok> | undefined : unknown;

export interface Operation<
  P extends string = string,
  B extends BodySpec | undefined = BodySpec | undefined,
  A extends Access = Access,
  Ok extends z.ZodType | TextResponse = z.ZodType | TextResponse,
> extends DocumentedOperation {
  path: P;
  body?: B;
  access: A;
  ok: Ok;
  /** Guards after the access check, before the handler (a CORS check, the admin token). */
  before?: (deps: AppDeps) => Middleware[];
  /** The answer's JSON body, of `ok`'s schema; `undefined` leaves `ctx.body` as the handler set it. */
  handle(input: Input<P, B, A>, ctx: Context, deps: AppDeps): Answer<NoInfer<Ok>> | Promise<Answer<NoInfer<Ok>>>;
}

/** Declares an operation; the types of `handle`'s input come from `path`, `body` and `access`, its answer's from `ok`. */
export function operation<
  const P extends string,
  const B extends BodySpec | undefined = undefined,
  const A extends Access = Access,
  const Ok extends z.ZodType | TextResponse = z.ZodType | TextResponse,
>(spec: Operation<P, B, A, Ok>): Operation {
  return spec as unknown as Operation;
}

/** The Koa form of an OpenAPI path: `{name}` → `:name`. */
export function koaPath(path: string): string {
  return path.replace(/\{([^}]+)\}/g, ':$1');
}

function inputOf(op: Operation, ctx: Context, deps: AppDeps): Input<string, BodySpec | undefined, Access> {
  const secured = op.access !== 'public';
  const body = op.body;
  return {
    params: (ctx.params ?? {}) as PathParams<string>,
    page: readPageRequest(ctx.query as Record<string, unknown>),
    async body() {
      const raw = await readJsonObject(ctx, body?.limit);
      return body?.validation === 'schema' ? parseOrThrow(body.validator?.(deps) ?? body.schema, raw) : raw;
    },
    principal: secured ? principalOf(ctx) : undefined,
    actor: secured ? actorOf(ctx) : undefined,
  } as Input<string, BodySpec | undefined, Access>;
}

/**
 * A router whose paths match exactly as written: case-sensitive, and a trailing slash is another
 * path. Every router but the webhook receiver's (which keeps Koa's lenient matching for the
 * spellings senders use, src/http/routes/webhooks.ts) is made here, so `/METRICS`, `/metrics/` or
 * `/Ready` never reach a handler by another spelling: a proxy that hides a path by its exact
 * spelling (deploy/nginx) hides every spelling the service answers.
 */
export function exactRouter(options: { prefix?: string } = {}): Router {
  return new Router({ ...options, strict: true, sensitive: true });
}

/**
 * Registers each operation on `router`: access checks, the operation's guards, then its handler.
 * An `/api/...` operation that asks for a bearer token is also served under `/console/api/...`
 * for the console (src/http/console-session.ts): the same roles, guards and handler, the caller
 * authenticated by the session cookie (and an unsafe request by its CSRF token and Origin) instead.
 */
export function mountOperations(router: Router, deps: AppDeps, operations: readonly Operation[]): Router {
  for (const op of operations) {
    const handler: Middleware = async (ctx) => {
      const answer = await op.handle(inputOf(op, ctx, deps), ctx, deps);
      if (answer !== undefined) ctx.body = answer;
    };
    const guards = op.before?.(deps) ?? [];
    if (op.access === 'public') {
      router[op.method](koaPath(op.path), ...guards, handler);
      continue;
    }
    router[op.method](
      koaPath(op.path),
      authenticate(deps.tokens),
      requireAccess(op.access.area, op.access.mode),
      ...guards,
      handler,
    );
    if (op.path.startsWith('/api/')) {
      router[op.method](
        koaPath(`${CONSOLE_PREFIX}${op.path}`),
        authenticateSession(deps),
        requireAccess(op.access.area, op.access.mode),
        ...guards,
        handler,
      );
    }
  }
  return router;
}

/** The documented errors of the usual kinds of operation. A write reads a JSON body (400 bad JSON, 413 too large). */
export const WRITE_ERRORS = [400, 401, 403, 413, 500];
export const READ_ERRORS = [400, 401, 403, 500];
export const ITEM_READ_ERRORS = [401, 403, 404, 500];
export const ITEM_WRITE_ERRORS = [400, 401, 403, 404, 413, 500];
