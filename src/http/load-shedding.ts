/**
 * Load shedding for the webhook receiver, before any work: beyond the global in-flight cap, or the
 * cap per source address (src/webhooks/admission.ts), a delivery is answered 429 with
 * `Retry-After` (at the global cap the connection is closed too), so memory stays bounded and one
 * sender cannot starve the others. The admitted delivery's ticket is left in `ctx.state` for the
 * per-listener cap, which the intake applies once the listener is known. Counts deliveries in
 * progress in the `webhook_requests_in_flight` gauge.
 */
import type { Context, Middleware } from 'koa';
import { AdmissionRefusal, WebhookAdmission, type AdmissionLimits, type AdmissionTicket } from '../webhooks/admission';
import { AppError } from './errors';
import type { Metrics } from './metrics';

/** The admission ticket of the delivery this request carries (set by `shedLoad`). */
export function admissionTicket(ctx: Context): AdmissionTicket | undefined {
  return (ctx.state as { admission?: AdmissionTicket }).admission;
}

/** A refusal for load as the HTTP answer: 429 with Retry-After; at the global cap, Connection: close. */
export function loadRefusal(ctx: Context, refusal: AdmissionRefusal): AppError {
  if (refusal.scope === 'global') ctx.set('Connection', 'close');
  return new AppError(429, refusal.message, { headers: { 'Retry-After': String(refusal.retryAfterSeconds) } });
}

export function shedLoad(options: { limits: AdmissionLimits; metrics: Metrics; sourceAddress: (ctx: Context) => string }): Middleware {
  const { metrics } = options;
  const admission = new WebhookAdmission(options.limits);
  return async (ctx, next) => {
    let ticket: AdmissionTicket;
    try {
      ticket = admission.enter(options.sourceAddress(ctx));
    } catch (err) {
      if (!(err instanceof AdmissionRefusal)) throw err;
      metrics.webhookOutcomes.inc({ status: '429', reason: err.scope === 'source' ? 'source_busy' : 'overloaded' });
      throw loadRefusal(ctx, err);
    }
    (ctx.state as { admission?: AdmissionTicket }).admission = ticket;
    metrics.webhooksInFlight.set(admission.inFlight);
    try {
      await next();
    } finally {
      ticket.release();
      metrics.webhooksInFlight.set(admission.inFlight);
    }
  };
}
