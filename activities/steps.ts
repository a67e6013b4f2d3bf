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
import type { LogLevel } from '../src/steps';
import { CEL_EVALUATION_FAILURE, VERSION_NOT_FOUND, type AutomationVersionSteps, type EvaluatedStep } from '../src/contract/run';
import type { EvaluateStepInput } from '../src/contract/activities';
import { CelEvaluationError } from '../src/errors';

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

/** How many published versions a worker keeps loaded (the most recently used). */
export const PUBLISHED_VERSIONS_KEPT = 256;

export function createStepActivities(deps: { db: Db }) {
  /**
   * Versions this worker has loaded, by `<automationId>@<version>`. A published version never
   * changes (a publish records a new number, a repeat of one keeps its snapshot) and ids are never
   * reused, so a kept one is what the store would answer; deleting the automation removes its
   * versions, and its listener stops starting runs at once. A version that does not exist is not kept.
   */
  const versions = new Map<string, AutomationVersionSteps>();

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
        return kept;
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
      versions.set(key, loaded);
      if (versions.size > PUBLISHED_VERSIONS_KEPT) versions.delete(versions.keys().next().value!);
      return loaded;
    },

    /** A log step's line: written to the worker's log; the history keeps it as this activity's summary and result. */
    async annotate(input: { stepId: string; level: LogLevel; line: string }): Promise<{ stepId: string; line: string }> {
      Context.current().log[input.level](input.line, { stepId: input.stepId });
      return { stepId: input.stepId, line: input.line };
    },
  };
}
