/**
 * The run's local activities: evaluating a step's CEL expressions, loading the steps of the run's
 * published version (kept in memory once loaded: published versions are immutable), and recording
 * a log line. They are cheap and run in the worker that runs the workflow (recorded in the history
 * as markers, retried on failure). A CEL error will fail again on retry, and so will a version that
 * does not exist: both are non-retryable.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { evaluateAll } from '../src/cel';
import type { Db } from '../src/store/db';
import { getPublishedVersion } from '../src/store/automation-versions';
import { effectInputFrom, type Effect, type EffectExpressions, type LogLevel } from '../src/steps';
import {
  CEL_EVALUATION_FAILURE,
  STEP_VALUE_INVALID,
  VERSION_NOT_FOUND,
  type AutomationVersionSteps,
  type EvaluatedStep,
} from '../src/contract/run';
import type { EvaluateStepInput } from '../src/contract/activities';
import { CelEvaluationError, StepError } from '../src/errors';

export { CEL_EVALUATION_FAILURE };

/**
 * Evaluates every expression of a step over `ctx`: field name → JSON value. An expression that
 * cannot be evaluated fails with CEL_EVALUATION_FAILURE (non-retryable: it would fail again),
 * naming the step and the field.
 */
export function evaluateStepFields(input: EvaluateStepInput): Record<string, unknown> {
  try {
    return evaluateAll(input.expressions, input.ctx);
  } catch (err) {
    if (err instanceof CelEvaluationError) {
      const field = err.field === undefined ? '' : ` field "${err.field}"`;
      throw ApplicationFailure.create({
        type: CEL_EVALUATION_FAILURE,
        message: `step "${input.stepId}"${field}: ${err.message}`,
        nonRetryable: true,
        details: [{ stepId: input.stepId, field: err.field ?? null, code: err.code, reason: err.message }],
      });
    }
    throw err;
  }
}

/**
 * The input of `effect` from its step's fields, evaluated here (an effect performed with
 * `evaluateAndPerform` whose activity evaluates them itself: the step is one activity). A field that
 * cannot be evaluated, or a value `fromValues` will not take, fails without retry (it would fail
 * again), with the message the step shows.
 */
export function evaluatedEffectInput<Input extends object>(
  effect: Effect<string, Input>,
  input: EffectExpressions & { stepId?: string },
): Input {
  const values = evaluateStepFields({ stepId: input.stepId ?? '', expressions: input.expressions, ctx: input.ctx });
  try {
    return effectInputFrom(effect, values);
  } catch (err) {
    if (err instanceof StepError)
      throw ApplicationFailure.create({ type: STEP_VALUE_INVALID, message: err.message, nonRetryable: true });
    throw err;
  }
}

/**
 * What a worker keeps of the published versions it has loaded, the most recently used first: at
 * most `count` versions and `chars` characters of their steps' JSON (a version may be as large as
 * the API's 1 MiB request body; one larger than `chars` is not kept).
 */
export interface KeptVersions {
  count: number;
  chars: number;
}

export const PUBLISHED_VERSIONS_KEPT: KeptVersions = { count: 256, chars: 8 * 1024 * 1024 };

export function createStepActivities(deps: { db: Db; keptVersions?: KeptVersions }) {
  const limits = deps.keptVersions ?? PUBLISHED_VERSIONS_KEPT;
  /**
   * Versions this worker has loaded, by `<automationId>@<version>`. A published version never
   * changes (a publish records a new number, a repeat of one keeps its snapshot) and ids are never
   * reused, so a kept one is what the store would answer; deleting the automation removes its
   * versions, and its listener stops starting runs at once. A version that does not exist is not kept.
   */
  const versions = new Map<string, { loaded: AutomationVersionSteps; chars: number }>();
  let keptChars = 0;
  const keep = (key: string, loaded: AutomationVersionSteps): void => {
    const chars = JSON.stringify(loaded.steps).length;
    if (chars > limits.chars) return;
    const already = versions.get(key); // two runs of a version that were loading at once
    if (already) keptChars -= already.chars;
    versions.delete(key);
    versions.set(key, { loaded, chars });
    keptChars += chars;
    while (versions.size > limits.count || keptChars > limits.chars) {
      const [oldest, entry] = versions.entries().next().value!;
      versions.delete(oldest);
      keptChars -= entry.chars;
    }
  };

  return {
    /** Evaluates every expression of a step; answers the step id and field name → JSON value. */
    async evaluateStep(input: EvaluateStepInput): Promise<EvaluatedStep> {
      return { stepId: input.stepId, values: evaluateStepFields(input) };
    },

    /** The steps of a published version, from its immutable snapshot. */
    async loadAutomationVersion(ref: { automationId: string; version: number }): Promise<AutomationVersionSteps> {
      const key = `${ref.automationId}@${ref.version}`;
      const kept = versions.get(key);
      if (kept) {
        versions.delete(key);
        versions.set(key, kept);
        return kept.loaded;
      }
      const record = await getPublishedVersion(deps.db, ref.automationId, ref.version);
      if (!record) {
        throw ApplicationFailure.create({
          type: VERSION_NOT_FOUND,
          message: `automation ${JSON.stringify(ref.automationId)} has no published version ${ref.version}`,
          nonRetryable: true,
        });
      }
      const loaded = { automationName: record.snapshot.displayName, steps: record.snapshot.steps };
      keep(key, loaded);
      return loaded;
    },

    /** A log step's line: written to the worker's log; the history keeps it as this activity's summary and result. */
    async annotate(input: {
      stepId: string;
      level: LogLevel;
      line: string;
    }): Promise<{ stepId: string; line: string }> {
      Context.current().log[input.level](input.line, { stepId: input.stepId });
      return { stepId: input.stepId, line: input.line };
    },
  };
}
