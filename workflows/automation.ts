/**
 * The automation workflow: loads the steps of the published version it was started with, then runs
 * them in order through the step registry (src/steps). Deterministic: it imports only
 * @temporalio/workflow, the registry and types. Expressions are evaluated in local activities
 * (recorded in the history, retried, no task-queue round trip); effects run in regular activities
 * with the step's retry policy (each kind's effect, by name), except that an effect on the service's
 * own store makes its first attempt as a local activity and evaluates its step's fields itself (the
 * step is one activity); a wait is a durable timer; a `fail` step
 * ends the run as FAILED with its evaluated message.
 *
 * Query `state` answers the RunState at any time: every step is listed from the start (PENDING),
 * then RUNNING, WAITING (timer), DONE, SKIPPED (`when` was false) or FAILED.
 */
import {
  ActivityFailure,
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertMemo,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
  type RetryPolicy,
} from '@temporalio/workflow';
import type { Duration } from '@temporalio/common';
import { grantSignal, releaseSignal } from './lane';
import { annotateRunSpan, inStepSpan } from './step-span';
import type { AutomationActivities } from '../src/contract/activities';
import {
  evaluateThenPerform,
  RETRY_DEFAULTS,
  runStep,
  stepKind,
  StepError,
  type ApprovalContext,
  type ApprovalDecision,
  type EffectContext,
  type EffectExpressions,
  type EffectName,
  type StepDefinition,
  type StepEffects,
  type StepRetryPolicy,
} from '../src/steps';
import { parseDuration } from '../src/duration';
import {
  CEL_EVALUATION_FAILURE,
  FLOW_CONTROL_FAILED,
  FLOW_CONTROL_PATCH,
  BREAKER_PATCH,
  ONE_MARKER_PATCH,
  type BreakerResume,
  LANE_PROTOCOL_PATCH,
  LANE_PLACE_PATCH,
  LOCAL_FIRST_ATTEMPT_PATCH,
  EVALUATE_IN_EFFECT_PATCH,
  APPROVAL_WAIT_PATCH,
  APPROVAL_CONTEXT_PATCH,
  APPROVALS_MEMO,
  type RunQueue,
  STEP_FAILED,
  STEP_NOT_WAITING,
  UNKNOWN_STEP,
  VERSION_NOT_FOUND,
  type AutomationRunInput,
  type RunState,
  type StepFailureDetails,
  type StepKind,
  type StepResult,
} from '../src/contract/run';
import {
  ApprovalWaitKey,
  breakerResumeSignal,
  decideUpdate,
  FlowQueueKey,
  stateQuery,
  type AutomationWorkflow,
} from '../src/contract/workflows';

export { STEP_FAILED };

type Activities = AutomationActivities;

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/** The first attempt of an effect on the service's own store (`firstAttemptLocal`): one try, inside the workflow task. */
const localOnce = proxyLocalActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});

/** CEL evaluation, loading the version, annotations: cheap and local to the worker. */
const local = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '10 seconds',
    maximumAttempts: 10,
  },
});

/**
 * Giving back a lane place (LANE_PLACE_PATCH): a few quick tries, so that a store that does not
 * answer holds up the run's end only briefly (a place left behind is reconciled by the API).
 */
const placeRelease = proxyLocalActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '200 milliseconds',
    backoffCoefficient: 2,
    maximumInterval: '2 seconds',
    maximumAttempts: 3,
  },
});

/** How long a queued run waits for a grant before it repeats its request to the lane itself. */
const PERMIT_REQUEST_REPEAT = '30 seconds';
/** Then how often it repeats it (a lane that was terminated by hand learns of its queue again). */
const PERMIT_REQUEST_REFRESH = '10 minutes';

/** An effect's activity as the proxy gives it (AutomationActivities has one per declared effect, by name). */
type EffectActivity = { executeWithOptions(options: ActivityOptions, args: [object]): Promise<object> };

export async function automation(input: AutomationRunInput): Promise<RunState> {
  const state: RunState = { status: 'RUNNING', steps: [] };
  const decisions = new Map<string, ApprovalDecision>();
  annotateRunSpan(input.automationId, input.version);
  setHandler(stateQuery, () => state);
  setHandler(
    decideUpdate,
    async (decide) => {
      const result = state.steps.find((step) => step.id === decide.stepId) as StepResult;
      decisions.set(decide.stepId, {
        decision: decide.decision,
        by: decide.by,
        at: new Date().toISOString(),
        comment: decide.comment,
      });
      await condition(() => result.status !== 'WAITING_FOR_APPROVAL');
      return state;
    },
    {
      validator: (decide) => {
        const result = state.steps.find((step) => step.id === decide.stepId);
        if (!result)
          throw ApplicationFailure.create({
            type: UNKNOWN_STEP,
            message: `the run has no step ${JSON.stringify(decide.stepId)}`,
            nonRetryable: true,
          });
        if (result.status !== 'WAITING_FOR_APPROVAL' || decisions.has(decide.stepId)) {
          throw ApplicationFailure.create({
            type: STEP_NOT_WAITING,
            message: `step ${JSON.stringify(decide.stepId)} is not waiting for approval (it is ${result.status})`,
            nonRetryable: true,
          });
        }
      },
    },
  );

  // Under ONE_MARKER_PATCH a run takes every change below without asking for its patch: one marker
  // (and one search-attribute upsert) per run instead of one per change. Asked first, in the run's
  // first activation; runs recorded before it ask for each as they did (docs/upgrades.md#live-patches).
  // APPROVAL_CONTEXT_PATCH is the one marker of runs recorded from then on: it takes them too, and
  // the approval context (a run that records it never asks for ONE_MARKER_PATCH).
  const contextual = patched(APPROVAL_CONTEXT_PATCH);
  const current = contextual || patched(ONE_MARKER_PATCH);
  const has = (patch: string): boolean => current || patched(patch);
  // Flow control (docs/upgrades.md#live-patches): runs recorded before it existed never ask for the patch.
  const flow = input.flow && has(FLOW_CONTROL_PATCH) ? input.flow : undefined;
  // Under LANE_PROTOCOL_PATCH a queued run takes a grant only from the lane it was recorded for
  // (docs/upgrades.md#live-patches).
  // Asked here, in the run's first activation, before any local activity: a patch first asked
  // after a local activity's result is not found again when the history is replayed.
  const ownLaneOnly = flow?.queue !== undefined && has(LANE_PROTOCOL_PATCH);
  // Under LANE_PLACE_PATCH a queued run gives its place in the queue's bound back when it ends
  // (docs/upgrades.md#live-patches). Its own patch (it came after ONE_MARKER_PATCH), asked here for
  // the same reason.
  const releasesPlace = flow?.queue !== undefined && patched(LANE_PLACE_PATCH);
  // Under APPROVAL_WAIT_PATCH a run marks itself while a step waits for approval (docs/upgrades.md#live-patches).
  // Asked here for the same reason: the wait comes after local activities.
  const marksApprovalWait = has(APPROVAL_WAIT_PATCH);
  // Under BREAKER_PATCH a run the circuit breaker paused waits to be resumed (docs/upgrades.md#live-patches); asked
  // only by paused runs, so the histories of every other run are unchanged.
  const paused = flow?.paused !== undefined && has(BREAKER_PATCH) ? flow.paused : undefined;
  let resumed: BreakerResume | undefined;
  if (paused) {
    // Set before anything else: a resume sent while the run loads its steps is not missed.
    setHandler(breakerResumeSignal, (resume) => {
      resumed ??= resume;
    });
  }
  if (flow?.error) {
    state.status = 'FAILED';
    await condition(allHandlersFinished);
    throw ApplicationFailure.create({
      type: FLOW_CONTROL_FAILED,
      message: `${flow.error.field}: ${flow.error.message}`,
      nonRetryable: true,
      details: [flow.error],
    });
  }

  const { steps, automationName } = await loadSteps(input);
  state.steps = steps.map((step) => ({
    id: step.id,
    kind: stepKind(step) ?? ('unknown' as StepKind),
    status: 'PENDING',
    output: null,
    error: null,
  }));
  const options: RunOptions = {
    marksApprovalWait,
    current,
    ...(contextual ? { approvals: { automationName, asked: {} } } : {}),
  };
  if (paused) await hold(paused, state, () => resumed);
  if (!flow?.queue) return runSteps(input, steps, state, decisions, options);
  // A paused run did not ask its lane when it was accepted: the resume did (in acceptance order), or the run asks now.
  const queue = paused ? { ...flow.queue, requested: resumed?.laneRequested ?? false } : flow.queue;
  try {
    await admit(input, queue, state, ownLaneOnly);
    return await runSteps(input, steps, state, decisions, options);
  } finally {
    // Whatever the end (completed, failed, canceled — queued or not), the lane gets the permit or the request back.
    await CancellationScope.nonCancellable(async () => {
      await getExternalWorkflowHandle(queue.lane)
        .signal(releaseSignal, { runId: workflowInfo().workflowId })
        .catch(() => undefined);
      // The permit first (the lane's hand-off waits for no store write), then the place in the queue's bound.
      if (releasesPlace)
        await placeRelease
          .releaseLanePlace({ lane: queue.lane, runId: workflowInfo().workflowId })
          .catch(() => undefined);
    });
  }
}

/**
 * Holds a run the circuit breaker paused until the resume signal: PAUSED meanwhile (its state, the
 * FlowQueue search attribute, the details the Web UI shows). A cancel ends it here, before any step.
 */
async function hold(
  paused: { since: string },
  state: RunState,
  resumed: () => BreakerResume | undefined,
): Promise<void> {
  state.status = 'PAUSED';
  state.paused = { since: paused.since };
  setCurrentDetails('paused by the circuit breaker');
  upsertSearchAttributes([{ key: FlowQueueKey, value: 'PAUSED' }]);
  await condition(() => resumed() !== undefined);
  upsertSearchAttributes([{ key: FlowQueueKey, value: null }]);
  setCurrentDetails('');
  state.status = 'RUNNING';
  delete state.paused;
}

/**
 * Waits in the key's lane until it grants a permit: the run is QUEUED meanwhile (its state, the
 * FlowQueue search attribute, and the details the Web UI shows). Asks the lane itself when the
 * starter did not (a rerun), and again when no grant came after 30 s and every 10 minutes after (the
 * API may have stopped between the start and its request, an operator may have terminated the
 * lane; a lane ignores a request it already has).
 */
async function admit(input: AutomationRunInput, queue: RunQueue, state: RunState, ownLaneOnly: boolean): Promise<void> {
  let granted = false;
  // With `ownLaneOnly` a grant naming another lane is ignored. A grant naming none comes from a
  // lane started without LANE_PROTOCOL_PATCH (it keeps the old protocol until it continues-as-new):
  // taken, or the run would wait for that lane's next run. Runs queued without the patch take any grant.
  setHandler(grantSignal, (grant) => {
    if (ownLaneOnly && grant?.lane !== undefined && grant.lane !== queue.lane) return;
    granted = true;
  });
  state.status = 'QUEUED';
  state.queue = { key: queue.key };
  const key = queue.key.length > 64 ? `${queue.key.slice(0, 64)}…` : queue.key;
  setCurrentDetails(`queued (concurrency key ${JSON.stringify(key)})`);
  upsertSearchAttributes([{ key: FlowQueueKey, value: 'QUEUED' }]);
  const request = {
    automationId: input.automationId,
    lane: queue.lane,
    runId: workflowInfo().workflowId,
    limit: queue.limit,
    taskQueue: workflowInfo().taskQueue,
  };
  const ask = () =>
    acts.requestLanePermit.executeWithOptions({ summary: `ask lane ${queue.lane} for a permit` }, [request]);
  if (!queue.requested) await ask();
  let wait: Duration = PERMIT_REQUEST_REPEAT;
  while (!(await condition(() => granted, wait))) {
    await ask();
    wait = PERMIT_REQUEST_REFRESH;
  }
  upsertSearchAttributes([{ key: FlowQueueKey, value: null }]);
  setCurrentDetails('');
  state.status = 'RUNNING';
  delete state.queue;
}

/** What the run decided in its first activation (patches) that the steps' effects follow. */
interface RunOptions {
  /** Hold the ApprovalWait search attribute while a step waits for approval. */
  marksApprovalWait: boolean;
  /** The run recorded ONE_MARKER_PATCH: the effects' changes are taken without asking for their patches. */
  current: boolean;
  /**
   * Under APPROVAL_CONTEXT_PATCH: what each waitForApproval step asked (by step id), kept in the
   * memo; the automation's name makes the default title.
   */
  approvals?: { automationName: string; asked: Record<string, ApprovalContext> };
}

/** Runs the steps in order; answers the final state, or throws STEP_FAILED at the first failed step. */
async function runSteps(
  input: AutomationRunInput,
  steps: StepDefinition[],
  state: RunState,
  decisions: Map<string, ApprovalDecision>,
  options: RunOptions,
): Promise<RunState> {
  const outputs: Record<string, unknown> = {};
  const resumeAt = input.resume ? steps.findIndex((step) => step.id === input.resume!.fromStepId) : 0;

  for (const [index, step] of steps.entries()) {
    const result = state.steps[index] as StepResult;
    const recorded = index < resumeAt ? input.resume?.steps.find((done) => done.id === step.id) : undefined;
    if (recorded) {
      // A retry from the failed step: this one succeeded in the original run; its result stands.
      result.status = recorded.status;
      result.output = recorded.output;
      if (recorded.status === 'DONE') outputs[step.id] = recorded.output;
      continue;
    }
    result.status = 'RUNNING';
    // The workflow's clock (deterministic): state the query and the result show, no command.
    result.startedAt = new Date().toISOString();
    try {
      const outcome = await inStepSpan(step.id, stepKind(step), () =>
        runStep(step, workflowEffects(input, step, result, outputs, decisions, options)),
      );
      result.finishedAt = new Date().toISOString();
      if (outcome.skipped) {
        result.status = 'SKIPPED';
        continue;
      }
      result.output = outcome.output;
      result.status = 'DONE';
      outputs[step.id] = outcome.output;
    } catch (err) {
      if (isCancellation(err)) throw err;
      result.finishedAt = new Date().toISOString();
      const message = failureMessage(err);
      result.status = 'FAILED';
      result.error = message;
      if (err instanceof StepError && err.output) result.output = err.output;
      state.status = 'FAILED';
      await condition(allHandlersFinished);
      const details: StepFailureDetails = { stepId: step.id, kind: result.kind, error: message };
      throw ApplicationFailure.create({
        type: STEP_FAILED,
        message: `step "${step.id}" failed: ${message}`,
        nonRetryable: true,
        details: [details],
      });
    }
  }
  state.status = 'COMPLETED';
  if (mustWaitForHandlers()) await condition(allHandlersFinished);
  return state;
}

/**
 * Whether `condition(allHandlersFinished)` would not resolve at once: a handler still runs, or the
 * scope is cancelled (it then rejects with the cancellation). Otherwise the run skips it and the
 * promises it makes (the SDK's condition records nothing in the history either way).
 */
function mustWaitForHandlers(): boolean {
  return !allHandlersFinished() || CancellationScope.current().consideredCancelled;
}

/** The steps of the run's version, from the worker's store; a version that does not exist fails the run at once. */
function loadSteps(input: AutomationRunInput): Promise<{ steps: StepDefinition[]; automationName: string }> {
  return local.loadAutomationVersion
    .executeWithOptions({ summary: `load automation ${input.automationId} v${input.version}` }, [
      { automationId: input.automationId, version: input.version },
    ])
    .catch((err: unknown) => {
      const cause = activityCause(err);
      if (cause instanceof ApplicationFailure && cause.type === VERSION_NOT_FOUND) {
        throw ApplicationFailure.create({ type: VERSION_NOT_FOUND, message: cause.message, nonRetryable: true });
      }
      throw err;
    });
}

/** The effects of one step, as activities and timers of this run. */
function workflowEffects(
  input: AutomationRunInput,
  step: StepDefinition,
  result: StepResult,
  outputs: Record<string, unknown>,
  decisions: Map<string, ApprovalDecision>,
  options: RunOptions,
): StepEffects {
  const retry = retryPolicy(step.retry);
  const actor = `automation:${input.automationId}:${input.eventId}`;
  return {
    // evaluate, evaluateAndPerform and perform are plain functions that return the activity's
    // promise (one `.then` where the result is reshaped), not async ones: each async layer and
    // `await` would be one more promise, and the thread's stack-trace hook captures a stack for
    // every promise a run creates (docs/performance.md#constants). The commands are the same either way.
    evaluate(expressions, what) {
      return local.evaluateStep
        .executeWithOptions({ summary: summary(step, what) }, [
          { stepId: step.id, expressions, ctx: { trigger: input.trigger, steps: outputs } },
        ])
        .then(valuesOf);
    },
    async sleep(ms, what) {
      await sleep(ms, { summary: summary(step, what) });
    },
    park(status) {
      result.status = status;
    },
    async awaitApproval(timeoutMs, what, ask) {
      const decided = (): boolean => decisions.has(step.id);
      // Under APPROVAL_CONTEXT_PATCH the approver's title and details are evaluated now (a local
      // activity, only when the step writes any) and kept in the memo with the deadline.
      if (options.approvals) {
        // Nobody decides before the context is there: the step shows RUNNING while it is evaluated.
        const parked = result.status;
        result.status = 'RUNNING';
        const values =
          Object.keys(ask.expressions).length === 0 ? {} : await this.evaluate(ask.expressions, 'approval context');
        result.status = parked;
        const requestedAt = new Date();
        const asked: ApprovalContext = {
          ...ask.present(values, `${options.approvals.automationName}: ${step.id}`),
          requestedAt: requestedAt.toISOString(),
          deadline: timeoutMs === undefined ? null : new Date(requestedAt.getTime() + timeoutMs).toISOString(),
        };
        options.approvals.asked[step.id] = asked;
        result.approval = asked;
        upsertMemo({ [APPROVALS_MEMO]: options.approvals.asked });
      }
      // Shown by the Web UI as the run's current details while it waits (no history event).
      setCurrentDetails(`Waiting for approval: step ${step.id} (${what})`);
      // Visibility lists the runs waiting on a person by this mark. A run that ends during the wait
      // (cancelled, terminated) keeps it: readers ask for running runs only.
      if (options.marksApprovalWait) upsertSearchAttributes([{ key: ApprovalWaitKey, value: step.id }]);
      if (timeoutMs === undefined) {
        await condition(decided);
      } else {
        // A visible timer (its summary names the step) raced with the decision; the loser is cancelled.
        await CancellationScope.cancellable(async () => {
          const timer = sleep(timeoutMs, { summary: summary(step, what) });
          timer.catch(() => undefined);
          await Promise.race([condition(decided), timer]);
          CancellationScope.current().cancel();
        });
      }
      setCurrentDetails('');
      if (options.marksApprovalWait) upsertSearchAttributes([{ key: ApprovalWaitKey, value: null }]);
      return decisions.get(step.id);
    },
    async annotate(level, line) {
      log[level](line, { stepId: step.id, automationId: input.automationId, eventId: input.eventId });
      await local.annotate.executeWithOptions({ summary: `${step.id}: ${line}` }, [{ stepId: step.id, level, line }]);
    },
    fail(message) {
      throw new StepError(message);
    },
    evaluateAndPerform(effect, expressions, what) {
      // Under EVALUATE_IN_EFFECT_PATCH an effect that makes its first attempt locally evaluates its step's fields itself:
      // the step is one activity. Runs recorded before evaluated them in a local activity of their
      // own first (docs/upgrades.md#live-patches).
      if (effect.firstAttemptLocal && (options.current || patched(EVALUATE_IN_EFFECT_PATCH))) {
        const evaluating: EffectExpressions = { expressions, ctx: { trigger: input.trigger, steps: outputs } };
        return this.perform(effect, evaluating as never);
      }
      return evaluateThenPerform(this, effect, expressions, what);
    },
    perform(effect, effectInput) {
      // The effect's activity, by name (EFFECT_ACTIVITIES_REGISTERED: each exists). A retry from the
      // failed step continues the original run: its calls carry that run's keys. (Activity
      // arguments are not part of replay's determinism check: no patch needed.)
      const keysOf = input.resume?.keysOf;
      const context: EffectContext = { stepId: step.id, actor, ...(keysOf ? { keysOf } : {}) };
      const args: [object] = [{ ...context, ...effectInput }];
      const timeout = effect.timeoutMs ? { startToCloseTimeout: effect.timeoutMs(effectInput) } : {};
      const name = effect.name as EffectName;
      const regular = (attempts: StepRetry): Promise<Record<string, unknown>> =>
        (acts[name] as unknown as EffectActivity)
          .executeWithOptions({ summary: summary(step, name), retry: attempts, ...timeout }, args)
          .then(copyOf);
      // Runs recorded before local first attempts existed scheduled the activity at once
      // (docs/upgrades.md#live-patches).
      if (effect.firstAttemptLocal && (options.current || patched(LOCAL_FIRST_ATTEMPT_PATCH))) {
        return attemptLocally(name, step, retry, args, timeout, regular);
      }
      return regular(retry);
    },
  };
}

/** A step's retry policy as the workflow uses it: intervals in milliseconds, every field set (0 attempts: no limit). */
type StepRetry = Required<Pick<RetryPolicy, 'backoffCoefficient' | 'maximumAttempts'>> & {
  initialInterval: number;
  maximumInterval: number;
};

/**
 * The first attempt of a `firstAttemptLocal` effect, as a local activity: answers its output, or,
 * when it failed and the step's policy allows another attempt, what `rest` answers, given the
 * policy the remaining attempts run with as a regular activity, after the policy's first interval
 * (a visible timer). Together the two keep the step's policy: as many attempts in all, the same
 * intervals between them. A failure the policy would not retry (non-retryable, or the step's only
 * attempt) fails the step as the regular activity's would. One promise (`.then`) on success.
 */
function attemptLocally(
  name: EffectName,
  step: StepDefinition,
  retry: StepRetry,
  args: [object],
  timeout: { startToCloseTimeout?: number },
  rest: (attempts: StepRetry) => Promise<Record<string, unknown>>,
): Promise<Record<string, unknown>> {
  const activity = localOnce[name] as unknown as EffectActivity;
  return activity
    .executeWithOptions({ summary: summary(step, name), ...timeout }, args)
    .then(copyOf, async (err: unknown) => {
      if (isCancellation(err)) throw err;
      const cause = activityCause(err);
      if ((cause instanceof ApplicationFailure && cause.nonRetryable) || retry.maximumAttempts === 1) throw err;
      await sleep(retry.initialInterval, {
        summary: summary(step, `${name}: attempt 2 in ${retry.initialInterval} ms`),
      });
      return rest({
        ...retry,
        initialInterval: Math.min(retry.maximumInterval, retry.initialInterval * retry.backoffCoefficient),
        maximumAttempts: retry.maximumAttempts === 0 ? 0 : retry.maximumAttempts - 1,
      });
    });
}

/** An activity's output as the step's: a copy, a plain object. */
const copyOf = (output: object): Record<string, unknown> => ({ ...output });
/** The evaluateStep activity's values. */
const valuesOf = (evaluated: { values: Record<string, unknown> }): Record<string, unknown> => evaluated.values;

/** The step's retry policy, unset fields from RETRY_DEFAULTS; the maximum interval is never below the initial one. */
function retryPolicy(retry: StepRetryPolicy = {}): StepRetry {
  const interval = (text: string | null | undefined, fallback: string): number =>
    Math.max(1, parseDuration(text ?? fallback) ?? parseDuration(fallback) ?? 1000);
  const initialInterval = interval(retry.initialInterval, RETRY_DEFAULTS.initialInterval);
  const maximumInterval = Math.max(initialInterval, interval(retry.maximumInterval, RETRY_DEFAULTS.maximumInterval));
  return {
    initialInterval,
    maximumInterval,
    backoffCoefficient: retry.backoffCoefficient ?? RETRY_DEFAULTS.backoffCoefficient,
    maximumAttempts: retry.maximumAttempts ?? RETRY_DEFAULTS.maximumAttempts,
  };
}

/** The adapter starts this workflow by name with the contract's signature: the compiler holds the two together. */
type Holds<T extends true> = T;
export type AutomationMatchesContract = Holds<typeof automation extends AutomationWorkflow ? true : false>;

/** One line for the Temporal UI, e.g. `step: own (createEntitlementOwner)`. */
function summary(step: StepDefinition, what: string): string {
  const id = step.id.length > 64 ? `${step.id.slice(0, 64)}…` : step.id;
  return `step: ${id} (${what})`;
}

/** An activity's own failure: regular activities wrap it in ActivityFailure, local ones throw it as is. */
function activityCause(err: unknown): unknown {
  return err instanceof ActivityFailure && err.cause ? err.cause : err;
}

/** The message a failed step shows: the activity's own failure, not "Activity task failed". */
function failureMessage(err: unknown): string {
  const cause = activityCause(err);
  if (cause instanceof ApplicationFailure && cause.type === CEL_EVALUATION_FAILURE) {
    const detail = cause.details?.[0] as { field?: unknown; reason?: unknown } | undefined;
    if (typeof detail?.reason === 'string')
      return typeof detail.field === 'string' ? `${detail.field}: ${detail.reason}` : detail.reason;
  }
  return cause instanceof Error ? cause.message : String(cause);
}
