/**
 * The webhook intake, without HTTP: checks → decision → start, each a value. The transport (src/http)
 * drives it: `open` judges what arrives before the body (listener, source address, the listener's
 * in-flight cap on the delivery's admission ticket, the headers) and answers how much body to read;
 * `decide` judges the body (size, authentication, JSON, the listener again, flow control) and
 * answers a refusal, a filtered event, a duplicate or a run to start; `start` starts it and
 * answers accepted, duplicate or unavailable. Checks run in the order of docs/api.md#check-order, the first
 * failure answers: listener → source address → body size, enforced while reading → headers → the
 * listener's authentication method → JSON → duplicate event id → the version's filter (filtered:
 * no run) → its rate limit, then its key's queue bound → accepted (the run PAUSED when the circuit breaker is open). Outcomes say what happened
 * (with the facts the delivery log keeps); the HTTP statuses are the route's (src/http/routes/webhooks.ts).
 *
 * Flow control is the options of src/flow, asked in their registry's order once the delivery is
 * verified (`decideDelivery`); the duplicate of an event that started a run is Temporal's (the
 * run's workflow id is the event's).
 */
import type { Logger } from '../logger';
import type { SecretBox } from '../crypto/secret-box';
import type { Db } from '../store/db';
import { ListenerCache, verifyingHmacSecrets, type Listener } from './listener-cache';
import type { RunEngine } from '../domain/engine';
import {
  AUTH_METHODS,
  authenticatorOf,
  type AuthenticatorConfig,
  type AuthMethod,
  type CredentialInput,
  type Verify,
  type VerifyResult,
} from '../webhooks/authenticators';
import { headerVerdict, precheckWebhookHeaders, type PrecheckInput } from '../webhooks/admission';
import { MAX_WEBHOOK_BODY_BYTES, parseWebhookJson } from '../webhooks/body';
import { rejectWebhook } from '../webhooks/errors';
import { isAddressAllowed } from '../net/cidr';

import type { CheckedWebhookHeaders } from '../webhooks/headers';
import { fieldsOf } from '../webhooks/trigger';
import { decideDelivery, type DeliveryDecision } from '../flow';
import { LANE_QUEUE_LIMITS } from '../config';
import type { AdmissionTicket } from '../webhooks/admission';
import { runWorkflowId, type RunFlow } from '../contract/run';
import { AdmissionRefusal, DuplicateEventError, WebhookRejection, WorkflowEngineUnavailableError } from '../errors';

export { LANE_QUEUE_RETRY_AFTER_SECONDS } from '../flow';

/** Listener ids are base64url tokens; anything else cannot be a listener (404 without a lookup). */
const LISTENER_ID = /^[A-Za-z0-9_-]{1,128}$/;

/** What arrives before the body, as the transport saw it. */
export interface DeliveryHead {
  listenerId: string;
  /** The sender's address (the socket peer, or the trusted proxy's `X-Forwarded-For` entry). */
  sourceAddress: string;
  /** The request headers by lower-case name (Node's `IncomingHttpHeaders`); an empty value is absent. */
  headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The time the delivery is judged at (timestamp window, JWT expiry, `receivedAt`). */
  now: Date;
  /** Time the body has to arrive once the headers are in (bounds the header pre-check). */
  bodyDeadlineMs: number;
  /**
   * The delivery's admission (src/webhooks/admission.ts): counted against its listener's in-flight
   * cap once the listener and the source address are accepted.
   */
  ticket: Pick<AdmissionTicket, 'enterListener'>;
}

/** The automation, event and run a delivery turned out to concern, as far as the checks got (the delivery log's). */
export interface DeliveryFacts {
  automationId?: string;
  eventId: string | null;
  executionId: string | null;
}

/** Why no run was started for a delivery. */
export type Refusal =
  /** A check of the contract's order failed (src/webhooks: its reason and message). */
  | { verdict: 'rejected'; rejection: WebhookRejection }
  /** The listener has too many deliveries in progress. */
  | { verdict: 'busy'; refusal: AdmissionRefusal }
  /** The event id was already received by this listener; `executionId` null when it was filtered. */
  | { verdict: 'duplicate'; executionId: string | null }
  /** Flow control refused the run for now (a rate limit, a full queue): nothing recorded. */
  | { verdict: 'limited'; reason: string; message: string; retryAfterSeconds: number }
  /** The workflow engine did not confirm the start: the event may or may not be recorded. */
  | { verdict: 'unavailable' };

export type IntakeOutcome = (
  | {
      verdict: 'accepted';
      eventId: string;
      executionId: string;
      /** The circuit breaker paused the run. */ paused?: true;
    }
  /** The version's filter was false: the event is recorded, no run started. */
  | { verdict: 'filtered'; eventId: string }
  | Refusal
) & { facts: DeliveryFacts };

/** A delivery whose head passed the checks: read at most `maxBytes` of body (undefined past it), then `decide`. */
export interface OpenDelivery {
  verdict: 'read-body';
  maxBytes: number;
  facts: DeliveryFacts;
  /** What `decide` needs of the head's checks. */
  readonly checked: HeadChecks;
}

/** A delivery that passed every check, with flow control's decision: `start` starts its run. */
export interface RunToStart {
  verdict: 'start';
  facts: DeliveryFacts & { eventId: string };
  readonly run: PlannedRun;
}

interface HeadChecks {
  head: DeliveryHead;
  listener: Listener;
  trigger: Listener['automation']['trigger'];
  verdict: CheckedWebhookHeaders | WebhookRejection;
}

interface PlannedRun {
  automationId: string;
  automationName: string;
  version: number;
  listenerId: string;
  eventId: string;
  receivedAt: string;
  payload: unknown;
  flow: RunFlow | undefined;
  decision: Extract<DeliveryDecision, { verdict: 'start' }>;
}

export interface IntakeDeps {
  db: Db;
  engine: RunEngine;
  secretBox: SecretBox;
  config: AuthenticatorConfig;
  logger: Logger;
  /** The listener URL for an id (the JWT `aud`). */
  listenerUrl(listenerId: string): string;
  /** The most runs of one concurrency key that may wait (LANE_QUEUE_LIMIT); unset: its default. */
  laneQueueLimit?: number;
}

export interface WebhookIntake {
  /** The checks before the body. */
  open(head: DeliveryHead): Promise<OpenDelivery | IntakeOutcome>;
  /** The checks of the body and flow control's decision; `body` undefined: it exceeded `maxBytes`. */
  decide(open: OpenDelivery, body: Buffer | undefined): Promise<RunToStart | IntakeOutcome>;
  /** Starts the run, durably, before answering. */
  start(run: RunToStart): Promise<IntakeOutcome>;
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
    if (
      seen === undefined ? this.perListener.size >= REFUSAL_LOG_MAX_LISTENERS : seen >= REFUSAL_LOG_LINES_PER_MINUTE
    ) {
      this.unlogged += 1;
      return { log: false, unlogged };
    }
    this.perListener.set(listenerId, (seen ?? 0) + 1);
    return { log: true, unlogged };
  }
}

/** Builds the intake; it keeps one verifier per method (with its caches) for its lifetime. */
export function createWebhookIntake(deps: IntakeDeps): WebhookIntake {
  return new Intake(deps);
}

/** A header's value as one string (an empty value is absent). */
function header(head: DeliveryHead, name: string): string | undefined {
  const value = head.headers[name];
  return (typeof value === 'string' ? value : undefined) || undefined;
}

/**
 * The intake's three stages, in the check order: `open` (listener → source address → the
 * listener's in-flight cap → headers), `decide` (body size → authentication → JSON → the listener
 * again → flow control), `start` (the run, durably). Each stage answers an outcome for a failure
 * that is an answer (`outcomeOf`) and throws only what is a fault.
 */
class Intake implements WebhookIntake {
  private readonly log: Logger;
  private readonly listeners: ListenerCache;
  /** One verifier per authentication method, with its caches (a JWKS per URL). */
  private readonly verifiers: Record<AuthMethod, Verify<Record<string, string>>>;
  private readonly refusalLog = new RefusalLogBudget();

  constructor(private readonly deps: IntakeDeps) {
    this.log = deps.logger.child({ component: 'webhooks' });
    this.listeners = new ListenerCache(deps.db, deps.secretBox);
    this.verifiers = Object.fromEntries(
      AUTH_METHODS.map((method) => [method, authenticatorOf(method).createVerifier(deps.config)]),
    ) as Record<AuthMethod, Verify<Record<string, string>>>;
  }

  // ---------------------------------------------------------------- the stages

  async open(head: DeliveryHead): Promise<OpenDelivery | IntakeOutcome> {
    const { listenerId } = head;
    const facts: DeliveryFacts = { eventId: null, executionId: null };
    try {
      // Only well-formed ids reach the store (a NUL byte in the path made PostgreSQL fail: 500).
      const cached = LISTENER_ID.test(listenerId) ? this.listeners.peek(listenerId) : { value: undefined };
      const listener = cached ? cached.value : await this.listeners.lookup(listenerId);
      const { trigger } = activeTrigger(listener, head, facts);
      head.ticket.enterListener(listenerId);
      const input = precheckInput(head, trigger.authMethod);
      // The header check (step 4) judges the headers at the delivery's time: done once, here. Before
      // the body, it refuses only what the check order would refuse anyway (413 first).
      const verdict = headerVerdict(input);
      precheckWebhookHeaders(input, verdict);
      return {
        verdict: 'read-body',
        maxBytes: MAX_WEBHOOK_BODY_BYTES,
        facts,
        checked: { head, listener: listener!, trigger, verdict },
      };
    } catch (err) {
      return this.outcomeOf(err, head.listenerId, head.now, facts);
    }
  }

  async decide(opened: OpenDelivery, body: Buffer | undefined): Promise<RunToStart | IntakeOutcome> {
    const { head, listener, trigger, verdict } = opened.checked;
    const { listenerId } = head;
    const facts = { ...opened.facts };
    try {
      if (body === undefined) {
        throw rejectWebhook('body_too_large', `request body exceeds ${MAX_WEBHOOK_BODY_BYTES} bytes`);
      }
      if (verdict instanceof WebhookRejection) throw verdict;
      const headers = verdict;
      facts.eventId = headers.eventId;
      // A promise only when the method needs one (a JWKS fetch): an HMAC is checked without waiting
      // a turn. A refusal is the verifier's answer, not an exception (a flood of wrong signatures).
      let refusal = this.verify(listener, trigger, head, headers, body);
      if (refusal instanceof Promise) refusal = await refusal;
      if (refusal) return this.refused(listenerId, refusal, head.now.getTime(), facts);
      const payload = parseWebhookJson(body);
      const latest = await this.recheck(opened.checked, headers, body, facts);
      return await this.flowOf(latest, head, headers.eventId, payload, facts);
    } catch (err) {
      return this.outcomeOf(err, head.listenerId, head.now, facts);
    }
  }

  async start(planned: RunToStart): Promise<IntakeOutcome> {
    const { run, facts } = planned;
    const { decision } = run;
    let known: DeliveryFacts = facts;
    try {
      // The run's id is the event's: a second start with it is refused (the 409 of a repeat is the engine's).
      const executionId = runWorkflowId(run.listenerId, run.eventId);
      try {
        const started = await this.deps.engine.start({
          runId: executionId,
          input: {
            automationId: run.automationId,
            version: run.version,
            listenerId: run.listenerId,
            eventId: run.eventId,
            receivedAt: run.receivedAt,
            trigger: run.payload,
            ...(run.flow ? { flow: run.flow } : {}),
          },
          automationName: run.automationName,
          summary: `event ${run.eventId}`,
        });
        if (started === 'exists') throw new DuplicateEventError(executionId);
      } catch (err) {
        if (err instanceof DuplicateEventError) {
          await decision.release();
          await decision.started(err.runId, true);
        }
        // Only when the start itself was not confirmed (not a lane request after it).
        if (err instanceof WorkflowEngineUnavailableError) await decision.unavailable();
        throw err;
      }
      known = { ...facts, executionId };
      await decision.started(executionId, false);
      this.log.info(
        { listenerId: run.listenerId, eventId: run.eventId, executionId, ...(decision.paused ? { paused: true } : {}) },
        'webhook accepted',
      );
      return {
        verdict: 'accepted',
        eventId: run.eventId,
        executionId,
        ...(decision.paused ? { paused: true as const } : {}),
        facts: known,
      };
    } catch (err) {
      // A lane request that fails after the start is unavailable too: the run is recorded, the sender's retry gets the duplicate.
      return this.outcomeOf(err, run.listenerId, new Date(run.receivedAt), known);
    }
  }

  // ---------------------------------------------------------------- the steps of `decide`

  /** Step 5: the listener's authentication method over the body, its refusal or undefined. */
  private verify(
    listener: Listener,
    trigger: HeadChecks['trigger'],
    head: DeliveryHead,
    headers: CheckedWebhookHeaders,
    body: Buffer,
  ): VerifyResult | Promise<VerifyResult> {
    const { listenerId } = head;
    const authenticator = authenticatorOf(trigger.authMethod);
    return this.verifiers[trigger.authMethod]({
      listenerId,
      listenerUrl: this.deps.listenerUrl(listenerId),
      fields: fieldsOf(trigger),
      secrets: verifyingHmacSecrets(listener, head.now.getTime()),
      credential: headers[authenticator.credential.output as keyof CheckedWebhookHeaders] as string | undefined,
      timestampHeader: headers.timestampHeader,
      eventIdHeader: headers.eventIdHeader,
      eventId: headers.eventId,
      body,
      nowSeconds: Math.floor(head.now.getTime() / 1000),
    });
  }

  /**
   * The listener as it is now. The body may have taken up to its deadline to arrive: the listener
   * is looked up again (the cached entry, re-read when a change invalidated it or it is over a
   * second old) and, when it changed, judged again — an unpublish, a disabled trigger, a CIDR
   * change or a "0s" rotation made while the body arrived refuses the delivery, as it would have
   * at its headers. Answers the published listener; throws the refusal.
   */
  private async recheck(
    checked: HeadChecks,
    headers: CheckedWebhookHeaders,
    body: Buffer,
    facts: DeliveryFacts,
  ): Promise<Listener & { published: NonNullable<Listener['published']> }> {
    const { head, listener, trigger } = checked;
    const fresh = this.listeners.peek(head.listenerId);
    const latest = fresh ? fresh.value : await this.listeners.lookup(head.listenerId);
    if (latest !== listener) {
      const again = activeTrigger(latest, head, facts);
      if (again.trigger.authMethod !== trigger.authMethod) {
        throw rejectWebhook(
          'signature_mismatch',
          "the listener's authentication method changed while the body arrived",
        );
      }
      const refusedAgain = await this.verify(latest!, again.trigger, head, headers, body);
      if (refusedAgain) throw refusedAgain;
    }
    // The run executes the latest published snapshot, not the draft; the trigger stays live.
    if (!latest?.published) throw rejectWebhook('listener_not_found', 'no active listener at this URL');
    return latest as Listener & { published: NonNullable<Listener['published']> };
  }

  /** Steps 7 to 10: flow control's decision for a verified delivery (a duplicate, filtered, limited, or the run to start). */
  private async flowOf(
    latest: Listener & { published: NonNullable<Listener['published']> },
    head: DeliveryHead,
    eventId: string,
    payload: unknown,
    facts: DeliveryFacts,
  ): Promise<RunToStart | IntakeOutcome> {
    const { listenerId } = head;
    const { published } = latest;
    const automationId = latest.automation.id;
    const decision = await decideDelivery(
      // Live options (the circuit breaker) are the automation's current settings, not the version's.
      { version: published.snapshot.flow, live: latest.automation.liveFlow },
      {
        db: this.deps.db,
        engine: this.deps.engine,
        automationId,
        automationName: published.snapshot.displayName,
        listenerId,
        eventId,
        receivedAt: head.now.toISOString(),
        payload,
        hasFilteredEvents: latest.hasFilteredEvents,
        laneQueueLimit: this.deps.laneQueueLimit ?? LANE_QUEUE_LIMITS.default,
      },
    );
    if (decision.verdict === 'duplicate') return this.duplicate(listenerId, decision.executionId, facts);
    if (decision.verdict === 'filtered') {
      this.log.info({ listenerId, eventId }, 'webhook filtered');
      return { verdict: 'filtered', eventId, facts };
    }
    if (decision.verdict === 'refused') {
      this.log.info(
        { listenerId, eventId, reason: decision.reason, retryAfterSeconds: decision.retryAfterSeconds },
        'webhook refused by flow control',
      );
      return {
        verdict: 'limited',
        reason: decision.reason,
        message: decision.message,
        retryAfterSeconds: decision.retryAfterSeconds,
        facts,
      };
    }
    return {
      verdict: 'start',
      facts: { ...facts, eventId },
      run: {
        automationId,
        automationName: published.snapshot.displayName,
        version: published.version,
        listenerId,
        eventId,
        receivedAt: head.now.toISOString(),
        payload,
        flow: decision.flow,
        decision,
      },
    };
  }

  // ---------------------------------------------------------------- outcomes

  private refused(listenerId: string, err: WebhookRejection, nowMs: number, facts: DeliveryFacts): IntakeOutcome {
    const budget = this.refusalLog.take(listenerId, nowMs);
    if (budget.unlogged > 0)
      this.log.info(
        { unlogged: budget.unlogged },
        'webhook refusals not logged one by one in the last minute (see the metrics and the delivery log)',
      );
    if (budget.log) this.log.info({ listenerId, reason: err.reason }, 'webhook refused');
    return { verdict: 'rejected', rejection: err, facts };
  }

  /** The duplicate of an event id this listener already received; `executionId` null when it was filtered. */
  private duplicate(listenerId: string, executionId: string | null, facts: DeliveryFacts): IntakeOutcome {
    this.log.info({ listenerId, executionId }, 'webhook duplicate');
    return { verdict: 'duplicate', executionId, facts: { ...facts, executionId } };
  }

  /** The outcome of a failure that is an answer (a refusal, a duplicate, an engine that does not answer); anything else is thrown. */
  private outcomeOf(err: unknown, listenerId: string, now: Date, facts: DeliveryFacts): IntakeOutcome {
    if (err instanceof WebhookRejection) return this.refused(listenerId, err, now.getTime(), facts);
    if (err instanceof AdmissionRefusal) return { verdict: 'busy', refusal: err, facts };
    if (err instanceof DuplicateEventError) return this.duplicate(listenerId, err.runId, facts);
    if (err instanceof WorkflowEngineUnavailableError) {
      // Not "rejected": a start that timed out may still have been recorded. Retrying with the
      // same event id is always safe: it runs once, and a duplicate then confirms it was accepted.
      this.log.warn({ listenerId }, 'webhook not accepted: workflow engine unavailable');
      return { verdict: 'unavailable', facts };
    }
    throw err;
  }
}

/** Steps 1 and 2 of the check order for `listener`: its active trigger, or a rejection. */
function activeTrigger(listener: Listener | undefined, head: DeliveryHead, facts: DeliveryFacts) {
  const automation = listener?.automation;
  const trigger = automation?.trigger;
  if (!automation || !automation.published || !trigger?.enabled) {
    throw rejectWebhook('listener_not_found', 'no active listener at this URL');
  }
  facts.automationId = automation.id;
  if (!isAddressAllowed(head.sourceAddress, trigger.allowedCidrs)) {
    throw rejectWebhook('source_not_allowed', 'source address is not allowed for this listener');
  }
  return { automation, trigger };
}

/** What the header check (step 4) reads of the head, with the listener's credential header. */
function precheckInput(head: DeliveryHead, authMethod: AuthMethod): PrecheckInput {
  const authenticator = authenticatorOf(authMethod);
  const input: PrecheckInput = {
    contentType: header(head, 'content-type'),
    timestamp: header(head, 'webhook-timestamp'),
    eventId: header(head, 'webhook-event-id'),
    authMethod,
    nowSeconds: Math.floor(head.now.getTime() / 1000),
    contentLength: header(head, 'content-length'),
    transferEncoding: header(head, 'transfer-encoding'),
    maxBodyBytes: MAX_WEBHOOK_BODY_BYTES,
    bodyDeadlineMs: head.bodyDeadlineMs,
  };
  input[authenticator.credential.input as CredentialInput] = header(head, authenticator.credential.name.toLowerCase());
  return input;
}
