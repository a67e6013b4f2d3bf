/**
 * What a run did, read from its history: for the executions view when no worker answers the run's
 * `state` query, and for why a closed run stopped. The started event's input, the results of the
 * local activities (each names its step: the loaded version, `{stepId, values}` of an evaluation,
 * `{stepId, line}` of a log line; an effect's local first attempt, by its activity type), the
 * inputs of the effect activities (`stepId`), the timers of the steps that park the run, and the
 * failure's details become the steps as the workflow would report them.
 */
import type { temporal } from '@temporalio/proto';
import { lastResult, STEP_REGISTRY, stepKind, type RecordedEffect } from '../steps';
import {
  STEP_FAILED,
  type AutomationRunInput,
  type StepDefinition,
  type StepFailureDetails,
  type StepKind,
  type StepResult,
} from '../contract/run';
import type { RunStatus } from '../domain/runs';
import { isObject } from '../json';
import { decode, timestamp } from './payloads';

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** One activity or timer of a step, as the history records it. */
type StepEffect = RecordedEffect;

export interface RunHistory {
  input: AutomationRunInput | undefined;
  /** The steps of the run's version, from the result of the local activity that loaded them. */
  steps: StepDefinition[];
  /** Effects per step id, in order. */
  effects: Map<string, StepEffect[]>;
  /** Step ids in the order their first effect was recorded. */
  touched: string[];
  /** The run's failure; `stepError` is the failed step's own message. */
  failure: { stepId: string | undefined; message: string; stepError: string } | undefined;
  stopReason: string | undefined;
  /** Per step id: when its first effect was recorded and when its last one ended (event times). */
  times: Map<string, { startedAt: string; finishedAt?: string }>;
  /** Per step id whose kind has an effect: the attempts of that effect the history shows (a local first one included). */
  attempts: Map<string, number>;
  /** Activity id → step id of the effect activities scheduled (an attempt still running shows in the run's pending activities). */
  effectActivities: Map<string, string>;
}

/**
 * Reads what the run did from its history, by type: the started event's input, the results of the
 * local activities (each names its step: the loaded version, `{stepId, values}` of an evaluation,
 * `{stepId, line}` of a log line; an effect's local first attempt, by its activity type, belongs to
 * the next step of a kind with that effect that has not finished one), the inputs of the effect
 * activities (`stepId`), and the failure's details. A timer belongs to the next step, after the
 * last one that recorded anything, whose kind parks the run (the loop runs steps one at a time,
 * and every other kind evaluates before it acts).
 */
export function readHistory(events: HistoryEvent[]): RunHistory {
  const run: RunHistory = {
    input: undefined,
    steps: [],
    effects: new Map(),
    touched: [],
    failure: undefined,
    stopReason: undefined,
    times: new Map(),
    attempts: new Map(),
    effectActivities: new Map(),
  };
  let at: string | undefined;
  const started = (stepId: string): void => {
    if (at !== undefined && !run.times.has(stepId)) run.times.set(stepId, { startedAt: at });
  };
  const ended = (stepId: string | undefined): void => {
    const times = stepId === undefined ? undefined : run.times.get(stepId);
    if (times && at !== undefined) times.finishedAt = at;
  };
  const attempted = (stepId: string, count: number): void => {
    run.attempts.set(stepId, (run.attempts.get(stepId) ?? 0) + count);
  };
  /** Scheduled event id → the effect activity's step, until its attempt count is known (started event). */
  const effectByScheduledId = new Map<string, string>();
  const stepByScheduledId = new Map<string, string>();
  const stepByTimerId = new Map<string, string>();
  const byScheduledId = new Map<string, StepEffect>();
  const byTimerId = new Map<string, StepEffect>();
  const add = (stepId: string, effect: StepEffect): void => {
    if (!run.effects.has(stepId)) {
      run.effects.set(stepId, []);
      run.touched.push(stepId);
    }
    run.effects.get(stepId)!.push(effect);
    started(stepId);
  };
  const nextParkingStep = (): string | undefined => {
    const last = run.touched[run.touched.length - 1];
    const from = last === undefined ? 0 : run.steps.findIndex((step) => step.id === last);
    for (let i = Math.max(0, from); i < run.steps.length; i++) {
      const step = run.steps[i]!;
      const kind = stepKind(step);
      const touchedAlready = run.effects.get(step.id)?.some((e) => e.kind === 'timer');
      if (kind !== undefined && STEP_REGISTRY[kind].parks === true && !touchedAlready) return step.id;
    }
    return undefined;
  };
  /**
   * The step an effect's local attempt belongs to: the first, from the last step touched on, whose
   * kind performs that effect and that has neither finished an activity nor been skipped. Without
   * EVALUATE_IN_EFFECT_PATCH the step evaluated its fields just before (it is the last touched); with
   * it the effect evaluates them itself, so nothing of the step precedes it.
   */
  const effectStep = (name: string): string | undefined => {
    const last = run.touched[run.touched.length - 1];
    const from = last === undefined ? 0 : run.steps.findIndex((step) => step.id === last);
    for (let i = Math.max(0, from); i < run.steps.length; i++) {
      const step = run.steps[i]!;
      const kind = stepKind(step);
      if (kind === undefined || STEP_REGISTRY[kind].effect?.name !== name) continue;
      const effects = run.effects.get(step.id) ?? [];
      const finished = effects.some((e) => e.kind === 'activity' && e.done);
      const skipped = effects.some((e) => e.kind === 'evaluate' && isObject(e.result) && e.result.when === false);
      if (!finished && !skipped) return step.id;
    }
    return undefined;
  };
  // A failed local first attempt is followed by the timer before the step's next attempt: that
  // timer is the step's own wait, not a later step's.
  let retryTimerNext = false;
  for (const event of events) {
    const eventId = String(event.eventId ?? '');
    at = timestamp(event.eventTime) ?? at;
    if (event.workflowExecutionStartedEventAttributes) {
      run.input = decode(event.workflowExecutionStartedEventAttributes.input?.payloads?.[0]) as
        AutomationRunInput | undefined;
    } else if (event.markerRecordedEventAttributes) {
      const marker = event.markerRecordedEventAttributes;
      const result = decode(marker.details?.result?.payloads?.[0]);
      const effect = localEffectName(marker);
      if (effect !== undefined) {
        // An effect's first attempt, run locally. A failed attempt records no result: the step is
        // in progress, and its regular activity follows.
        const stepId = effectStep(effect);
        const done = !marker.failure && result !== undefined;
        if (stepId !== undefined) {
          add(stepId, { kind: 'activity', done, result: done ? result : undefined });
          attempted(stepId, 1);
          ended(stepId);
        }
        retryTimerNext = Boolean(marker.failure);
      } else if (isObject(result) && Array.isArray(result.steps) && typeof result.automationName === 'string') {
        run.steps = result.steps as StepDefinition[];
      } else if (isObject(result) && typeof result.stepId === 'string') {
        const kind = isObject(result.values) ? 'evaluate' : 'annotate';
        add(result.stepId, { kind, done: true, result: kind === 'evaluate' ? result.values : result });
        ended(result.stepId);
      }
    } else if (event.activityTaskScheduledEventAttributes) {
      const input = decode(event.activityTaskScheduledEventAttributes.input?.payloads?.[0]);
      const effect: StepEffect = { kind: 'activity', done: false, result: undefined };
      byScheduledId.set(eventId, effect);
      if (isObject(input) && typeof input.stepId === 'string') {
        add(input.stepId, effect);
        stepByScheduledId.set(eventId, input.stepId);
        const type = event.activityTaskScheduledEventAttributes.activityType?.name ?? '';
        if (EFFECT_NAMES.has(type)) {
          effectByScheduledId.set(eventId, input.stepId);
          run.effectActivities.set(event.activityTaskScheduledEventAttributes.activityId ?? '', input.stepId);
        }
      }
    } else if (event.activityTaskStartedEventAttributes) {
      // Recorded once the activity has ended, with its last attempt's number.
      const scheduled = String(event.activityTaskStartedEventAttributes.scheduledEventId ?? '');
      const stepId = effectByScheduledId.get(scheduled);
      if (stepId !== undefined) {
        attempted(stepId, Math.max(1, event.activityTaskStartedEventAttributes.attempt ?? 1));
        effectByScheduledId.delete(scheduled);
      }
    } else if (event.activityTaskCompletedEventAttributes) {
      const scheduled = String(event.activityTaskCompletedEventAttributes.scheduledEventId ?? '');
      const effect = byScheduledId.get(scheduled);
      if (effect) {
        effect.done = true;
        effect.result = decode(event.activityTaskCompletedEventAttributes.result?.payloads?.[0]);
      }
      ended(stepByScheduledId.get(scheduled));
    } else if (event.activityTaskFailedEventAttributes || event.activityTaskTimedOutEventAttributes) {
      const failed = event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
      ended(stepByScheduledId.get(String(failed?.scheduledEventId ?? '')));
    } else if (event.timerStartedEventAttributes && retryTimerNext) {
      retryTimerNext = false;
    } else if (event.timerStartedEventAttributes) {
      const effect: StepEffect = { kind: 'timer', done: false, result: undefined };
      byTimerId.set(event.timerStartedEventAttributes.timerId ?? '', effect);
      const stepId = nextParkingStep();
      if (stepId !== undefined) {
        add(stepId, effect);
        stepByTimerId.set(event.timerStartedEventAttributes.timerId ?? '', stepId);
      }
    } else if (event.timerFiredEventAttributes) {
      const effect = byTimerId.get(event.timerFiredEventAttributes.timerId ?? '');
      if (effect) effect.done = true;
      ended(stepByTimerId.get(event.timerFiredEventAttributes.timerId ?? ''));
    } else if (event.workflowExecutionFailedEventAttributes) {
      run.failure = failureOf(event.workflowExecutionFailedEventAttributes.failure);
    } else if (event.workflowExecutionTerminatedEventAttributes) {
      const reason = event.workflowExecutionTerminatedEventAttributes.reason;
      run.stopReason = `run terminated${reason ? `: ${reason}` : ''}`;
    } else if (event.workflowExecutionCanceledEventAttributes) {
      run.stopReason = 'run cancelled';
    } else if (event.workflowExecutionTimedOutEventAttributes) {
      run.stopReason = 'run timed out';
    }
  }
  return run;
}

/** The effects the step kinds declare, by activity name. */
const EFFECT_NAMES: ReadonlySet<string> = new Set(
  Object.values(STEP_REGISTRY).flatMap((kind) => ('effect' in kind && kind.effect ? [kind.effect.name] : [])),
);

/** The activity type a local activity's marker records (its `data`, JSON written by the SDK's core); undefined for any other marker. */
export function localActivityType(marker: temporal.api.history.v1.IMarkerRecordedEventAttributes): string | undefined {
  if (marker.markerName !== 'core_local_activity') return undefined;
  const data = decode(marker.details?.data?.payloads?.[0]);
  return isObject(data) && typeof data.activity_type === 'string' ? data.activity_type : undefined;
}

/** The effect a local activity's marker records, if it is one. */
function localEffectName(marker: temporal.api.history.v1.IMarkerRecordedEventAttributes): string | undefined {
  const type = localActivityType(marker);
  return type !== undefined && EFFECT_NAMES.has(type) ? type : undefined;
}

/** The steps of a run as its (decoded) history shows them, for a run in `status`: what the executions view shows when no worker answers. */
export function stepsFromHistory(events: HistoryEvent[], status: RunStatus): StepResult[] {
  return reconstructSteps(readHistory(events), status);
}

/** The steps as the workflow would report them, from what the history shows it did. */
export function reconstructSteps(run: RunHistory, status: RunStatus): StepResult[] {
  const steps = run.steps;
  const lastTouched = Math.max(-1, ...run.touched.map((id) => steps.findIndex((step) => step.id === id)));
  const failedIndex =
    run.failure?.stepId !== undefined ? steps.findIndex((step) => step.id === run.failure!.stepId) : -1;
  // Steps before this one are over; this one is in progress (or failed); later ones never started.
  // A run still held (QUEUED in its lane, PAUSED by the breaker) has started none: its timers are
  // the hold's (the lane asked again), not a step's.
  const held = status === 'QUEUED' || status === 'PAUSED';
  const current = failedIndex >= 0 ? failedIndex : status === 'COMPLETED' ? steps.length : lastTouched;
  return steps.map((step, index): StepResult => {
    const kind = stepKind(step);
    const result: StepResult = {
      id: step.id,
      kind: kind ?? ('unknown' as StepKind),
      status: 'PENDING',
      output: null,
      error: null,
    };
    if (held) return result;
    const effects = run.effects.get(step.id) ?? [];
    // A step with a condition evaluates it first; `false` skipped the step.
    const condition = step.when !== undefined && step.when.trim() !== '' ? effects[0] : undefined;
    const skipped =
      condition?.kind === 'evaluate' && condition.done && isObject(condition.result) && condition.result.when === false;
    if (index === failedIndex) {
      result.status = 'FAILED';
      result.error = run.failure?.stepError ?? null;
    } else if (skipped) {
      result.status = 'SKIPPED';
    } else if (index < current) {
      result.status = 'DONE';
      result.output = outputOf(step, condition ? effects.slice(1) : effects);
    } else if (index === current) {
      result.status = effects.some((e) => e.kind === 'timer' && !e.done) ? 'WAITING' : 'RUNNING';
    }
    return result;
  });
}

/** A finished step's output, as its kind reads it from the history (by default its last effect's result). */
function outputOf(step: StepDefinition, effects: StepEffect[]): Record<string, unknown> | null {
  const kind = stepKind(step);
  if (kind === undefined) return lastResult(effects);
  const definition = STEP_REGISTRY[kind] as {
    outputFromHistory?(body: unknown, effects: readonly StepEffect[]): Record<string, unknown> | null;
  };
  return definition.outputFromHistory
    ? definition.outputFromHistory((step as unknown as Record<string, unknown>)[kind], effects)
    : lastResult(effects);
}

/**
 * The steps with what only the history says: the attempts of each step whose kind has an effect
 * (`pending`: activity id → the attempt of an effect activity still running, from the run's
 * description), and the times of steps whose state lacks them (a run recorded before its state kept
 * them): a step's first recorded effect and, once it is over, its last.
 */
export function withHistoryFacts(steps: StepResult[], run: RunHistory, pending: Map<string, number>): StepResult[] {
  const attempts = new Map(run.attempts);
  for (const [activityId, attempt] of pending) {
    const stepId = run.effectActivities.get(activityId);
    if (stepId !== undefined) attempts.set(stepId, (attempts.get(stepId) ?? 0) + attempt);
  }
  return steps.map((step) => {
    const kind = STEP_REGISTRY[step.kind as StepKind] as { effect?: unknown } | undefined;
    const times = run.times.get(step.id);
    const over = step.status === 'DONE' || step.status === 'SKIPPED' || step.status === 'FAILED';
    const started = step.status !== 'PENDING' && step.status !== 'NOT_RUN';
    return {
      ...step,
      ...(step.startedAt === undefined && started && times ? { startedAt: times.startedAt } : {}),
      ...(step.finishedAt === undefined && over && times?.finishedAt ? { finishedAt: times.finishedAt } : {}),
      ...(kind?.effect && started ? { attempts: attempts.get(step.id) ?? 0 } : {}),
    };
  });
}

/**
 * The steps of a run that closed without completing: one still RUNNING, WAITING or
 * WAITING_FOR_APPROVAL was stopped there (FAILED, its error `canceled` or `terminated`, or why the
 * run stopped), and those that never started are NOT_RUN.
 */
export function markInterrupted(steps: StepResult[], error: string | null, status: RunStatus): StepResult[] {
  const stopped =
    status === 'CANCELED' ? 'canceled' : status === 'TERMINATED' ? 'terminated' : (error ?? 'run stopped');
  return steps.map((step) => {
    if (step.status === 'PENDING') return { ...step, status: 'NOT_RUN' };
    if (step.status === 'RUNNING' || step.status === 'WAITING' || step.status === 'WAITING_FOR_APPROVAL')
      return { ...step, status: 'FAILED', error: step.error ?? stopped };
    return step;
  });
}

export function runError(run: RunHistory, status: RunStatus): string | null {
  if (status === 'RUNNING' || status === 'COMPLETED') return null;
  return run.failure?.message ?? run.stopReason ?? null;
}

/** The workflow's failure; a failed step's is of type STEP_FAILED with details `{stepId, kind, error}`. */
function failureOf(failure: temporal.api.failure.v1.IFailure | null | undefined): RunHistory['failure'] {
  if (!failure) return undefined;
  const message = failure.message ?? 'run failed';
  if (failure.applicationFailureInfo?.type !== STEP_FAILED) return { stepId: undefined, message, stepError: message };
  const detail = decode(failure.applicationFailureInfo.details?.payloads?.[0]) as
    Partial<StepFailureDetails> | undefined;
  return {
    stepId: typeof detail?.stepId === 'string' ? detail.stepId : undefined,
    message,
    stepError: typeof detail?.error === 'string' ? detail.error : message,
  };
}
