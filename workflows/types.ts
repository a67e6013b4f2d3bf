/**
 * Shapes shared by the API, the workflow, the activities and the dry run. Types and small pure
 * helpers only (no I/O, no Node built-ins): safe to import from workflow code.
 */

/** Fields of an ownership step; every value is a CEL expression evaluated over `ctx`. */
export interface OwnershipStepFields {
  userId: string;
  roleSlug: string;
  appId: string;
  entitlementId: string;
}

/**
 * Fields of a callWebhook step: an outbound HTTPS POST of a JSON body built with CEL. `url`, every
 * `body` field (or `body` itself, an expression giving a map) and every header value are CEL.
 */
export interface CallWebhookStepFields {
  url: string;
  body: Record<string, string> | string;
  headers?: Record<string, string>;
  /** Whole-request deadline in milliseconds; default 10000, at most 30000. */
  timeoutMs?: number;
}

/** Fields of a fail step: ends the run as FAILED with the evaluated message. */
export interface FailStepFields {
  message: string;
}

/**
 * Retry policy of an effectful step (callWebhook, create/deleteEntitlementOwner). Intervals are
 * protobuf-JSON durations (`"1s"`, `"0.5s"`); unset fields take RETRY_DEFAULTS.
 */
export interface StepRetryPolicy {
  maximumAttempts?: number;
  initialInterval?: string;
  maximumInterval?: string;
  backoffCoefficient?: number;
}

interface StepBase {
  /** Unique within the automation; outputs are readable later as `ctx.steps.<id>.<field>`. */
  id: string;
  /** CEL condition; when it evaluates to false the step is skipped. */
  when?: string;
  /** Only on callWebhook and ownership steps. */
  retry?: StepRetryPolicy;
}

export type StepDefinition = StepBase &
  (
    | { setVariables: Record<string, string> }
    | { wait: { duration: string } }
    | { createEntitlementOwner: OwnershipStepFields }
    | { deleteEntitlementOwner: OwnershipStepFields }
    | { callWebhook: CallWebhookStepFields }
    | { fail: FailStepFields }
  );

export type StepKind = 'setVariables' | 'wait' | 'createEntitlementOwner' | 'deleteEntitlementOwner' | 'callWebhook' | 'fail';

export const STEP_KINDS: readonly StepKind[] = ['setVariables', 'wait', 'createEntitlementOwner', 'deleteEntitlementOwner', 'callWebhook', 'fail'];

/** Step kinds that take a `retry` policy (the ones whose effect runs in an activity that may be retried). */
export const RETRYABLE_STEP_KINDS: readonly StepKind[] = ['createEntitlementOwner', 'deleteEntitlementOwner', 'callWebhook'];

/** Retry policy of effectful steps when the step does not set one. */
export const RETRY_DEFAULTS = { maximumAttempts: 10, initialInterval: '1s', maximumInterval: '30s', backoffCoefficient: 2 } as const;

/** Bounds of a step `retry` policy, checked when the automation is saved. */
export const RETRY_LIMITS = { maximumAttempts: [1, 20], backoffCoefficient: [1, 10], maxIntervalSeconds: 3600 } as const;

/** callWebhook `timeoutMs`: default and largest value. */
export const CALL_WEBHOOK_DEFAULT_TIMEOUT_MS = 10_000;
export const CALL_WEBHOOK_MAX_TIMEOUT_MS = 30_000;

/**
 * Request headers a callWebhook step may not set: the service frames the request itself
 * (`Content-Type: application/json`, `Content-Length`) and hop-by-hop headers are not the sender's.
 */
export const CALL_WEBHOOK_RESERVED_HEADERS: readonly string[] = [
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
  'proxy-connection',
];

/**
 * The expressions of a callWebhook step as one flat batch for the CEL activity: `url`,
 * `body` (one expression) or `body.<field>`, and `headers.<name>`. The keys double as the field
 * names in error messages (`callWebhook.body.reason: ...`).
 */
export function callWebhookExpressions(fields: CallWebhookStepFields): Record<string, string> {
  const out: Record<string, string> = { url: fields.url };
  if (typeof fields.body === 'string') out.body = fields.body;
  else for (const [name, source] of Object.entries(fields.body)) out[`body.${name}`] = source;
  for (const [name, source] of Object.entries(fields.headers ?? {})) out[`headers.${name}`] = source;
  return out;
}

/** The evaluated request of a callWebhook step (what the activity sends). */
export interface CallWebhookRequest {
  url: string;
  body: Record<string, unknown>;
  headers: Record<string, string>;
}

/** What an HTTP header value may hold (Node refuses anything else when sending). */
export const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Reassembles the values of `callWebhookExpressions` into the request; returns an error message
 * (field path first) when a value has the wrong type.
 */
export function assembleCallWebhook(fields: CallWebhookStepFields, values: Record<string, unknown>): CallWebhookRequest | string {
  const url = values.url;
  if (typeof url !== 'string' || url === '') return `callWebhook.url: must evaluate to a non-empty string, got ${describeValue(url)}`;
  let body: Record<string, unknown>;
  if (typeof fields.body === 'string') {
    const value = values.body;
    if (value === null || typeof value !== 'object' || Array.isArray(value)) return `callWebhook.body: must evaluate to a map, got ${describeValue(value)}`;
    body = value as Record<string, unknown>;
  } else {
    body = {};
    for (const name of Object.keys(fields.body)) body[name] = values[`body.${name}`];
  }
  const headers: Record<string, string> = {};
  for (const name of Object.keys(fields.headers ?? {})) {
    const value = values[`headers.${name}`];
    if (typeof value !== 'string') return `callWebhook.headers.${name}: must evaluate to a string, got ${describeValue(value)}`;
    if (!HEADER_VALUE.test(value)) return `callWebhook.headers.${name}: must contain only tabs and printable Latin-1 characters (no line breaks)`;
    headers[name] = value;
  }
  return { url, body, headers };
}

/** Checks the four evaluated ids of an ownership step; returns an error message when one is not a non-empty string. */
export function ownershipValues(kind: StepKind, values: Record<string, unknown>): OwnershipStepFields | string {
  const out: Record<string, string> = {};
  for (const name of ['userId', 'roleSlug', 'appId', 'entitlementId'] as const) {
    const value = values[name];
    if (typeof value !== 'string' || value === '') return `${kind}.${name}: must evaluate to a non-empty string, got ${describeValue(value)}`;
    out[name] = value;
  }
  return out as unknown as OwnershipStepFields;
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

/** Everything a run needs, fixed when the event arrives: later edits never change a started run. */
export interface AutomationRunInput {
  automationId: string;
  automationName: string;
  version: number;
  listenerId: string;
  /** Lower-case UUID v4 from Webhook-Event-Id. */
  eventId: string;
  /** RFC 3339 time the receiver accepted the event. */
  receivedAt: string;
  /** The parsed JSON body: `ctx.trigger`. */
  trigger: unknown;
  steps: StepDefinition[];
}

export type StepStatus = 'PENDING' | 'RUNNING' | 'WAITING' | 'DONE' | 'SKIPPED' | 'FAILED';

export interface StepResult {
  id: string;
  kind: StepKind;
  status: StepStatus;
  output: Record<string, unknown> | null;
  error: string | null;
}

/** Name of the workflow query that answers the RunState of a run. */
export const RUN_STATE_QUERY = 'state';

export interface RunState {
  status: 'RUNNING' | 'COMPLETED' | 'FAILED';
  steps: StepResult[];
}
