/**
 * The one error shape of the API (grpc-gateway style): `{code, message, details}` where `code` is a
 * google.rpc.Code number. Throw an `AppError` anywhere; `errorMiddleware` renders it and hides
 * anything unexpected behind a 500 without a stack trace.
 */
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import { ConflictError, DomainError, FailedPreconditionError, InvalidArgumentError, UnavailableError, type FieldViolation } from '../domain/errors';

export type { FieldViolation };

export const RPC_CODE: Record<number, number> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  405: 12, // UNIMPLEMENTED
  408: 4, // DEADLINE_EXCEEDED
  409: 6, // ALREADY_EXISTS
  413: 8, // RESOURCE_EXHAUSTED
  415: 3,
  429: 8,
  500: 13, // INTERNAL
  503: 14, // UNAVAILABLE
};

export type ErrorDetail = Record<string, unknown> & { '@type': string };

export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;
  readonly details: ErrorDetail[];
  readonly headers: Record<string, string>;

  constructor(status: number, message: string, options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {}) {
    super(message);
    this.status = status;
    this.details = options.details ?? [];
    this.headers = options.headers ?? {};
  }

  get code(): number {
    return RPC_CODE[this.status] ?? 2;
  }

  toBody(): { code: number; message: string; details: ErrorDetail[] } {
    return errorBody(this.status, this.message, this.details);
  }
}

/** The body of the one error shape for an HTTP status (what `AppError.toBody` renders). */
export function errorBody(status: number, message: string, details: ErrorDetail[]): { code: number; message: string; details: ErrorDetail[] } {
  return { code: RPC_CODE[status] ?? 2, message, details };
}

/** 400 naming the offending fields, with a google.rpc.BadRequest detail. */
export function invalidArgument(violations: FieldViolation[] | FieldViolation): AppError {
  return fromDomain(new InvalidArgumentError(Array.isArray(violations) ? violations : [violations]));
}

/** The HTTP form of a domain error: status, google.rpc code, details and headers. */
export function fromDomain(err: DomainError): AppError {
  if (err instanceof InvalidArgumentError) {
    return new AppError(400, err.message, { details: [{ '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: err.violations }] });
  }
  if (err instanceof FailedPreconditionError) return new AppError(409, err.message, { details: reasonDetails(err.reason) });
  if (err instanceof ConflictError) {
    return new AppError(409, err.message, { details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'ALREADY_EXISTS', metadata: err.details }] });
  }
  if (err instanceof UnavailableError) return new AppError(503, err.message, { headers: { 'Retry-After': String(err.retryAfterSeconds) } });
  return new AppError(404, err.message);
}

function reasonDetails(reason: string | undefined): ErrorDetail[] {
  return reason ? [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason, domain: 'automations' }] : [];
}

export function notFound(what: string): AppError {
  return new AppError(404, `${what} not found`);
}

/** First middleware: renders AppError and hides everything else behind a plain 500. */
export function errorMiddleware(logger: Logger) {
  return async (ctx: Context, next: Next): Promise<void> => {
    try {
      await next();
      if (ctx.status === 404 && ctx.body === undefined) {
        throw new AppError(404, `no route for ${ctx.method} ${ctx.path}`);
      }
      // The router answers 405 (or 501 for a method it knows nothing of, such as TRACE) without a
      // body: both become a 405 in the error shape, keeping the Allow header.
      if ((ctx.status === 405 || ctx.status === 501) && ctx.body === undefined) {
        const allow = ctx.response.get('Allow');
        throw new AppError(405, `method ${ctx.method} is not allowed for ${ctx.path}`, { headers: allow ? { Allow: allow } : {} });
      }
    } catch (err) {
      const error = reportError(err, logger, { method: ctx.method, path: ctx.path });
      ctx.status = error.status;
      for (const [name, value] of Object.entries(error.headers)) ctx.set(name, value);
      ctx.body = error.toBody();
    }
  };
}

/**
 * What a failed request is answered with, logged as it deserves: a 503 (a dependency is down, an
 * expected and transient condition) in one line without a stack trace, anything else of 500 and
 * above with its stack; an unexpected error becomes a plain 500. The request is named by method
 * and path only, never by its data.
 */
export function reportError(err: unknown, logger: Logger, request: { method: string; path: string }): AppError {
  const error = toAppError(err);
  if (error.status === 503) {
    logger.warn({ err: { type: (err as Error)?.name, message: error.message }, ...request }, 'request refused: dependency unavailable');
  } else if (error.status >= 500) {
    logger.error({ err: describe(err), ...request }, 'request failed');
  }
  return error;
}

function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof DomainError) return fromDomain(err);
  const status = (err as { status?: unknown; expose?: unknown }).status;
  // Koa/http-errors raised by the framework itself (e.g. malformed URL) carry a safe status.
  if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: unknown }).expose) {
    return new AppError(status, (err as Error).message);
  }
  return new AppError(500, 'internal error');
}

/** Error summary for logs: name, message and stack, never request data. */
export function describe(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { type: err.name, message: err.message, stack: err.stack };
  return { type: typeof err };
}
