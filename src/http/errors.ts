/**
 * The one error shape of the API (grpc-gateway style): `{code, message, details}` where `code` is a
 * google.rpc.Code number. `AppError` is that body with its status and headers; `toAppError` makes
 * one from any error of the service's tree (src/errors.ts) by its code, the one place where errors
 * get their HTTP meaning. `errorMiddleware` renders it and hides anything unexpected behind a 500
 * without a stack trace.
 */
import type { Context, Next } from 'koa';
import type { Logger } from 'pino';
import { ServiceError, type FieldViolation, type KnownServiceError, type ServiceErrorCode } from '../errors';
import type { WebhookReason } from '../webhooks/errors';

export const RPC_CODE: Record<number, number> = {
  400: 3, // INVALID_ARGUMENT
  401: 16, // UNAUTHENTICATED
  403: 7, // PERMISSION_DENIED
  404: 5, // NOT_FOUND
  405: 12, // UNIMPLEMENTED
  408: 4, // DEADLINE_EXCEEDED
  409: 6, // ALREADY_EXISTS
  412: 9, // FAILED_PRECONDITION (a stale If-Match)
  413: 8, // RESOURCE_EXHAUSTED
  415: 3,
  429: 8,
  500: 13, // INTERNAL
  503: 14, // UNAVAILABLE
};

/** The strong ETag of a resource's revision: `"r<revision>"`. */
export function revisionTag(revision: number): string {
  return `"r${revision}"`;
}

export type ErrorDetail = Record<string, unknown> & { '@type': string };

export class AppError extends Error {
  override name = 'AppError';
  readonly status: number;
  readonly details: ErrorDetail[];
  readonly headers: Record<string, string>;

  constructor(
    status: number,
    message: string,
    options: { details?: ErrorDetail[]; headers?: Record<string, string> } = {},
  ) {
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
export function errorBody(
  status: number,
  message: string,
  details: ErrorDetail[],
): { code: number; message: string; details: ErrorDetail[] } {
  return { code: RPC_CODE[status] ?? 2, message, details };
}

type ErrorWithCode<C extends ServiceErrorCode> = Extract<KnownServiceError, { readonly code: C }>;

const badRequest = (violations: FieldViolation[]): ErrorDetail[] => [
  { '@type': 'type.googleapis.com/google.rpc.BadRequest', fieldViolations: violations },
];
/**
 * The status each refusal of a delivery's checks answers (docs/api.md#check-order), by its reason:
 * the HTTP layer's decision, held complete by the compiler over every reason the checks raise.
 */
const WEBHOOK_STATUS: Record<WebhookReason, 400 | 401 | 403 | 404 | 413> = {
  missing_header: 400,
  bad_content_type: 400,
  bad_timestamp: 400,
  timestamp_out_of_window: 400,
  bad_event_id: 400,
  invalid_json: 400,
  signature_mismatch: 401,
  missing_authorization: 401,
  bad_authorization: 401,
  jwt_malformed: 401,
  jwt_alg_not_allowed: 401,
  jwt_header_forbidden: 401,
  jwt_missing_kid: 401,
  unknown_kid: 401,
  jwt_signature_invalid: 401,
  jwt_key_rejected: 401,
  jwt_expired: 401,
  jwt_claim_invalid: 401,
  jwks_unreachable: 401,
  jwks_invalid: 401,
  jwks_url_refused: 401,
  source_not_allowed: 403,
  listener_not_found: 404,
  body_too_large: 413,
};

/** The status a delivery refused for `reason` is answered with. */
export function webhookStatus(reason: string): 400 | 401 | 403 | 404 | 413 {
  return WEBHOOK_STATUS[reason as WebhookReason] ?? 400;
}

const retryAfter = (seconds: number): Record<string, string> => ({ 'Retry-After': String(seconds) });

/**
 * What each error of the tree (src/errors.ts) is over HTTP: status, message, details and headers.
 * `null`: not an answer to a request (a fault), so a plain 500.
 */
const HTTP_OF: { [C in ServiceErrorCode]: ((err: ErrorWithCode<C>) => AppError) | null } = {
  ERR_INVALID_ARGUMENT: (err) => new AppError(400, err.message, { details: badRequest(err.violations) }),
  ERR_INVALID_PAGE_TOKEN: (err) =>
    new AppError(400, err.message, { details: badRequest([{ field: 'page_token', description: err.message }]) }),
  ERR_NOT_FOUND: (err) => new AppError(404, err.message),
  ERR_FAILED_PRECONDITION: (err) =>
    new AppError(409, err.message, {
      details: err.reason
        ? [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: err.reason, domain: 'automations' }]
        : [],
    }),
  ERR_STALE_REVISION: (err) => new AppError(412, err.message, { headers: { ETag: revisionTag(err.currentRevision) } }),
  ERR_CONFLICT: (err) =>
    new AppError(409, err.message, {
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'ALREADY_EXISTS', metadata: err.details },
      ],
    }),
  ERR_UNAVAILABLE: (err) => new AppError(503, err.message, { headers: retryAfter(err.retryAfterSeconds) }),
  // The cause stays in the logs: the caller learns only that the engine did not answer.
  ERR_ENGINE_UNAVAILABLE: (err) =>
    new AppError(503, 'the workflow engine is unavailable; retry later', {
      headers: retryAfter(err.retryAfterSeconds),
    }),
  ERR_WEBHOOK_REJECTED: (err) => new AppError(webhookStatus(err.reason), err.message),
  // At the global cap the connection is closed too, so a flood of connections is shed.
  ERR_ADMISSION_REFUSED: (err) =>
    new AppError(429, err.message, {
      headers: { ...retryAfter(err.retryAfterSeconds), ...(err.scope === 'global' ? { Connection: 'close' } : {}) },
    }),
  ERR_GUARD_REFUSED: (err) =>
    new AppError(err.status, err.message, {
      headers: { ...retryAfter(err.retryAfterSeconds), 'Cache-Control': 'no-store' },
    }),
  // Handled where they arise (the intake answers a duplicate; a run records a step's failure); here only a fault.
  ERR_DUPLICATE_EVENT: null,
  ERR_STEP: null,
  ERR_CEL_SYNTAX: null,
  ERR_CEL_UNKNOWN_NAME: null,
  ERR_CEL_LIMIT: null,
  ERR_CEL_EVALUATION: null,
  ERR_CEL_RESULT: null,
  ERR_CEL_SECRET_FORM: null,
  ERR_CONFIG: null,
  ERR_PAYLOAD_KEY: null,
  ERR_SENDER_USAGE: null,
};

/** The HTTP form of any error: an AppError as it is, an error of the tree by its code, anything else a plain 500. */
export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof ServiceError) {
    const known = err as KnownServiceError;
    const http = HTTP_OF[known.code] as ((err: KnownServiceError) => AppError) | null | undefined;
    if (http) return http(known);
  }
  const status = (err as { status?: unknown; expose?: unknown })?.status;
  // Koa/http-errors raised by the framework itself (e.g. malformed URL) carry a safe status.
  if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: unknown }).expose) {
    return new AppError(status, (err as Error).message);
  }
  return new AppError(500, 'internal error');
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
        throw new AppError(405, `method ${ctx.method} is not allowed for ${ctx.path}`, {
          headers: allow ? { Allow: allow } : {},
        });
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
    logger.warn(
      { err: { type: (err as Error)?.name, message: error.message }, ...request },
      'request refused: dependency unavailable',
    );
  } else if (error.status >= 500) {
    logger.error({ err: describe(err), ...request }, 'request failed');
  }
  return error;
}

/** Error summary for logs: name, message and stack, never request data. */
export function describe(err: unknown): Record<string, unknown> {
  if (err instanceof Error) return { type: err.name, message: err.message, stack: err.stack };
  return { type: typeof err };
}
