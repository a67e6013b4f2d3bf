/**
 * The HTTP form of every error of the service's tree (src/errors.ts → src/http/errors.ts): status,
 * headers and body exactly as the routes answered when each translated its own errors.
 */
import {
  AdmissionRefusal,
  CelEvaluationError,
  ConfigError,
  ConflictError,
  DuplicateEventError,
  FailedPreconditionError,
  GuardRefusal,
  InvalidExecutionPageTokenError,
  invalidArgument,
  notFound,
  StepError,
  UnavailableError,
  WebhookRejection,
  WorkflowEngineUnavailableError,
} from '../../src/errors';
import { toAppError } from '../../src/http/errors';

function answer(err: unknown): { status: number; headers: Record<string, string>; body: unknown } {
  const error = toAppError(err);
  return { status: error.status, headers: error.headers, body: error.toBody() };
}

describe('the HTTP form of the error tree', () => {
  it('refusals of the token guards: 429 or 503 with Retry-After and no-store', () => {
    expect(answer(new GuardRefusal(429, 'too many token requests from this address; retry later', 7))).toEqual({
      status: 429,
      headers: { 'Retry-After': '7', 'Cache-Control': 'no-store' },
      body: { code: 8, message: 'too many token requests from this address; retry later', details: [] },
    });
    expect(answer(new GuardRefusal(503, 'busy', 1))).toEqual({
      status: 503,
      headers: { 'Retry-After': '1', 'Cache-Control': 'no-store' },
      body: { code: 14, message: 'busy', details: [] },
    });
  });

  it('webhook admission: 429 with Retry-After; the connection closed at the global cap only', () => {
    const global = answer(new AdmissionRefusal('global'));
    expect(global).toEqual({
      status: 429,
      headers: { 'Retry-After': '1', Connection: 'close' },
      body: { code: 8, message: 'too many webhook deliveries in progress; retry later', details: [] },
    });
    expect(Object.keys(global.headers)).toEqual(['Retry-After', 'Connection']);
    expect(answer(new AdmissionRefusal('source', 3)).headers).toEqual({ 'Retry-After': '3' });
  });

  it('the workflow engine unavailable: 503 that does not show the cause', () => {
    expect(
      answer(new WorkflowEngineUnavailableError('workflow engine unavailable: connect ECONNREFUSED 10.0.0.1:7233')),
    ).toEqual({
      status: 503,
      headers: { 'Retry-After': '5' },
      body: { code: 14, message: 'the workflow engine is unavailable; retry later', details: [] },
    });
  });

  it('a stale executions page token: 400 naming page_token', () => {
    expect(answer(new InvalidExecutionPageTokenError('page_token is no longer valid'))).toEqual({
      status: 400,
      headers: {},
      body: {
        code: 3,
        message: 'page_token is no longer valid',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.BadRequest',
            fieldViolations: [{ field: 'page_token', description: 'page_token is no longer valid' }],
          },
        ],
      },
    });
  });

  it('requests and resources: 400, 404, 409 and 503 in the one error shape', () => {
    expect(answer(invalidArgument({ field: 'displayName', description: 'is required' }))).toEqual({
      status: 400,
      headers: {},
      body: {
        code: 3,
        message: 'displayName: is required',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.BadRequest',
            fieldViolations: [{ field: 'displayName', description: 'is required' }],
          },
        ],
      },
    });
    expect(answer(notFound('user', 'u-1'))).toEqual({
      status: 404,
      headers: {},
      body: { code: 5, message: 'user not found', details: [] },
    });
    expect(answer(new FailedPreconditionError('the step is not waiting', 'STEP_NOT_WAITING')).body).toEqual({
      code: 6,
      message: 'the step is not waiting',
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'STEP_NOT_WAITING', domain: 'automations' },
      ],
    });
    expect(answer(new FailedPreconditionError('no')).body).toEqual({ code: 6, message: 'no', details: [] });
    expect(answer(new ConflictError('exists', { name: 'k' })).body).toEqual({
      code: 6,
      message: 'exists',
      details: [
        { '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'ALREADY_EXISTS', metadata: { name: 'k' } },
      ],
    });
    expect(answer(new UnavailableError('the store is unavailable; retry later', 2))).toEqual({
      status: 503,
      headers: { 'Retry-After': '2' },
      body: { code: 14, message: 'the store is unavailable; retry later', details: [] },
    });
  });

  it("a webhook check's refusal answers the status of its reason; refusals are made without a stack trace", () => {
    expect(new WebhookRejection('bad', 'missing_header').stack).not.toMatch(/\n\s+at /);
    expect(new AdmissionRefusal('listener').stack).not.toMatch(/\n\s+at /);
    expect(new StepError('x').stack).toMatch(/\n\s+at /);
    expect(answer(new WebhookRejection('signature does not match', 'signature_mismatch'))).toEqual({
      status: 401,
      headers: {},
      body: { code: 16, message: 'signature does not match', details: [] },
    });
    expect(answer(new WebhookRejection('no active listener at this URL', 'listener_not_found')).status).toBe(404);
    expect(answer(new WebhookRejection('source address is not allowed', 'source_not_allowed')).status).toBe(403);
    expect(answer(new WebhookRejection('too large', 'body_too_large')).status).toBe(413);
    expect(answer(new WebhookRejection('stale', 'timestamp_out_of_window')).status).toBe(400);
  });

  it.each([
    ['a step failure', new StepError('boom')],
    ['a CEL failure', new CelEvaluationError('ERR_CEL_EVALUATION', 'no such key')],
    ['a duplicate event', new DuplicateEventError('run-1')],
    ['a configuration error', new ConfigError('PORT must be an integer')],
    ['anything else', new TypeError('x is undefined')],
  ])('%s reaching a request is a fault: a plain 500 that shows nothing', (_what, err) => {
    expect(answer(err)).toEqual({
      status: 500,
      headers: {},
      body: { code: 13, message: 'internal error', details: [] },
    });
  });

  it('each class carries its own literal code', () => {
    const codes = [
      notFound('x').code,
      invalidArgument([]).code,
      new FailedPreconditionError('x').code,
      new ConflictError('x').code,
      new UnavailableError('x').code,
      new WorkflowEngineUnavailableError('x').code,
      new DuplicateEventError('x').code,
      new InvalidExecutionPageTokenError('x').code,
      new StepError('x').code,
      new WebhookRejection('x', 'y').code,
      new AdmissionRefusal('global').code,
      new GuardRefusal(429, 'x', 1).code,
      new ConfigError('x').code,
    ];
    expect(new Set(codes).size).toBe(codes.length);
    for (const code of codes) expect(code).toMatch(/^ERR_[A-Z_]+$/);
  });
});
