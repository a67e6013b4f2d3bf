/**
 * The service's errors: one tree under `ServiceError`, each class with a literal `code` (as jose
 * does), so callers branch on `code` or the class, never on message text. What an error means over
 * HTTP is decided in one place, src/http/errors.ts, from these codes; activities map the ones they
 * meet to ApplicationFailure types. Nothing here knows about either.
 *
 * A ground-floor module: it imports nothing of the project, and the workflow bundle loads it
 * (through src/steps), so it stays deterministic and free of Node built-ins.
 */

/** One field-level problem of a request: the field path and what is wrong with it. */
export interface FieldViolation {
  field: string;
  description: string;
}

export abstract class ServiceError extends Error {
  abstract readonly code: string;
}

/**
 * Turns stack capture off until the returned function is called: for refusals that are expected answers, not faults, and
 * that must stay cheap under load (capturing a stack was the largest single cost of refusing a
 * request). Their `stack` holds only the name and message.
 */
function withoutStack(): () => void {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  return () => {
    Error.stackTraceLimit = limit;
  };
}

// --- Requests and resources ---------------------------------------------------------------------

/** A resource that does not exist (or is not visible). */
export class NotFoundError extends ServiceError {
  override name = 'NotFoundError';
  readonly code = 'ERR_NOT_FOUND' as const;
  /**
   * @param resource what is missing, e.g. `user`, `app entitlement`
   * @param id the id that was asked for, when the caller knows it
   */
  constructor(
    readonly resource: string,
    readonly id?: string,
  ) {
    super(`${resource} not found`);
  }
}

/** A request that is wrong in itself; `violations` name each offending field. */
export class InvalidArgumentError extends ServiceError {
  override name = 'InvalidArgumentError';
  readonly code = 'ERR_INVALID_ARGUMENT' as const;
  constructor(
    readonly violations: FieldViolation[],
    message = violations.map((v) => `${v.field}: ${v.description}`).join('; '),
  ) {
    super(message);
  }
}

/** A request that is well-formed but not possible in the current state (e.g. a step that is not waiting). */
export class FailedPreconditionError extends ServiceError {
  override name = 'FailedPreconditionError';
  readonly code = 'ERR_FAILED_PRECONDITION' as const;
  constructor(
    message: string,
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** A write conditioned on a revision (`If-Match`) that is no longer the current one: nothing changed. */
export class StaleRevisionError extends ServiceError {
  override name = 'StaleRevisionError';
  readonly code = 'ERR_STALE_REVISION' as const;
  constructor(
    readonly resource: string,
    /** The current revision, for the answer's ETag. */
    readonly currentRevision: number,
  ) {
    super(`the ${resource} changed since it was read (If-Match does not match its current ETag); read it again`);
  }
}

/** The thing to create exists already; `details` says which. */
export class ConflictError extends ServiceError {
  override name = 'ConflictError';
  readonly code = 'ERR_CONFLICT' as const;
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** A dependency (the store, the workflow engine) cannot be reached now; retrying later may work. */
export class UnavailableError extends ServiceError {
  override name = 'UnavailableError';
  readonly code = 'ERR_UNAVAILABLE' as const;
  constructor(
    message: string,
    /** Seconds after which a retry is sensible. */
    readonly retryAfterSeconds = 1,
  ) {
    super(message);
  }
}

/** A 400 naming the offending fields. */
export function invalidArgument(violations: FieldViolation[] | FieldViolation): InvalidArgumentError {
  return new InvalidArgumentError(Array.isArray(violations) ? violations : [violations]);
}

/** `user not found`, with the id kept for callers that want to name it. */
export function notFound(resource: string, id?: string): NotFoundError {
  return new NotFoundError(resource, id);
}

// --- Runs on the workflow engine ----------------------------------------------------------------

/** The workflow engine did not answer (or no engine is configured); the message names the cause, for logs. */
export class WorkflowEngineUnavailableError extends ServiceError {
  override name = 'WorkflowEngineUnavailableError';
  readonly code = 'ERR_ENGINE_UNAVAILABLE' as const;
  /** Seconds after which a retry is sensible. */
  readonly retryAfterSeconds = 5;
}

/** The listener received this event id before; `runId` is the run it started. */
export class DuplicateEventError extends ServiceError {
  override name = 'DuplicateEventError';
  readonly code = 'ERR_DUPLICATE_EVENT' as const;
  constructor(readonly runId: string) {
    super('event already received');
  }
}

/** The workflow engine refused a page token of the executions list (e.g. one from before a server reset). */
export class InvalidExecutionPageTokenError extends ServiceError {
  override name = 'InvalidExecutionPageTokenError';
  readonly code = 'ERR_INVALID_PAGE_TOKEN' as const;
}

/** A step that cannot go on; its message becomes the step's `error`. */
export class StepError extends ServiceError {
  override name = 'StepError';
  readonly code = 'ERR_STEP' as const;
  /** What the step produced before it failed (e.g. a rejection's decision), shown as its output. */
  constructor(
    message: string,
    readonly output?: Record<string, unknown>,
  ) {
    super(message);
  }
}

// --- CEL ----------------------------------------------------------------------------------------

export type CelErrorCode =
  /** The expression does not parse. */
  | 'ERR_CEL_SYNTAX'
  /** The expression names a variable other than `ctx` (or a comprehension variable). */
  | 'ERR_CEL_UNKNOWN_NAME'
  /** The expression is too long, too deep, too big, iterates too much, exceeds the cost budget or makes too big a result. */
  | 'ERR_CEL_LIMIT'
  /** Evaluation failed: missing field, no matching overload, division by zero, ... */
  | 'ERR_CEL_EVALUATION'
  /** The result cannot be represented as JSON. */
  | 'ERR_CEL_RESULT'
  /** A header value that reads named secrets is not `secrets.<name>` and string literals joined by `+`. */
  | 'ERR_CEL_SECRET_FORM';

/** An expression cannot be compiled or evaluated; `code` says which kind of failure; the message is safe to show. */
export class CelEvaluationError extends ServiceError {
  override name = 'CelEvaluationError';
  /** Name of the expression in an `evaluateAll` batch, when the error comes from one. */
  field: string | undefined;

  constructor(
    readonly code: CelErrorCode,
    message: string,
    field?: string,
  ) {
    super(message);
    this.field = field;
  }
}

// --- Refusals at the edge -----------------------------------------------------------------------

/**
 * Thrown by every inbound webhook check (and returned by an authenticator's verifier): `reason` is
 * a short machine code for logs, metrics and the answer, from which the HTTP layer decides the
 * status (docs/api.md#check-order). The message is safe to send back: never secrets, tokens,
 * signatures, resolved addresses or the payload. Made without a stack trace (see `withoutStack`).
 */
export class WebhookRejection extends ServiceError {
  declare readonly code: 'ERR_WEBHOOK_REJECTED';
  readonly reason: string;

  constructor(message: string, reason: string, options?: { cause?: unknown }) {
    const restore = withoutStack();
    super(message, options);
    restore();
    this.reason = reason;
  }
}

// On the prototype: nothing is set per refusal beyond its fields.
WebhookRejection.prototype.name = 'WebhookRejection';
(WebhookRejection.prototype as { code: string }).code = 'ERR_WEBHOOK_REJECTED';

export type AdmissionScope = 'global' | 'listener' | 'source';

/** A webhook delivery refused for load (429, Retry-After); `scope` says which count was full. Stackless, like `WebhookRejection`. */
export class AdmissionRefusal extends ServiceError {
  declare readonly code: 'ERR_ADMISSION_REFUSED';
  readonly status = 429 as const;
  readonly scope: AdmissionScope;
  readonly retryAfterSeconds: number;
  constructor(scope: AdmissionScope, retryAfterSeconds = 1) {
    const restore = withoutStack();
    super(
      scope === 'global'
        ? 'too many webhook deliveries in progress; retry later'
        : scope === 'listener'
          ? 'too many deliveries in progress for this listener; retry later'
          : 'too many deliveries in progress from this address; retry later',
    );
    restore();
    this.scope = scope;
    this.retryAfterSeconds = retryAfterSeconds;
  }
}
AdmissionRefusal.prototype.name = 'AdmissionRefusal';
(AdmissionRefusal.prototype as { code: string }).code = 'ERR_ADMISSION_REFUSED';

/** A token request refused by a flood guard: `status` 429 (rate) or 503 (busy). */
export class GuardRefusal extends ServiceError {
  override name = 'GuardRefusal';
  readonly code = 'ERR_GUARD_REFUSED' as const;
  constructor(
    readonly status: 429 | 503,
    message: string,
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

// --- Start-up and tools -------------------------------------------------------------------------

/** A configuration value (environment) that cannot be used; the process does not start. */
export class ConfigError extends ServiceError {
  override name = 'ConfigError';
  readonly code = 'ERR_CONFIG' as const;
}

/** A payload encryption key that cannot be used (missing, malformed, unknown id). */
export class PayloadKeyError extends ServiceError {
  override name = 'PayloadKeyError';
  readonly code = 'ERR_PAYLOAD_KEY' as const;
}

/** A bad sender CLI argument: the CLI prints it with a pointer to --help and exits 1. */
export class SenderUsageError extends ServiceError {
  override name = 'SenderUsageError';
  readonly code = 'ERR_SENDER_USAGE' as const;
}

/** Every class of the tree, for code-exhaustive mappings (src/http/errors.ts). */
export type KnownServiceError =
  | NotFoundError
  | InvalidArgumentError
  | FailedPreconditionError
  | StaleRevisionError
  | ConflictError
  | UnavailableError
  | WorkflowEngineUnavailableError
  | DuplicateEventError
  | InvalidExecutionPageTokenError
  | StepError
  | CelEvaluationError
  | WebhookRejection
  | AdmissionRefusal
  | GuardRefusal
  | ConfigError
  | PayloadKeyError
  | SenderUsageError;

export type ServiceErrorCode = KnownServiceError['code'];
