/**
 * The webhook intake, without HTTP: `receive` takes the facts of one delivery and answers
 * accepted (the run is durably started) or refused (status, reason, message, details). Checks run
 * in the order of docs/api.md, the first failure answers: listener (404) → source address (403) →
 * body size, enforced while reading (413) → headers (400) → the listener's authentication method
 * (401) → JSON (400) → duplicate event id (409) → the version's filter (200, filtered: no run) →
 * its rate limit, then its key's queue bound (429) → 200 (the run PAUSED when the circuit breaker is open). When the workflow engine does not confirm the start: 503. The HTTP
 * route only translates the outcome.
 *
 * Flow control is the options of src/flow, asked in their registry's order once the delivery is
 * verified (`decideDelivery`); the 409 of an event that started a run is Temporal's (the run's
 * workflow id is the event's).
 */
import type { Logger } from '../logger';
import type { SecretBox } from '../crypto/secret-box';
import type { Db } from '../store/db';
import { ListenerCache, verifyingHmacSecrets, type Listener } from './listener-cache';
import { type AutomationRuns } from '../domain/runs';
import { AUTH_METHODS, authenticatorOf, type AuthenticatorConfig, type AuthMethod, type CredentialInput, type Verify } from '../webhooks/authenticators';
import { headerVerdict, precheckWebhookHeaders, type PrecheckInput } from '../webhooks/admission';
import { MAX_WEBHOOK_BODY_BYTES, parseWebhookJson } from '../webhooks/body';
import { isAddressAllowed } from '../net/cidr';

import type { CheckedWebhookHeaders } from '../webhooks/headers';
import { fieldsOf } from '../webhooks/trigger';
import { decideDelivery } from '../flow';
import { AdmissionRefusal, DuplicateEventError, WebhookRejection, WorkflowEngineUnavailableError } from '../errors';

export { LANE_QUEUE_RETRY_AFTER_SECONDS } from '../flow';

/** Listener ids are base64url tokens; anything else cannot be a listener (404 without a lookup). */
const LISTENER_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** The facts of one delivery, as the transport saw them. */
export interface WebhookDelivery {
  listenerId: string;
  /** The sender's address (the socket peer, or the trusted proxy's `X-Forwarded-For` entry). */
  sourceAddress: string;
  /** A request header by (case-insensitive) name; undefined when absent or empty. */
  header(name: string): string | undefined;
  /**
   * Reads the whole body, stopping as soon as it exceeds `maxBytes`: then resolves undefined.
   * Called once, after the listener and the source address were accepted.
   */
  readBody(maxBytes: number): Promise<Buffer | undefined>;
  /** The time the delivery is judged at (timestamp window, JWT expiry, `receivedAt`). */
  now: Date;
  /** Time the body has to arrive once the headers are in (bounds the header pre-check). */
  bodyDeadlineMs: number;
  /**
   * Counts the delivery against its listener's in-flight cap (src/webhooks/admission.ts); throws
   * `AdmissionRefusal` when the listener is busy. Called once the listener and source are accepted.
   */
  enterListener(listenerId: string): void;
  /** What the delivery log keeps of this delivery, filled in as the checks learn it (optional). */
  facts?: DeliveryFacts;
}

/** The automation, event and run a delivery turned out to concern, as far as the checks got. */
export interface DeliveryFacts {
  automationId?: string;
  eventId: string | null;
  executionId: string | null;
}

/** An ErrorInfo detail of the one error shape (google.rpc.ErrorInfo). */
export type ReasonDetail = {
  '@type': 'type.googleapis.com/google.rpc.ErrorInfo';
  reason: string;
  domain: 'webhooks';
  metadata?: Record<string, string>;
};

export type IntakeOutcome =
  | { accepted: true; eventId: string; executionId: string; filtered?: undefined; /** The circuit breaker paused the run. */ paused?: true }
  /** The version's filter was false: the event is recorded, no run started. */
  | { accepted: true; eventId: string; executionId: null; filtered: true }
  | {
      accepted: false;
      status: 400 | 401 | 403 | 404 | 409 | 413 | 429 | 503;
      /** Whole seconds the sender should wait (a rate limit's 429). */
      retryAfterSeconds?: number;
      /** Short machine code (metrics label, logs): e.g. 'signature_mismatch', 'engine_unavailable'. */
      reason: string;
      /** Safe to show the sender: never a secret, token, signature or payload. */
      message: string;
      details: ReasonDetail[];
    };

export interface IntakeDeps {
  db: Db;
  runs: AutomationRuns;
  secretBox: SecretBox;
  config: AuthenticatorConfig;
  logger: Logger;
  /** The listener URL for an id (the JWT `aud`). */
  listenerUrl(listenerId: string): string;
}

export interface WebhookIntake {
  receive(delivery: WebhookDelivery): Promise<IntakeOutcome>;
}

function reasonDetail(reason: string, metadata?: Record<string, string>): ReasonDetail {
  return {
    '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
    reason: reason.toUpperCase(),
    domain: 'webhooks',
    ...(metadata ? { metadata } : {}),
  };
}

/** Refusal log lines per listener per minute; beyond, refusals are only counted (one line per minute). */
export const REFUSAL_LOG_LINES_PER_MINUTE = 20;
/** Listeners tracked per minute; beyond, further listeners' refusals are only counted. */
const REFUSAL_LOG_MAX_LISTENERS = 10_000;

/**
 * Bounds the "webhook refused" log lines, so that a flood of bad deliveries (a wrong secret, a
 * scan of listener URLs) costs neither a log line each nor a flooded log: per listener and minute
 * the first REFUSAL_LOG_LINES_PER_MINUTE are logged, the rest counted and reported in one line at
 * the next logged refusal of a later minute. Metrics and the delivery log still count every one.
 */
class RefusalLogBudget {
  private minute = 0;
  private readonly perListener = new Map<string, number>();
  private unlogged = 0;

  take(listenerId: string, nowMs: number): { log: boolean; unlogged: number } {
    const minute = Math.floor(nowMs / 60_000);
    let unlogged = 0;
    if (minute !== this.minute) {
      this.minute = minute;
      this.perListener.clear();
      unlogged = this.unlogged;
      this.unlogged = 0;
    }
    const seen = this.perListener.get(listenerId);
    if (seen === undefined ? this.perListener.size >= REFUSAL_LOG_MAX_LISTENERS : seen >= REFUSAL_LOG_LINES_PER_MINUTE) {
      this.unlogged += 1;
      return { log: false, unlogged };
    }
    this.perListener.set(listenerId, (seen ?? 0) + 1);
    return { log: true, unlogged };
  }
}

/** Builds the intake; it keeps one verifier per method (with its caches) for its lifetime. */
export function createWebhookIntake(deps: IntakeDeps): WebhookIntake {
  const log = deps.logger.child({ component: 'webhooks' });
  const listeners = new ListenerCache(deps.db, deps.secretBox);
  const verifiers = Object.fromEntries(AUTH_METHODS.map((method) => [method, authenticatorOf(method).createVerifier(deps.config)])) as Record<
    AuthMethod,
    Verify<Record<string, string>>
  >;

  const refusalLog = new RefusalLogBudget();

  function refused(listenerId: string, err: WebhookRejection, nowMs: number): IntakeOutcome {
    const budget = refusalLog.take(listenerId, nowMs);
    if (budget.unlogged > 0) log.info({ unlogged: budget.unlogged }, 'webhook refusals not logged one by one in the last minute (see the metrics and the delivery log)');
    if (budget.log) log.info({ listenerId, status: err.status, reason: err.reason }, 'webhook refused');
    if (err.status === 413) {
      return { accepted: false, status: 413, reason: err.reason, message: err.message, details: [] };
    }
    return { accepted: false, status: err.status as 400 | 401 | 403 | 404 | 409, reason: err.reason, message: err.message, details: [reasonDetail(err.reason)] };
  }

  /** Steps 1 and 2 of the check order for `listener`: its active trigger, or a 404 / 403 rejection. */
  function activeTrigger(listener: Listener | undefined, delivery: WebhookDelivery) {
    const automation = listener?.automation;
    const trigger = automation?.trigger;
    if (!automation || !automation.published || !trigger?.enabled) {
      throw new WebhookRejection(404, 'no active listener at this URL', 'listener_not_found');
    }
    if (delivery.facts) delivery.facts.automationId = automation.id;
    if (!isAddressAllowed(delivery.sourceAddress, trigger.allowedCidrs)) {
      throw new WebhookRejection(403, 'source address is not allowed for this listener', 'source_not_allowed');
    }
    return { automation, trigger };
  }

  /** The 409 of an event id this listener already received; `executionId` null when it was filtered. */
  function duplicate(listenerId: string, executionId: string | null, delivery: WebhookDelivery): IntakeOutcome {
    if (delivery.facts) delivery.facts.executionId = executionId;
    log.info({ listenerId, status: 409, executionId }, 'webhook duplicate');
    return {
      accepted: false,
      status: 409,
      reason: 'duplicate_event',
      message: 'event id already received by this listener',
      details: [reasonDetail('duplicate_event', executionId === null ? { filtered: 'true' } : { executionId })],
    };
  }

  async function receive(delivery: WebhookDelivery): Promise<IntakeOutcome> {
    const { listenerId } = delivery;
    try {
      // Only well-formed ids reach the store (a NUL byte in the path made PostgreSQL fail: 500).
      const listener = LISTENER_ID.test(listenerId) ? await listeners.lookup(listenerId) : undefined;
      const { automation, trigger } = activeTrigger(listener, delivery);
      delivery.enterListener(listenerId);
      const authenticator = authenticatorOf(trigger.authMethod);
      const input: PrecheckInput = {
        contentType: delivery.header('content-type'),
        timestamp: delivery.header('webhook-timestamp'),
        eventId: delivery.header('webhook-event-id'),
        authMethod: trigger.authMethod,
        nowSeconds: Math.floor(delivery.now.getTime() / 1000),
        contentLength: delivery.header('content-length'),
        transferEncoding: delivery.header('transfer-encoding'),
        maxBodyBytes: MAX_WEBHOOK_BODY_BYTES,
        bodyDeadlineMs: delivery.bodyDeadlineMs,
      };
      input[authenticator.credential.input as CredentialInput] = delivery.header(authenticator.credential.name);
      // The header check (step 4) judges the headers at the delivery's time: done once, here. Before
      // the body, it refuses only what the check order would refuse anyway (413 first).
      const verdict = headerVerdict(input);
      precheckWebhookHeaders(input, verdict);
      const body = await delivery.readBody(MAX_WEBHOOK_BODY_BYTES);
      if (body === undefined) {
        throw new WebhookRejection(413, `request body exceeds ${MAX_WEBHOOK_BODY_BYTES} bytes`, 'body_too_large');
      }
      if (verdict instanceof WebhookRejection) throw verdict;
      const headers = verdict;
      if (delivery.facts) delivery.facts.eventId = headers.eventId;
      const verify = async (current: Listener, currentTrigger: typeof trigger): Promise<void> => {
        const verified = verifiers[currentTrigger.authMethod]({
          listenerId,
          listenerUrl: deps.listenerUrl(listenerId),
          fields: fieldsOf(currentTrigger),
          secrets: verifyingHmacSecrets(current, delivery.now.getTime()),
          credential: headers[authenticator.credential.output as keyof CheckedWebhookHeaders] as string | undefined,
          timestampHeader: headers.timestampHeader,
          eventIdHeader: headers.eventIdHeader,
          eventId: headers.eventId,
          body,
        });
        if (verified) await verified;
      };
      await verify(listener!, trigger);
      const payload = parseWebhookJson(body);
      // The body may have taken up to its deadline to arrive: the listener is looked up again (the
      // cached entry, re-read when a change invalidated it or it is over a second old) and, when it
      // changed, judged again — an unpublish, a disabled trigger, a CIDR change or a "0s" rotation
      // made while the body arrived refuses the delivery, as it would have at its headers.
      const latest = await listeners.lookup(listenerId);
      if (latest !== listener) {
        const again = activeTrigger(latest, delivery);
        if (again.trigger.authMethod !== trigger.authMethod) {
          throw new WebhookRejection(401, "the listener's authentication method changed while the body arrived", 'signature_mismatch');
        }
        await verify(latest!, again.trigger);
      }
      // The run executes the latest published snapshot, not the draft; the trigger stays live.
      if (!latest?.published) throw new WebhookRejection(404, 'no active listener at this URL', 'listener_not_found');
      const published = latest.published;
      const { eventId } = headers;
      const decision = await decideDelivery(
        // Live options (the circuit breaker) are the automation's current settings, not the version's.
        { version: published.snapshot.flow, live: latest.automation.liveFlow },
        {
          db: deps.db,
          engine: deps.runs,
          automationId: automation.id,
          automationName: published.snapshot.displayName,
          listenerId,
          eventId,
          receivedAt: delivery.now.toISOString(),
          payload,
          hasFilteredEvents: latest.hasFilteredEvents,
        },
      );
      if (decision.verdict === 'duplicate') return duplicate(listenerId, decision.executionId, delivery);
      if (decision.verdict === 'filtered') {
        log.info({ listenerId, eventId, status: 200 }, 'webhook filtered');
        return { accepted: true, eventId, executionId: null, filtered: true };
      }
      if (decision.verdict === 'refused') {
        log.info({ listenerId, eventId, status: 429, reason: decision.reason, retryAfterSeconds: decision.retryAfterSeconds }, 'webhook refused by flow control');
        return {
          accepted: false,
          status: 429,
          reason: decision.reason,
          message: decision.message,
          details: [reasonDetail(decision.reason)],
          retryAfterSeconds: decision.retryAfterSeconds,
        };
      }
      const runFlow = decision.flow;
      let executionId: string;
      try {
        ({ runId: executionId } = await deps.runs.start(
          {
            automationId: automation.id,
            version: published.version,
            listenerId,
            eventId,
            receivedAt: delivery.now.toISOString(),
            trigger: payload,
            ...(runFlow ? { flow: runFlow } : {}),
          },
          { automationName: published.snapshot.displayName },
        ));
      } catch (err) {
        if (err instanceof DuplicateEventError) {
          await decision.release();
          await decision.started(err.runId, true);
        }
        if (err instanceof WorkflowEngineUnavailableError) await decision.unavailable();
        throw err;
      }
      if (delivery.facts) delivery.facts.executionId = executionId;
      await decision.started(executionId, false);
      log.info({ listenerId, eventId: headers.eventId, executionId, status: 200, ...(decision.paused ? { paused: true } : {}) }, 'webhook accepted');
      return { accepted: true, eventId: headers.eventId, executionId, ...(decision.paused ? { paused: true as const } : {}) };
    } catch (err) {
      if (err instanceof WebhookRejection) return refused(listenerId, err, delivery.now.getTime());
      if (err instanceof AdmissionRefusal) {
        return { accepted: false, status: 429, reason: 'listener_busy', message: err.message, details: [] };
      }
      if (err instanceof DuplicateEventError) return duplicate(listenerId, err.runId, delivery);
      if (err instanceof WorkflowEngineUnavailableError) {
        log.warn({ listenerId, status: 503 }, 'webhook not accepted: workflow engine unavailable');
        // Not "rejected": a start that timed out may still have been recorded. Retrying with the
        // same event id is always safe: it runs once, and a 409 then confirms it was accepted.
        return {
          accepted: false,
          status: 503,
          reason: 'engine_unavailable',
          message: 'the workflow engine did not confirm the event; retry it later with the same Webhook-Event-Id',
          details: [],
        };
      }
      throw err;
    }
  }

  return { receive };
}
