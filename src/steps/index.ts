/**
 * The step registry: every step kind, one line each. Adding a kind is one new file in this folder
 * and one line here (plus its tests); the validator, the workflow loop, the dry run, the OpenAPI
 * document and the executions view all read this list. Deterministic code only: the workflow
 * bundle imports it.
 */
import type { z } from 'zod';
import { parseDuration } from '../../workflows/duration';
import { callWebhook } from './call-webhook';
import { fail } from './fail';
import { describeValue, IDENTIFIER, type StepCheck, type StepEffects, type StepRetryPolicy } from './kind';
import { log } from './log';
import { createEntitlementOwner, deleteEntitlementOwner } from './ownership';
import { setVariables } from './set-variables';
import { wait } from './wait';
import { waitForApproval } from './wait-for-approval';
import { type FieldViolation, StepError } from '../errors';
import { isObject } from '../json';

export const STEP_REGISTRY = {
  setVariables,
  wait,
  createEntitlementOwner,
  deleteEntitlementOwner,
  callWebhook,
  fail,
  log,
  waitForApproval,
} as const;

export type StepKind = keyof typeof STEP_REGISTRY;
export const STEP_KINDS = Object.keys(STEP_REGISTRY) as StepKind[];
/** Kinds that take a `retry` policy. */
export const RETRYABLE_STEP_KINDS: readonly StepKind[] = STEP_KINDS.filter((kind) => STEP_REGISTRY[kind].retryable === true);

type StepBodies = { [K in StepKind]: z.output<(typeof STEP_REGISTRY)[K]['schema']> };

interface StepBase {
  /** Unique within the automation; outputs are readable later as `ctx.steps.<id>.<field>`. */
  id: string;
  /** CEL condition; when it evaluates to false the step is skipped. */
  when?: string;
  /** Only on retryable kinds. */
  retry?: StepRetryPolicy;
}

/** One step as stored and run: an id, an optional condition and exactly one kind. */
export type StepDefinition = StepBase & { [K in StepKind]: { [P in K]: StepBodies[K] } }[StepKind];

export const MAX_STEPS = 50;

/** Retry policy of effectful steps when the step does not set one. */
export const RETRY_DEFAULTS = { maximumAttempts: 10, initialInterval: '1s', maximumInterval: '30s', backoffCoefficient: 2 } as const;
/** Bounds of a step `retry` policy, checked when the automation is saved. */
export const RETRY_LIMITS = { maximumAttempts: [1, 20], backoffCoefficient: [1, 10], maxIntervalSeconds: 3600 } as const;

/** The kind of a stored step; undefined for a step of no known kind. */
export function stepKind(step: object): StepKind | undefined {
  return STEP_KINDS.find((kind) => kind in step);
}

/** What running one step came to: its output, or skipped because `when` was false. */
export type StepOutcome = { skipped: true } | { skipped: false; output: Record<string, unknown> };

/** Runs one step against `effects`: its `when` first, then its kind's interpreter. Throws StepError. */
export async function runStep(step: StepDefinition, effects: StepEffects): Promise<StepOutcome> {
  if (step.when !== undefined && step.when.trim() !== '') {
    const { when } = await effects.evaluate({ when: step.when }, 'evaluate when');
    if (typeof when !== 'boolean') throw new StepError(`when: must evaluate to a boolean, got ${describeValue(when)}`);
    if (!when) return { skipped: true };
  }
  const kind = stepKind(step);
  if (kind === undefined) throw new StepError(`unknown step kind: expected one of ${STEP_KINDS.join(', ')}`);
  const definition = STEP_REGISTRY[kind] as { run(body: unknown, effects: StepEffects): Promise<Record<string, unknown>> };
  return { skipped: false, output: await definition.run((step as unknown as Record<string, unknown>)[kind], effects) };
}

// ---------------------------------------------------------------- validation on save

const STEP_FIELDS = new Set<string>(['id', 'when', 'retry', ...STEP_KINDS]);

/**
 * Steps: an array of `{id, when?, retry?, <one kind>}`, ids unique and usable as `ctx.steps.<id>`.
 * `cel` compiles an expression and answers a problem (undefined when it compiles): the validator
 * is given it so that this folder stays free of the CEL runtime.
 */
export function validateSteps(
  value: unknown,
  cel: (source: string) => string | undefined,
  violations: FieldViolation[],
  secretCel: (source: string) => string | undefined = () => 'named secrets cannot be checked here',
): StepDefinition[] {
  if (!Array.isArray(value)) {
    violations.push({ field: 'steps', description: 'must be an array of steps' });
    return [];
  }
  if (value.length > MAX_STEPS) {
    violations.push({ field: 'steps', description: `at most ${MAX_STEPS} steps` });
    return [];
  }
  const seen = new Set<string>();
  const steps: StepDefinition[] = [];
  value.forEach((raw: unknown, index) => {
    const at = `steps[${index}]`;
    if (!isObject(raw)) {
      violations.push({ field: at, description: 'must be an object' });
      return;
    }
    const id = raw.id;
    if (typeof id !== 'string' || !IDENTIFIER.test(id)) {
      violations.push({ field: `${at}.id`, description: 'must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$ (it is read as ctx.steps.<id>)' });
      return;
    }
    if (seen.has(id)) violations.push({ field: `${at}.id`, description: `step id "${id}" is used twice` });
    seen.add(id);
    /** A CEL field checked by `validate` (plain CEL, or a header that may read secrets). */
    const celField =
      (validate: (source: string) => string | undefined) =>
      (source: unknown, field: string): string => {
        if (typeof source !== 'string' || source.trim() === '') {
          violations.push({ field, description: `step "${id}": must be a CEL expression (a non-empty string)` });
          return '';
        }
        const problem = validate(source);
        if (problem) violations.push({ field, description: `step "${id}": ${problem}` });
        return source;
      };
    const check = (bodyAt: string): StepCheck => ({
      at: bodyAt,
      id,
      violation: (field, description) => violations.push({ field, description: `step "${id}": ${description}` }),
      cel: celField(cel),
      secretCel: celField(secretCel),
    });
    const kinds = STEP_KINDS.filter((kind) => raw[kind] !== undefined && raw[kind] !== null);
    if (kinds.length !== 1) {
      violations.push({ field: at, description: `step "${id}": exactly one of ${STEP_KINDS.join(', ')} must be set (found ${kinds.length})` });
      return;
    }
    const kind = kinds[0]!;
    const step: Record<string, unknown> = { id };
    if (raw.when !== undefined && raw.when !== null) step.when = check(at).cel(raw.when, `${at}.when`);
    if (raw.retry !== undefined && raw.retry !== null) {
      if (!RETRYABLE_STEP_KINDS.includes(kind)) {
        violations.push({ field: `${at}.retry`, description: `step "${id}": retry applies only to ${RETRYABLE_STEP_KINDS.join(', ')} steps` });
      } else {
        step.retry = validateRetry(raw.retry, check(`${at}.retry`));
      }
    }
    for (const key of Object.keys(raw)) {
      if (!STEP_FIELDS.has(key)) violations.push({ field: `${at}.${key}`, description: `step "${id}": unknown field` });
    }
    const body = raw[kind];
    if (!isObject(body)) {
      violations.push({ field: `${at}.${kind}`, description: `step "${id}": must be an object` });
      step[kind] = {};
    } else {
      step[kind] = STEP_REGISTRY[kind].validate(body, check(`${at}.${kind}`));
    }
    steps.push(step as unknown as StepDefinition);
  });
  return steps;
}

/** `{maximumAttempts 1..20, initialInterval, maximumInterval (durations, ≤ 1 h), backoffCoefficient 1..10}`, all optional. */
function validateRetry(value: unknown, check: StepCheck): StepRetryPolicy {
  const { at } = check;
  if (!isObject(value)) {
    check.violation(at, 'must be an object');
    return {};
  }
  for (const key of Object.keys(value)) {
    if (!['maximumAttempts', 'initialInterval', 'maximumInterval', 'backoffCoefficient'].includes(key)) {
      check.violation(`${at}.${key}`, 'unknown field; expected maximumAttempts, initialInterval, maximumInterval, backoffCoefficient');
    }
  }
  const retry: StepRetryPolicy = {};
  const [minAttempts, maxAttempts] = RETRY_LIMITS.maximumAttempts;
  const attempts = value.maximumAttempts;
  if (attempts !== undefined && attempts !== null) {
    if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < minAttempts || attempts > maxAttempts) {
      check.violation(`${at}.maximumAttempts`, `must be an integer from ${minAttempts} to ${maxAttempts}`);
    } else {
      retry.maximumAttempts = attempts;
    }
  }
  const [minCoefficient, maxCoefficient] = RETRY_LIMITS.backoffCoefficient;
  const coefficient = value.backoffCoefficient;
  if (coefficient !== undefined && coefficient !== null) {
    if (typeof coefficient !== 'number' || !Number.isFinite(coefficient) || coefficient < minCoefficient || coefficient > maxCoefficient) {
      check.violation(`${at}.backoffCoefficient`, `must be a number from ${minCoefficient} to ${maxCoefficient}`);
    } else {
      retry.backoffCoefficient = coefficient;
    }
  }
  const intervals: Record<'initialInterval' | 'maximumInterval', number | undefined> = { initialInterval: undefined, maximumInterval: undefined };
  for (const name of ['initialInterval', 'maximumInterval'] as const) {
    const text = value[name];
    if (text === undefined || text === null) continue;
    const ms = typeof text === 'string' ? parseDuration(text) : undefined;
    if (ms === undefined || ms <= 0 || ms > RETRY_LIMITS.maxIntervalSeconds * 1000) {
      check.violation(`${at}.${name}`, `must be a positive duration such as "1s" or "0.5s", at most ${RETRY_LIMITS.maxIntervalSeconds}s`);
    } else {
      retry[name] = text as string;
      intervals[name] = ms;
    }
  }
  const initial = intervals.initialInterval ?? parseDuration(RETRY_DEFAULTS.initialInterval) ?? 0;
  if (intervals.maximumInterval !== undefined && intervals.maximumInterval < initial) {
    check.violation(`${at}.maximumInterval`, `must not be shorter than initialInterval (${retry.initialInterval ?? RETRY_DEFAULTS.initialInterval})`);
  }
  return retry;
}

export { describeValue };
export { readsSecrets, splitSecretHeaders, SECRETS_IDENTIFIER } from './secret-references';
export type { StepEffects, StepRetryPolicy, OwnershipRef, CallWebhookRequest, ParkedStatus, LogLevel, ApprovalDecision } from './kind';
