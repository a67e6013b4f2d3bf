/**
 * The automation workflow: runs the steps of the automation version it was started with, in
 * order. Deterministic: it imports only @temporalio/workflow and types; every expression is
 * evaluated in an activity, every side effect is an activity (ownership, callWebhook), a wait is
 * a durable timer, and a `fail` step ends the run as FAILED with its evaluated message.
 * Effectful steps run with their own retry policy (`step.retry`, defaults RETRY_DEFAULTS).
 *
 * Query `state` answers the RunState at any time: every step is listed from the start (PENDING),
 * then RUNNING, WAITING (timer), DONE, SKIPPED (`when` was false) or FAILED.
 */
import { ActivityFailure, ApplicationFailure, defineQuery, isCancellation, proxyActivities, setHandler, sleep, type RetryPolicy } from '@temporalio/workflow';
import type * as activities from '../activities';
import { parseDuration } from './duration';
import {
  assembleCallWebhook,
  CALL_WEBHOOK_DEFAULT_TIMEOUT_MS,
  CALL_WEBHOOK_MAX_TIMEOUT_MS,
  callWebhookExpressions,
  describeValue,
  ownershipValues,
  RETRY_DEFAULTS,
  RUN_STATE_QUERY,
  STEP_KINDS,
  type AutomationRunInput,
  type RunState,
  type StepDefinition,
  type StepKind,
  type StepResult,
} from './types';

/** Query for the run's progress. */
export const stateQuery = defineQuery<RunState>(RUN_STATE_QUERY);

/** Failure type of a run that stopped at a failed step. */
export const STEP_FAILED = 'StepFailed';

type Activities = ReturnType<typeof activities.createActivities>;

const acts = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds', maximumAttempts: 10 },
});

/** A step that cannot go on; its message becomes the step's `error`. */
class StepError extends Error {}

/** Longest message a fail step records. */
const MAX_FAIL_MESSAGE = 2000;
/** Time a callWebhook activity gets beyond the request's own deadline. */
const CALL_WEBHOOK_GRACE_MS = 5_000;

export async function automation(input: AutomationRunInput): Promise<RunState> {
  const state: RunState = {
    status: 'RUNNING',
    steps: input.steps.map((step) => ({ id: step.id, kind: stepKind(step) ?? ('unknown' as StepKind), status: 'PENDING', output: null, error: null })),
  };
  setHandler(stateQuery, () => state);
  const outputs: Record<string, unknown> = {};

  for (const [index, step] of input.steps.entries()) {
    const result = state.steps[index] as StepResult;
    result.status = 'RUNNING';
    try {
      if (step.when !== undefined && step.when.trim() !== '') {
        const { when } = await evaluate(input, outputs, step, { when: step.when }, 'when');
        if (typeof when !== 'boolean') throw new StepError(`when: must evaluate to a boolean, got ${describeValue(when)}`);
        if (!when) {
          result.status = 'SKIPPED';
          continue;
        }
      }
      const output = await runStep(input, outputs, step, result);
      result.output = output;
      result.status = 'DONE';
      outputs[step.id] = output;
    } catch (err) {
      if (isCancellation(err)) throw err;
      const message = failureMessage(err);
      result.status = 'FAILED';
      result.error = message;
      state.status = 'FAILED';
      throw ApplicationFailure.create({
        type: STEP_FAILED,
        message: `step "${step.id}" failed: ${message}`,
        nonRetryable: true,
        details: [{ stepId: step.id, kind: result.kind, error: message }],
      });
    }
  }
  state.status = 'COMPLETED';
  return state;
}

async function runStep(
  input: AutomationRunInput,
  outputs: Record<string, unknown>,
  step: StepDefinition,
  result: StepResult,
): Promise<Record<string, unknown>> {
  if ('setVariables' in step) {
    if (Object.keys(step.setVariables).length === 0) return {};
    return evaluate(input, outputs, step, step.setVariables, 'setVariables');
  }
  if ('wait' in step) {
    const ms = parseDuration(step.wait.duration);
    if (ms === undefined) throw new StepError(`wait.duration: ${JSON.stringify(step.wait.duration)} is not a duration such as "3600s"`);
    result.status = 'WAITING';
    if (ms > 0) await sleep(ms, { summary: summary(step, `wait ${step.wait.duration}`) });
    return { duration: step.wait.duration };
  }
  if ('createEntitlementOwner' in step) {
    const ref = await ownershipRef(input, outputs, step, { ...step.createEntitlementOwner }, 'createEntitlementOwner');
    const options = { summary: summary(step, 'createEntitlementOwner'), retry: retryPolicy(step) };
    return { ...(await acts.createEntitlementOwner.executeWithOptions(options, [ref])) };
  }
  if ('deleteEntitlementOwner' in step) {
    const ref = await ownershipRef(input, outputs, step, { ...step.deleteEntitlementOwner }, 'deleteEntitlementOwner');
    const options = { summary: summary(step, 'deleteEntitlementOwner'), retry: retryPolicy(step) };
    return { ...(await acts.deleteEntitlementOwner.executeWithOptions(options, [ref])) };
  }
  if ('callWebhook' in step) {
    const fields = step.callWebhook;
    const values = await evaluate(input, outputs, step, callWebhookExpressions(fields), 'callWebhook');
    const request = assembleCallWebhook(fields, values);
    if (typeof request === 'string') throw new StepError(request);
    const timeoutMs = Math.min(fields.timeoutMs ?? CALL_WEBHOOK_DEFAULT_TIMEOUT_MS, CALL_WEBHOOK_MAX_TIMEOUT_MS);
    const options = {
      summary: summary(step, 'callWebhook'),
      startToCloseTimeout: timeoutMs + CALL_WEBHOOK_GRACE_MS,
      retry: retryPolicy(step),
    };
    return { ...(await acts.callWebhook.executeWithOptions(options, [{ stepId: step.id, ...request, timeoutMs }])) };
  }
  if ('fail' in step) {
    const { message } = await evaluate(input, outputs, step, { message: step.fail.message }, 'fail');
    if (typeof message !== 'string' || message === '') {
      throw new StepError(`fail.message: must evaluate to a non-empty string, got ${describeValue(message)}`);
    }
    throw new StepError(message.length > MAX_FAIL_MESSAGE ? `${message.slice(0, MAX_FAIL_MESSAGE)}…` : message);
  }
  throw new StepError(`unknown step kind: expected one of ${STEP_KINDS.join(', ')}`);
}

/** Evaluates the four fields of an ownership step; each must be a string. */
async function ownershipRef(
  input: AutomationRunInput,
  outputs: Record<string, unknown>,
  step: StepDefinition,
  fields: Record<string, string>,
  kind: StepKind,
): Promise<{ userId: string; roleSlug: string; appId: string; entitlementId: string }> {
  const ref = ownershipValues(kind, await evaluate(input, outputs, step, fields, kind));
  if (typeof ref === 'string') throw new StepError(ref);
  return ref;
}

/** The step's retry policy, unset fields from RETRY_DEFAULTS; the maximum interval is never below the initial one. */
function retryPolicy(step: StepDefinition): RetryPolicy {
  const retry = step.retry ?? {};
  const interval = (text: string | undefined, fallback: string): number => Math.max(1, parseDuration(text ?? fallback) ?? parseDuration(fallback) ?? 1000);
  const initialInterval = interval(retry.initialInterval, RETRY_DEFAULTS.initialInterval);
  const maximumInterval = Math.max(initialInterval, interval(retry.maximumInterval, RETRY_DEFAULTS.maximumInterval));
  return {
    initialInterval,
    maximumInterval,
    backoffCoefficient: retry.backoffCoefficient ?? RETRY_DEFAULTS.backoffCoefficient,
    maximumAttempts: retry.maximumAttempts ?? RETRY_DEFAULTS.maximumAttempts,
  };
}

function evaluate(
  input: AutomationRunInput,
  outputs: Record<string, unknown>,
  step: StepDefinition,
  expressions: Record<string, string>,
  what: string,
): Promise<Record<string, unknown>> {
  return acts.evaluateStep.executeWithOptions({ summary: summary(step, `evaluate ${what}`) }, [
    { stepId: step.id, expressions, ctx: { trigger: input.trigger, steps: outputs } },
  ]);
}

function stepKind(step: StepDefinition): StepKind | undefined {
  return STEP_KINDS.find((kind) => kind in step);
}

/** One line for the Temporal UI, e.g. `step: own (createEntitlementOwner)`. */
function summary(step: StepDefinition, what: string): string {
  const id = step.id.length > 64 ? `${step.id.slice(0, 64)}…` : step.id;
  return `step: ${id} (${what})`;
}

/** The message a failed step shows: the activity's own failure, not "Activity task failed". */
function failureMessage(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type === 'CelEvaluationError') {
      const detail = cause.details?.[0] as { field?: unknown; reason?: unknown } | undefined;
      if (typeof detail?.reason === 'string') {
        return typeof detail.field === 'string' ? `${detail.field}: ${detail.reason}` : detail.reason;
      }
    }
    return cause.message;
  }
  return err instanceof Error ? err.message : String(err);
}
