/**
 * The inbound webhook receiver, POST /api/v1/webhooks/incoming/{listener_id}. Checks run in the
 * order of API.md, the first failure answers: listener (404) → source address (403) → body size,
 * enforced while reading (413) → headers (400) → HMAC or JWT (401) → JSON (400) → duplicate (409).
 * 200 only after Temporal has durably accepted the run; 503 with Retry-After when it cannot.
 * Admission (src/webhooks/admission.ts): global, per-listener and per-source in-flight caps (429),
 * a header pre-check before the body where the contract's order allows it, a minimum body rate.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../context';
import { readRawBody } from '../body';
import { AppError } from '../errors';
import {
  checkWebhookHeaders,
  isAddressAllowed,
  JwtVerifier,
  MAX_WEBHOOK_BODY_BYTES,
  parseWebhookJson,
  verifyHmacWithAny,
  WebhookRejection,
} from '../../webhooks';
import { ListenerCache, verifyingHmacSecrets, type Listener } from '../../domain/listener-cache';
import { listenerUrl, WEBHOOK_PATH_PREFIX } from '../../domain/automations';
import { DuplicateEventError, WorkflowEngineUnavailableError } from '../../temporal/runs';
import { AdmissionRefusal, DataRateWatch, precheckWebhookHeaders, WebhookAdmission, type AdmissionTicket } from '../../webhooks/admission';

const MAX_CACHED_VERIFIERS = 10_000;
const RETRY_AFTER_SECONDS = '5';
/** Time a sender has to deliver the whole body once the headers arrived (slow-body defence). */
export const WEBHOOK_BODY_TIMEOUT_MS = 10_000;
/** Listener ids are base64url tokens; anything else cannot be a listener (404 without a lookup). */
const LISTENER_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** One JWT verifier (and so one cached JWKS) per listener and JWKS URL. */
class VerifierCache {
  private readonly verifiers = new Map<string, JwtVerifier>();
  constructor(private readonly allowInsecure: boolean) {}

  get(listenerId: string, jwksUrl: string): JwtVerifier {
    const existing = this.verifiers.get(listenerId);
    if (existing && existing.jwksUrl === jwksUrl) return existing;
    if (this.verifiers.size >= MAX_CACHED_VERIFIERS) {
      const oldest = this.verifiers.keys().next().value;
      if (oldest !== undefined) this.verifiers.delete(oldest);
    }
    const verifier = new JwtVerifier(jwksUrl, { allowInsecure: this.allowInsecure });
    this.verifiers.set(listenerId, verifier);
    return verifier;
  }
}

function sourceAddress(ctx: Context, trustProxy: boolean): string {
  return (trustProxy ? ctx.ip : ctx.req.socket.remoteAddress) ?? '';
}

export function createWebhookRouter(deps: AppDeps): Router {
  const router = new Router();
  const verifiers = new VerifierCache(deps.config.allowInsecureJwks);
  const listeners = new ListenerCache(deps.db, deps.secretBox);
  const log = deps.logger.child({ component: 'webhooks' });

  const admissionLimits = deps.config.webhookAdmission;
  const admission = new WebhookAdmission({
    global: deps.config.webhookMaxInFlight,
    perListener: Math.min(admissionLimits.perListener, deps.config.webhookMaxInFlight),
    perSource: Math.min(admissionLimits.perSource, deps.config.webhookMaxInFlight),
  });
  const metrics = deps.metrics;

  router.post(`${WEBHOOK_PATH_PREFIX}:listenerId`, async (ctx) => {
    const listenerId = ctx.params.listenerId!;
    const started = process.hrtime.bigint();
    const source = sourceAddress(ctx, deps.config.trustProxy);
    let ticket: AdmissionTicket;
    try {
      ticket = admission.enter(source);
    } catch (err) {
      // Load shedding before any work: memory stays bounded, the sender retries later.
      metrics.webhookOutcomes.inc({ status: '429', reason: err instanceof AdmissionRefusal && err.scope === 'source' ? 'source_busy' : 'overloaded' });
      throw shed(ctx, err);
    }
    metrics.webhooksInFlight.set(admission.inFlight);
    let reason = 'accepted';
    let status = 200;
    // What the delivery log keeps of this delivery (filled in as the checks learn it).
    const delivery = { automationId: undefined as string | undefined, eventId: null as string | null, executionId: null as string | null };
    const receivedAt = new Date();
    try {
      // Only well-formed ids reach the store (a NUL byte in the path made PostgreSQL fail: 500).
      const listener = LISTENER_ID.test(listenerId) ? await listeners.lookup(listenerId) : undefined;
      const automation = listener?.automation;
      const trigger = automation?.trigger;
      if (!automation || !automation.published || !trigger?.enabled) {
        throw new WebhookRejection(404, 'no active listener at this URL', 'listener_not_found');
      }
      delivery.automationId = automation.id;
      if (!isAddressAllowed(source, trigger.allowedCidrs)) {
        throw new WebhookRejection(403, 'source address is not allowed for this listener', 'source_not_allowed');
      }
      ticket.enterListener(listenerId);
      const headerInput = {
        contentType: ctx.get('content-type') || undefined,
        timestamp: ctx.get('webhook-timestamp') || undefined,
        eventId: ctx.get('webhook-event-id') || undefined,
        signature: ctx.get('webhook-signature') || undefined,
        authorization: ctx.get('authorization') || undefined,
        authMethod: trigger.authMethod,
      };
      // Refuses before the body only what the check order would refuse anyway (413 first). The
      // unread body is then discarded by the HTTP server, holding no delivery slot (closing the
      // connection instead would reset it and could lose the answer).
      precheckWebhookHeaders({
        ...headerInput,
        nowSeconds: Math.floor(Date.now() / 1000),
        contentLength: ctx.get('content-length') || undefined,
        transferEncoding: ctx.get('transfer-encoding') || undefined,
        maxBodyBytes: MAX_WEBHOOK_BODY_BYTES,
        bodyDeadlineMs: WEBHOOK_BODY_TIMEOUT_MS,
      });
      const body = await readRawBody(ctx, MAX_WEBHOOK_BODY_BYTES, {
        timeoutMs: WEBHOOK_BODY_TIMEOUT_MS,
        ...(admissionLimits.minBytesPerSecond > 0 ? { rate: new DataRateWatch(admissionLimits.minBytesPerSecond, admissionLimits.graceMs) } : {}),
      });
      const headers = checkWebhookHeaders({ ...headerInput, nowSeconds: Math.floor(Date.now() / 1000) });
      delivery.eventId = headers.eventId;
      await authenticateEvent(listener!, headers, body);
      const payload = parseWebhookJson(body);
      // The run executes the latest published snapshot, not the draft; the trigger stays live.
      const published = listener!.published;
      if (!published) throw new WebhookRejection(404, 'no active listener at this URL', 'listener_not_found');
      const { executionId } = await deps.runs.start(
        {
          automationId: automation.id,
          version: published.version,
          listenerId,
          eventId: headers.eventId,
          receivedAt: new Date().toISOString(),
          trigger: payload,
        },
        { automationName: published.snapshot.displayName },
      );
      delivery.executionId = executionId;
      log.info({ listenerId, eventId: headers.eventId, executionId, status: 200 }, 'webhook accepted');
      ctx.body = { eventId: headers.eventId, executionId };
    } catch (err) {
      const httpError = err instanceof AdmissionRefusal ? shed(ctx, err) : toHttpError(err, listenerId, log);
      status = httpError instanceof AppError ? httpError.status : 500;
      if (err instanceof DuplicateEventError) delivery.executionId = err.executionId;
      reason =
        err instanceof AdmissionRefusal
          ? 'listener_busy'
          : err instanceof WebhookRejection
          ? err.reason
          : err instanceof DuplicateEventError
            ? 'duplicate_event'
            : err instanceof WorkflowEngineUnavailableError
              ? 'engine_unavailable'
              : status === 413
                ? 'body_too_large'
                : 'error';
      throw httpError;
    } finally {
      ticket.release();
      metrics.webhooksInFlight.set(admission.inFlight);
      metrics.webhookOutcomes.inc({ status: String(status), reason });
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.webhookDuration.observe({ status: String(status) }, seconds);
      if (delivery.automationId !== undefined) {
        deps.deliveryLog?.record({
          ...delivery,
          automationId: delivery.automationId,
          listenerId,
          receivedAt,
          status,
          reason,
          sourceAddress: source,
          latencyMs: seconds * 1000,
        });
      }
    }
  });

  async function authenticateEvent(listener: Listener, headers: ReturnType<typeof checkWebhookHeaders>, body: Buffer): Promise<void> {
    const { automation } = listener;
    if (automation.trigger.authMethod === 'HMAC') {
      // During a rotation's grace period the previous secret verifies too.
      const ok =
        headers.signature !== undefined &&
        verifyHmacWithAny(verifyingHmacSecrets(listener), headers.timestampHeader, headers.eventIdHeader, body, headers.signature);
      if (!ok) throw new WebhookRejection(401, 'invalid webhook signature', 'signature_mismatch');
      return;
    }
    await verifiers.get(automation.listenerId, automation.trigger.jwksUrl).verify({
      token: headers.token ?? '',
      baseUrl: deps.config.baseUrl,
      audience: listenerUrl(deps.config.baseUrl, automation.listenerId),
      eventId: headers.eventId,
      body,
    });
  }

  return router;
}

/** An admission refusal as 429 with Retry-After; at the global cap the connection is closed too. */
function shed(ctx: Context, err: unknown): unknown {
  if (!(err instanceof AdmissionRefusal)) return err;
  if (err.scope === 'global') ctx.set('Connection', 'close');
  return new AppError(429, err.message, { headers: { 'Retry-After': String(err.retryAfterSeconds) } });
}

function toHttpError(err: unknown, listenerId: string, log: AppDeps['logger']): unknown {
  if (err instanceof WebhookRejection) {
    log.info({ listenerId, status: err.status, reason: err.reason }, 'webhook refused');
    const headers: Record<string, string> = err.status === 401 ? { 'WWW-Authenticate': 'Bearer' } : {};
    return new AppError(err.status, err.message, { headers, details: [reasonDetail(err.reason)] });
  }
  if (err instanceof DuplicateEventError) {
    log.info({ listenerId, status: 409, executionId: err.executionId }, 'webhook duplicate');
    return new AppError(409, 'event id already received by this listener', {
      details: [{ ...reasonDetail('duplicate_event'), metadata: { executionId: err.executionId } }],
    });
  }
  if (err instanceof WorkflowEngineUnavailableError) {
    log.warn({ listenerId, status: 503 }, 'webhook not accepted: workflow engine unavailable');
    // Not "rejected": a start that timed out may still have been recorded. Retrying with the same
    // event id is always safe: it runs once, and a 409 then confirms it was accepted.
    return new AppError(503, 'the workflow engine did not confirm the event; retry it later with the same Webhook-Event-Id', {
      headers: { 'Retry-After': RETRY_AFTER_SECONDS },
    });
  }
  if (err instanceof AppError && err.status === 413) {
    log.info({ listenerId, status: 413, reason: 'body_too_large' }, 'webhook refused');
  }
  return err;
}

function reasonDetail(reason: string): { '@type': string; reason: string; domain: string } {
  return { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: reason.toUpperCase(), domain: 'webhooks' };
}
