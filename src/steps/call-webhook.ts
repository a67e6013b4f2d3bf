/**
 * `callWebhook`: an outbound HTTPS POST of a JSON body built with CEL. `url`, every `body` field
 * (or `body` itself, an expression giving a map) and every header value are CEL. The request runs
 * in its own activity (activities/call-webhook.ts) with the step's retry policy. Every request
 * carries the call's key (`Idempotency-Key`, `webhook-id`); `signature` signs it the Standard
 * Webhooks way with a named secret (the activity resolves the secret; its value never reaches here).
 */
import { z } from 'zod';
import {
  boundedRecord,
  celSchema,
  defineEffect,
  defineStep,
  describeValue,
  integerFrom,
  SECRET_NAME,
  secretCelSchema,
  type CallWebhookRequest,
  type SecretRead,
} from './kind';
import { splitSecretHeaders } from './secret-references';
import { StepError } from '../errors';
import { isObject } from '../json';

/** `timeoutMs`: default and largest value. */
export const CALL_WEBHOOK_DEFAULT_TIMEOUT_MS = 10_000;
export const CALL_WEBHOOK_MAX_TIMEOUT_MS = 30_000;
/** Most fields of a body given field by field, and most headers. */
export const MAX_WEBHOOK_BODY_FIELDS = 50;
export const MAX_WEBHOOK_HEADERS = 20;

/**
 * Request headers a step may not set: the service frames the request itself
 * (`Content-Type: application/json`, `Content-Length`) and hop-by-hop headers are not the sender's.
 */
export const CALL_WEBHOOK_RESERVED_HEADERS: readonly string[] = [
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
];

/**
 * Request headers the service sets on every call (the call's key; the Standard Webhooks signature
 * headers): a step may not set them.
 */
export const CALL_WEBHOOK_SERVICE_HEADERS: readonly string[] = [
  'idempotency-key',
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
];

/** What an HTTP header value may hold (Node refuses anything else when sending). */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

/** Headers the service sets itself (framing, hop-by-hop, the call's key and signature). */
function serviceHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return (
    CALL_WEBHOOK_RESERVED_HEADERS.includes(lower) ||
    CALL_WEBHOOK_SERVICE_HEADERS.includes(lower) ||
    lower.startsWith('proxy-')
  );
}

const headers = boundedRecord(
  z
    .string()
    .regex(HEADER_NAME, { error: 'not a valid header name' })
    .refine((name) => !serviceHeader(name), { error: 'the service sets this header itself' }),
  secretCelSchema(),
  { max: MAX_WEBHOOK_HEADERS },
  `at most ${MAX_WEBHOOK_HEADERS} headers`,
).superRefine((record, ctx) => {
  const seen = new Set<string>();
  for (const name of Object.keys(record)) {
    if (seen.has(name.toLowerCase()))
      ctx.addIssue({
        code: 'custom',
        path: [name],
        message: 'header names are case-insensitive; this one is given twice',
      });
    seen.add(name.toLowerCase());
  }
});

const schema = z
  .strictObject({
    url: celSchema().meta({ description: 'CEL giving the https URL to POST to.' }),
    body: z
      .union(
        [
          // Field names: 1 to 128 characters, no control characters.
          boundedRecord(
            z
              .string()
              // eslint-disable-next-line no-control-regex -- the class is exactly the control characters
              .regex(/^[^\u0000-\u001f]{1,128}$/, {
                error: 'field names are 1 to 128 characters without control characters',
              }),
            celSchema(),
            { max: MAX_WEBHOOK_BODY_FIELDS },
            `at most ${MAX_WEBHOOK_BODY_FIELDS} fields`,
          ),
          celSchema(),
        ],
        { error: 'must be a map of field name → CEL expression, or one CEL expression giving a map' },
      )
      .meta({ description: 'Field name → CEL expression, or one CEL expression giving a map.' }),
    headers: headers.nullish().meta({
      description:
        'Header name → CEL expression; framing and hop-by-hop headers are refused. A header value may read named secrets ' +
        "(`'Bearer ' + secrets.crm_token`): such an expression reads only secrets.<name> and literals, and is evaluated by the worker at request time.",
    }),
    timeoutMs: integerFrom(1, CALL_WEBHOOK_MAX_TIMEOUT_MS).nullish().meta({ description: 'Default 10000.' }),
    signature: z
      .strictObject(
        {
          secret: z
            .string({ error: 'must name a secret: ^[a-z][a-z0-9_]{0,62}$' })
            .regex(SECRET_NAME, { error: 'must name a secret: ^[a-z][a-z0-9_]{0,62}$' })
            .meta({ description: 'The named outbound secret that signs (it must exist).' }),
        },
        { error: 'must be {"secret": "<name>"}: the named secret that signs the requests' },
      )
      .nullish()
      .meta({
        description:
          'Sign each request the Standard Webhooks way: webhook-timestamp and webhook-signature (v1, HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}"), keyed by the named secret (a whsec_ value is base64-decoded).',
      }),
  })
  .meta({ id: 'CallWebhookStep', description: 'An outbound HTTPS POST of a JSON body built with CEL.' });

type Body = z.output<typeof schema>;

/** Time a callWebhook activity gets beyond the request's own deadline. */
const CALL_WEBHOOK_GRACE_MS = 5_000;

/** The POST, made by the callWebhook activity (activities/call-webhook.ts). */
export const callWebhookEffect = defineEffect<CallWebhookRequest>()('callWebhook', {
  timeoutMs: (request) => request.timeoutMs + CALL_WEBHOOK_GRACE_MS,
});

/**
 * The expressions of a step as one flat batch: `url`, `body` (one expression) or `body.<field>`,
 * and `headers.<name>`. The keys double as the field names in error messages.
 */
export function callWebhookExpressions(fields: Body): Record<string, string> {
  const out: Record<string, string> = { url: fields.url };
  if (typeof fields.body === 'string') out.body = fields.body;
  else for (const [name, source] of Object.entries(fields.body)) out[`body.${name}`] = source;
  for (const [name, source] of Object.entries(fields.headers ?? {})) out[`headers.${name}`] = source;
  return out;
}

/** Reassembles the evaluated values into the request; throws StepError (field path first) on a wrong type. */
export function assembleCallWebhook(fields: Body, values: Record<string, unknown>): CallWebhookRequest {
  const url = values.url;
  if (typeof url !== 'string' || url === '')
    throw new StepError(`callWebhook.url: must evaluate to a non-empty string, got ${describeValue(url)}`);
  let body: Record<string, unknown>;
  if (typeof fields.body === 'string') {
    const value = values.body;
    if (!isObject(value)) throw new StepError(`callWebhook.body: must evaluate to a map, got ${describeValue(value)}`);
    body = value;
  } else {
    body = {};
    for (const name of Object.keys(fields.body)) body[name] = values[`body.${name}`];
  }
  const headers: Record<string, string> = {};
  for (const name of Object.keys(fields.headers ?? {})) {
    const value = values[`headers.${name}`];
    if (typeof value !== 'string')
      throw new StepError(`callWebhook.headers.${name}: must evaluate to a string, got ${describeValue(value)}`);
    if (!HEADER_VALUE.test(value))
      throw new StepError(
        `callWebhook.headers.${name}: must contain only tabs and printable Latin-1 characters (no line breaks)`,
      );
    headers[name] = value;
  }
  const timeoutMs = Math.min(fields.timeoutMs ?? CALL_WEBHOOK_DEFAULT_TIMEOUT_MS, CALL_WEBHOOK_MAX_TIMEOUT_MS);
  return { url, body, headers, timeoutMs };
}

export const callWebhook = defineStep({
  kind: 'callWebhook',
  retryable: true,
  schema,
  effect: callWebhookEffect,
  sendsCallKey: true,
  async run(body, effects) {
    // Header values that read secrets are not evaluated here (their values would enter the
    // history): their sources go to the effect, which resolves the secrets where the request is made.
    const { plain, secret } = splitSecretHeaders(body.headers);
    const fields = Object.keys(secret).length === 0 ? body : { ...body, headers: plain };
    const values = await effects.evaluate(callWebhookExpressions(fields), 'evaluate callWebhook');
    const request = assembleCallWebhook(fields, values);
    const withSecrets = Object.keys(secret).length === 0 ? request : { ...request, secretHeaders: secret };
    return effects.perform(
      callWebhookEffect,
      body.signature ? { ...withSecrets, signature: { secret: body.signature.secret } } : withSecrets,
    );
  },
  secretReads(body) {
    const reads: SecretRead[] = Object.entries(splitSecretHeaders(body.headers).secret).map(([header, expression]) => ({
      field: `headers.${header}`,
      expression,
      url: body.url,
    }));
    if (body.signature) reads.push({ field: 'signature.secret', name: body.signature.secret, url: body.url });
    return reads;
  },
});
