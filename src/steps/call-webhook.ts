/**
 * `callWebhook`: an outbound HTTPS POST of a JSON body built with CEL. `url`, every `body` field
 * (or `body` itself, an expression giving a map) and every header value are CEL. The request runs
 * in its own activity (activities/call-webhook.ts) with the step's retry policy. Every request
 * carries the call's key (`Idempotency-Key`, `webhook-id`); `signature` signs it the Standard
 * Webhooks way with a named secret (the activity resolves the secret; its value never reaches here).
 */
import { z } from 'zod';
import { celSchema, defineStep, describeValue, unknownFields, type CallWebhookRequest } from './kind';
import { readsSecrets, splitSecretHeaders } from './secret-references';
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
export const CALL_WEBHOOK_SERVICE_HEADERS: readonly string[] = ['idempotency-key', 'webhook-id', 'webhook-timestamp', 'webhook-signature'];

/** A named secret's name (as /api/v1/secrets accepts it). */
const SIGNING_SECRET_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/** What an HTTP header value may hold (Node refuses anything else when sending). */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

const schema = z
  .strictObject({
    url: celSchema().meta({ description: 'CEL giving the https URL to POST to.' }),
    body: z
      .union([
        // eslint-disable-next-line no-control-regex -- field names: 1 to 128 characters, no control characters
        z.record(z.string().regex(/^[^\u0000-\u001f]{1,128}$/), celSchema()).meta({ maxProperties: MAX_WEBHOOK_BODY_FIELDS }),
        celSchema(),
      ])
      .meta({ description: 'Field name → CEL expression, or one CEL expression giving a map.' }),
    headers: z
      .record(z.string().regex(HEADER_NAME), celSchema())
      .nullish()
      .meta({
        maxProperties: MAX_WEBHOOK_HEADERS,
        description:
          'Header name → CEL expression; framing and hop-by-hop headers are refused. A header value may read named secrets ' +
          "(`'Bearer ' + secrets.crm_token`): such an expression reads only secrets.<name> and literals, and is evaluated by the worker at request time.",
      }),
    timeoutMs: z.number().int().min(1).max(CALL_WEBHOOK_MAX_TIMEOUT_MS).nullish().meta({ description: 'Default 10000.' }),
    signature: z
      .strictObject({ secret: z.string().regex(SIGNING_SECRET_NAME).meta({ description: 'The named outbound secret that signs (it must exist).' }) })
      .nullish()
      .meta({
        description:
          'Sign each request the Standard Webhooks way: webhook-timestamp and webhook-signature (v1, HMAC-SHA256 over "{webhook-id}.{webhook-timestamp}.{body}"), keyed by the named secret (a whsec_ value is base64-decoded).',
      }),
  })
  .meta({ id: 'CallWebhookStep', description: 'An outbound HTTPS POST of a JSON body built with CEL.' });

type Body = z.output<typeof schema>;

/** A body field name: 1 to 128 characters, no control characters (U+0000 to U+001F). */
function isBodyFieldName(name: string): boolean {
  if (name.length < 1 || name.length > 128) return false;
  for (let i = 0; i < name.length; i++) if (name.charCodeAt(i) < 0x20) return false;
  return true;
}

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
  if (typeof url !== 'string' || url === '') throw new StepError(`callWebhook.url: must evaluate to a non-empty string, got ${describeValue(url)}`);
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
    if (typeof value !== 'string') throw new StepError(`callWebhook.headers.${name}: must evaluate to a string, got ${describeValue(value)}`);
    if (!HEADER_VALUE.test(value)) throw new StepError(`callWebhook.headers.${name}: must contain only tabs and printable Latin-1 characters (no line breaks)`);
    headers[name] = value;
  }
  const timeoutMs = Math.min(fields.timeoutMs ?? CALL_WEBHOOK_DEFAULT_TIMEOUT_MS, CALL_WEBHOOK_MAX_TIMEOUT_MS);
  return { url, body, headers, timeoutMs };
}

export const callWebhook = defineStep({
  kind: 'callWebhook',
  retryable: true,
  schema,
  validate(body, check) {
    const { at } = check;
    unknownFields(body, ['url', 'body', 'headers', 'timeoutMs', 'signature'], check);
    const result: Record<string, unknown> = { url: check.cel(body.url, `${at}.url`) };
    const payload = body.body;
    if (typeof payload === 'string') {
      result.body = check.cel(payload, `${at}.body`);
    } else if (isObject(payload)) {
      const entries = Object.entries(payload);
      if (entries.length > MAX_WEBHOOK_BODY_FIELDS) check.violation(`${at}.body`, `at most ${MAX_WEBHOOK_BODY_FIELDS} fields`);
      const fields: Record<string, string> = {};
      for (const [name, source] of entries) {
        if (!isBodyFieldName(name)) {
          check.violation(`${at}.body.${name}`, 'field names are 1 to 128 characters without control characters');
          continue;
        }
        fields[name] = check.cel(source, `${at}.body.${name}`);
      }
      result.body = fields;
    } else {
      check.violation(`${at}.body`, 'must be a map of field name → CEL expression, or one CEL expression giving a map');
    }
    if (body.headers !== undefined && body.headers !== null) {
      if (!isObject(body.headers)) {
        check.violation(`${at}.headers`, 'must be a map of header name → CEL expression');
      } else {
        const entries = Object.entries(body.headers);
        if (entries.length > MAX_WEBHOOK_HEADERS) check.violation(`${at}.headers`, `at most ${MAX_WEBHOOK_HEADERS} headers`);
        const headers: Record<string, string> = {};
        const seen = new Set<string>();
        for (const [name, source] of entries) {
          const lower = name.toLowerCase();
          if (!HEADER_NAME.test(name)) check.violation(`${at}.headers.${name}`, 'not a valid header name');
          else if (CALL_WEBHOOK_RESERVED_HEADERS.includes(lower) || CALL_WEBHOOK_SERVICE_HEADERS.includes(lower) || lower.startsWith('proxy-')) {
            check.violation(`${at}.headers.${name}`, 'the service sets this header itself');
          }
          else if (seen.has(lower)) check.violation(`${at}.headers.${name}`, 'header names are case-insensitive; this one is given twice');
          else if (typeof source === 'string' && readsSecrets(source)) headers[name] = check.secretCel(source, `${at}.headers.${name}`);
          else headers[name] = check.cel(source, `${at}.headers.${name}`);
          seen.add(lower);
        }
        result.headers = headers;
      }
    }
    if (body.timeoutMs !== undefined && body.timeoutMs !== null) {
      const timeoutMs = body.timeoutMs;
      if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > CALL_WEBHOOK_MAX_TIMEOUT_MS) {
        check.violation(`${at}.timeoutMs`, `must be an integer from 1 to ${CALL_WEBHOOK_MAX_TIMEOUT_MS}`);
      } else {
        result.timeoutMs = timeoutMs;
      }
    }
    if (body.signature !== undefined && body.signature !== null) {
      const signature = body.signature;
      if (!isObject(signature) || Object.keys(signature).some((key) => key !== 'secret')) {
        check.violation(`${at}.signature`, 'must be {"secret": "<name>"}: the named secret that signs the requests');
      } else if (typeof signature.secret !== 'string' || !SIGNING_SECRET_NAME.test(signature.secret)) {
        check.violation(`${at}.signature.secret`, 'must name a secret: ^[a-z][a-z0-9_]{0,62}$');
      } else {
        result.signature = { secret: signature.secret };
      }
    }
    return result as Body;
  },
  async run(body, effects) {
    // Header values that read secrets are not evaluated here (their values would enter the
    // history): their sources go to the effect, which resolves the secrets where the request is made.
    const { plain, secret } = splitSecretHeaders(body.headers);
    const fields = Object.keys(secret).length === 0 ? body : { ...body, headers: plain };
    const values = await effects.evaluate(callWebhookExpressions(fields), 'evaluate callWebhook');
    const request = assembleCallWebhook(fields, values);
    const withSecrets = Object.keys(secret).length === 0 ? request : { ...request, secretHeaders: secret };
    return effects.callWebhook(body.signature ? { ...withSecrets, signature: { secret: body.signature.secret } } : withSecrets);
  },
});
