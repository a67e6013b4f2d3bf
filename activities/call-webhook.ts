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
 * response are not.
 */
import http from 'node:http';
import https from 'node:https';
import { ApplicationFailure } from '@temporalio/common';
import { ADDRESS_REFUSED, guardedLookupFor, MAX_URL_LENGTH, validateOutboundUrl } from '../src/webhooks/jwks';
import { CALL_WEBHOOK_MAX_TIMEOUT_MS, CALL_WEBHOOK_RESERVED_HEADERS, HEADER_VALUE } from '../src/steps/call-webhook';

export interface CallWebhookInput {
  stepId: string;
  url: string;
  /** The JSON body, sent as `application/json`. */
  body: Record<string, unknown>;
  headers: Record<string, string>;
  timeoutMs: number;
}

export interface CallWebhookOutput {
  status: number;
  /** A few response headers that are safe to keep (content-type, date, etag, request ids, ...). */
  headers: Record<string, string>;
  /** Parsed JSON when the response says it is JSON and parses; otherwise the text. */
  body: unknown;
}

/** Largest response body read, in bytes; a larger one fails the step. */
export const MAX_RESPONSE_BYTES = 1024 * 1024;
/** Longest accepted URL: the same bound as for every outbound URL. */
export { MAX_URL_LENGTH };

/** Failure types of the callWebhook activity. */
export const CALL_WEBHOOK_REFUSED = 'CallWebhookRefused';
export const CALL_WEBHOOK_HTTP_ERROR = 'CallWebhookHttpError';
export const CALL_WEBHOOK_NETWORK_ERROR = 'CallWebhookNetworkError';
export const CALL_WEBHOOK_RESPONSE_TOO_LARGE = 'CallWebhookResponseTooLarge';

const KEPT_RESPONSE_HEADERS = ['content-type', 'content-length', 'date', 'etag', 'last-modified', 'location', 'retry-after', 'x-request-id', 'request-id'];
const JSON_TYPE = /^(?:application\/(?:[\w.+-]+\+)?json|text\/json)\s*(?:;|$)/i;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

export { validateOutboundUrl };


export function createCallWebhookActivities(deps: { allowPrivateOutbound: boolean }) {
  return {
    /** POSTs the JSON body; resolves with the 2xx response, fails (retryable or not) otherwise. */
    async callWebhook(input: CallWebhookInput): Promise<CallWebhookOutput> {
      return callWebhook(input, deps.allowPrivateOutbound);
    },
  };
}

function refused(message: string, details: Record<string, unknown> = {}): ApplicationFailure {
  return ApplicationFailure.create({ type: CALL_WEBHOOK_REFUSED, message: `callWebhook: ${message}`, nonRetryable: true, details: [details] });
}

/** `https://host:port/path` without query or fragment (they may carry secrets), for messages. */
function shown(target: URL): string {
  return `${target.origin}${target.pathname}`;
}

function callWebhook(input: CallWebhookInput, allowPrivate: boolean): Promise<CallWebhookOutput> {
  const problem = validateOutboundUrl(input.url, allowPrivate);
  if (problem !== undefined) return Promise.reject(refused(problem));
  const target = new URL(input.url);
  const timeoutMs = Math.min(Math.max(1, Math.floor(input.timeoutMs)), CALL_WEBHOOK_MAX_TIMEOUT_MS);
  const headers: Record<string, string> = { 'user-agent': 'automation-governance-webhook', accept: 'application/json, */*;q=0.5' };
  for (const [name, value] of Object.entries(input.headers)) {
    const lower = name.toLowerCase();
    if (!HEADER_NAME.test(name) || CALL_WEBHOOK_RESERVED_HEADERS.includes(lower) || lower.startsWith('proxy-')) {
      return Promise.reject(refused(`header ${JSON.stringify(name)} may not be set`));
    }
    if (!HEADER_VALUE.test(value)) return Promise.reject(refused(`header ${JSON.stringify(name)} holds characters a header cannot carry`));
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
  const request = target.protocol === 'https:' ? https.request : http.request;
  const where = `POST ${shown(target)}`;

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
      ApplicationFailure.create({ type: CALL_WEBHOOK_NETWORK_ERROR, message: `callWebhook: ${where}: ${message}`, nonRetryable: false });

    const options: http.RequestOptions = { method: 'POST', agent: false, headers, lookup: guardedLookupFor(allowPrivate ? 'private' : 'public') };
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
        finish(httpFailure(where, status, text, kept['retry-after']));
      });
    }
    req.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === ADDRESS_REFUSED) {
        const what = allowPrivate ? 'a link-local, metadata or other reserved' : 'a loopback, private, link-local or other non-public';
        finish(refused(`${shown(target)}: the host resolves to ${what} address`));
      } else {
        finish(network(`the request failed (${err.code ?? err.message})`));
      }
    });
    const timer = setTimeout(() => finish(network(`no complete response within ${timeoutMs} ms`)), timeoutMs);
    req.end(payload);
  });
}

function tooLarge(where: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: CALL_WEBHOOK_RESPONSE_TOO_LARGE,
    message: `callWebhook: ${where}: the response exceeds ${MAX_RESPONSE_BYTES} bytes`,
    nonRetryable: true,
  });
}

/** Non-2xx: 5xx and 429 may succeed later (honouring a short Retry-After); redirects and other 4xx will not. */
function httpFailure(where: string, status: number, text: string, retryAfter: string | undefined): ApplicationFailure {
  const retryable = status >= 500 || status === 429;
  const snippet = text.replace(/\s+/g, ' ').trim().slice(0, 200);
  const reason = status >= 300 && status < 400 ? ' (redirects are not followed)' : '';
  const seconds = retryAfter !== undefined && /^\d{1,3}$/.test(retryAfter) ? Number(retryAfter) : undefined;
  return ApplicationFailure.create({
    type: CALL_WEBHOOK_HTTP_ERROR,
    message: `callWebhook: ${where} answered HTTP ${status}${reason}${snippet ? `: ${snippet}` : ''}`,
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
