/**
 * The dispatcher of the directory's own events (the outbox's reader): every API process runs one.
 * For each event not yet dispatched, in the order they were written, it starts one run of each
 * automation that listened to the event's type when the change committed (the event's `targets`),
 * with the id made from the automation's listener and the event's id (`runWorkflowId`): a second
 * start of it — another process, or this one after a crash between the start and marking the
 * event dispatched — is refused by the engine, so a crash anywhere neither loses nor doubles a run.
 * The event is marked dispatched only once every target's run was started (or judged: filtered,
 * `own_event`, `event_depth`).
 *
 * Wake-up: the event's insert NOTIFYs DIRECTORY_EVENTS_CHANNEL, delivered at the change's commit to
 * every process (this one too; PGlite in-process); a poll every `pollMs` is the safety net for a
 * lost notification. Flow control is the version's (its filter; its rate limit and concurrency
 * delay the run, in order: a refused event is retried after the option's Retry-After, and the
 * events after it wait); the circuit breaker pauses the run as for a webhook. Events are purged
 * after DIRECTORY_EVENT_RETENTION_SECONDS.
 */
import type { Db } from '../store/db';
import type { Logger } from '../logger';
import type { RunEngine } from '../domain/engine';
import { getAutomation } from '../store/automations';
import { getPublishedVersion } from '../store/automation-versions';
import {
  DIRECTORY_EVENTS_CHANNEL,
  markDispatched,
  purgeDirectoryEvents,
  undispatchedEvents,
  type DirectoryEventRow,
  type EventTarget,
} from '../store/directory-events';
import { DIRECTORY_EVENT_RETENTION_SECONDS, eventTrigger } from '../domain/directory-events';
import { recordTriggerDelivery } from '../domain/deliveries';
import { decideDelivery } from '../flow';
import { runWorkflowId } from '../contract/run';
import { WorkflowEngineUnavailableError } from '../errors';
import { isObject } from '../json';
import { LANE_QUEUE_LIMITS } from '../config';

/** Above this depth no run starts (reason `event_depth`). */
export const MAX_EVENT_DEPTH = 8;

export interface EventDispatcherOptions {
  /** The safety net's period (default 5 s). */
  pollMs?: number;
  /** Events read per pass. */
  batch?: number;
  /** Time between two purges of events past retention (default 1 h). */
  purgeEveryMs?: number;
  /** Wait after an engine that did not answer (default 1 s). */
  retryMs?: number;
}

/** What became of one target of an event. */
export type TargetOutcome =
  | { automationId: string; reason: 'started'; executionId: string; paused?: boolean }
  | { automationId: string; reason: 'exists'; executionId: string }
  | { automationId: string; reason: 'filtered' | 'own_event' | 'event_depth' | 'gone' };

export interface EventDispatcherDeps {
  db: Db;
  engine: RunEngine;
  logger: Logger;
  /** The most runs of one concurrency key that may wait (LANE_QUEUE_LIMIT); a full queue delays the event, never drops it. */
  laneQueueLimit?: number;
  /** Told about each target judged (tests, metrics). */
  onOutcome?: (event: DirectoryEventRow, outcome: TargetOutcome) => void;
}

/** Why a pass stopped before the event: the engine did not answer, or flow control asks to wait. */
class Wait {
  constructor(readonly ms: number) {}
}

/** The actor of a change a run made: `automation:<automationId>:<executionId>`. */
function runActorOf(actor: unknown, automationId: string): boolean {
  return typeof actor === 'string' && actor.startsWith(`automation:${automationId}:`);
}

/** Whether the event was caused by a run of this automation (its actor, or its grant's `requestedBy` chain). */
export function isOwnEvent(event: DirectoryEventRow, automationId: string): boolean {
  if (runActorOf(event.actor, automationId)) return true;
  const grant = event.payload.grant;
  if (!isObject(grant)) return false;
  const chain = [grant.requestedBy, ...(Array.isArray(grant.requestedByChain) ? grant.requestedByChain : [])];
  return chain.some((actor) => runActorOf(actor, automationId));
}

export class EventDispatcher {
  private running: Promise<void> | undefined;
  private again = false;
  private closed = false;
  private pollTimer: NodeJS.Timeout | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private stopListening: (() => Promise<void>) | undefined;
  private lastPurge = 0;
  private readonly log: Logger;
  private readonly pollMs: number;
  private readonly batch: number;
  private readonly purgeEveryMs: number;
  private readonly retryMs: number;

  constructor(
    private readonly deps: EventDispatcherDeps,
    options: EventDispatcherOptions = {},
  ) {
    this.log = deps.logger.child({ component: 'event-dispatcher' });
    this.pollMs = options.pollMs ?? 5000;
    this.batch = options.batch ?? 100;
    this.purgeEveryMs = options.purgeEveryMs ?? 3_600_000;
    this.retryMs = options.retryMs ?? 1000;
  }

  /** Listens for commits, starts the poll and dispatches what is pending (events of a process that died). */
  async start(): Promise<void> {
    try {
      this.stopListening = await this.deps.db.listen(
        DIRECTORY_EVENTS_CHANNEL,
        () => this.wake(),
        () => this.wake(),
      );
    } catch (err) {
      this.log.warn({ err: (err as Error).message }, 'no LISTEN for directory events: the poll dispatches them');
    }
    this.pollTimer = setInterval(() => this.wake(), this.pollMs).unref();
    this.wake();
  }

  /** Dispatches now (again after the pass in progress, if any). */
  wake(): void {
    if (this.closed) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Resolves when no pass is in progress (tests). */
  async idle(): Promise<void> {
    while (this.running) await this.running;
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.stopListening?.().catch(() => undefined);
    await this.idle();
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        const more = await this.pass();
        if (more) this.again = true;
      } catch (err) {
        if (err instanceof Wait) {
          this.retryLater(err.ms);
          return;
        }
        this.log.warn({ err: (err as Error).message }, 'directory events: a dispatch pass failed (retried)');
        this.retryLater(this.retryMs);
        return;
      }
    } while (this.again && !this.closed);
  }

  private retryLater(ms: number): void {
    if (this.closed || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.wake();
    }, ms).unref();
  }

  /** One batch, in order; true when there may be more. */
  private async pass(): Promise<boolean> {
    await this.purge();
    const events = await undispatchedEvents(this.deps.db, this.batch);
    for (const event of events) {
      if (this.closed) return false;
      for (const target of event.targets) {
        const outcome = await this.dispatchTarget(event, target);
        await this.logOutcome(event, outcome);
        this.deps.onOutcome?.(event, outcome);
      }
      await markDispatched(this.deps.db, [event.id]);
    }
    return events.length === this.batch;
  }

  /** The automation's delivery log: what became of the event (a repeat's `exists` and a gone automation add nothing). */
  private async logOutcome(event: DirectoryEventRow, outcome: TargetOutcome): Promise<void> {
    if (outcome.reason === 'exists' || outcome.reason === 'gone') return;
    const paused = outcome.reason === 'started' && outcome.paused === true;
    await recordTriggerDelivery(this.deps.db, {
      automationId: outcome.automationId,
      source: 'event',
      reason: paused ? 'paused' : outcome.reason,
      eventId: event.id,
      executionId: outcome.reason === 'started' ? outcome.executionId : null,
      occurredAt: event.occurredAt,
    }).catch((err: unknown) =>
      this.log.warn(
        { err: (err as Error).message, eventId: event.id },
        'directory events: a delivery log entry was not written',
      ),
    );
  }

  private async purge(): Promise<void> {
    const now = Date.now();
    if (now - this.lastPurge < this.purgeEveryMs) return;
    this.lastPurge = now;
    const purged = await purgeDirectoryEvents(this.deps.db, DIRECTORY_EVENT_RETENTION_SECONDS);
    if (purged > 0) this.log.info({ purged }, 'directory events past retention purged');
  }

  /** One run of one automation for one event (or the reason there is none); throws Wait to stop the pass here. */
  private async dispatchTarget(event: DirectoryEventRow, target: EventTarget): Promise<TargetOutcome> {
    const { db, engine } = this.deps;
    const { automationId } = target;
    const [automation, version] = await Promise.all([
      getAutomation(db, automationId),
      getPublishedVersion(db, automationId, target.version),
    ]);
    if (!automation || !version) return { automationId, reason: 'gone' };
    if (isOwnEvent(event, automationId)) return { automationId, reason: 'own_event' };
    if (event.depth > MAX_EVENT_DEPTH) return { automationId, reason: 'event_depth' };
    const payload = eventTrigger(event);
    const { listenerId } = automation;
    const executionId = runWorkflowId(listenerId, event.id);
    const decision = await decideDelivery(
      { version: version.snapshot.flow, live: automation.liveFlow },
      {
        db,
        engine,
        automationId,
        automationName: version.snapshot.displayName,
        listenerId,
        eventId: event.id,
        receivedAt: event.occurredAt,
        payload,
        hasFilteredEvents: false,
        laneQueueLimit: this.deps.laneQueueLimit ?? LANE_QUEUE_LIMITS.default,
      },
    ).catch((err: unknown) => {
      if (err instanceof WorkflowEngineUnavailableError) throw new Wait(this.retryMs);
      throw err;
    });
    if (decision.verdict === 'filtered') return { automationId, reason: 'filtered' };
    if (decision.verdict === 'duplicate') return { automationId, reason: 'exists', executionId };
    // Delayed, never dropped: this event (and those after it) is tried again when the option allows.
    if (decision.verdict === 'refused') throw new Wait(Math.max(decision.retryAfterSeconds * 1000, this.retryMs));
    let started: 'started' | 'exists';
    try {
      started = await engine.start({
        runId: executionId,
        input: {
          automationId,
          version: target.version,
          listenerId,
          eventId: event.id,
          receivedAt: event.occurredAt,
          trigger: payload,
          ...(decision.flow ? { flow: decision.flow } : {}),
        },
        automationName: version.snapshot.displayName,
        summary: `${event.type} ${event.id}`,
      });
    } catch (err) {
      // Only when the start itself was not confirmed: then what the decision took is given back.
      if (err instanceof WorkflowEngineUnavailableError) {
        await decision.unavailable();
        throw new Wait(this.retryMs);
      }
      throw err;
    }
    try {
      if (started === 'exists') {
        await decision.release();
        await decision.started(executionId, true);
        return { automationId, reason: 'exists', executionId };
      }
      await decision.started(executionId, false);
    } catch (err) {
      // A lane request after the start: the retry finds the run and asks again (as a repeat).
      if (err instanceof WorkflowEngineUnavailableError) throw new Wait(this.retryMs);
      throw err;
    }
    this.log.info({ eventId: event.id, type: event.type, automationId, executionId }, 'directory event run started');
    return { automationId, reason: 'started', executionId, ...(decision.paused ? { paused: true } : {}) };
  }
}
