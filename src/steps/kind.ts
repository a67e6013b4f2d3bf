/**
 * What a step kind is. Each kind lives in one file of this folder and holds everything about it:
 * its body schema (zod: the TypeScript type, the OpenAPI document), its validation on save (which
 * fields are CEL), and its interpreter, written against `StepEffects` so that the same code runs
 * in the workflow (activities and timers) and in the dry run (simulated effects). The registry
 * (`./index.ts`) lists the kinds; the validator, the workflow loop, the dry run, the OpenAPI
 * document and the executions view iterate it.
 *
 * Everything in this folder is imported by the workflow bundle: deterministic code only (no I/O,
 * no clocks, no Node built-ins), checked by ESLint and by the bundle test.
 */
import { z } from 'zod';

/** A person's decision on a waitForApproval step. */
export interface ApprovalDecision {
  decision: 'approved' | 'rejected';
  /** Who decided: the API client id. */
  by: string;
  /** RFC 3339 time the run recorded the decision. */
  at: string;
  comment: string | null;
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
 * What a step may do. The workflow implements each with an activity or a timer; the dry run
 * simulates it (an effect's simulated result is its evaluated input).
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
  /** Parks until a person decides (undefined: `timeoutMs` passed first). `what` names the wait in the history. */
  awaitApproval(timeoutMs: number | undefined, what: string): Promise<ApprovalDecision | undefined>;
  /** Ends the run as FAILED with `message` (the dry run records it as what would happen). */
  fail(message: string): Promise<Record<string, unknown>>;
  createEntitlementOwner(ref: OwnershipRef): Promise<Record<string, unknown>>;
  deleteEntitlementOwner(ref: OwnershipRef): Promise<Record<string, unknown>>;
  callWebhook(request: CallWebhookRequest): Promise<Record<string, unknown>>;
}

export type LogLevel = 'info' | 'warn' | 'error';

/** What a kind's `validate` gets: where the body is, and how to report a problem or check a CEL field. */
export interface StepCheck {
  /** Field path of the body, e.g. `steps[2].callWebhook`. */
  at: string;
  /** The step's id, named in every description. */
  id: string;
  /** Records a violation at `field` (a full path); the description is prefixed with the step id. */
  violation(field: string, description: string): void;
  /** Compiles `source` as CEL and records a violation at `field` when it is not; returns the source. */
  cel(source: unknown, field: string): string;
  /**
   * Compiles `source` as a secret-bearing CEL expression (only `secrets.<name>` and literals) and
   * records a violation at `field` when it is not one; returns the source.
   */
  secretCel(source: unknown, field: string): string;
}

export interface StepKindDefinition<Kind extends string, Schema extends z.ZodType> {
  kind: Kind;
  /** The body of the step (`{"<kind>": <body>}`), as the API accepts it; drives types and OpenAPI. */
  schema: Schema;
  /** Takes a `retry` policy (its effect runs in an activity that may be retried). */
  retryable?: boolean;
  /** Parks the run (a timer or a person): the executions view attributes timers to such steps. */
  parks?: boolean;
  /** Checks the body on save and returns it normalised; every CEL field goes through `check.cel`. */
  validate(body: Record<string, unknown>, check: StepCheck): z.output<Schema>;
  /** Runs the step; resolves with its output (`ctx.steps.<id>`), throws StepError when it cannot. */
  run(body: z.output<Schema>, effects: StepEffects): Promise<Record<string, unknown>>;
}

/** Declares a step kind; the identity function that keeps its types. */
export function defineStep<const Kind extends string, Schema extends z.ZodType>(
  definition: StepKindDefinition<Kind, Schema>,
): StepKindDefinition<Kind, Schema> {
  return definition;
}

// ---------------------------------------------------------------- shared pieces of step schemas

/** A CEL expression over ctx. */
export const celSchema = () => z.string().regex(/\S/).meta({ description: 'A CEL expression over ctx (ctx.trigger, ctx.steps).' });
/** A protobuf-JSON duration. */
export const durationSchema = () => z.string().meta({ description: 'Protobuf-JSON duration, e.g. "3600s" or "0.5s".' });
/** Step ids and variable names: usable as `ctx.steps.<id>.<name>`. */
export const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Records a violation for every key of `body` not in `known`. */
export function unknownFields(body: Record<string, unknown>, known: readonly string[], check: StepCheck): void {
  for (const key of Object.keys(body)) {
    if (!known.includes(key)) check.violation(`${check.at}.${key}`, `unknown field; expected ${known.join(', ')}`);
  }
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

