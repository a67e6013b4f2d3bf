/** The one error class of the CEL module; `code` says which kind of failure it is. */

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

/** Thrown when an expression cannot be compiled or evaluated; the message is safe to show. */
export class CelEvaluationError extends Error {
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
