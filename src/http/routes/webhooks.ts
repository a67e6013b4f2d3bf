/**
 * The inbound webhook receiver, POST /api/v1/webhooks/incoming/{listener_id}: translates between
 * HTTP and the intake (src/webhooks/intake.ts), which runs the checks in their contract order.
 * Load shedding (429) runs before it, as a middleware; metrics are recorded from the outcome.
 */
import Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../context';
import { readRawBody } from '../body';
import { AppError, errorBody, fromDomain } from '../errors';
import { DomainError } from '../../domain/errors';
import { admissionTicket, shedLoad } from '../load-shedding';
import { DataRateWatch } from '../../webhooks/admission';
import { createWebhookIntake, type DeliveryFacts, type IntakeOutcome } from '../../webhooks/intake';
import { listenerUrl, WEBHOOK_PATH_PREFIX } from '../../domain/automations';

/** Seconds a sender is asked to wait after a 503 before retrying the same event. */
const RETRY_AFTER_SECONDS = '5';
/** Time a sender has to deliver the whole body once the headers arrived (slow-body defence). */
const WEBHOOK_BODY_TIMEOUT_MS = 10_000;

function sourceAddress(ctx: Context, proxyHops: number): string {
  return (proxyHops > 0 ? ctx.ip : ctx.req.socket.remoteAddress) ?? '';
}

/**
 * Reads the body within the limit, the deadline and the minimum data rate; undefined when it is
 * too large (a 408 for a late or trickling body passes through).
 */
async function readBody(ctx: Context, maxBytes: number, rate: { minBytesPerSecond: number; graceMs: number }): Promise<Buffer | undefined> {
  try {
    return await readRawBody(ctx, maxBytes, {
      timeoutMs: WEBHOOK_BODY_TIMEOUT_MS,
      ...(rate.minBytesPerSecond > 0 ? { rate: new DataRateWatch(rate.minBytesPerSecond, rate.graceMs) } : {}),
    });
  } catch (err) {
    if (err instanceof AppError && err.status === 413) return undefined;
    throw err;
  }
}

/** The HTTP headers a refusal carries besides the error body. */
function refusalHeaders(status: number): Record<string, string> {
  if (status === 401) return { 'WWW-Authenticate': 'Bearer' };
  if (status === 413) return { Connection: 'close' };
  if (status === 429) return { 'Retry-After': '1' };
  if (status === 503) return { 'Retry-After': RETRY_AFTER_SECONDS };
  return {};
}

export function createWebhookRouter(deps: AppDeps): Router {
  const router = new Router();
  const intake = createWebhookIntake({
    db: deps.db,
    runs: deps.runs,
    secretBox: deps.secretBox,
    config: deps.config,
    logger: deps.logger,
    listenerUrl: (listenerId) => listenerUrl(deps.config.baseUrl, listenerId),
  });
  const { metrics } = deps;
  const limits = deps.config.webhookAdmission;
  const shedding = shedLoad({
    limits: {
      global: deps.config.webhookMaxInFlight,
      perListener: Math.min(limits.perListener, deps.config.webhookMaxInFlight),
      perSource: Math.min(limits.perSource, deps.config.webhookMaxInFlight),
    },
    metrics,
    sourceAddress: (ctx) => sourceAddress(ctx, deps.config.trustProxy),
  });

  router.post(`${WEBHOOK_PATH_PREFIX}:listenerId`, shedding, async (ctx) => {
    const started = process.hrtime.bigint();
    const listenerId = ctx.params.listenerId!;
    const source = sourceAddress(ctx, deps.config.trustProxy);
    const receivedAt = new Date((deps.clock ?? Date.now)());
    const facts: DeliveryFacts = { eventId: null, executionId: null };
    let status = 500;
    let reason = 'error';
    try {
      const outcome: IntakeOutcome = await intake.receive({
        listenerId,
        sourceAddress: source,
        header: (name) => ctx.get(name) || undefined,
        readBody: (maxBytes) => readBody(ctx, maxBytes, limits),
        now: receivedAt,
        bodyDeadlineMs: WEBHOOK_BODY_TIMEOUT_MS,
        enterListener: (id) => admissionTicket(ctx)?.enterListener(id),
        facts,
      });
      if (outcome.accepted) {
        [status, reason] = [200, 'accepted'];
        ctx.body = { eventId: outcome.eventId, executionId: outcome.executionId };
        return;
      }
      [status, reason] = [outcome.status, outcome.reason];
      // Answered here, in the one error shape, rather than thrown to the error middleware: a
      // refusal is the expected answer to a bad delivery and must stay cheap (no exception).
      ctx.status = outcome.status;
      for (const [name, value] of Object.entries(refusalHeaders(outcome.status))) ctx.set(name, value);
      ctx.body = errorBody(outcome.status, outcome.message, outcome.details);
    } catch (err) {
      // Refusals set status and reason above; anything else (a 408 body timeout, a store that is
      // unavailable, a 500) counts as 'error', with the status it will be answered with.
      if (reason === 'error') status = err instanceof AppError ? err.status : err instanceof DomainError ? fromDomain(err).status : 500;
      throw err;
    } finally {
      metrics.webhookOutcomes.inc({ status: String(status), reason });
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.webhookDuration.observe({ status: String(status) }, seconds);
      // Deliveries to an unknown listener are not logged: they belong to no automation.
      if (facts.automationId !== undefined) {
        deps.deliveryLog?.record({
          eventId: facts.eventId,
          executionId: facts.executionId,
          automationId: facts.automationId,
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

  return router;
}
