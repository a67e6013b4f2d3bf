/**
 * The OpenAPI 3.1 document of the service, generated from the zod schemas that validate requests
 * (`domain/schemas.ts`, `domain/api-schemas.ts`). Request bodies are converted with `io: 'input'`
 * (unknown fields allowed: the API ignores them), responses with `io: 'output'` (every field the
 * service sends is declared, nothing else: `additionalProperties: false`). Schemas with
 * `.meta({ id })` become components; when the response form of a component differs from its
 * request form, the response form is named `<id>Output`.
 */
import { isDeepStrictEqual } from 'node:util';
import { z } from 'zod';
import * as api from '../domain/api-schemas';
import * as gov from '../domain/schemas';
import * as secrets from '../domain/secret-schemas';
import { RPC_CODE } from './errors';
import { AUTH_METHODS, authenticatorOf } from '../webhooks/authenticators';

export const OPENAPI_VERSION = '3.1.0';
export const API_VERSION = '0.1.0-alpha';
export const OPENAPI_PATH = '/api/openapi.json';

type JsonSchema = Record<string, unknown>;
type Method = 'get' | 'post' | 'put' | 'delete';
type Io = 'input' | 'output';

const SECURED = [{ bearerAuth: [], oauth2: [] }];

/** A response not described by a zod schema. */
interface TextResponse {
  contentType: string;
  description: string;
  schema?: JsonSchema;
}

interface Operation {
  method: Method;
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** Bearer token (and OAuth 2.0 client credentials) required. */
  secured: boolean;
  /** Adds page_size / page_token / pageSize / pageToken query parameters. */
  paged?: boolean;
  headers?: Array<{ name: string; required: boolean; description: string; schema?: JsonSchema }>;
  /** Query parameters other than the page ones. */
  query?: Array<{ name: string; description: string; schema: JsonSchema }>;
  body?: { schema: z.ZodType; required: boolean; form?: boolean; description?: string };
  ok: z.ZodType | TextResponse;
  /** Other documented statuses that carry a body of `ok`'s schema (e.g. /ready's 503). */
  okAlso?: number[];
  errors: number[];
  /** Schema of the error bodies; the service's error shape unless given. */
  errorSchema?: z.ZodType;
  /** Statuses answered in the service's error shape although `errorSchema` is given (flood guards). */
  serviceErrors?: number[];
}

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
  413: 'Request body too large.',
  429: 'Too many requests in progress; retry after Retry-After seconds.',
  500: 'Internal error (no details).',
  503: 'A dependency is unavailable; retry later.',
};

const WEBHOOK_STATUS_TEXT: Record<number, string> = {
  200: 'Accepted; the automation run is durably recorded.',
  400: 'Missing header, Content-Type not application/json, Webhook-Timestamp more than 300 s from now, Webhook-Event-Id not a UUID v4, or body not valid JSON.',
  401: 'Invalid HMAC signature; JWT verification failed (JWKS unreachable, unknown kid, missing or wrong claim), expired JWT; missing Authorization header.',
  403: 'Source address not in the listener’s allowed CIDR list.',
  404: 'Unknown listener, automation not published, or trigger not enabled.',
  408: 'The body did not arrive in time.',
  409: 'Duplicate event id for this listener (within 7 days), whatever its first delivery became (a run, filtered); details carry the original executionId. Idempotency protection, not a fault.',
  413: 'Body over 65,536 bytes.',
  429: "Too many deliveries in progress, or the automation's rate limit is exhausted for the event's key; retry after Retry-After seconds.",
  503: 'The workflow engine is unavailable; the event was not accepted, retry later.',
};

/** Writes of governance resources and API clients: reads a JSON body (400 bad JSON, 413 too large). */
const WRITE = [400, 401, 403, 413, 500];
const READ = [400, 401, 403, 500];
const ITEM_READ = [401, 403, 404, 500];
const ITEM_WRITE = [400, 401, 403, 404, 413, 500];

const OPERATIONS: Operation[] = [
  // ---------------------------------------------------------------- operations
  { method: 'get', path: '/health', operationId: 'health', tag: 'Operations', summary: 'The process is up.', secured: false, ok: api.HealthStatus, errors: [] },
  {
    method: 'get', path: '/ready', operationId: 'ready', tag: 'Operations', summary: 'Store and Temporal are reachable (503 otherwise).',
    secured: false, ok: api.ReadyStatus, okAlso: [503], errors: [401],
  },
  {
    method: 'get', path: '/metrics', operationId: 'metrics', tag: 'Operations', summary: 'Prometheus metrics.', secured: false,
    ok: { contentType: 'text/plain', description: 'Prometheus text exposition format.' }, errors: [401],
  },
  {
    method: 'get', path: OPENAPI_PATH, operationId: 'openapi', tag: 'Operations', summary: 'This OpenAPI 3.1 document.', secured: false,
    ok: { contentType: 'application/json', description: 'The OpenAPI document.', schema: {
        type: 'object',
        properties: { openapi: { type: 'string' }, info: { type: 'object' }, paths: { type: 'object' }, components: { type: 'object' } },
        required: ['openapi', 'info', 'paths'],
      },
    },
    errors: [],
  },
  // ---------------------------------------------------------------- auth
  {
    method: 'post', path: '/auth/v1/token', operationId: 'auth.token', tag: 'Auth', secured: false,
    summary: 'OAuth 2.0 client credentials: an access token for the API.',
    description: 'Credentials in the body (form or JSON), never in an Authorization header (400 invalid_request).',
    body: { schema: api.TokenRequest, required: true, form: true }, ok: api.TokenResponse, errors: [400, 401, 429, 503], errorSchema: api.OAuthError,
    serviceErrors: [429, 503],
  },
  {
    method: 'get', path: '/auth/v1/jwks', operationId: 'auth.jwks', tag: 'Auth', secured: false,
    summary: 'Public keys of the access tokens.', ok: api.JwksDocument, errors: [],
  },
  // ---------------------------------------------------------------- API clients
  {
    method: 'post', path: '/api/v1/iam/clients', operationId: 'iam.clients.create', tag: 'API Clients', secured: true,
    summary: 'Create an API client (super_admin); the secret is shown only here.',
    body: { schema: api.CreateClientRequest, required: true }, ok: api.CreateClientResponse, errors: WRITE,
  },
  {
    method: 'get', path: '/api/v1/iam/clients', operationId: 'iam.clients.list', tag: 'API Clients', secured: true, paged: true,
    summary: 'List API clients (super_admin).', ok: api.ApiClientList, errors: READ,
  },
  {
    method: 'get', path: '/api/v1/iam/clients/{id}', operationId: 'iam.clients.get', tag: 'API Clients', secured: true,
    summary: 'Get an API client (super_admin).', ok: api.ApiClientResponse, errors: ITEM_READ,
  },
  {
    method: 'delete', path: '/api/v1/iam/clients/{id}', operationId: 'iam.clients.delete', tag: 'API Clients', secured: true,
    summary: 'Delete an API client (super_admin).', ok: gov.EmptyResponse, errors: ITEM_READ,
  },
  // ---------------------------------------------------------------- automations
  {
    method: 'post', path: '/api/v1/automations', operationId: 'automations.create', tag: 'Automations', secured: true,
    summary: 'Create an automation (super_admin). Every expression is compiled as CEL; errors name the step and field.',
    body: { schema: api.CreateAutomationRequest, required: true }, ok: api.AutomationWriteResponse, errors: WRITE,
  },
  {
    method: 'get', path: '/api/v1/automations', operationId: 'automations.list', tag: 'Automations', secured: true, paged: true,
    summary: 'List automations (super_admin).', ok: api.AutomationList, errors: READ,
  },
  {
    method: 'get', path: '/api/v1/automations/{id}', operationId: 'automations.get', tag: 'Automations', secured: true,
    summary: 'Get an automation (super_admin).', ok: api.AutomationResponse, errors: ITEM_READ,
  },
  {
    method: 'post', path: '/api/v1/automations/{id}', operationId: 'automations.update', tag: 'Automations', secured: true,
    summary: 'Update an automation (super_admin); a trigger switched to HMAC returns a new signingSecret.',
    body: { schema: api.UpdateAutomationRequest, required: true }, ok: api.AutomationWriteResponse, errors: ITEM_WRITE,
  },
  {
    method: 'delete', path: '/api/v1/automations/{id}', operationId: 'automations.delete', tag: 'Automations', secured: true,
    summary: 'Delete an automation (super_admin).', ok: gov.EmptyResponse, errors: ITEM_READ,
  },
  {
    method: 'post', path: '/api/v1/automations/{id}/publish', operationId: 'automations.publish', tag: 'Automations', secured: true,
    summary: 'Publish an automation: its webhook listener starts accepting events.', ok: api.AutomationResponse, errors: ITEM_READ,
  },
  {
    method: 'post', path: '/api/v1/automations/{id}/unpublish', operationId: 'automations.unpublish', tag: 'Automations', secured: true,
    summary: 'Unpublish an automation.', ok: api.AutomationResponse, errors: ITEM_READ,
  },
  {
    method: 'post', path: '/api/v1/automations/{id}/trigger/rotate-secret', operationId: 'automations.rotateSecret', tag: 'Automations',
    secured: true, summary: 'Rotate the HMAC signing secret (400 for a JWT trigger); the old one verifies during gracePeriod (default 24 h).',
    body: { schema: api.RotateSecretRequest, required: false }, ok: api.RotateSecretResponse,
    errors: [400, 401, 403, 404, 500],
  },
  {
    method: 'post', path: '/api/v1/automations/{id}/test', operationId: 'automations.test', tag: 'Automations', secured: true,
    summary: 'Dry run: evaluate every step over a sample payload, without any effect.',
    body: { schema: api.DryRunRequest, required: true }, ok: api.DryRunResponse, errors: ITEM_WRITE,
  },
  {
    method: 'get', path: '/api/v1/automations/{id}/executions', operationId: 'automations.executions.list', tag: 'Automation Executions',
    secured: true, paged: true, summary: 'List the runs of an automation, newest first.', ok: api.ExecutionList,
    errors: [400, 401, 403, 404, 500, 503],
  },
  {
    method: 'get', path: '/api/v1/automations/{id}/deliveries', operationId: 'automations.deliveries.list', tag: 'Automations',
    secured: true, paged: true, summary: 'The delivery log of the automation’s webhook listener, newest first (7 days; never a body, signature or secret).',
    description:
      'Detail is kept for a bounded number of deliveries per listener and minute; the rest are counted per minute, status and reason (store table webhook_delivery_counts, metric webhook_delivery_log_summarized_total).',
    query: [
      { name: 'status', description: 'Only deliveries answered with this HTTP status.', schema: { type: 'integer', minimum: 100, maximum: 599 } },
      { name: 'reason', description: 'Only deliveries with this reason code.', schema: { type: 'string', pattern: '^[a-z_]{1,64}$' } },
    ],
    ok: api.DeliveryList, errors: [400, 401, 403, 404, 500],
  },
  {
    method: 'post', path: '/codec/decode', operationId: 'codec.decode', tag: 'Temporal Codec', secured: false,
    summary: 'Temporal Codec Server: decrypt payloads (for the Web UI and the CLI). A super_admin token, or a loopback caller when CODEC_ALLOW_LOOPBACK.',
    headers: [{ name: 'X-Namespace', required: false, description: 'The Temporal namespace (must be the service’s).' }],
    body: { schema: api.CodecPayloads, required: true }, ok: api.CodecPayloads, errors: [400, 401, 403, 413, 500, 503],
  },
  {
    method: 'post', path: '/codec/encode', operationId: 'codec.encode', tag: 'Temporal Codec', secured: false,
    summary: 'Temporal Codec Server: encrypt payloads with the newest key. Same access as /codec/decode.',
    headers: [{ name: 'X-Namespace', required: false, description: 'The Temporal namespace (must be the service’s).' }],
    body: { schema: api.CodecPayloads, required: true }, ok: api.CodecPayloads, errors: [400, 401, 403, 413, 500, 503],
  },
  {
    method: 'get', path: '/api/v1/automation_executions/{id}', operationId: 'automations.executions.get', tag: 'Automation Executions',
    secured: true, summary: 'Get one run with its steps (id: webhook:{listenerId}:{eventId}).', ok: api.ExecutionResponse,
    errors: [401, 403, 404, 500, 503],
  },
  {
    method: 'post', path: '/api/v1/automation_executions/{id}/steps/{stepId}/approve', operationId: 'automations.executions.approve',
    tag: 'Automation Executions', secured: true,
    summary: 'Approve a waitForApproval step (admin or super_admin); answers once the run has recorded the decision and moved on: the run for a super_admin, the decision only for an admin.',
    body: { schema: api.DecisionRequest, required: false }, ok: api.DecisionResponse, errors: [400, 401, 403, 404, 409, 500, 503],
  },
  {
    method: 'post', path: '/api/v1/automation_executions/{id}/steps/{stepId}/reject', operationId: 'automations.executions.reject',
    tag: 'Automation Executions', secured: true,
    summary: 'Reject a waitForApproval step (admin or super_admin); by default the run then ends as FAILED with reason rejected.',
    body: { schema: api.DecisionRequest, required: false }, ok: api.DecisionResponse, errors: [400, 401, 403, 404, 409, 500, 503],
  },
  {
    method: 'post', path: '/api/v1/automation_executions/{id}/cancel', operationId: 'automations.executions.cancel', tag: 'Automation Executions',
    secured: true, summary: 'Cancel a run (super_admin): a pending wait or approval ends, later steps do not run; status CANCELED.',
    ok: api.ExecutionResponse, errors: [400, 401, 403, 404, 409, 500, 503],
  },
  {
    method: 'post', path: '/api/v1/automation_executions/{id}/terminate', operationId: 'automations.executions.terminate', tag: 'Automation Executions',
    secured: true, summary: 'Terminate a run at once with a reason (super_admin); status TERMINATED.',
    body: { schema: api.TerminateRequest, required: true }, ok: api.ExecutionResponse, errors: [400, 401, 403, 404, 409, 500, 503],
  },
  {
    method: 'post', path: '/api/v1/automation_executions/{id}/rerun', operationId: 'automations.executions.rerun', tag: 'Automation Executions',
    secured: true,
    summary: 'Start a rerun (same payload, the published version) or a retry from the failed step (super_admin); answers the new run.',
    body: { schema: api.RerunRequest, required: false }, ok: api.ExecutionResponse, errors: [400, 401, 403, 404, 409, 500, 503],
  },
  // ---------------------------------------------------------------- inbound webhook
  {
    method: 'post', path: '/api/v1/webhooks/incoming/{listener_id}', operationId: 'webhooks.receive', tag: 'Inbound Webhooks',
    secured: false,
    summary: 'Receive an inbound webhook event and run the linked automation.',
    description:
      `Authenticated by the listener’s method: ${AUTH_METHODS.map((method) => authenticatorOf(method).summary).join(', or ')}. ` +
      'Checks run in this order, the first failure answers: listener (404), ' +
      'source address (403), body size (413), headers (400), signature or JWT (401), JSON (400), duplicate event id (409).',
    headers: [
      { name: 'Webhook-Timestamp', required: true, description: 'Current Unix time in seconds; must be within 300 s of the service’s clock.', schema: { type: 'string', pattern: '^[0-9]{1,12}$' } },
      { name: 'Webhook-Event-Id', required: true, description: 'UUID v4 identifying the event; idempotency key (compared case-insensitively).', schema: { type: 'string', format: 'uuid' } },
      ...AUTH_METHODS.map((method) => ({ name: authenticatorOf(method).credential.name, required: false, description: authenticatorOf(method).credential.description })),
    ],
    body: { schema: api.WebhookPayload, required: true, description: 'Any JSON value, at most 64 KiB; the automation reads it as ctx.trigger.' },
    ok: api.WebhookAccepted, errors: [400, 401, 403, 404, 408, 409, 413, 429, 503],
  },
  // ---------------------------------------------------------------- apps
  {
    method: 'post', path: '/api/v1/apps', operationId: 'apps.create', tag: 'Apps', secured: true, summary: 'Create an app.',
    body: { schema: gov.CreateAppRequest, required: true }, ok: gov.AppResponse, errors: WRITE,
  },
  { method: 'get', path: '/api/v1/apps', operationId: 'apps.list', tag: 'Apps', secured: true, paged: true, summary: 'List apps.', ok: gov.AppList, errors: READ },
  { method: 'get', path: '/api/v1/apps/{app_id}', operationId: 'apps.get', tag: 'Apps', secured: true, summary: 'Get an app.', ok: gov.AppResponse, errors: ITEM_READ },
  // ---------------------------------------------------------------- outbound secrets
  {
    method: 'post', path: '/api/v1/secrets', operationId: 'secrets.create', tag: 'Secrets', secured: true,
    summary: 'Create a named outbound secret (admin), read as secrets.<name> in callWebhook header values and sent only to its allowedOrigins; the value is never returned.',
    body: { schema: secrets.CreateSecretRequest, required: true }, ok: secrets.SecretResponse, errors: [400, 401, 403, 409, 413, 500],
  },
  {
    method: 'get', path: '/api/v1/secrets', operationId: 'secrets.list', tag: 'Secrets', secured: true, paged: true,
    summary: 'List outbound secrets: names, allowed origins and timestamps only.', ok: secrets.SecretList, errors: READ,
  },
  {
    method: 'get', path: '/api/v1/secrets/{name}', operationId: 'secrets.get', tag: 'Secrets', secured: true,
    summary: 'Get a secret’s metadata (never its value).', ok: secrets.SecretResponse, errors: ITEM_READ,
  },
  {
    method: 'put', path: '/api/v1/secrets/{name}', operationId: 'secrets.replace', tag: 'Secrets', secured: true,
    summary: 'Replace a secret’s value (rotation) and/or its allowedOrigins (admin): requests made from now on send the new value and are checked against the new origins; signed calls also carry the old value’s signature during gracePeriod (default 24 h).',
    body: { schema: secrets.ReplaceSecretRequest, required: true }, ok: secrets.ReplaceSecretResponse, errors: ITEM_WRITE,
  },
  {
    method: 'delete', path: '/api/v1/secrets/{name}', operationId: 'secrets.delete', tag: 'Secrets', secured: true,
    summary: 'Delete a secret (admin); a run whose step reads it fails at that step.', ok: gov.EmptyResponse, errors: ITEM_READ,
  },
  // ---------------------------------------------------------------- users
  {
    method: 'post', path: '/api/v1/users', operationId: 'users.create', tag: 'Users', secured: true, summary: 'Create a user.',
    body: { schema: gov.CreateUserRequest, required: true }, ok: gov.UserResponse, errors: WRITE,
  },
  { method: 'get', path: '/api/v1/users', operationId: 'users.list', tag: 'Users', secured: true, paged: true, summary: 'List users.', ok: gov.UserList, errors: READ },
  { method: 'get', path: '/api/v1/users/{user_id}', operationId: 'users.get', tag: 'Users', secured: true, summary: 'Get a user.', ok: gov.UserResponse, errors: ITEM_READ },
  // ---------------------------------------------------------------- entitlements
  {
    method: 'post', path: '/api/v1/apps/{app_id}/entitlements', operationId: 'entitlements.create', tag: 'App Entitlements', secured: true,
    summary: 'Create an entitlement under an app; the body is the flat writable AppEntitlement fields.',
    body: { schema: gov.AppEntitlementInput, required: true }, ok: gov.AppEntitlementResponse, errors: ITEM_WRITE,
  },
  {
    method: 'get', path: '/api/v1/apps/{app_id}/entitlements', operationId: 'entitlements.list', tag: 'App Entitlements', secured: true, paged: true,
    summary: 'List the entitlements of an app.', ok: gov.AppEntitlementList, errors: [400, 401, 403, 404, 500],
  },
  {
    method: 'get', path: '/api/v1/apps/{app_id}/entitlements/{id}', operationId: 'entitlements.get', tag: 'App Entitlements', secured: true,
    summary: 'Get an entitlement.', ok: gov.AppEntitlementResponse, errors: ITEM_READ,
  },
  {
    method: 'post', path: '/api/v1/apps/{app_id}/entitlements/{id}', operationId: 'entitlements.update', tag: 'App Entitlements', secured: true,
    summary: 'Update an entitlement: only the fields of updateMask change (no mask: all writable fields).',
    body: { schema: gov.UpdateAppEntitlementRequest, required: true }, ok: gov.AppEntitlementResponse, errors: ITEM_WRITE,
  },
  {
    method: 'delete', path: '/api/v1/apps/{app_id}/entitlements/{id}', operationId: 'entitlements.delete', tag: 'App Entitlements', secured: true,
    summary: 'Soft-delete an entitlement (deletedAt set; gone from lists).', ok: gov.EmptyResponse, errors: ITEM_READ,
  },
  {
    method: 'post', path: '/api/v1/search/entitlements', operationId: 'entitlements.search', tag: 'App Entitlements', secured: true,
    summary: 'Search entitlements: query over displayName / slug / description, exact alias, app ids; paged by page_size / page_token in the body.',
    body: { schema: gov.SearchEntitlementsRequest, required: false }, ok: gov.AppEntitlementList, errors: WRITE,
  },
  // ---------------------------------------------------------------- entitlement owners
  {
    method: 'post',
    path: '/api/v2/users/{user_id}/owners/entitlements/{role_slug}/{app_entitlement_ref_app_id}/{app_entitlement_ref_id}',
    operationId: 'svc.api.user.v2.UserOwnersV2.CreateEntitlementOwner', tag: 'User Owner V2', secured: true,
    summary: 'Create an entitlement ownership source for a service-account user (idempotent).',
    description: 'appEntitlementRef may be omitted or null; fields it gives must equal the path. 404 for an unknown user, app or entitlement; 400 for a user that is not a service account.',
    body: { schema: gov.CreateEntitlementOwnerRequest, required: false }, ok: gov.UserOwnerEntitlementResponse, errors: ITEM_WRITE,
  },
  {
    method: 'get', path: '/api/v2/users/{user_id}/owners/entitlements', operationId: 'svc.api.user.v2.UserOwnersV2.ListEntitlementOwners',
    tag: 'User Owner V2', secured: true, paged: true, summary: 'List the entitlement ownerships of a user.',
    ok: gov.UserOwnerEntitlementList, errors: [400, 401, 403, 404, 500],
  },
  {
    method: 'delete',
    path: '/api/v2/users/{user_id}/owners/entitlements/{role_slug}/{app_entitlement_ref_app_id}/{app_entitlement_ref_id}',
    operationId: 'svc.api.user.v2.UserOwnersV2.DeleteEntitlementOwner', tag: 'User Owner V2', secured: true,
    summary: 'Delete an entitlement ownership source (404 if absent).', ok: gov.EmptyResponse, errors: [400, 401, 403, 404, 500],
  },
];

const PAGE_PARAMETERS = [
  { name: 'page_size', description: 'Page size, clamped to 10..100; default 25.', schema: { type: 'integer' } },
  { name: 'page_token', description: 'nextPageToken of the previous page; empty or absent for the first page.', schema: { type: 'string' } },
  { name: 'pageSize', description: 'Alias of page_size.', schema: { type: 'integer' } },
  { name: 'pageToken', description: 'Alias of page_token.', schema: { type: 'string' } },
];

// ---------------------------------------------------------------- zod → JSON Schema components

interface Converted {
  root: JsonSchema;
  defs: Record<string, JsonSchema>;
}

function convert(schema: z.ZodType, io: Io): Converted {
  const json = z.toJSONSchema(schema, { target: 'draft-2020-12', io, unrepresentable: 'any', cycles: 'ref', reused: 'inline' }) as JsonSchema;
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
      if (key === '$ref' && typeof child === 'string' && child.startsWith('#/$defs/')) into.add(child.slice('#/$defs/'.length));
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
    for (let changed = true; changed; ) {
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
    for (const { io, root, target } of this.roots) target.schema = rewriteRefs(root, io === 'input' ? inputName : outputName);
    return Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b)));
  }
}

// ---------------------------------------------------------------- document

function isText(ok: Operation['ok']): ok is TextResponse {
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

/** Builds the whole document (call once and cache: building converts every schema). */
export function buildOpenApiDocument(options: OpenApiOptions): Record<string, unknown> {
  const builder = new ComponentBuilder();
  const errorHolder = builder.add(api.ErrorBody, 'output');
  const paths: Record<string, Record<string, unknown>> = {};
  const pending: Array<() => void> = [];

  for (const op of OPERATIONS) {
    const item = (paths[op.path] ??= {});
    const isWebhook = op.operationId === 'webhooks.receive';
    const statusText = isWebhook ? WEBHOOK_STATUS_TEXT : STATUS_TEXT;
    const parameters: Array<Record<string, unknown>> = [...pathParameters(op.path)];
    if (op.paged) parameters.push(...PAGE_PARAMETERS.map((p) => ({ ...p, in: 'query', required: false })));
    for (const q of op.query ?? []) parameters.push({ name: q.name, in: 'query', required: false, description: q.description, schema: q.schema });
    for (const header of op.headers ?? []) {
      parameters.push({ name: header.name, in: 'header', required: header.required, description: header.description, schema: header.schema ?? { type: 'string' } });
    }
    const bodyHolder = op.body ? builder.add(op.body.schema, 'input') : undefined;
    const okHolder = isText(op.ok) ? undefined : builder.add(op.ok, 'output');
    const errorBodyHolder = op.errorSchema ? builder.add(op.errorSchema, 'output') : errorHolder;

    const operation: Record<string, unknown> = {
      operationId: op.operationId,
      tags: [op.tag],
      summary: op.summary,
      ...(op.description ? { description: op.description } : {}),
    };
    if (parameters.length > 0) operation.parameters = parameters;
    operation.security = op.secured ? SECURED : [];
    item[op.method] = operation;

    pending.push(() => {
      if (op.body && bodyHolder) {
        const media = { schema: bodyHolder.schema };
        operation.requestBody = {
          required: op.body.required,
          ...(op.body.description ? { description: op.body.description } : {}),
          content: op.body.form ? { 'application/x-www-form-urlencoded': media, 'application/json': media } : { 'application/json': media },
        };
      }
      const responses: Record<string, unknown> = {};
      if (isText(op.ok)) {
        responses['200'] = { description: op.ok.description, content: { [op.ok.contentType]: { schema: op.ok.schema ?? { type: 'string' } } } };
      } else {
        const okBody = { description: statusText[200] ?? 'OK', content: { 'application/json': { schema: okHolder?.schema } } };
        responses['200'] = okBody;
        for (const status of op.okAlso ?? []) responses[String(status)] = { ...okBody, description: STATUS_TEXT[status] ?? String(status) };
      }
      for (const status of op.errors) {
        const code = RPC_CODE[status];
        const text = statusText[status] ?? STATUS_TEXT[status] ?? String(status);
        responses[String(status)] = {
          description: op.errorSchema || code === undefined ? text : `${text} (code ${code})`,
          ...(status === 401 && op.secured ? { headers: { 'WWW-Authenticate': { description: 'Bearer', schema: { type: 'string' } } } } : {}),
          ...(status === 429 || status === 503 ? { headers: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'string' } } } } : {}),
          content: { 'application/json': { schema: (op.serviceErrors?.includes(status) ? errorHolder : errorBodyHolder).schema } },
        };
      }
      operation.responses = responses;
    });
  }

  const schemas = builder.finish();
  for (const fill of pending) fill();

  const tags = [...new Set(OPERATIONS.map((op) => op.tag))].map((name) => ({ name }));
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
        bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'Access token from /auth/v1/token.' },
        oauth2: {
          type: 'oauth2',
          description: 'OAuth 2.0 client credentials; client_id and client_secret in the request body.',
          flows: { clientCredentials: { tokenUrl: '/auth/v1/token', scopes: {} } },
        },
      },
    },
  };
}
