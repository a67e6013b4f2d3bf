/**
 * The inbound webhook receiver, POST /api/v1/webhooks/incoming/{listener_id}. One endpoint, from
 * the Node request to the answer: load shedding (429) → the intake (src/delivery/intake.ts, which
 * runs the checks in their contract order) → the answer in the one error shape, with the metrics
 * and the delivery log. It is served two ways:
 * - `webhookFastPath`, from Node's request event before Koa, for the canonical path (every
 *   delivery senders make): a refusal in a flood costs the checks and little else;
 * - `createWebhookRouter`, a Koa route, for the other spellings Koa's router accepts (a trailing
 *   slash, other letter case, a percent-encoded id).
 * Both answer the same: same endpoint, same headers, same HTTP metrics labels.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import Router from '@koa/router';
import type { AppDeps, WebhookAnswer, WebhookEndpoint } from '../context';
import { readRawBody } from '../body';
import { AppError, errorBody, reportError, toAppError, webhookStatus, type ErrorDetail } from '../errors';
import { clientAddress } from '../proxy';
import { SERVICE_HEADERS } from '../response-headers';
import type { Metrics } from '../metrics';
import type { Logger } from '../../logger';
import { DataRateWatch, WebhookAdmission, type AdmissionTicket } from '../../webhooks/admission';
import { createWebhookIntake, type IntakeOutcome } from '../../delivery/intake';
import { listenerUrl, WEBHOOK_PATH_PREFIX } from '../../domain/automations';
import * as api from '../../domain/api-schemas';
import { AUTH_METHODS, authenticatorOf } from '../../webhooks/authenticators';
import type { DocumentedOperation } from '../operation';
import { AdmissionRefusal } from '../../errors';
import { withServerSpan } from '../../tracing/spans';
import type { Span } from '@opentelemetry/api';

/**
 * The receiver's declaration: what the OpenAPI document says of it. It is served by this module
 * (the fast path and `createWebhookRouter`), not by `mountOperations`: its answer is built before
 * Koa, and its route label (`WEBHOOK_ROUTE`) predates the operation table.
 */
export const WEBHOOK_OPERATION: DocumentedOperation = {
  method: 'post',
  path: `${WEBHOOK_PATH_PREFIX}{listener_id}`,
  operationId: 'webhooks.receive',
  tag: 'Inbound Webhooks',
  access: 'public',
  summary: 'Receive an inbound webhook event and run the linked automation.',
  description:
    `Authenticated by the listener’s method: ${AUTH_METHODS.map((method) => authenticatorOf(method).summary).join(', or ')}. ` +
    'Checks run in this order, the first failure answers: listener (404), ' +
    'source address (403), body size (413), headers (400), signature or JWT (401), JSON (400), duplicate event id (409).',
  headers: [
    {
      name: 'Webhook-Timestamp',
      required: true,
      description: 'Current Unix time in seconds; must be within 300 s of the service’s clock.',
      schema: { type: 'string', pattern: '^[0-9]{1,12}$' },
    },
    {
      name: 'Webhook-Event-Id',
      required: true,
      description: 'UUID v4 identifying the event; idempotency key (compared case-insensitively).',
      schema: { type: 'string', format: 'uuid' },
    },
    ...AUTH_METHODS.map((method) => ({
      name: authenticatorOf(method).credential.name,
      required: false,
      description: authenticatorOf(method).credential.description,
    })),
  ],
  body: {
    schema: api.WebhookPayload,
    required: true,
    validation: 'handler',
    description: 'Any JSON value, at most 64 KiB; the automation reads it as ctx.trigger.',
  },
  ok: api.WebhookAccepted,
  errors: [400, 401, 403, 404, 408, 409, 413, 429, 503],
  statusText: {
    200: 'Accepted; the automation run is durably recorded.',
    400: 'Missing header, Content-Type not application/json, Webhook-Timestamp more than 300 s from now, Webhook-Event-Id not a UUID v4, or body not valid JSON.',
    401: 'Invalid HMAC signature; JWT verification failed (JWKS unreachable, unknown kid, missing or wrong claim), expired JWT; missing Authorization header.',
    403: 'Source address not in the listener’s allowed CIDR list.',
    404: 'Unknown listener, automation not published, or trigger not enabled.',
    408: 'The body did not arrive in time.',
    409: 'Duplicate event id for this listener (within 7 days), whatever its first delivery became (a run, filtered); details carry the original executionId. Idempotency protection, not a fault.',
    413: 'Body over 65,536 bytes.',
    429: "Too many deliveries in progress, the automation's rate limit is exhausted for the event's key, or the queue of the event's concurrency key is full; retry after Retry-After seconds.",
    503: 'The workflow engine is unavailable; the event was not accepted, retry later.',
  },
};

/** The delivery's server span: its name and route are the path's template, never the listener id. */
const WEBHOOK_SPAN_NAME = `POST ${WEBHOOK_PATH_PREFIX}{listener_id}`;
const WEBHOOK_SPAN_ATTRIBUTES = {
  'http.request.method': 'POST',
  'http.route': `${WEBHOOK_PATH_PREFIX}{listener_id}`,
} as const;

/** An event id the span may carry: a UUID (the header's checked form), never another header value. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Seconds a sender is asked to wait after a 503 before retrying the same event. */
const RETRY_AFTER_SECONDS = '5';
/** Time a sender has to deliver the whole body once the headers arrived (slow-body defence). */
const WEBHOOK_BODY_TIMEOUT_MS = 10_000;
/** The route label of the HTTP metrics (Koa's matched route for the same path). */
export const WEBHOOK_ROUTE = `${WEBHOOK_PATH_PREFIX}:listenerId`;

/** The HTTP headers a refusal carries besides the error body. */
function refusalHeaders(status: number): Record<string, string> {
  if (status === 401) return { 'WWW-Authenticate': 'Bearer' };
  if (status === 413) return { Connection: 'close' };
  if (status === 429) return { 'Retry-After': '1' };
  if (status === 503) return { 'Retry-After': RETRY_AFTER_SECONDS };
  return {};
}

/** A refusal for load: 429 with Retry-After; at the global cap the connection is closed too. */
function loadRefusal(refusal: AdmissionRefusal): WebhookAnswer {
  const error = toAppError(refusal);
  return { status: error.status, headers: error.headers, body: error.toBody() };
}

/** The body within the limit, the deadline and the minimum data rate; undefined when too large. */
async function readWebhookBody(
  req: IncomingMessage,
  maxBytes: number,
  limits: AppDeps['config']['webhookAdmission'],
): Promise<Buffer | undefined> {
  try {
    const rate = limits.minBytesPerSecond > 0 ? new DataRateWatch(limits.minBytesPerSecond, limits.graceMs) : undefined;
    return await readRawBody(req, maxBytes, { timeoutMs: WEBHOOK_BODY_TIMEOUT_MS, rate });
  } catch (err) {
    if (err instanceof AppError && err.status === 413) return undefined;
    throw err; // a 408 for a late or trickling body, or the client going away
  }
}

/** An ErrorInfo detail of the one error shape (google.rpc.ErrorInfo). */
function reasonDetail(reason: string, metadata?: Record<string, string>): ErrorDetail {
  return {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: reason.toUpperCase(),
    domain: 'webhooks',
    ...(metadata ? { metadata } : {}),
  };
}

/** The refusal's answer: status, machine reason (metrics label, delivery log), message and details. */
function refusalOf(outcome: Exclude<IntakeOutcome, { verdict: 'accepted' | 'filtered' }>): {
  status: number;
  reason: string;
  message: string;
  details: ErrorDetail[];
  retryAfterSeconds?: number;
} {
  switch (outcome.verdict) {
    case 'rejected': {
      const { reason, message } = outcome.rejection;
      const status = webhookStatus(reason);
      return { status, reason, message, details: status === 413 ? [] : [reasonDetail(reason)] };
    }
    case 'busy':
      return { status: 429, reason: 'listener_busy', message: outcome.refusal.message, details: [] };
    case 'duplicate':
      return {
        status: 409,
        reason: 'duplicate_event',
        message: 'event id already received by this listener',
        details: [
          reasonDetail(
            'duplicate_event',
            outcome.executionId === null ? { filtered: 'true' } : { executionId: outcome.executionId },
          ),
        ],
      };
    case 'limited':
      return {
        status: 429,
        reason: outcome.reason,
        message: outcome.message,
        details: [reasonDetail(outcome.reason)],
        retryAfterSeconds: outcome.retryAfterSeconds,
      };
    case 'unavailable':
      // Not "rejected": a start that timed out may still have been recorded; the same event id is safe to retry.
      return {
        status: 503,
        reason: 'engine_unavailable',
        message: 'the workflow engine did not confirm the event; retry it later with the same Webhook-Event-Id',
        details: [],
      };
  }
}

type ReasonedAnswer = WebhookAnswer & { reason: string };

/**
 * The answers to constant refusals (a frozen `WebhookRejection`, made once: a wrong HMAC
 * signature), made once too and frozen: a flood of one refusal builds no answer per delivery.
 */
const CONSTANT_ANSWERS = new WeakMap<object, Readonly<ReasonedAnswer>>();

/** The HTTP answer to an intake outcome, with its metrics reason. */
export function webhookAnswer(outcome: IntakeOutcome): ReasonedAnswer {
  if (outcome.verdict === 'rejected' && Object.isFrozen(outcome.rejection)) {
    let answer = CONSTANT_ANSWERS.get(outcome.rejection);
    if (answer === undefined) CONSTANT_ANSWERS.set(outcome.rejection, (answer = deepFreeze(answerOf(outcome))));
    return answer;
  }
  return answerOf(outcome);
}

function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

function answerOf(outcome: IntakeOutcome): ReasonedAnswer {
  if (outcome.verdict === 'filtered')
    return {
      status: 200,
      reason: 'filtered',
      headers: {},
      body: { eventId: outcome.eventId, executionId: null, filtered: true },
    };
  if (outcome.verdict === 'accepted') {
    return {
      status: 200,
      reason: outcome.paused ? 'paused' : 'accepted',
      headers: {},
      body: { eventId: outcome.eventId, executionId: outcome.executionId },
    };
  }
  // A refusal is the expected answer to a bad delivery: answered here, without an exception.
  const refusal = refusalOf(outcome);
  const headers = refusalHeaders(refusal.status);
  if (refusal.retryAfterSeconds !== undefined) headers['Retry-After'] = String(refusal.retryAfterSeconds);
  return {
    status: refusal.status,
    reason: refusal.reason,
    headers,
    body: errorBody(refusal.status, refusal.message, refusal.details),
  };
}

/**
 * Builds the app's endpoint (src/compose.ts, once per app: the fast path and the Koa route share
 * it, its admission counts and its listener cache). Beyond the global in-flight cap, or the cap per
 * source address, a delivery is answered 429 before any work; the cap per listener applies once the
 * listener is known.
 */
export function createWebhookEndpoint(deps: Omit<AppDeps, 'webhookEndpoint'>): WebhookEndpoint {
  const intake = createWebhookIntake({
    db: deps.db,
    engine: deps.engine,
    secretBox: deps.secretBox,
    config: deps.config,
    logger: deps.logger,
    listenerUrl: (listenerId) => listenerUrl(deps.config.baseUrl, listenerId),
    laneQueueLimit: deps.config.laneQueueLimit,
  });
  const { metrics } = deps;
  const limits = deps.config.webhookAdmission;
  const admission = new WebhookAdmission({
    global: deps.config.webhookMaxInFlight,
    perListener: Math.min(limits.perListener, deps.config.webhookMaxInFlight),
    perSource: Math.min(limits.perSource, deps.config.webhookMaxInFlight),
  });
  metrics.watchWebhooksInFlight(() => admission.inFlight);

  return function answerDelivery(listenerId, req, path) {
    // The delivery's server span continues the sender's W3C trace context (src/tracing).
    return withServerSpan(WEBHOOK_SPAN_NAME, req.headers, WEBHOOK_SPAN_ATTRIBUTES, (span) =>
      answer(listenerId, req, path, span),
    );
  };

  async function answer(
    listenerId: string,
    req: IncomingMessage,
    path: string,
    span: Span | undefined,
  ): Promise<WebhookAnswer> {
    const source = clientAddress(req, deps.config.trustProxy);
    let ticket: AdmissionTicket;
    try {
      ticket = admission.enter(source);
    } catch (err) {
      if (!(err instanceof AdmissionRefusal)) throw err;
      const reason = err.scope === 'source' ? 'source_busy' : 'overloaded';
      metrics.recordWebhook(429, reason);
      span?.setAttributes({ 'http.response.status_code': 429, 'webhook.outcome': reason });
      return loadRefusal(err);
    }
    const started = process.hrtime.bigint();
    const now = new Date((deps.clock ?? Date.now)());
    let status = 500;
    let reason = 'error';
    let facts: IntakeOutcome['facts'] | undefined;
    try {
      // checks → decision → start: each stage answers a value; only the body is read here.
      const opened = await intake.open({
        listenerId,
        sourceAddress: source,
        headers: req.headers,
        now,
        bodyDeadlineMs: WEBHOOK_BODY_TIMEOUT_MS,
        ticket,
      });
      facts = opened.facts;
      let outcome: IntakeOutcome;
      if (opened.verdict !== 'read-body') outcome = opened;
      else {
        const decided = await intake.decide(opened, await readWebhookBody(req, opened.maxBytes, limits));
        facts = decided.facts;
        outcome = decided.verdict === 'start' ? await intake.start(decided) : decided;
      }
      facts = outcome.facts;
      const answer = webhookAnswer(outcome);
      status = answer.status;
      reason = answer.reason;
      return answer;
    } catch (err) {
      // Anything but a refusal (a 408 body timeout, a store that is unavailable, a 500) counts as
      // 'error', with the status it is answered with.
      const error = reportError(err, deps.logger, { method: 'POST', path });
      status = error.status;
      return { status, headers: error.headers, body: error.toBody() };
    } finally {
      ticket.release();
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.recordWebhook(status, reason, seconds);
      span?.setAttributes({
        'http.response.status_code': status,
        'webhook.outcome': reason,
        ...(facts?.automationId !== undefined ? { 'automation.id': facts.automationId } : {}),
        ...(facts?.eventId && UUID.test(facts.eventId) ? { 'webhook.event_id': facts.eventId } : {}),
      });
      // Deliveries to an unknown listener are not logged: they belong to no automation.
      if (facts?.automationId !== undefined) {
        deps.deliveryLog?.record({
          eventId: facts.eventId,
          executionId: facts.executionId,
          automationId: facts.automationId,
          listenerId,
          receivedAt: now,
          status,
          reason,
          sourceAddress: source,
          latencyMs: seconds * 1000,
        });
      }
    }
  }
}

/** The service's headers and the JSON content type Koa gives a JSON body. */
const ANSWER_HEADERS = { ...SERVICE_HEADERS, 'Content-Type': 'application/json; charset=utf-8' };

/** The canonical delivery path: the prefix, a listener id's characters, then the end or a query. */
const CANONICAL_PATH = /^\/api\/v1\/webhooks\/incoming\/([A-Za-z0-9_-]+)(?:\?|$)/;

/**
 * A Node request listener that answers deliveries to the canonical path without Koa and returns
 * true; for any other request it does nothing and returns false (the caller hands it to Koa).
 * Records the same HTTP metrics as the app's first middleware.
 */
export function webhookFastPath(
  endpoint: WebhookEndpoint,
  metrics: Metrics,
  logger: Logger,
): (req: IncomingMessage, res: ServerResponse) => boolean {
  return function serveWebhook(req, res) {
    if (req.method !== 'POST') return false;
    const match = CANONICAL_PATH.exec(req.url ?? '');
    if (!match) return false;
    const started = process.hrtime.bigint();
    const listenerId = match[1]!;
    const path = WEBHOOK_PATH_PREFIX + listenerId;
    endpoint(listenerId, req, path).then(
      (answer) => sendAnswer(res, answer, started, metrics),
      (err: unknown) => {
        const error = reportError(err, logger, { method: 'POST', path });
        sendAnswer(res, { status: error.status, headers: error.headers, body: error.toBody() }, started, metrics);
      },
    );
    return true;
  };
}

/** An answer as it goes on the wire: its headers and its serialised body. */
interface WireAnswer {
  headers: Record<string, string>;
  body: string;
}

function wireAnswer(answer: WebhookAnswer): WireAnswer {
  const body = JSON.stringify(answer.body);
  return { headers: { ...ANSWER_HEADERS, 'Content-Length': String(Buffer.byteLength(body)), ...answer.headers }, body };
}

/** The wire form of the constant answers (frozen), serialised once. */
const CONSTANT_WIRE_ANSWERS = new WeakMap<WebhookAnswer, WireAnswer>();

/** Writes the answer (unless the client went away) and records the HTTP metrics. */
function sendAnswer(res: ServerResponse, answer: WebhookAnswer, started: bigint, metrics: Metrics): void {
  metrics.recordHttp('POST', WEBHOOK_ROUTE, answer.status, started);
  if (res.headersSent || res.destroyed) return;
  let wire: WireAnswer | undefined;
  if (Object.isFrozen(answer)) {
    wire = CONSTANT_WIRE_ANSWERS.get(answer);
    if (wire === undefined) CONSTANT_WIRE_ANSWERS.set(answer, (wire = wireAnswer(answer)));
  } else wire = wireAnswer(answer);
  res.writeHead(answer.status, wire.headers);
  res.end(wire.body);
}

/** The Koa route of the app's endpoint, for the spellings of the path the fast path leaves to Koa. */
export function createWebhookRouter(deps: AppDeps): Router {
  const endpoint = deps.webhookEndpoint;
  const router = new Router();
  router.post(WEBHOOK_ROUTE, async (ctx) => {
    const answer = await endpoint(ctx.params.listenerId!, ctx.req, ctx.path);
    ctx.status = answer.status;
    for (const [name, value] of Object.entries(answer.headers)) ctx.set(name, value);
    ctx.body = answer.body;
  });
  return router;
}
