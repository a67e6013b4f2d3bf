/**
 * The callWebhook activity: one outbound POST of a JSON body, guarded like the JWKS fetch against
 * server-side request forgery. https only, no credentials in the URL, no redirects followed, every
 * resolved address checked at connect time (`guardedLookup`) and IP-literal hosts checked directly,
 * an overall deadline and a response size cap. `allowPrivate` (ALLOW_PRIVATE_OUTBOUND=true, for
 * development and tests) allows `http://` and loopback/private addresses; link-local, metadata
 * and reserved addresses stay refused, and the other rules stay.
 *
 * Failures say whether a retry may help: 5xx, 429 and network errors are retryable (the step's
 * retry policy decides how often); a refused URL, any other 4xx, a redirect and an oversized
 * response are not. Failure messages name the URL's origin only (scheme, host, port: a path or
 * query may carry a token) and the status code, never the response body (a target may echo
 * credentials back).
 *
 * Header values that read named secrets (`'Bearer ' + secrets.crm_token`) arrive as CEL source
 * (`secretHeaders`): this activity reads the secrets from the store, opens them with the secret
 * box and evaluates the expression here, so a secret's value is never in the workflow's history,
 * an activity input or result, or a message. A secret that no longer exists fails the step
 * (non-retryably) naming the secret. Secret values echoed in a 2xx response are replaced by
 * `[secret]` before the response becomes the step's output.
 *
 * A request that carries secrets goes only where they are bound: the URL is checked against the
 * outbound policy, then against every secret's `allowedOrigins`, before any secret is opened or any
 * such header evaluated; a URL the delivery chose that points elsewhere fails the step without
 * retry and nothing is sent. No message, output or retry decision depends on a secret's value.
 *
 * Every request carries the call's key as `Idempotency-Key` and `webhook-id`, derived here from the
 * activity's info (the run's workflow id and run id) and the step id, so it is the same for every
 * attempt of the step in the run (src/webhooks/standard-webhooks.ts). With `signature` the request
 * is signed the Standard Webhooks way over the exact body bytes sent; the signing secret is resolved
 * with the header secrets (same store read, same checks) and never leaves this activity.
 */
import http from 'node:http';
import https from 'node:https';
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  ADDRESS_REFUSED,
  checkOutboundUrl,
  guardedLookupFor,
  MAX_URL_LENGTH,
  validateOutboundUrl,
} from '../src/outbound/policy';
import { CALL_WEBHOOK_MAX_TIMEOUT_MS, CALL_WEBHOOK_RESERVED_HEADERS, HEADER_VALUE } from '../src/steps/call-webhook';
import { evaluateSecretExpression, secretNames } from '../src/cel';
import { sealContext, type SecretBox } from '../src/crypto/secret-box';
import type { Queryable } from '../src/store/db';
import { previousSealedOutboundSecret, sealedOutboundSecrets } from '../src/store/outbound-secrets';
import { callKey, isMalformedWhsec, signingKey, standardSignature } from '../src/webhooks/standard-webhooks';
import type { CallKeyScope, CallWebhookInput, CallWebhookOutput } from '../src/contract/activities';
import { withClientSpan } from '../src/tracing/spans';
import { checkSecretOrigins } from './secret-origin-check';
import { CelEvaluationError } from '../src/errors';

/** Largest response body read, in bytes; a larger one fails the step. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;
/** Longest accepted URL: the same bound as for every outbound URL. */
export { MAX_URL_LENGTH };

/** Failure types of the callWebhook activity. */
export const CALL_WEBHOOK_REFUSED = 'CallWebhookRefused';
export const CALL_WEBHOOK_HTTP_ERROR = 'CallWebhookHttpError';
export const CALL_WEBHOOK_NETWORK_ERROR = 'CallWebhookNetworkError';
export const CALL_WEBHOOK_RESPONSE_TOO_LARGE = 'CallWebhookResponseTooLarge';
/** A header reads a secret that does not exist (deleted after the automation was published). */
export const CALL_WEBHOOK_SECRET_MISSING = 'CallWebhookSecretMissing';
export { CALL_WEBHOOK_SECRET_ORIGIN_REFUSED } from './secret-origin-check';
/**
 * This worker cannot open named secrets (no secret key, or another SECRET_KEY than the API's): a
 * deployment problem, retried under the step's policy so that a corrected worker can still succeed.
 */
export const CALL_WEBHOOK_SECRET_UNAVAILABLE = 'CallWebhookSecretUnavailable';

function secretUnavailable(message: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: CALL_WEBHOOK_SECRET_UNAVAILABLE,
    message: `callWebhook: ${message}`,
    nonRetryable: false,
  });
}

const KEPT_RESPONSE_HEADERS = [
  'content-type',
  'content-length',
  'date',
  'etag',
  'last-modified',
  'location',
  'retry-after',
  'x-request-id',
  'request-id',
];
const JSON_TYPE = /^(?:application\/(?:[\w.+-]+\+)?json|text\/json)\s*(?:;|$)/i;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

export { validateOutboundUrl };

export interface CallWebhookDeps {
  allowPrivateOutbound: boolean;
  /** Where named secrets are read, and the box that opens them; without them a header that reads a secret fails. */
  db?: Queryable;
  secretBox?: SecretBox;
}

export function createCallWebhookActivities(deps: CallWebhookDeps) {
  return {
    /** POSTs the JSON body; resolves with the 2xx response, fails (retryable or not) otherwise. */
    async callWebhook(input: CallWebhookInput): Promise<CallWebhookOutput> {
      const key = callKey(input.keysOf ?? activityRun(), input.stepId);
      const sources = input.secretHeaders ?? {};
      const signing = input.signature?.secret;
      if (Object.keys(sources).length === 0 && signing === undefined)
        return postJson(input, deps.allowPrivateOutbound, { key, signingKeys: [] });
      // The URL first, as the request will be made: the outbound policy, then (in
      // resolveSecretHeaders) the origins the secrets allow; only then is a secret opened.
      const problem = urlProblem(input.url, deps.allowPrivateOutbound);
      if (problem !== undefined) throw refused(problem);
      const resolved = await resolveSecretHeaders(sources, new URL(input.url).origin, deps, signing);
      const output = await postJson(
        { ...input, headers: { ...input.headers, ...resolved.headers } },
        deps.allowPrivateOutbound,
        {
          key,
          signingKeys: resolved.signingKeys,
        },
      );
      return redacted(output, resolved.sensitive);
    },
  };
}

/** The workflow id and run id of the run whose activity this is. */
export function activityRun(): CallKeyScope {
  let execution: { workflowId: string; runId: string } | undefined;
  try {
    execution = Context.current().info.workflowExecution;
  } catch {
    execution = undefined;
  }
  if (!execution) throw new Error('callWebhook runs as an activity of a run (or is given keysOf)');
  return { workflowId: execution.workflowId, runId: execution.runId };
}

/**
 * Evaluates the header values that read secrets, and opens the signing secret (`signing`, with the
 * previous value of a rotation still in its grace period), for a request to `origin` (a URL that
 * passed the outbound policy). In this order, none of it depending on a secret's value: the
 * expressions' form (the closed grammar of src/cel/secret-form.ts) and the names they read; that
 * every secret read, the signing secret included, exists and allows `origin`
 * (src/domain/secret-origins.ts; otherwise the step fails for good and nothing is sent); only then
 * are the secrets opened and the expressions evaluated. Messages name headers, secrets and the
 * origin, never a value, and are the same whatever the values are.
 */
async function resolveSecretHeaders(
  sources: Record<string, string>,
  origin: string,
  deps: CallWebhookDeps,
  signing?: string,
): Promise<{ headers: Record<string, string>; sensitive: string[]; signingKeys: Buffer[] }> {
  const namesOf: Record<string, string[]> = {};
  for (const [header, source] of Object.entries(sources)) {
    try {
      namesOf[header] = secretNames(source);
    } catch (err) {
      if (err instanceof CelEvaluationError) throw refused(`headers.${header}: ${err.message}`);
      throw err;
    }
  }
  if (!deps.db || !deps.secretBox)
    throw secretUnavailable('this worker has no access to named secrets (no store or secret key)');
  const secretBox = deps.secretBox;
  const wanted = [...new Set([...Object.values(namesOf).flat(), ...(signing === undefined ? [] : [signing])])];
  await checkSecretOrigins(deps.db, origin, [
    ...Object.entries(namesOf).flatMap(([header, names]) =>
      names.map((name) => ({ name, field: `headers.${header}` })),
    ),
    ...(signing === undefined ? [] : [{ name: signing, field: 'signature.secret' }]),
  ]);
  const sealed = await sealedOutboundSecrets(deps.db, wanted);
  const values: Record<string, string> = {};
  const open = (name: string, field: string, details: Record<string, string>): void => {
    if (name in values) return;
    values[name] = openSecret(sealed, secretBox, name, field, details);
  };
  for (const [header, names] of Object.entries(namesOf)) {
    for (const name of names) open(name, `headers.${header}`, { header });
  }
  const signingKeys: Buffer[] = [];
  const signingValues: string[] = [];
  if (signing !== undefined) {
    open(signing, 'signature.secret', { field: 'signature.secret' });
    signingValues.push(values[signing]!);
    // During a rotation's grace period the receiver may still hold the previous value: sign with both.
    const previous = await previousSealedOutboundSecret(deps.db, signing);
    if (previous !== undefined) {
      try {
        signingValues.push(secretBox.open(previous, sealContext('outbound_secret', signing)));
      } catch {
        throw secretUnavailable(
          `signature.secret: secret "${signing}" cannot be opened with this worker's SECRET_KEY (is it the API's?)`,
        );
      }
    }
    for (const value of signingValues) {
      if (isMalformedWhsec(value))
        throw refused(`signature.secret: secret "${signing}" starts with whsec_ but is not base64 after it`);
      signingKeys.push(signingKey(value));
    }
  }
  const headers: Record<string, string> = {};
  for (const [header, source] of Object.entries(sources)) {
    // The closed grammar makes every such expression a string made of literals and values that
    // were checked when they were stored: these failures cannot depend on a value, and their
    // messages are fixed texts (a CEL error's text or code could reflect an operand).
    let value: unknown;
    try {
      value = evaluateSecretExpression(source, values);
    } catch (err) {
      if (err instanceof CelEvaluationError)
        throw refused(`headers.${header}: the expression over secrets cannot be evaluated`);
      throw err;
    }
    if (typeof value !== 'string' || !HEADER_VALUE.test(value))
      throw refused(`headers.${header}: the expression over secrets does not give a header value`);
    headers[header] = value;
  }
  // What a response must not carry into the step's output: the values and the headers made of them.
  const sensitive = [...new Set([...Object.values(values), ...Object.values(headers), ...signingValues])].filter(
    (text) => text.length >= MIN_REDACTED_LENGTH,
  );
  sensitive.sort((a, b) => b.length - a.length);
  return { headers, sensitive, signingKeys };
}

/**
 * Opens the named secret from `sealed` (read from the store). Fails without retry when it does not
 * exist, with retry when this worker cannot open it; messages name `field` and the secret only.
 */
export function openSecret(
  sealed: ReadonlyMap<string, string>,
  secretBox: SecretBox,
  name: string,
  field: string,
  details: Record<string, string> = {},
): string {
  const stored = sealed.get(name);
  if (stored === undefined) {
    throw ApplicationFailure.create({
      type: CALL_WEBHOOK_SECRET_MISSING,
      message: `callWebhook: ${field}: secret "${name}" does not exist (deleted after the automation was published?)`,
      nonRetryable: true,
      details: [{ secret: name, ...details }],
    });
  }
  try {
    return secretBox.open(stored, sealContext('outbound_secret', name));
  } catch {
    throw secretUnavailable(
      `${field}: secret "${name}" cannot be opened with this worker's SECRET_KEY (is it the API's?)`,
    );
  }
}

/** Shorter values are not searched for in responses (they would match by chance). */
const MIN_REDACTED_LENGTH = 4;

/** The output with every occurrence of a sensitive text in its strings (and keys) replaced by `[secret]`. */
function redacted(output: CallWebhookOutput, sensitive: string[]): CallWebhookOutput {
  if (sensitive.length === 0) return output;
  const scrub = (text: string): string => sensitive.reduce((acc, secret) => acc.split(secret).join('[secret]'), text);
  const walk = (value: unknown): unknown => {
    if (typeof value === 'string') return scrub(value);
    if (Array.isArray(value)) return value.map(walk);
    if (value !== null && typeof value === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(value)) out[scrub(key)] = walk(child);
      return out;
    }
    return value;
  };
  return walk(output) as CallWebhookOutput;
}

export function refused(message: string, details: Record<string, unknown> = {}): ApplicationFailure {
  return ApplicationFailure.create({
    type: CALL_WEBHOOK_REFUSED,
    message: `callWebhook: ${message}`,
    nonRetryable: true,
    details: [details],
  });
}

/** `scheme://host:port` only: a path, query or fragment may carry a token. For messages. */
function shown(target: URL): string {
  return target.origin;
}

/** Why the outbound policy refuses `url` (https, no credentials, no literal non-public address...), or undefined. */
export function urlProblem(url: string, allowPrivate: boolean): string | undefined {
  // The URL is not quoted in the message: it may carry a token.
  return checkOutboundUrl(url, allowPrivate ? 'private' : 'public', 'URL', 'URL is not a valid absolute URL');
}

/** What the service adds to every request: the call's key, and the keys that sign it (none: unsigned). */
export interface CallIdentity {
  key: string;
  signingKeys: Buffer[];
}

/** One guarded POST of `input.body` as JSON to `input.url` (the outbound policy checked again here). */
export function postJson(
  input: Omit<CallWebhookInput, 'stepId'>,
  allowPrivate: boolean,
  identity: CallIdentity,
): Promise<CallWebhookOutput> {
  const problem = urlProblem(input.url, allowPrivate);
  if (problem !== undefined) return Promise.reject(refused(problem));
  const target = new URL(input.url);
  const timeoutMs = Math.min(Math.max(1, Math.floor(input.timeoutMs)), CALL_WEBHOOK_MAX_TIMEOUT_MS);
  const headers: Record<string, string> = {
    'user-agent': 'automation-governance-webhook',
    accept: 'application/json, */*;q=0.5',
  };
  for (const [name, value] of Object.entries(input.headers)) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name) || CALL_WEBHOOK_RESERVED_HEADERS.includes(lower) || lower.startsWith('proxy-')) {
      return Promise.reject(refused(`header ${JSON.stringify(name)} may not be set`));
    }
    if (!HEADER_VALUE.test(value))
      return Promise.reject(refused(`header ${JSON.stringify(name)} holds characters a header cannot carry`));
    headers[lower] = value;
  }
  let payload: Buffer;
  try {
    payload = Buffer.from(JSON.stringify(input.body), 'utf8');
  } catch (err) {
    return Promise.reject(refused(`the body cannot be serialised as JSON: ${(err as Error).message}`));
  }
  headers['content-type'] = 'application/json';
  headers['content-length'] = String(payload.length);
  // Set last: the service's values win over a step's (validation refuses these names on save).
  Object.assign(headers, outboundIdentityHeaders(identity, payload));
  const where = `POST ${shown(target)}`;

  // A client span per call (src/tracing); its W3C context goes out with the request, set last.
  return withClientSpan('POST', target, (traceHeaders, responded) =>
    send(target, { ...headers, ...traceHeaders }, payload, where, timeoutMs, allowPrivate, responded),
  );
}

/** Sends the prepared POST and reads its answer within the limits. */
function send(
  target: URL,
  headers: Record<string, string>,
  payload: Buffer,
  where: string,
  timeoutMs: number,
  allowPrivate: boolean,
  responded: (status: number) => void,
): Promise<CallWebhookOutput> {
  const request = target.protocol === 'https:' ? https.request : http.request;
  return new Promise<CallWebhookOutput>((resolve, reject) => {
    let settled = false;
    const finish = (error: ApplicationFailure | undefined, value?: CallWebhookOutput): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (error) {
        req.destroy();
        reject(error);
      } else {
        resolve(value as CallWebhookOutput);
      }
    };
    const network = (message: string): ApplicationFailure =>
      ApplicationFailure.create({
        type: CALL_WEBHOOK_NETWORK_ERROR,
        message: `callWebhook: ${where}: ${message}`,
        nonRetryable: false,
      });

    const options: http.RequestOptions = {
      method: 'POST',
      agent: false,
      headers,
      lookup: guardedLookupFor(allowPrivate ? 'private' : 'public'),
    };
    let req: http.ClientRequest;
    try {
      req = request(target, options, onResponse);
    } catch (err) {
      settled = true;
      reject(refused(`the request cannot be sent: ${(err as Error).message}`));
      return;
    }
    function onResponse(res: http.IncomingMessage): void {
      const status = res.statusCode ?? 0;
      responded(status);
      const declared = Number(res.headers['content-length']);
      if (Number.isFinite(declared) && declared > MAX_RESPONSE_BYTES) {
        finish(tooLarge(where));
        return;
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (chunk: Buffer) => {
        size += chunk.length;
        if (size > MAX_RESPONSE_BYTES) {
          finish(tooLarge(where));
          return;
        }
        chunks.push(chunk);
      });
      res.on('error', () => finish(network('the response was interrupted')));
      res.on('aborted', () => finish(network('the response was interrupted')));
      res.on('end', () => {
        if (settled) return;
        const text = new TextDecoder('utf-8').decode(Buffer.concat(chunks, size));
        const kept = keptHeaders(res.headers);
        if (status >= 200 && status < 300) {
          finish(undefined, { status, headers: kept, body: parseBody(text, kept['content-type']) });
          return;
        }
        finish(httpFailure(where, status, kept['retry-after']));
      });
    }
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === ADDRESS_REFUSED) {
        const what = allowPrivate
          ? 'a link-local, metadata or other reserved'
          : 'a loopback, private, link-local or other non-public';
        finish(refused(`${shown(target)}: the host resolves to ${what} address`));
      } else {
        finish(network(`the request failed (${err.code ?? err.message})`));
      }
    });
    const timer = setTimeout(() => finish(network(`no complete response within ${timeoutMs} ms`)), timeoutMs);
    req.end(payload);
  });
}

/** `Idempotency-Key` and `webhook-id`; when signed, `webhook-timestamp` (now) and `webhook-signature` over `payload`. */
function outboundIdentityHeaders(identity: CallIdentity, payload: Buffer): Record<string, string> {
  const headers: Record<string, string> = { 'idempotency-key': identity.key, 'webhook-id': identity.key };
  if (identity.signingKeys.length > 0) {
    const timestamp = String(Math.floor(Date.now() / 1000));
    headers['webhook-timestamp'] = timestamp;
    headers['webhook-signature'] = standardSignature(identity.signingKeys, identity.key, timestamp, payload);
  }
  return headers;
}

function tooLarge(where: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: CALL_WEBHOOK_RESPONSE_TOO_LARGE,
    message: `callWebhook: ${where}: the response exceeds ${MAX_RESPONSE_BYTES} bytes`,
    nonRetryable: true,
  });
}

/**
 * Non-2xx: 5xx and 429 may succeed later (honouring a short Retry-After); redirects and other 4xx
 * will not. The message carries the status only, never the body (a target may echo credentials).
 */
function httpFailure(where: string, status: number, retryAfter: string | undefined): ApplicationFailure {
  const retryable = status >= 500 || status === 429;
  const reason = status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
  const seconds = retryAfter !== undefined && /^\d{1,3}$/.test(retryAfter) ? Number(retryAfter) : undefined;
  return ApplicationFailure.create({
    type: CALL_WEBHOOK_HTTP_ERROR,
    message: `callWebhook: ${where} answered HTTP ${status}${reason}`,
    nonRetryable: !retryable,
    details: [{ status }],
    ...(retryable && seconds !== undefined && seconds > 0 && seconds <= 60 ? { nextRetryDelay: seconds * 1000 } : {}),
  });
}

function keptHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of KEPT_RESPONSE_HEADERS) {
    const value = headers[name];
    if (typeof value === 'string') out[name] = value.slice(0, 512);
  }
  return out;
}

function parseBody(text: string, contentType: string | undefined): unknown {
  if (contentType !== undefined && JSON_TYPE.test(contentType) && text.trim() !== '') {
    try {
      return JSON.parse(text) as unknown;
    } catch {
      return text;
    }
  }
  return text;
}
