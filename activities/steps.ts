/**
 * The CEL activity: evaluates the expressions of one step over `ctx`. Evaluation is pure and
 * cheap, so it is an activity only to keep the workflow deterministic and to bound it by the
 * activity timeout; a CEL error will fail again on retry, so it is non-retryable.
 */
import { ApplicationFailure } from '@temporalio/common';
import { CelEvaluationError, evaluateAll, type CelContext } from '../src/cel';

export interface EvaluateStepInput {
  stepId: string;
  /** Field name → CEL expression. */
  expressions: Record<string, string>;
  ctx: CelContext;
}

/** Failure type of an expression that cannot be evaluated; the workflow fails the step with it. */
export const CEL_EVALUATION_FAILURE = 'CelEvaluationError';

export function createStepActivities() {
  return {
    /** Evaluates every expression of a step; field name → JSON value. */
    async evaluateStep(input: EvaluateStepInput): Promise<Record<string, unknown>> {
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
    },
  };
}
