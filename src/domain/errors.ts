/**
 * Domain errors: what went wrong, in the domain's terms. The HTTP layer maps them to the one error
 * shape (src/http/errors.ts), activities map them to ApplicationFailure types; nothing here knows
 * about either. Each class carries a literal `kind`, so callers branch on types and fields, never
 * on message text.
 */

/** One field-level problem of a request: the field path and what is wrong with it. */
export interface FieldViolation {
  field: string;
  description: string;
}

export type DomainErrorKind = 'not_found' | 'invalid_argument' | 'failed_precondition' | 'conflict' | 'unavailable';

export abstract class DomainError extends Error {
  abstract readonly kind: DomainErrorKind;
}

/** A resource that does not exist (or is not visible). */
export class NotFoundError extends DomainError {
  override name = 'NotFoundError';
  readonly kind = 'not_found' as const;
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
export class InvalidArgumentError extends DomainError {
  override name = 'InvalidArgumentError';
  readonly kind = 'invalid_argument' as const;
  constructor(
    readonly violations: FieldViolation[],
    message = violations.map((v) => `${v.field}: ${v.description}`).join('; '),
  ) {
    super(message);
  }
}

/** A request that is well-formed but not possible in the current state (e.g. a step that is not waiting). */
export class FailedPreconditionError extends DomainError {
  override name = 'FailedPreconditionError';
  readonly kind = 'failed_precondition' as const;
  constructor(
    message: string,
    readonly reason?: string,
  ) {
    super(message);
  }
}

/** The thing to create exists already (e.g. an event id received before); `details` says which. */
export class ConflictError extends DomainError {
  override name = 'ConflictError';
  readonly kind = 'conflict' as const;
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

/** A dependency (the store, the workflow engine) cannot be reached now; retrying later may work. */
export class UnavailableError extends DomainError {
  override name = 'UnavailableError';
  readonly kind = 'unavailable' as const;
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
