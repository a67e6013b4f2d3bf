/**
 * The step registry: every step kind, one line each. Adding a kind is one new file in this folder
 * and one line here (plus its tests); the validator, the workflow loop, the dry run, the OpenAPI
 * document and the executions view all read this list. Deterministic code only: the workflow
 * bundle imports it.
 */
import type { z } from 'zod';
import { callWebhook } from './call-webhook';
import { fail } from './fail';
import { describeValue, IDENTIFIER, type Effect, type StepEffects, type StepRetryPolicy } from './kind';

import { isObject } from '../json';
import { log } from './log';
import { notify } from './notify';
import { createEntitlementOwner, deleteEntitlementOwner } from './owners';
import { ensureUser } from './ensure-user';
import { grantEntitlements } from './grant-entitlements';
import { revokeEntitlements } from './revoke-entitlements';
import { setVariables } from './set-variables';
import { wait } from './wait';
import { retrySchema } from './retry';
import { validateBody, type CelCompiler } from './validate';
import { waitForApproval } from './wait-for-approval';

import { type FieldViolation, StepError } from '../errors';

export const STEP_REGISTRY = {
  setVariables,
  wait,
  createEntitlementOwner,
  deleteEntitlementOwner,
  ensureUser,
  grantEntitlements,
  revokeEntitlements,
  callWebhook,
  fail,
  log,
  waitForApproval,
  notify,
} as const;

export type StepKind = keyof typeof STEP_REGISTRY;
export const STEP_KINDS = Object.keys(STEP_REGISTRY) as StepKind[];
/** Kinds that take a `retry` policy. */
export const RETRYABLE_STEP_KINDS: readonly StepKind[] = STEP_KINDS.filter(
  (kind) => STEP_REGISTRY[kind].retryable === true,
);

/** The effects the kinds declare, by name: each is an activity of that name (activities/index.ts). */
export type DeclaredEffect = NonNullable<(typeof STEP_REGISTRY)[StepKind]['effect']>;
export type EffectName = DeclaredEffect['name'];
/** The input of the effect `Name` (what its activity gets besides the EffectContext). */
export type EffectInput<Name extends EffectName> =
  Extract<DeclaredEffect, { name: Name }> extends Effect<Name, infer Input> ? Input : never;

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

export { RETRY_DEFAULTS, RETRY_LIMITS, retrySchema } from './retry';

/** The kind of a stored step; undefined for a step of no known kind. */
export function stepKind(step: object): StepKind | undefined {
  return STEP_KINDS.find((kind) => kind in step);
}

/** What running one step came to: its output, or skipped because `when` was false. */
export type StepOutcome = { skipped: true } | { skipped: false; output: Record<string, unknown> };

/**
 * Runs one step against `effects`: its `when` first, then its kind's interpreter. Rejects with
 * StepError. Plain functions returning promises, not async ones: in a run each async layer and
 * each `await` is a promise the workflow thread's stack-trace hook captures a stack for
 * (docs/performance.md#constants), so a step without `when` adds one promise (`.then`) to its kind's.
 */
export function runStep(step: StepDefinition, effects: StepEffects): Promise<StepOutcome> {
  if (step.when !== undefined && step.when.trim() !== '') return runWhen(step.when, step, effects);
  return runKind(step, effects);
}

const SKIPPED: StepOutcome = Object.freeze({ skipped: true });
const done = (output: Record<string, unknown>): StepOutcome => ({ skipped: false, output });

async function runWhen(expression: string, step: StepDefinition, effects: StepEffects): Promise<StepOutcome> {
  const { when } = await effects.evaluate({ when: expression }, 'evaluate when');
  if (typeof when !== 'boolean') throw new StepError(`when: must evaluate to a boolean, got ${describeValue(when)}`);
  return when ? runKind(step, effects) : SKIPPED;
}

/** The kind's interpreter; an unknown kind, or an interpreter that throws at once, rejects. */
function runKind(step: StepDefinition, effects: StepEffects): Promise<StepOutcome> {
  const kind = stepKind(step);
  if (kind === undefined)
    return Promise.reject(new StepError(`unknown step kind: expected one of ${STEP_KINDS.join(', ')}`));
  const definition = STEP_REGISTRY[kind] as {
    run(body: unknown, effects: StepEffects): Promise<Record<string, unknown>>;
  };
  try {
    return definition.run((step as unknown as Record<string, unknown>)[kind], effects).then(done);
  } catch (err) {
    return Promise.reject(err);
  }
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
  cel: CelCompiler,
  violations: FieldViolation[],
  secretCel: CelCompiler = () => 'named secrets cannot be checked here',
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
      violations.push({
        field: `${at}.id`,
        description: 'must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$ (it is read as ctx.steps.<id>)',
      });
      return;
    }
    if (seen.has(id)) violations.push({ field: `${at}.id`, description: `step id "${id}" is used twice` });
    seen.add(id);
    const violation = (field: string, description: string): void => {
      violations.push({ field, description: `step "${id}": ${description}` });
    };
    const kinds = STEP_KINDS.filter((kind) => raw[kind] !== undefined && raw[kind] !== null);
    if (kinds.length !== 1) {
      violations.push(...kindViolations(raw, at, id, kinds));
      return;
    }
    const kind = kinds[0]!;
    const step: Record<string, unknown> = { id };
    if (raw.when !== undefined && raw.when !== null) {
      if (typeof raw.when !== 'string' || raw.when.trim() === '')
        violation(`${at}.when`, 'must be a CEL expression (a non-empty string)');
      else {
        const problem = cel(raw.when);
        if (problem !== undefined) violation(`${at}.when`, problem);
        step.when = raw.when;
      }
    }
    if (raw.retry !== undefined && raw.retry !== null) {
      if (!RETRYABLE_STEP_KINDS.includes(kind)) {
        violations.push({
          field: `${at}.retry`,
          description: `step "${id}": retry applies only to ${RETRYABLE_STEP_KINDS.join(', ')} steps`,
        });
      } else {
        step.retry = validateBody(retrySchema, raw.retry, { at: `${at}.retry`, violation, cel, secretCel }) ?? {};
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
      step[kind] =
        validateBody(STEP_REGISTRY[kind].schema, body, { at: `${at}.${kind}`, violation, cel, secretCel }) ?? {};
    }
    steps.push(step as unknown as StepDefinition);
  });
  return steps;
}

/**
 * Why a step does not set exactly one kind, in the step registry's names: a field that is no kind
 * (a mistyped `logg`) is named with the kind it is closest to; two kinds are named both.
 */
function kindViolations(raw: Record<string, unknown>, at: string, id: string, kinds: StepKind[]): FieldViolation[] {
  const one = `a step sets exactly one of ${STEP_KINDS.join(', ')}`;
  if (kinds.length > 1) return [{ field: at, description: `step "${id}": sets ${kinds.join(' and ')}; ${one}` }];
  const strangers = Object.keys(raw).filter((key) => !STEP_FIELDS.has(key));
  if (strangers.length === 0) return [{ field: at, description: `step "${id}": no step kind; ${one}` }];
  return strangers.map((key) => {
    const near = closestKind(key);
    const hint = near ? `; did you mean "${near}"?` : '';
    return { field: `${at}.${key}`, description: `step "${id}": "${key}" is not a step kind${hint} (${one})` };
  });
}

/** The step kind a mistyped name is meant to be: the nearest by edit distance, ignoring case, at most 2 away. */
function closestKind(name: string): StepKind | undefined {
  let best: { kind: StepKind; distance: number } | undefined;
  for (const kind of STEP_KINDS) {
    const distance = editDistance(name.toLowerCase(), kind.toLowerCase());
    if (distance <= 2 && (!best || distance < best.distance)) best = { kind, distance };
  }
  return best?.kind;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++)
      row[j] = Math.min(previous[j]! + 1, row[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = row;
  }
  return previous[b.length]!;
}

export { StepError, describeValue };
export { readsSecrets, splitSecretHeaders, SECRETS_IDENTIFIER } from './secret-references';
export { lastResult, effectInputFrom, evaluateThenPerform } from './kind';
export type {
  StepEffects,
  StepRetryPolicy,
  OwnershipRef,
  CallKeyScope,
  CallWebhookRequest,
  ParkedStatus,
  LogLevel,
  ApprovalDecision,
  ApprovalAsk,
  ApprovalContext,
  ApprovalDetail,
  Effect,
  EffectContext,
  EffectExpressions,
  RecordedEffect,
  SecretRead,
} from './kind';
