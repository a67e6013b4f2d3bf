/**
 * The dry run behind `POST /api/v1/automations/{id}/test`: runs every step's interpreter (the step
 * registry, src/steps) over a sample payload, in order, the way a run would, but with simulated
 * effects: no ownership change, no HTTP call, no waiting, no log line. An effect's simulated output
 * is its evaluated input (ownership: the four ids; notify: the secret's name and the text; wait: the
 * duration; log: the line) unless it has a simulation of its own in SIMULATIONS, so later steps
 * read `ctx.steps.<id>` as in a run, except that a callWebhook's simulated output is its request
 * (url, body and headers), not a response. A header value that reads named
 * secrets shows a placeholder for each (`'Bearer ' + secrets.crm_token` → `Bearer [secret crm_token]`),
 * never a value: the dry run does not open secrets. The headers the service adds show placeholders
 * too: `Idempotency-Key` and `webhook-id` are `[per run]` (each run's key differs), and a signed
 * step's `webhook-timestamp` is `[at send]` and `webhook-signature` `[signed with <name>]`.
 *
 * Like a run, the dry run stops at the first step that fails (ERROR) or at a fail step that would
 * run (WOULD_RUN, with its message); the steps after it are NOT_REACHED. Evaluation is
 * synchronous and bounded per step by the CEL limits (src/cel) and overall by DRY_RUN_TIME_BUDGET_MS.
 */
import { evaluateAll, evaluateSecretExpression, secretNames } from '../cel';
import {
  evaluateThenPerform,
  runStep,
  stepKind,
  type EffectInput,
  type EffectName,
  type StepDefinition,
  type StepEffects,
  type StepKind,
} from '../steps';
import { validateOutboundUrl } from '../outbound/policy';
import { originRefusal, refusedSecret, targetOrigin } from './secret-origins';
import { CelEvaluationError, StepError } from '../errors';

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
  /** Accept `http://` and loopback/private callWebhook URLs (ALLOW_PRIVATE_OUTBOUND). */
  allowInsecureOutbound: boolean;
  /** Wall-clock budget of the whole dry run, in milliseconds. */
  timeBudgetMs?: number;
  /**
   * The named secrets that exist, each with the origins it may be sent to (a header reading another
   * one, or a URL outside a secret's origins, is an ERROR); undefined: not checked.
   */
  existingSecrets?: ReadonlyMap<string, readonly string[]>;
}

/** What the dry run shows for a secret's value. */
export function secretPlaceholder(name: string): string {
  return `[secret ${name}]`;
}

/** What the dry run shows for the call's key (Idempotency-Key, webhook-id): each run has its own. */
export const CALL_KEY_PLACEHOLDER = '[per run]';

/**
 * Wall-clock budget of one dry run, checked between evaluations (each evaluation is bounded by the
 * CEL cost budget, so the check comes at most one evaluation late).
 */
export const DRY_RUN_TIME_BUDGET_MS = 5000;

/** Dry-runs `steps` over `payload` (`ctx.trigger`). Never throws for a step's problem: it becomes that step's ERROR. */
export async function dryRunSteps(
  steps: StepDefinition[],
  payload: unknown,
  options: DryRunOptions,
): Promise<{ steps: DryRunStep[] }> {
  const budgetMs = options.timeBudgetMs ?? DRY_RUN_TIME_BUDGET_MS;
  const deadline = Date.now() + budgetMs;
  const outputs: Record<string, unknown> = {};
  const results: DryRunStep[] = [];
  let stopped = false;

  for (const step of steps) {
    const result: DryRunStep = {
      id: step.id,
      kind: stepKind(step) ?? ('unknown' as StepKind),
      status: 'NOT_REACHED',
      output: null,
      error: null,
    };
    results.push(result);
    if (stopped) continue;
    let failed = false;
    const effects = simulatedEffects(payload, outputs, options, () => {
      const remaining = deadline - Date.now();
      if (remaining <= 0) throw new StepError(`the dry run used up its time budget of ${budgetMs} ms before this step`);
    });
    effects.fail = async (message) => {
      failed = true;
      return { message };
    };
    try {
      const outcome = await runStep(step, effects);
      if (outcome.skipped) {
        result.status = 'SKIPPED';
        continue;
      }
      result.output = outcome.output;
      result.status = 'WOULD_RUN';
      outputs[step.id] = outcome.output;
      if (failed) stopped = true;
    } catch (err) {
      result.status = 'ERROR';
      result.error = messageOf(err);
      stopped = true;
    }
  }
  return { steps: results };
}

/** Effects that change nothing: evaluation is real, everything else answers its evaluated input. */
function simulatedEffects(
  payload: unknown,
  outputs: Record<string, unknown>,
  options: DryRunOptions,
  checkBudget: () => void,
): StepEffects {
  return {
    async evaluate(expressions) {
      checkBudget();
      return evaluateAll(expressions, { trigger: payload, steps: outputs });
    },
    async sleep() {},
    park() {},
    async awaitApproval(_timeoutMs, what, ask) {
      // The title and details are evaluated as the run would (an error shows here, naming its field);
      // then a dry run follows the approved path; `by` and `at` stay empty: nobody decided.
      if (Object.keys(ask.expressions).length > 0) ask.present(await this.evaluate(ask.expressions, what), '');
      return { decision: 'approved', by: '', at: '', comment: null };
    },
    async annotate() {},
    async fail(message) {
      return { message };
    },
    async perform(effect, input) {
      const simulate = SIMULATIONS[effect.name as EffectName] as Simulation<object> | undefined;
      return simulate ? simulate(input, options, checkBudget) : { ...(input as Record<string, unknown>) };
    },
    async evaluateAndPerform(effect, expressions, what) {
      return evaluateThenPerform(this, effect, expressions, what);
    },
  };
}

type Simulation<Input> = (input: Input, options: DryRunOptions, checkBudget: () => void) => Record<string, unknown>;

/** Effects whose simulated output is more than their evaluated input (the default), by name. */
const SIMULATIONS: { [Name in EffectName]?: Simulation<EffectInput<Name>> } = {
  /** The request as it would be sent: the URL checked, secrets and the service's headers as placeholders. */
  callWebhook(request, options, checkBudget) {
    const refused = validateOutboundUrl(request.url, options.allowInsecureOutbound);
    if (refused !== undefined) throw new StepError(`callWebhook.url: ${refused}`);
    const headers = { ...request.headers };
    const origin = targetOrigin(request.url);
    for (const [header, source] of Object.entries(request.secretHeaders ?? {})) {
      checkBudget();
      const placeholders: Record<string, string> = {};
      for (const name of secretNames(source)) {
        if (options.existingSecrets && !options.existingSecrets.has(name)) {
          throw new StepError(`callWebhook.headers.${header}: secret "${name}" does not exist`);
        }
        if (
          options.existingSecrets &&
          origin !== undefined &&
          refusedSecret(origin, [name], options.existingSecrets) !== undefined
        ) {
          throw new StepError(
            `callWebhook.headers.${header}: ${originRefusal(name, origin, options.existingSecrets.get(name)!)}`,
          );
        }
        placeholders[name] = secretPlaceholder(name);
      }
      try {
        const value = evaluateSecretExpression(source, placeholders);
        if (typeof value !== 'string') throw new StepError(`callWebhook.headers.${header}: must evaluate to a string`);
        headers[header] = value;
      } catch (err) {
        if (err instanceof CelEvaluationError) throw new StepError(`callWebhook.headers.${header}: ${err.message}`);
        throw err;
      }
    }
    headers['Idempotency-Key'] = CALL_KEY_PLACEHOLDER;
    headers['webhook-id'] = CALL_KEY_PLACEHOLDER;
    const signing = request.signature?.secret;
    if (signing !== undefined) {
      if (options.existingSecrets && !options.existingSecrets.has(signing))
        throw new StepError(`callWebhook.signature.secret: secret "${signing}" does not exist`);
      if (
        options.existingSecrets &&
        origin !== undefined &&
        refusedSecret(origin, [signing], options.existingSecrets) !== undefined
      ) {
        throw new StepError(
          `callWebhook.signature.secret: ${originRefusal(signing, origin, options.existingSecrets.get(signing)!)}`,
        );
      }
      headers['webhook-timestamp'] = '[at send]';
      headers['webhook-signature'] = `[signed with ${signing}]`;
    }
    return { url: request.url, body: request.body, headers };
  },
};

/** The same text a run shows for the step: `field: reason` for CEL errors. */
function messageOf(err: unknown): string {
  if (err instanceof CelEvaluationError) return err.field === undefined ? err.message : `${err.field}: ${err.message}`;
  if (err instanceof StepError) return err.message;
  throw err;
}
