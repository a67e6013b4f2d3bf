/**
 * What a step kind is. Each kind lives in one file of this folder and holds everything about it:
 * its body schema (zod: the validator on save with its CEL fields marked, the TypeScript type, the
 * OpenAPI document), its effect (an activity, by name), its interpreter, written against
 * `StepEffects` so that the same code runs in the workflow (activities and timers) and in the dry
 * run (simulated effects), and what the executions view shows of it. The registry (`./index.ts`)
 * lists the kinds; the validator, the workflow loop, the dry run, the OpenAPI document and the
 * executions view iterate it.
 *
 * Everything in this folder is imported by the workflow bundle: deterministic code only (no I/O,
 * no clocks, no Node built-ins), checked by ESLint and by the bundle test.
 */
import { z } from 'zod';
import { parseDuration } from '../duration';
import { StepError, type FieldViolation } from '../errors';
import { isObject } from '../json';

export { StepError };

/** A person's decision on a waitForApproval step. */
export interface ApprovalDecision {
  decision: 'approved' | 'rejected';
  /** Who decided: the API client id. */
  by: string;
  /** RFC 3339 time the run recorded the decision. */
  at: string;
  comment: string | null;
}

/** One labelled value an approver reads before deciding, as the run evaluated it. */
export interface ApprovalDetail {
  label: string;
  value: string;
}

/** What a person sees of a waitForApproval step: evaluated when the step starts waiting. */
export interface ApprovalContext {
  title: string;
  /** In the order written. */
  details: ApprovalDetail[];
  /** RFC 3339 time the step started waiting. */
  requestedAt: string;
  /** `requestedAt` plus the step's timeout; null without one. */
  deadline: string | null;
}

/** What a waitForApproval step asks the approver's page to show: expressions, and how their values read. */
export interface ApprovalAsk {
  /** CEL sources evaluated when the wait starts, keyed by the field an error names (`title`, `details.<label>`). */
  expressions: Record<string, string>;
  /** The title and details from the evaluated values (`defaultTitle` without a `title`); throws StepError when a value will not do. */
  present(values: Record<string, unknown>, defaultTitle: string): Pick<ApprovalContext, 'title' | 'details'>;
}

/** Retry policy of an effectful step; intervals are protobuf-JSON durations. Unset fields take RETRY_DEFAULTS. */
export interface StepRetryPolicy {
  maximumAttempts?: number | null | undefined;
  initialInterval?: string | null | undefined;
  maximumInterval?: string | null | undefined;
  backoffCoefficient?: number | null | undefined;
}

/** The ids of an ownership, evaluated. */
export interface OwnershipRef {
  userId: string;
  roleSlug: string;
  appId: string;
  entitlementId: string;
}

/** The evaluated request of a callWebhook step. */
export interface CallWebhookRequest {
  url: string;
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /**
   * Header name → CEL source of a header value that reads `secrets.<name>`: not evaluated in the
   * workflow; the callWebhook activity resolves the secrets and evaluates it (absent when none).
   */
  secretHeaders?: Record<string, string>;
  /** Whole-request deadline in milliseconds. */
  timeoutMs: number;
  /** Sign the request the Standard Webhooks way with this named secret (absent: unsigned). */
  signature?: { secret: string };
}

/** Status a parked step shows while it waits. */
export type ParkedStatus = 'WAITING' | 'WAITING_FOR_APPROVAL';

/**
 * An effect a step asks for by name: in the workflow the activity of that name (activities/index.ts
 * registers it; the workflow checks at compile time that every declared effect has one), in the dry
 * run its simulation (by default its evaluated input). Declared in the kind's file.
 */
export interface Effect<Name extends string = string, Input extends object = object> {
  name: Name;
  /** The activity's deadline for this input (ms), beyond the default; e.g. a request's own timeout. */
  timeoutMs?(input: Input): number;
  /**
   * The first attempt runs as a local activity, inside the run's workflow task (no task-queue round
   * trip); when it fails and may be retried, the rest of the step's attempts run as a regular
   * activity, whose attempts and last failure the Web UI shows. For effects on the service's own
   * store only: never for a request to another system (its attempts must be visible from the first).
   */
  firstAttemptLocal?: boolean;
  /**
   * The effect's input from its step's evaluated fields; throws StepError when a value will not do.
   * A kind that declares it performs the effect with `evaluateAndPerform`: in the workflow, an
   * effect that also makes its first attempt locally is then one activity that evaluates the
   * step's fields and performs (no evaluation of its own before it).
   */
  fromValues?(values: Record<string, unknown>): Input;
  /** Type carrier only. */
  readonly input?: Input;
}

/** Declares an effect: `defineEffect<NotifyInput>()('notify')`. */
export function defineEffect<Input extends object>() {
  return <const Name extends string>(
    name: Name,
    options: Pick<Effect<Name, Input>, 'timeoutMs' | 'firstAttemptLocal' | 'fromValues'> = {},
  ): Effect<Name, Input> => ({
    name,
    ...options,
  });
}

/**
 * What the activity of an effect with `fromValues` gets when it evaluates its step's fields itself
 * (`evaluateAndPerform` in the workflow): the fields' expressions and the context they read.
 */
export interface EffectExpressions {
  expressions: Record<string, string>;
  ctx: { trigger: unknown; steps: Record<string, unknown> };
}

/** The run whose calls share keys: its workflow id and run id. */
export interface CallKeyScope {
  workflowId: string;
  runId: string;
}

/** What every effect's activity gets besides its own input: which step, who acts, which run's call keys. */
export interface EffectContext {
  stepId: string;
  /** `automation:<id>:<event id>`, for the audit trail. */
  actor: string;
  /** A retry from the failed step continues the original run: its calls carry that run's keys (absent: the activity's own run). */
  keysOf?: CallKeyScope;
}

/**
 * What a step may do. The workflow implements the primitives with local activities, timers and
 * updates, and `perform` with the effect's activity; the dry run simulates them.
 */
export interface StepEffects {
  /** Evaluates CEL expressions (field → source) over `ctx` = {trigger, steps}; field → JSON value. `what` names it in the history. */
  evaluate(expressions: Record<string, string>, what: string): Promise<Record<string, unknown>>;
  /** A durable sleep of `ms` milliseconds; the step shows `status` meanwhile. */
  sleep(ms: number, what: string): Promise<void>;
  /** Marks the step as parked (a timer, a person) until it finishes. */
  park(status: ParkedStatus): void;
  /** Records one line in the run's history (as an event summary) and in the worker's log. */
  annotate(level: LogLevel, line: string): Promise<void>;
  /**
   * Parks until a person decides (undefined: `timeoutMs` passed first). `what` names the wait in
   * the history; `ask` is what the approver reads (evaluated first, when the run evaluates it).
   */
  awaitApproval(timeoutMs: number | undefined, what: string, ask: ApprovalAsk): Promise<ApprovalDecision | undefined>;
  /** Ends the run as FAILED with `message` (the dry run records it as what would happen). */
  fail(message: string): Promise<Record<string, unknown>>;
  /** Runs `effect` with `input` (with the step's retry policy); resolves with its result, the step's output. */
  perform<Input extends object>(effect: Effect<string, Input>, input: Input): Promise<Record<string, unknown>>;
  /**
   * Evaluates `expressions`, makes the effect's input with `effect.fromValues` (which it must
   * declare) and runs the effect: as `evaluate` then `perform`, except that the workflow makes them
   * one activity when the effect makes its first attempt locally. `what` names the evaluation when
   * it is one of its own.
   */
  evaluateAndPerform<Input extends object>(
    effect: Effect<string, Input>,
    expressions: Record<string, string>,
    what: string,
  ): Promise<Record<string, unknown>>;
}

export type LogLevel = 'info' | 'warn' | 'error';

/** What the history shows a finished step did, in order (its `when` evaluation excluded): for the executions view. */
export interface RecordedEffect {
  kind: 'evaluate' | 'activity' | 'timer' | 'annotate';
  done: boolean;
  result: unknown;
}

/** The result of the last finished evaluation or activity: what most kinds output. */
export function lastResult(effects: readonly RecordedEffect[]): Record<string, unknown> | null {
  const last = [...effects].reverse().find((e) => e.kind !== 'timer' && e.done);
  return last && isObject(last.result) ? { ...last.result } : null;
}

/** Where a step's body reads named secrets, for the checks on save and in the dry run (src/domain/outbound-secrets.ts). */
export interface SecretRead {
  /** Field path below the body, e.g. `headers.Authorization`. */
  field: string;
  /** A CEL expression over `secrets` (its names are read from it), or one secret's name. */
  expression?: string;
  name?: string;
  /** CEL source of the URL the secret is sent to, when the body has one (its fixed origin is checked on save). */
  url?: string;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- any effect, whatever its input
export type AnyEffect = Effect<string, any>;

export interface StepKindDefinition<Kind extends string, Schema extends z.ZodType, E extends AnyEffect = never> {
  kind: Kind;
  /**
   * The body of the step (`{"<kind>": <body>}`): its validator on save (CEL fields marked with
   * `celSchema`, compiled by one walker, ./validate.ts), its TypeScript type and its OpenAPI schema.
   */
  schema: Schema;
  /** Takes a `retry` policy (its effect runs in an activity that may be retried). */
  retryable?: boolean;
  /** Parks the run (a timer or a person): the executions view attributes timers to such steps. */
  parks?: boolean;
  /** Its effect's requests carry the call's key (`Idempotency-Key`): the executions view shows it. */
  sendsCallKey?: boolean;
  /** The effect the kind performs (an activity), if any. */
  effect?: E;
  /** Runs the step; resolves with its output (`ctx.steps.<id>`), throws StepError when it cannot. */
  run(body: z.output<Schema>, effects: StepEffects): Promise<Record<string, unknown>>;
  /** The output the executions view shows for a finished step, from its history (default: `lastResult`). */
  outputFromHistory?(body: z.output<Schema>, effects: readonly RecordedEffect[]): Record<string, unknown> | null;
  /** Where the body reads named secrets (default: nowhere). */
  secretReads?(body: z.output<Schema>): SecretRead[];
}

/** Declares a step kind; the identity function that keeps its types. */
export function defineStep<const Kind extends string, Schema extends z.ZodType, E extends AnyEffect = never>(
  definition: StepKindDefinition<Kind, Schema, E>,
): StepKindDefinition<Kind, Schema, E> {
  return definition;
}

// ---------------------------------------------------------------- shared pieces of step schemas

/** How a CEL field is compiled on save: over `ctx`, or (header values) over `ctx` or, when it reads them, named secrets only. */
export type CelField = { cel: 'ctx' } | { cel: 'ctx-or-secrets' };

/** Marks the CEL fields of step schemas; ./validate.ts compiles every field so marked (metadata survives `.meta()` copies). */
export const celFields = z.registry<CelField>();

const CEL_MESSAGE = 'must be a CEL expression (a non-empty string)';

/** A CEL expression over ctx. */
export const celSchema = () =>
  z
    .string({ error: CEL_MESSAGE })
    .regex(/\S/, { error: CEL_MESSAGE })
    .register(celFields, { cel: 'ctx' })
    .meta({ description: 'A CEL expression over ctx (ctx.trigger, ctx.steps).' });
/** A CEL expression over ctx, or one that reads named secrets (`'Bearer ' + secrets.crm_token`) in the closed form of src/cel/secret-form.ts. */
export const secretCelSchema = () => celSchema().register(celFields, { cel: 'ctx-or-secrets' });
/** A positive duration of at most `maxSeconds`; a refusal shows `example`. */
export const durationWithin = (maxSeconds: number, example: string) => {
  const error = `must be a positive duration such as ${example}, at most ${maxSeconds}s`;
  return z
    .string({ error })
    .refine(
      (text) => {
        const ms = parseDuration(text);
        return ms !== undefined && ms > 0 && ms <= maxSeconds * 1000;
      },
      { error },
    )
    .meta({ description: 'Protobuf-JSON duration, e.g. "3600s" or "0.5s".' });
};
/** An integer from `min` to `max`; every refusal says so. */
export const integerFrom = (min: number, max: number) => {
  const error = `must be an integer from ${min} to ${max}`;
  return z.number({ error }).int({ error }).min(min, { error }).max(max, { error });
};
/** A map of at most `max` (and at least `min`) entries; `error` says so. */
export function boundedRecord<K extends z.core.$ZodRecordKey, V extends z.ZodType>(
  key: K,
  value: V,
  bounds: { min?: number; max: number },
  error: string,
) {
  const min = bounds.min ?? 0;
  return z
    .record(key, value)
    .refine((record) => Object.keys(record).length >= min && Object.keys(record).length <= bounds.max, { error })
    .meta({ ...(min > 0 ? { minProperties: min } : {}), maxProperties: bounds.max });
}
/** Step ids and variable names: usable as `ctx.steps.<id>.<name>`. */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
/** A named outbound secret's name (as /api/v1/secrets accepts it). */
export const SECRET_NAME = /^[a-z][a-z0-9_]{0,62}$/;

/** The input of `effect` from its step's evaluated fields (`fromValues`, which an effect performed with `evaluateAndPerform` declares). */
export function effectInputFrom<Input extends object>(
  effect: Effect<string, Input>,
  values: Record<string, unknown>,
): Input {
  if (!effect.fromValues) throw new StepError(`${effect.name}: the effect does not declare fromValues`);
  return effect.fromValues(values);
}

/**
 * `evaluateAndPerform` as two effects: `evaluate` the fields, then `perform` with the input
 * `fromValues` makes of them (the dry run, the tests' recording effects, and runs recorded before
 * the workflow made it one activity).
 */
export async function evaluateThenPerform<Input extends object>(
  effects: Pick<StepEffects, 'evaluate' | 'perform'>,
  effect: Effect<string, Input>,
  expressions: Record<string, string>,
  what: string,
): Promise<Record<string, unknown>> {
  return effects.perform(effect, effectInputFrom(effect, await effects.evaluate(expressions, what)));
}

/** A short description of a value for error messages: `string "hire"`, `a map`, `null`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a map';
  const text = JSON.stringify(value);
  return `${typeof value} ${text.length > 60 ? `${text.slice(0, 60)}…` : text}`;
}

export type { FieldViolation };
