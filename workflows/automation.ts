/**
 * The automation workflow: runs the steps of the automation version it was started with, in
 * order. Deterministic: it imports only @temporalio/workflow and types; every expression is
 * evaluated in an activity, every side effect is an activity, a wait is a durable timer.
 *
 * Query `state` answers the RunState at any time: every step is listed from the start (PENDING),
 * then RUNNING, WAITING (timer), DONE, SKIPPED (`when` was false) or FAILED.
 */
import { ActivityFailure, ApplicationFailure, defineQuery, isCancellation, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type * as activities from '../activities';
import { parseDuration } from './duration';
import { RUN_STATE_QUERY, STEP_KINDS, type AutomationRunInput, type RunState, type StepDefinition, type StepKind, type StepResult } from './types';

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
        if (typeof when !== 'boolean') throw new StepError(`when: must evaluate to a boolean, got ${describe(when)}`);
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
        details: [{ stepId: step.id, error: message }],
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
    return { ...(await acts.createEntitlementOwner.executeWithOptions({ summary: summary(step, 'createEntitlementOwner') }, [ref])) };
  }
  if ('deleteEntitlementOwner' in step) {
    const ref = await ownershipRef(input, outputs, step, { ...step.deleteEntitlementOwner }, 'deleteEntitlementOwner');
    return { ...(await acts.deleteEntitlementOwner.executeWithOptions({ summary: summary(step, 'deleteEntitlementOwner') }, [ref])) };
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
  const values = await evaluate(input, outputs, step, fields, kind);
  const text = (name: string): string => {
    const value = values[name];
    if (typeof value !== 'string' || value === '') {
      throw new StepError(`${kind}.${name}: must evaluate to a non-empty string, got ${describe(value)}`);
    }
    return value;
  };
  return { userId: text('userId'), roleSlug: text('roleSlug'), appId: text('appId'), entitlementId: text('entitlementId') };
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

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  const text = JSON.stringify(value);
  return `${typeof value} ${text.length > 60 ? `${text.slice(0, 60)}…` : text}`;
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
