/**
 * The dry run behind `POST /api/v1/automations/{id}/test`: evaluates every expression of the
 * steps, in order, over a sample payload, the way a run would, but without any effect: no
 * ownership change, no HTTP call, no waiting. An effectful step's simulated output is its
 * evaluated input (ownership: the four ids; callWebhook: url, body and headers; wait: the
 * duration), so later steps read `ctx.steps.<id>` as in a run, except that a callWebhook's
 * simulated output is its request, not a response.
 *
 * Like a run, the dry run stops at the first step that fails (ERROR) or at a fail step that would
 * run (WOULD_RUN, with its message); the steps after it are NOT_REACHED. Evaluation is
 * synchronous and bounded per step by the CEL limits (src/cel) and overall by DRY_RUN_TIME_BUDGET_MS.
 */
import { CelEvaluationError, celLimits, evaluateAll, type CelContext } from '../cel';
import { parseDuration } from '../../workflows/duration';
import {
  assembleCallWebhook,
  callWebhookExpressions,
  describeValue,
  ownershipValues,
  STEP_KINDS,
  type StepDefinition,
  type StepKind,
} from '../../workflows/types';
import { validateOutboundUrl } from '../../activities/call-webhook';

export type DryRunStatus = 'WOULD_RUN' | 'SKIPPED' | 'ERROR' | 'NOT_REACHED';

export interface DryRunStep {
  id: string;
  kind: StepKind;
  status: DryRunStatus;
  /** What the step would produce (effectful steps: their evaluated inputs); null unless WOULD_RUN. */
  output: Record<string, unknown> | null;
  /** Why the step would fail; null unless ERROR. */
  error: string | null;
}

export interface DryRunOptions {
  /** Accept `http://` and non-public callWebhook URLs (ALLOW_INSECURE_JWKS). */
  allowInsecureOutbound: boolean;
  /** Wall-clock budget of the whole dry run, in milliseconds. */
  timeBudgetMs?: number;
}

/** Wall-clock budget of one dry run: a few steps' worth of the per-evaluation CEL limit. */
export const DRY_RUN_TIME_BUDGET_MS = 5 * celLimits.EVALUATION_TIME_LIMIT_MS;

/** A step that would fail; the message is the step's `error`. */
class DryRunError extends Error {}

/** Dry-runs `steps` over `payload` (`ctx.trigger`). Never throws for a step's problem: it becomes that step's ERROR. */
export function dryRunSteps(steps: StepDefinition[], payload: unknown, options: DryRunOptions): { steps: DryRunStep[] } {
  const budgetMs = options.timeBudgetMs ?? DRY_RUN_TIME_BUDGET_MS;
  const deadline = Date.now() + budgetMs;
  const outputs: Record<string, unknown> = {};
  const results: DryRunStep[] = [];
  let stopped = false;

  for (const step of steps) {
    const kind = STEP_KINDS.find((k) => k in step) ?? ('unknown' as StepKind);
    const result: DryRunStep = { id: step.id, kind, status: 'NOT_REACHED', output: null, error: null };
    results.push(result);
    if (stopped) continue;
    const evaluate = (expressions: Record<string, string>): Record<string, unknown> => {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new DryRunError(`the dry run used up its time budget of ${budgetMs} ms before this step`);
      const ctx: CelContext = { trigger: payload, steps: outputs };
      return evaluateAll(expressions, ctx, { timeLimitMs: Math.min(celLimits.EVALUATION_TIME_LIMIT_MS, remaining) });
    };
    try {
      if (step.when !== undefined && step.when.trim() !== '') {
        const { when } = evaluate({ when: step.when });
        if (typeof when !== 'boolean') throw new DryRunError(`when: must evaluate to a boolean, got ${describeValue(when)}`);
        if (!when) {
          result.status = 'SKIPPED';
          continue;
        }
      }
      const output = simulate(step, evaluate, options);
      result.output = output;
      result.status = 'WOULD_RUN';
      outputs[step.id] = output;
      if ('fail' in step) stopped = true;
    } catch (err) {
      result.status = 'ERROR';
      result.error = messageOf(err);
      stopped = true;
    }
  }
  return { steps: results };
}

function simulate(
  step: StepDefinition,
  evaluate: (expressions: Record<string, string>) => Record<string, unknown>,
  options: DryRunOptions,
): Record<string, unknown> {
  if ('setVariables' in step) {
    return Object.keys(step.setVariables).length === 0 ? {} : evaluate(step.setVariables);
  }
  if ('wait' in step) {
    if (parseDuration(step.wait.duration) === undefined) {
      throw new DryRunError(`wait.duration: ${JSON.stringify(step.wait.duration)} is not a duration such as "3600s"`);
    }
    return { duration: step.wait.duration };
  }
  if ('createEntitlementOwner' in step || 'deleteEntitlementOwner' in step) {
    const kind = 'createEntitlementOwner' in step ? 'createEntitlementOwner' : 'deleteEntitlementOwner';
    const fields = 'createEntitlementOwner' in step ? step.createEntitlementOwner : step.deleteEntitlementOwner;
    const ref = ownershipValues(kind, evaluate({ ...fields }));
    if (typeof ref === 'string') throw new DryRunError(ref);
    return { ...ref };
  }
  if ('callWebhook' in step) {
    const request = assembleCallWebhook(step.callWebhook, evaluate(callWebhookExpressions(step.callWebhook)));
    if (typeof request === 'string') throw new DryRunError(request);
    const refused = validateOutboundUrl(request.url, options.allowInsecureOutbound);
    if (refused !== undefined) throw new DryRunError(`callWebhook.url: ${refused}`);
    return { url: request.url, body: request.body, headers: request.headers };
  }
  if ('fail' in step) {
    const { message } = evaluate({ message: step.fail.message });
    if (typeof message !== 'string' || message === '') {
      throw new DryRunError(`fail.message: must evaluate to a non-empty string, got ${describeValue(message)}`);
    }
    return { message };
  }
  throw new DryRunError(`unknown step kind: expected one of ${STEP_KINDS.join(', ')}`);
}

/** The same text a run shows for the step: `field: reason` for CEL errors. */
function messageOf(err: unknown): string {
  if (err instanceof CelEvaluationError) return err.field === undefined ? err.message : `${err.field}: ${err.message}`;
  if (err instanceof DryRunError) return err.message;
  throw err;
}
