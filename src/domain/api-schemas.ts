/**
 * Zod schemas of the operations outside governance: the OAuth token endpoint, API clients,
 * automations (request and response shapes), the webhook receiver's answer, the operations
 * endpoints and the one error body. Together with `schemas.ts` they are the source of the OpenAPI
 * document (`src/http/openapi.ts`); schemas that become components carry `.meta({ id })`.
 *
 * A step's body is validated by its kind's schema itself (src/steps/validate.ts, with every CEL
 * field compiled); an automation write's body by the domain's rules as refinements of its schema
 * (`automationWriteRequests`, rules in `automation-validation.ts`). A property
 * test (`test/unit/automation-view-schema.test.ts`) checks that every stored automation's view
 * matches `Automation`.
 */
import { z } from 'zod';
import { checkExpression } from '../cel';
import { ROLES } from '../auth/roles';
import { MAX_CIDRS } from '../net/cidr';
import { MAX_STEPS, RETRYABLE_STEP_KINDS, retrySchema, STEP_KINDS, STEP_REGISTRY, type StepKind } from '../steps';
import { celSchema, IDENTIFIER } from '../steps/kind';
import { flowDryRunSchema, flowInputSchemas, flowViewSchemas } from '../flow';
import {
  BREAKER_MAX_REASON,
  BREAKER_MAX_RUNS,
  BREAKER_PERIOD_SECONDS,
  breakerPeriodSeconds,
} from '../flow/circuit-breaker';
import { gracePeriodSchema } from './rotation-grace';
import { RUN_STATUSES } from './runs';
import { parseDuration } from '../duration';
import { GRANT_STATES } from '../store/grants';
import { closedObject, oneViolation, ruledByViolations, setAside, violationsOf, whileValid } from './validation';
import { automationChangeRule, MASK_PATHS, newAutomationRule } from './automation-validation';
import { MAX_WEBHOOK_BODY_BYTES } from '../webhooks/body';
import {
  CATCHUP_WINDOW_SECONDS,
  DEFAULT_CATCHUP_WINDOW_SECONDS,
  DIRECTORY_EVENT_TYPES,
  OVERLAP_POLICIES,
} from '../triggers';
import {
  AUTH_METHODS,
  authenticatorOf,
  methodsWithSecret,
  triggerFieldOwners,
  type AuthenticatorConfig,
  type AuthMethod,
} from '../webhooks/authenticators';

// ---------------------------------------------------------------- errors

export const ErrorDetail = z
  .looseObject({ '@type': z.string().meta({ description: 'e.g. type.googleapis.com/google.rpc.BadRequest' }) })
  .meta({
    id: 'ErrorDetail',
    description:
      'A google.rpc detail: BadRequest (`fieldViolations: [{field, description}]`) or ErrorInfo (`reason`, `domain`, `metadata`).',
  });

export const ErrorBody = z
  .object({
    code: z
      .number()
      .int()
      .meta({ description: 'google.rpc.Code: 3 INVALID_ARGUMENT, 5 NOT_FOUND, 16 UNAUTHENTICATED, …' }),
    message: z.string(),
    details: z.array(ErrorDetail),
  })
  .meta({ id: 'Error', description: 'The one error shape of the API (grpc-gateway style).' });

// ---------------------------------------------------------------- OAuth token

export const TokenRequest = z
  .object({
    grant_type: z.literal('client_credentials'),
    client_id: z.string().min(1),
    client_secret: z.string().min(1),
  })
  .meta({ id: 'TokenRequest', description: 'OAuth 2.0 client credentials (RFC 6749 §4.4), sent in the body.' });

export const TokenResponse = z
  .object({
    access_token: z.string(),
    token_type: z.literal('Bearer'),
    expires_in: z.number().int().meta({ description: 'Lifetime of the access token in seconds.' }),
  })
  .meta({ id: 'TokenResponse' });

export const OAuthError = z
  .object({
    error: z.enum(['invalid_request', 'invalid_client', 'unsupported_grant_type']),
    error_description: z.string(),
  })
  .meta({ id: 'OAuthError', description: 'RFC 6749 §5.2 error; 401 for invalid_client, 400 otherwise.' });

export const JwksDocument = z
  .object({ keys: z.array(z.looseObject({ kty: z.string() })) })
  .meta({ id: 'JwksDocument', description: 'Public keys of the access tokens (RFC 7517).' });

// ---------------------------------------------------------------- API clients

export const Role = z.enum(ROLES).meta({ id: 'Role' });

export const CreateClientRequest = z
  .object({
    displayName: oneViolation(z.string().max(200), 'must be a string of at most 200 characters').nullish(),
    roles: oneViolation(z.array(Role).min(1), `must be a non-empty list of ${ROLES.join(', ')}`),
  })
  .meta({ id: 'CreateClientRequest' });
export type CreateClientRequest = z.output<typeof CreateClientRequest>;

export const ApiClient = z
  .object({
    id: z.string(),
    clientId: z.string(),
    displayName: z.string(),
    roles: z.array(Role),
    createdAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'ApiClient' });

export const CreateClientResponse = z
  .object({ client: ApiClient, clientSecret: z.string().meta({ description: 'Shown only in this response.' }) })
  .meta({ id: 'CreateClientResponse' });
export const ApiClientResponse = z.object({ client: ApiClient }).meta({ id: 'ApiClientResponse' });
export const ApiClientList = z
  .object({ list: z.array(z.object({ client: ApiClient })), nextPageToken: z.string() })
  .meta({ id: 'ApiClientList' });

// ---------------------------------------------------------------- automations

/** A step's retry policy: its schema is its validator (src/steps/retry.ts). */
export const StepRetryPolicy = retrySchema;

/**
 * One step kind: `id`, optional `when`, `retry` where the kind takes one, the kind's body (its
 * schema from the step registry), and the other kinds at most as `null` (read as unset).
 */
function stepVariant(kind: StepKind): z.ZodObject {
  const others = Object.fromEntries(
    STEP_KINDS.filter((other) => other !== kind).map((other) => [other, z.null().optional()]),
  );
  return z.strictObject({
    id: z
      .string()
      .regex(IDENTIFIER)
      .meta({ description: 'Unique in the automation; outputs are ctx.steps.<id>.<field>.' }),
    when: celSchema().nullish().meta({ description: 'CEL condition; false skips the step.' }),
    retry: RETRYABLE_STEP_KINDS.includes(kind) ? StepRetryPolicy.nullish() : z.null().optional(),
    [kind]: STEP_REGISTRY[kind].schema,
    ...others,
  });
}

/** One step: an id, an optional condition and exactly one kind. */
export const AutomationStep = z
  .xor(STEP_KINDS.map((kind) => stepVariant(kind)) as [z.ZodObject, z.ZodObject, ...z.ZodObject[]])
  .meta({ id: 'AutomationStep', description: `Exactly one of ${STEP_KINDS.join(', ')}.` });

const triggerCommon = {
  allowedCidrs: z
    .array(z.string())
    .max(MAX_CIDRS)
    .nullish()
    .meta({ description: 'IPv4/IPv6 CIDR ranges or addresses; empty = any source.' }),
  enabled: z.boolean().nullish().meta({ description: 'Default true.' }),
};

/** The fields of the other methods: absent, null or "" on a trigger of `method`. */
function otherMethodsFields(method: AuthMethod): Record<string, z.ZodType> {
  return Object.fromEntries(
    triggerFieldOwners()
      .filter((owner) => owner.method !== method)
      .map(({ field, method: owner }) => [
        field,
        z
          .literal('')
          .nullish()
          .meta({ description: `Only for ${owner}.` }),
      ]),
  );
}

/** One variant per authentication method (src/webhooks/authenticators): its own fields, the others unset. */
export const IncomingWebhookTriggerInput = z
  .discriminatedUnion(
    'authMethod',
    AUTH_METHODS.map((method) =>
      z.object({
        authMethod: z.literal(method),
        ...otherMethodsFields(method),
        ...authenticatorOf(method).fields.shape,
        ...triggerCommon,
      }),
    ) as unknown as [z.ZodObject, ...z.ZodObject[]],
  )
  .meta({ id: 'IncomingWebhookTriggerInput' });

const durationText = (description: string) => z.string().nullish().meta({ description });

/** The schedule trigger (src/triggers/schedule.ts): `cron` or `interval`, exactly one. */
export const ScheduleTriggerInput = z
  .object({
    cron: z.string().nullish().meta({ description: 'Five fields, or @yearly, @monthly, @weekly, @daily, @hourly.' }),
    interval: durationText('At least "1s"; times are the Unix epoch + n × interval + offset.'),
    offset: durationText('Only with interval: "0s" (default) up to the interval.'),
    timezone: z.string().nullish().meta({ description: 'An IANA time zone name; default "UTC".' }),
    overlap: z.enum(OVERLAP_POLICIES).nullish().meta({ description: 'Default SKIP.' }),
    catchupWindow: durationText(
      `From "${CATCHUP_WINDOW_SECONDS[0]}s" to "${CATCHUP_WINDOW_SECONDS[1]}s"; default "${DEFAULT_CATCHUP_WINDOW_SECONDS}s".`,
    ),
    enabled: z.boolean().nullish().meta({ description: 'false pauses the schedule, true resumes it. Default true.' }),
  })
  .meta({ id: 'ScheduleTriggerInput' });

/** The event trigger (src/triggers/event.ts): the directory's own event types. */
export const EventTriggerInput = z
  .object({
    types: z.array(z.enum(DIRECTORY_EVENT_TYPES)).min(1).max(DIRECTORY_EVENT_TYPES.length),
    enabled: z.boolean().nullish().meta({ description: 'Default true.' }),
  })
  .meta({ id: 'EventTriggerInput' });

/** Exactly one member: the trigger kind (src/triggers). */
export const AutomationTriggerInput = z
  .object({
    incomingWebhook: IncomingWebhookTriggerInput.nullish(),
    schedule: ScheduleTriggerInput.nullish(),
    event: EventTriggerInput.nullish(),
  })
  .meta({ id: 'AutomationTriggerInput', description: 'Exactly one of incomingWebhook, schedule, event.' });

const flowInputs = flowInputSchemas();

const periodRule = `must be whole seconds from "${BREAKER_PERIOD_SECONDS[0]}s" to "${BREAKER_PERIOD_SECONDS[1]}s", e.g. "3600s"`;
const maxRunsRule = `is required: an integer from ${BREAKER_MAX_RUNS[0]} to ${BREAKER_MAX_RUNS[1].toLocaleString('en-US')}`;
/** The circuit breaker's PUT body: the settings, each rule with its message, unknown fields named. */
export const CircuitBreakerRequest = closedObject({
  maxRuns: z
    .number({ error: maxRunsRule })
    .int({ error: maxRunsRule })
    .min(BREAKER_MAX_RUNS[0], { error: maxRunsRule, ...whileValid })
    .max(BREAKER_MAX_RUNS[1], { error: maxRunsRule, ...whileValid })
    .meta({ description: 'Runs per period; the run past it trips the breaker.' }),
  period: z
    .string({ error: `is required: ${periodRule}` })
    .regex(/^\d{1,7}s$/, { error: periodRule, ...whileValid })
    .refine((value) => breakerPeriodSeconds(value) !== undefined, { error: periodRule, ...whileValid })
    .meta({ description: 'The sliding window, whole seconds from "60s" to "2592000s" (30 days).' }),
}).meta({ id: 'CircuitBreakerRequest' });
export type CircuitBreakerRequest = z.output<typeof CircuitBreakerRequest>;
export const BreakerView = z
  .object({
    state: z.enum(['OPEN', 'CLOSED']),
    trippedAt: z
      .string()
      .nullable()
      .optional()
      .meta({ format: 'date-time', description: 'OPEN: when the breaker tripped.' }),
    pausedRuns: z.number().int().optional().meta({ description: 'OPEN: the runs it holds.' }),
    runsInPeriod: z.number().int().optional().meta({ description: 'CLOSED: the runs counted in the last period.' }),
  })
  .meta({ id: 'BreakerView' });
const breakerReasonRule = `is required: a non-empty string of at most ${BREAKER_MAX_REASON} characters`;
export const BreakerActionRequest = closedObject({
  reason: z
    .string({ error: breakerReasonRule })
    .min(1, { error: breakerReasonRule, ...whileValid })
    .max(BREAKER_MAX_REASON, { error: breakerReasonRule, ...whileValid })
    .regex(/\S/, { error: breakerReasonRule, ...whileValid })
    .meta({ description: 'Why: kept in the audit trail.' }),
}).meta({ id: 'BreakerActionRequest' });
export type BreakerActionRequest = z.output<typeof BreakerActionRequest>;

const displayName = () => z.string().regex(/\S/).max(200);
const description = () => z.string().max(4000);

/** The create body as documented; `automationWriteRequests` makes the schema that parses it. */
const CreateAutomationBody = setAside(
  z.object({
    displayName: displayName(),
    description: description().nullish(),
    trigger: AutomationTriggerInput,
    steps: z.array(AutomationStep).max(MAX_STEPS).nullish(),
    ...flowInputs,
  }),
).meta({ id: 'CreateAutomationRequest' });

/** The update body as documented; `automationWriteRequests` makes the schema that parses it. */
const UpdateAutomationBody = setAside(
  z.object({
    automation: z
      .object({
        displayName: displayName().nullish(),
        description: description().nullish(),
        trigger: AutomationTriggerInput.nullish(),
        steps: z.array(AutomationStep).max(MAX_STEPS).nullish(),
        ...flowInputs,
      })
      .meta({ description: 'The fields named by updateMask (all given fields when there is no mask).' }),
    updateMask: z
      .union([z.string(), z.array(z.string())])
      .nullish()
      .meta({ description: `Comma-separated field paths among ${MASK_PATHS.join(', ')}.` }),
  }),
).meta({ id: 'UpdateAutomationRequest' });

/**
 * The automation write bodies as the configuration makes them (the trigger's method checks its
 * fields against it: a JWKS URL must be https and public unless ALLOW_INSECURE_JWKS): the documented
 * shapes, ruled by the domain's rules (automation-validation.ts), which report every violation
 * together, with the field paths and messages of the API, and answer the values as stored. Built
 * once by src/compose.ts; the schemas below are the same under the production policy.
 */
export function automationWriteRequests(config: AuthenticatorConfig) {
  return {
    create: ruledByViolations(CreateAutomationBody, newAutomationRule(config)),
    update: ruledByViolations(UpdateAutomationBody, automationChangeRule(config)),
  };
}
export type AutomationWriteRequests = ReturnType<typeof automationWriteRequests>;

const PRODUCTION_POLICY = automationWriteRequests({ baseUrl: '', allowInsecureJwks: false });
export const CreateAutomationRequest = PRODUCTION_POLICY.create;
export const UpdateAutomationRequest = PRODUCTION_POLICY.update;

export const IncomingWebhookTrigger = z
  .object({
    authMethod: z.enum(AUTH_METHODS),
    ...Object.fromEntries(
      triggerFieldOwners().map(({ field, method }) => [
        field,
        z.string().meta({ description: `"" for ${AUTH_METHODS.filter((other) => other !== method).join(', ')}.` }),
      ]),
    ),
    allowedCidrs: z.array(z.string()),
    enabled: z.boolean(),
    listenerId: z.string().meta({ readOnly: true }),
    url: z
      .string()
      .meta({ readOnly: true, format: 'uri', description: 'BASE_URL + /api/v1/webhooks/incoming/{listener_id}' }),
  })
  .meta({ id: 'IncomingWebhookTrigger' });

export const ScheduleTrigger = z
  .object({
    cron: z.string().optional(),
    interval: z.string().optional(),
    offset: z.string().optional(),
    timezone: z.string(),
    overlap: z.enum(OVERLAP_POLICIES),
    catchupWindow: z.string(),
    enabled: z.boolean(),
  })
  .meta({ id: 'ScheduleTrigger' });

export const EventTrigger = z
  .object({ types: z.array(z.enum(DIRECTORY_EVENT_TYPES)), enabled: z.boolean() })
  .meta({ id: 'EventTrigger' });

export const ScheduleState = z
  .object({
    nextRuns: z
      .array(z.string().meta({ format: 'date-time' }))
      .meta({ description: 'Up to 5, ascending; [] while paused.' }),
    paused: z.boolean(),
    lastRunAt: z.string().nullable().meta({ format: 'date-time' }),
  })
  .meta({ id: 'ScheduleState' });

export const Automation = z
  .object({
    id: z.string(),
    displayName: z.string(),
    description: z.string(),
    published: z.boolean(),
    version: z.number().int(),
    publishedVersion: z
      .number()
      .int()
      .nullable()
      .optional()
      .meta({ description: 'The version webhook events run (null when never published).' }),
    trigger: z
      .object({
        incomingWebhook: IncomingWebhookTrigger.optional(),
        schedule: ScheduleTrigger.optional(),
        event: EventTrigger.optional(),
      })
      .meta({ description: 'Exactly one member: the trigger kind.' }),
    schedule: ScheduleState.optional().meta({
      description:
        'A published schedule automation (GET of one automation): its next runs as the engine computes them.',
    }),
    steps: z.array(AutomationStep),
    ...flowViewSchemas(),
    breaker: BreakerView.optional().meta({
      description: "The circuit breaker's state (GET of one automation with a breaker, or with runs it paused).",
    }),
    createdAt: z.string().meta({ format: 'date-time' }),
    updatedAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'Automation' });
export type Automation = z.output<typeof Automation>;

const signingSecret = () =>
  z.string().meta({
    description: methodsWithSecret()
      .map((method) => authenticatorOf(method).secret?.description)
      .join(' '),
  });

export const AutomationWriteResponse = z
  .object({ automation: Automation, signingSecret: signingSecret().optional() })
  .meta({ id: 'AutomationWriteResponse' });
export const AutomationResponse = z.object({ automation: Automation }).meta({ id: 'AutomationResponse' });
export const BreakerResumeResponse = z
  .object({ automation: Automation, resumed: z.number().int() })
  .meta({ id: 'BreakerResumeResponse' });
export const BreakerCancelResponse = z
  .object({ automation: Automation, canceled: z.number().int() })
  .meta({ id: 'BreakerCancelResponse' });
export const AutomationList = z
  .object({ list: z.array(z.object({ automation: Automation })), nextPageToken: z.string() })
  .meta({ id: 'AutomationList' });
export const ScheduleBackfillRequest = closedObject({
  startAt: z
    .string()
    .meta({ format: 'date-time', description: 'The first time of the range (inclusive), in the past.' }),
  endAt: z.string().meta({ format: 'date-time', description: 'The end of the range (exclusive), not in the future.' }),
  overlap: z
    .enum(OVERLAP_POLICIES)
    .optional()
    .meta({ description: "The schedule's by default: ALLOW_ALL runs them at once, any other one after another." }),
}).meta({ id: 'ScheduleBackfillRequest' });
export const ScheduleBackfillResponse = z
  .object({
    started: z.number().int().meta({ description: 'Times of the range whose run starts now.' }),
    skipped: z.number().int().meta({ description: 'Times of the range that already ran (not run again).' }),
  })
  .meta({ id: 'ScheduleBackfillResponse' });
export const ScheduleTriggerResponse = z
  .object({ executionId: z.string().meta({ description: 'The run of this manual action.' }) })
  .meta({ id: 'ScheduleTriggerResponse' });

export const RotateSecretRequest = closedObject({
  gracePeriod: gracePeriodSchema().optional().meta({
    description:
      'How long the replaced secret keeps verifying, as seconds ("86400s", the default; at most "604800s"); "0s" revokes it at once.',
  }),
}).meta({ id: 'RotateSecretRequest' });
export type RotateSecretRequest = z.output<typeof RotateSecretRequest>;
export const RotateSecretResponse = z
  .object({
    signingSecret: signingSecret(),
    previousSecretExpiresAt: z
      .string()
      .meta({
        format: 'date-time',
        description: 'When the replaced secret stops verifying (RFC 3339); null when it was revoked at once.',
      })
      .nullable(),
  })
  .meta({ id: 'RotateSecretResponse' });

export const DryRunRequest = z
  .object({
    payload: z
      .unknown()
      // A JSON body has no undefined: undefined is an absent payload.
      .refine((payload) => payload !== undefined, {
        error: 'is required: a sample webhook body (any JSON), read as ctx.trigger',
        ...whileValid,
      })
      .refine((payload) => Buffer.byteLength(JSON.stringify(payload)) <= MAX_WEBHOOK_BODY_BYTES, {
        error: `must be at most ${MAX_WEBHOOK_BODY_BYTES} bytes of JSON, like a webhook body`,
        ...whileValid,
      })
      .meta({ description: 'A sample webhook body (any JSON, at most 64 KiB), read as ctx.trigger.' }),
    automation: z.object({}).catchall(z.unknown()).optional().meta({
      description:
        'A draft to test instead of the saved one, saving nothing: the fields an update would send (steps, flow control, trigger); a field left out is the saved draft’s.',
    }),
  })
  .meta({ id: 'DryRunRequest' });
export type DryRunRequest = z.output<typeof DryRunRequest>;

export const DryRunResponse = z
  .object({
    steps: z.array(
      z.object({
        id: z.string(),
        kind: z.enum(STEP_KINDS as [StepKind, ...StepKind[]]),
        status: z.enum(['WOULD_RUN', 'SKIPPED', 'ERROR', 'NOT_REACHED']),
        output: z
          .record(z.string(), z.unknown())
          .nullable()
          .meta({ description: 'What the step would produce; null unless WOULD_RUN.' }),
        error: z.string().nullable(),
      }),
    ),
    flowControl: flowDryRunSchema(),
    nextRuns: z
      .array(z.string().meta({ format: 'date-time' }))
      .optional()
      .meta({
        description:
          "A schedule trigger's next 5 times (the draft's when it sends one, else the saved one's), RFC 3339 UTC; [] when not enabled.",
      }),
  })
  .meta({ id: 'DryRunResponse', description: 'Every step evaluated over the payload, without any effect.' });

// ---------------------------------------------------------------- executions

const executionFields = {
  id: z.string().meta({ description: 'webhook:{listenerId}:{eventId}' }),
  eventId: z.string().nullable(),
  status: z.enum(RUN_STATUSES).meta({
    description:
      'QUEUED: waiting for its concurrency key; PAUSED: held by the circuit breaker (no step started in either).',
  }),
  startedAt: z.string().meta({ format: 'date-time' }),
  closedAt: z.string().nullable().meta({ format: 'date-time' }),
  version: z.number().int().nullable().meta({ description: 'The automation version the run executes.' }),
};

export const ExecutionSummary = z.object(executionFields).meta({ id: 'ExecutionSummary' });

export const ApprovalContext = z
  .object({
    title: z.string().meta({ description: 'The step’s evaluated title; without one "<automation name>: <step id>".' }),
    details: z.array(z.object({ label: z.string(), value: z.string() })).meta({
      description: 'The step’s details, in the order written (a string as it is, any other value as its JSON).',
    }),
    requestedAt: z.string().meta({ format: 'date-time', description: 'When the step started waiting.' }),
    deadline: z.string().nullable().meta({
      format: 'date-time',
      description: 'requestedAt plus the step’s timeout, when the timeout decides; null without one.',
    }),
  })
  .meta({ id: 'ApprovalContext', description: 'What a person reads before deciding a waitForApproval step.' });

export const StepResult = z
  .object({
    id: z.string(),
    kind: z.enum(STEP_KINDS as [StepKind, ...StepKind[]]),
    status: z
      .enum(['PENDING', 'RUNNING', 'WAITING', 'WAITING_FOR_APPROVAL', 'DONE', 'SKIPPED', 'FAILED', 'NOT_RUN'])
      .meta({
        description:
          'NOT_RUN: never started in a run that closed; a step still running when the run was canceled or terminated is FAILED with error canceled or terminated.',
      }),
    output: z.record(z.string(), z.unknown()).nullable(),
    error: z.string().nullable(),
    idempotencyKey: z.string().optional().meta({
      description:
        'callWebhook and notify steps that ran: the Idempotency-Key (and webhook-id) every request of the call carried.',
    }),
    approval: ApprovalContext.optional().meta({
      description: 'A waitForApproval step that started waiting: what its approver reads (kept once decided).',
    }),
    startedAt: z.string().optional().meta({ format: 'date-time', description: 'When the step started.' }),
    finishedAt: z
      .string()
      .optional()
      .meta({ format: 'date-time', description: 'When it ended (DONE, SKIPPED, FAILED).' }),
    attempts: z.number().int().optional().meta({
      description:
        'A step whose effect runs in an activity (callWebhook, notify, ownership and access steps): every attempt of the effect so far, a first local one included.',
    }),
  })
  .meta({ id: 'StepResult' });

export const Execution = z
  .object({
    ...executionFields,
    automationId: z.string(),
    automationName: z.string().nullable().meta({
      description: "The automation's display name (the name the run started under, once the automation is deleted).",
    }),
    rerunOf: z
      .string()
      .nullable()
      .meta({ description: 'The run this one reruns or retries; null for a run started by an event.' }),
    reruns: z.array(z.string()).meta({ description: 'Ids of the reruns and retries of this run, oldest first.' }),
    error: z.string().nullable(),
    trigger: z.unknown().optional().meta({
      description: 'The payload the run was started with (ctx.trigger), decoded, as received.',
    }),
    steps: z.array(StepResult),
    unaudited: z.array(z.string()).optional().meta({
      description:
        'What the run holds that no API request recorded in the audit trail: decision:<stepId> for a decision, rerunOf for a rerun link. Non-empty: it reached the workflow engine some other way.',
    }),
    queue: z
      .object({ key: z.string() })
      .optional()
      .meta({ description: 'While QUEUED: the concurrency key value the run waits for.' }),
    paused: z
      .object({ since: z.string().meta({ format: 'date-time' }) })
      .optional()
      .meta({ description: 'While PAUSED: since when the circuit breaker holds the run.' }),
    traceId: z
      .string()
      .regex(/^[0-9a-f]{32}$/)
      .optional()
      .meta({ description: 'The OpenTelemetry trace id of the run, when it is traced (32 lowercase hex characters).' }),
    bulkActionId: z.string().optional().meta({
      description: 'The bulk action that canceled, terminated or reran this run, or that started it (a bulk rerun).',
    }),
    closedBy: z
      .object({
        actor: z.string().nullable().meta({
          description: 'Who: the actor string; null when the run was stopped on the workflow engine directly.',
        }),
        actorDisplayName: z
          .string()
          .nullable()
          .meta({ description: "A person's name or the API client's display name." }),
        reason: z.string().nullable(),
        bulkActionId: z.string().optional(),
      })
      .optional()
      .meta({ description: 'A CANCELED or TERMINATED run: who stopped it and why.' }),
    rejectedBy: z
      .object({
        actor: z.string(),
        actorDisplayName: z.string().nullable(),
        stepId: z.string(),
        comment: z.string().nullable(),
      })
      .optional()
      .meta({ description: 'A run that FAILED on a rejection by a person or client (not by a timeout).' }),
  })
  .meta({ id: 'Execution' });

export const Delivery = z
  .object({
    receivedAt: z.string().meta({ format: 'date-time' }),
    status: z
      .number()
      .int()
      .nullable()
      .meta({ description: 'The HTTP status the receiver answered; null for a schedule action or a directory event.' }),
    reason: z.string().meta({
      description:
        'The receiver’s reason code: accepted, paused, filtered, rate_limited, queue_full, signature_mismatch, timestamp_out_of_window, duplicate_event, body_too_large, source_not_allowed, missing_header, invalid_json, jwt_expired, …; for a schedule or an event: started, paused, filtered, own_event, event_depth, skipped.',
    }),
    eventId: z.string().nullable().meta({
      description:
        "Webhook-Event-Id, once the headers were valid; a directory event's id; a schedule action's scheduledAt.",
    }),
    sourceAddress: z
      .string()
      .nullable()
      .meta({ description: "The sender's address; null for a schedule or an event." }),
    executionId: z
      .string()
      .nullable()
      .meta({ description: 'The run started (200) or already started (409) for the event.' }),
    latencyMs: z.number(),
    source: z.enum(['webhook', 'schedule', 'event']),
  })
  .meta({ id: 'Delivery' });
export const DeliveryList = z
  .object({ list: z.array(z.object({ delivery: Delivery })), nextPageToken: z.string() })
  .meta({ id: 'DeliveryList' });

export const AuditEvent = z
  .object({
    at: z.string(),
    actor: z
      .string()
      .meta({ description: '`client:<clientId>`, `person:<issuer>#<subject>`, `automation:<id>` or `anonymous`.' }),
    actorDisplayName: z.string().nullable().meta({
      description: "A person's name, the API client's display name or the automation's name; null when none is known.",
    }),
    action: z.string().meta({ description: 'e.g. `automation.update`, `automation_execution.approve`.' }),
    subject: z.string().meta({ description: '`<type>:<id>` of what the action touched.' }),
    subjectDisplayName: z.string().nullable().meta({
      description:
        "The subject's display name (an automation, an API client, an entitlement) while it exists; null otherwise.",
    }),
    details: z
      .record(z.string(), z.unknown())
      .meta({ description: 'Never a secret value or a payload; a person’s name and email for a person’s action.' }),
  })
  .meta({ id: 'AuditEvent' });
export const AuditList = z
  .object({ list: z.array(z.object({ auditEvent: AuditEvent })), nextPageToken: z.string() })
  .meta({ id: 'AuditList' });

const BASE64 = /^[A-Za-z0-9+/_-]*={0,2}$/;
const base64 = () => z.string().regex(BASE64, 'must be base64').meta({ description: 'base64' });
const CodecPayload = z
  .object({
    metadata: z.record(z.string(), base64()).nullish(),
    data: base64().nullish(),
  })
  .meta({ id: 'CodecPayload' });
export const CodecPayloads = z.object({ payloads: z.array(CodecPayload) }).meta({
  id: 'CodecPayloads',
  description: 'temporal.api.common.v1.Payloads in protobuf JSON (Temporal Codec Server protocol).',
});

export const ExecutionList = z
  .object({ list: z.array(z.object({ execution: ExecutionSummary })), nextPageToken: z.string() })
  .meta({ id: 'ExecutionList' });
export const ExecutionResponse = z.object({ execution: Execution }).meta({ id: 'ExecutionResponse' });
export const ExecutionListEntry = z
  .object({
    ...executionFields,
    automationId: z.string(),
    automationName: z.string().meta({
      description: "The automation's display name (the name it started under, once the automation is deleted).",
    }),
    queue: z
      .object({ key: z.string() })
      .optional()
      .meta({ description: 'While QUEUED: the concurrency key value the run waits for.' }),
    waitingForApproval: z.object({ stepId: z.string() }).optional().meta({
      description:
        'While a step waits for a person: that step (approve or reject it at .../steps/{stepId}/approve or /reject).',
    }),
    approval: ApprovalContext.optional().meta({
      description: 'With waitingForApproval: what the waiting step’s approver reads.',
    }),
  })
  .meta({ id: 'ExecutionListEntry' });
export const ExecutionSearchList = z
  .object({ list: z.array(z.object({ execution: ExecutionListEntry })), nextPageToken: z.string() })
  .meta({ id: 'ExecutionSearchList' });

export const Lane = z
  .object({
    key: z
      .string()
      .meta({ description: 'The concurrency key value ("" for an automation whose concurrency has no key).' }),
    running: z
      .number()
      .int()
      .meta({ description: 'Runs of the key that hold a permit (started their steps) and have not closed.' }),
    queued: z.number().int().meta({ description: 'Runs of the key waiting for a permit (QUEUED).' }),
    oldestQueuedAt: z
      .string()
      .meta({ format: 'date-time', description: 'When the longest-waiting queued run of the key started.' }),
  })
  .meta({ id: 'Lane' });
export const LaneList = z
  .object({ list: z.array(z.object({ lane: Lane })), nextPageToken: z.string() })
  .meta({ id: 'LaneList' });

const MAX_COMMENT = 2000;
const commentRule = `must be a string of at most ${MAX_COMMENT} characters`;
export const DecisionRequest = z
  .object({
    comment: z
      .string({ error: commentRule })
      .max(MAX_COMMENT, commentRule)
      .nullish()
      .meta({ description: 'Why; kept in the step output and the audit trail.' }),
  })
  .meta({ id: 'DecisionRequest' });
export type DecisionRequest = z.output<typeof DecisionRequest>;
const MAX_REASON = 1000;
const reasonRule = `is required: a non-empty string of at most ${MAX_REASON} characters`;
/** A reason of white space only is refused, as it has always been by the API. */
export const TerminateRequest = z
  .object({
    reason: z
      .string({ error: reasonRule })
      .min(1, { error: reasonRule, ...whileValid })
      .max(MAX_REASON, { error: reasonRule, ...whileValid })
      .regex(/\S/, { error: reasonRule, ...whileValid }),
  })
  .meta({ id: 'TerminateRequest' });
export type TerminateRequest = z.output<typeof TerminateRequest>;
const cancelReasonRule = `must be a string of at most ${MAX_REASON} characters`;
export const CancelRequest = z
  .object({
    reason: z
      .string({ error: cancelReasonRule })
      .max(MAX_REASON, { error: cancelReasonRule })
      .nullish()
      .meta({ description: 'Why (optional); the run detail shows it in closedBy, the audit trail keeps it.' }),
  })
  .meta({ id: 'CancelRequest' });
export type CancelRequest = z.output<typeof CancelRequest>;
export const RerunRequest = z
  .object({
    fromFailedStep: z.boolean({ error: 'must be a boolean' }).nullish().meta({
      description:
        'true: retry from the failed step on the original version, reusing the results of the steps before it. Default: a fresh run on the published version.',
    }),
  })
  .meta({ id: 'RerunRequest' });
export type RerunRequest = z.output<typeof RerunRequest>;

// ---------------------------------------------------------------- bulk actions on runs

export const BULK_ACTIONS = ['cancel', 'terminate', 'rerun'] as const;
export const BULK_STATUSES = RUN_STATUSES;
const timeRule = 'must be an RFC 3339 time such as 2026-01-02T03:04:05Z';
const bulkTime = () =>
  z
    .string({ error: timeRule })
    .refine((value) => /^\d{4}-\d\d-\d\dT/.test(value) && !Number.isNaN(Date.parse(value)), { error: timeRule })
    .nullish()
    .meta({ format: 'date-time' });
export const BulkFilter = z
  .object({
    automationId: z
      .string({ error: 'is required: the automation whose runs are matched' })
      .min(1, { error: 'is required: the automation whose runs are matched' }),
    status: z
      .array(z.enum(BULK_STATUSES, { error: `must be one of ${BULK_STATUSES.join(', ')}` }), {
        error: 'must be a list of statuses',
      })
      .max(BULK_STATUSES.length, { error: 'lists each status at most once' })
      .nullish(),
    startedAfter: bulkTime().meta({ description: 'Only runs started after this time.' }),
    startedBefore: bulkTime().meta({ description: 'Only runs started before this time.' }),
    where: z
      .string({ error: 'must be a CEL expression (a string)' })
      .superRefine((where, ctx) => {
        const problem = checkExpression(where);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, input: where });
      })
      .nullish()
      .meta({ description: 'CEL bool over ctx.trigger, the run’s payload.' }),
  })
  .superRefine((filter, ctx) => {
    const { startedAfter, startedBefore } = filter;
    if (startedAfter && startedBefore && Date.parse(startedAfter) >= Date.parse(startedBefore))
      ctx.addIssue({
        code: 'custom',
        path: ['startedBefore'],
        message: 'must be later than startedAfter',
        input: filter,
      });
  })
  .meta({ id: 'BulkFilter' });
export type BulkFilter = z.output<typeof BulkFilter>;
const bulkActionField = () => z.enum(BULK_ACTIONS, { error: `must be one of ${BULK_ACTIONS.join(', ')}` });
const bulkReason = () =>
  z
    .string({ error: reasonRule })
    .min(1, { error: reasonRule, ...whileValid })
    .max(MAX_REASON, { error: reasonRule, ...whileValid })
    .regex(/\S/, { error: reasonRule, ...whileValid })
    .meta({ description: 'Why the runs are acted on (each run’s cancel or terminate reason names it).' });
/** Act on exactly the runs a dry run matched. */
export const BulkActionFromPreview = z
  .looseObject({
    previewId: z
      .string({ error: 'must be the previewId of a dry run' })
      .meta({ description: 'Act on exactly the runs a dry run matched (within 10 minutes of it).' }),
    action: bulkActionField(),
    reason: bulkReason(),
  })
  .meta({ id: 'BulkActionFromPreview', description: 'An action on the runs a dry run matched.' });
/** Match runs by a filter: count and sample them (`dryRun`), or act on them. */
export const BulkActionByFilter = z
  .looseObject({
    action: bulkActionField().nullish().meta({ description: 'Required unless dryRun is true.' }),
    filter: BulkFilter,
    reason: bulkReason(),
    dryRun: z
      .boolean({ error: 'must be a boolean' })
      .nullish()
      .meta({ description: 'true: count and sample the matched runs, change nothing, answer a previewId.' }),
  })
  .meta({ id: 'BulkActionByFilter', description: 'A dry run, or an action, over the runs a filter matches.' });
/** What a bulk action request is, once read: from a preview, a dry run, or an action by filter. */
export type BulkRequest =
  | { kind: 'preview'; previewId: string; action: BulkAction; reason: string }
  | { kind: 'dryRun'; filter: BulkFilter; reason: string; action: BulkAction | null }
  | { kind: 'filter'; filter: BulkFilter; reason: string; action: BulkAction };
type BulkAction = (typeof BULK_ACTIONS)[number];
const reasonRequired = { field: 'reason', description: 'is required: why the runs are acted on' };
const actionRequired = { field: 'action', description: 'is required: cancel, terminate or rerun' };
/**
 * A request with `previewId` acts on a preview; any other matches by its filter. Each is its
 * schema's, with the rules the shape cannot say: a preview is not dry-run again, an action by
 * filter names its action, and a missing field is named as the API has always named it. The
 * branches keep the fields they do not name (loose), so that the rule reads the body as sent.
 */
export const BulkActionRequest = ruledByViolations(
  setAside(z.union([BulkActionFromPreview, BulkActionByFilter])),
  (value, violations): BulkRequest => {
    const body = (value !== null && typeof value === 'object' ? value : {}) as Record<string, unknown>;
    const missing = (field: string) => body[field] === undefined || body[field] === null;
    if (!missing('previewId')) {
      if (body.dryRun === true)
        violations.push({ field: 'previewId', description: 'is for acting on a dry run: send it without dryRun' });
      if (missing('action')) violations.push(actionRequired);
      if (missing('reason')) violations.push(reasonRequired);
      if (violations.length > 0) return undefined as never;
      const parsed = BulkActionFromPreview.safeParse(body);
      if (!parsed.success) {
        violations.push(...violationsOf(parsed.error.issues));
        return undefined as never;
      }
      const { previewId, action, reason } = parsed.data;
      return { kind: 'preview', previewId, action, reason };
    }
    if (missing('filter'))
      violations.push({
        field: 'filter.automationId',
        description: 'is required: the automation whose runs are matched',
      });
    if (missing('reason')) violations.push(reasonRequired);
    if (body.dryRun !== true && missing('action')) violations.push(actionRequired);
    if (violations.length > 0) return undefined as never;
    const parsed = BulkActionByFilter.safeParse(body);
    if (!parsed.success) {
      violations.push(...violationsOf(parsed.error.issues));
      return undefined as never;
    }
    const { filter, reason, action, dryRun } = parsed.data;
    return dryRun === true
      ? { kind: 'dryRun', filter, reason, action: action ?? null }
      : { kind: 'filter', filter, reason, action: action! };
  },
).meta({ id: 'BulkActionRequest' });
export const BulkDryRunResponse = z
  .object({
    matched: z.number().int(),
    sample: z.array(z.string()).meta({ description: 'At most 20 of the matched execution ids.' }),
    previewId: z
      .string()
      .meta({ description: 'Send it back with action and reason within 10 minutes to act on exactly these runs.' }),
    whereErrors: z.number().int().meta({ description: 'Runs left out because `where` failed on their payload.' }),
  })
  .meta({ id: 'BulkDryRunResponse' });
export const BulkAction = z
  .object({
    id: z.string(),
    action: z.enum(BULK_ACTIONS),
    filter: z
      .record(z.string(), z.unknown())
      .meta({ description: 'The filter as given (of the preview, for an action made from one).' }),
    reason: z.string(),
    by: z.string().meta({ description: 'The actor who asked for it.' }),
    state: z.enum(['RUNNING', 'COMPLETED', 'CANCELED']),
    matched: z.number().int(),
    succeeded: z.number().int(),
    skipped: z
      .number()
      .int()
      .meta({ description: 'Runs no longer in a state the action applies to (e.g. closed before their cancel).' }),
    failed: z.number().int(),
    createdAt: z.string().meta({ format: 'date-time' }),
    finishedAt: z.string().nullable().meta({ format: 'date-time' }),
  })
  .meta({ id: 'BulkAction' });
export const BulkActionResponse = z.object({ bulkAction: BulkAction }).meta({ id: 'BulkActionResponse' });
export const BulkActionList = z
  .object({ list: z.array(z.object({ bulkAction: BulkAction })), nextPageToken: z.string() })
  .meta({ id: 'BulkActionList' });

// ---------------------------------------------------------------- grants

const positiveDuration = () =>
  z
    .string({
      error: (issue) => (issue.input === undefined || issue.input === null ? 'is required' : 'must be a string'),
    })
    .refine(
      (text) => (parseDuration(text) ?? 0) > 0,
      'must be a positive protobuf-JSON duration such as "3600s" or "1.5s"',
    );
const requiredId = () =>
  z
    .string({
      error: (issue) => (issue.input === undefined || issue.input === null ? 'is required' : 'must be a string'),
    })
    .regex(/\S/, 'must not be empty')
    .max(200, 'must be at most 200 characters');

export const GrantState = z.enum(GRANT_STATES).meta({ id: 'GrantState' });

export const CreateGrantRequest = z
  .object({
    userId: requiredId(),
    appId: requiredId(),
    appEntitlementId: requiredId(),
    duration: positiveDuration()
      .nullish()
      .meta({ description: "Bounded by the entitlement's durationGrant; absent: durationGrant, or standing access." }),
    justification: z.string().max(1000, 'must be at most 1000 characters').nullish(),
  })
  .meta({ id: 'CreateGrantRequest' });
export const RevokeGrantRequest = z
  .object({
    reason: z
      .string({
        error: (issue) => (issue.input === undefined || issue.input === null ? 'is required' : 'must be a string'),
      })
      .min(1, 'must be 1..500 characters')
      .max(500, 'must be 1..500 characters'),
  })
  .meta({ id: 'RevokeGrantRequest' });
export const ExtendGrantRequest = z.object({ duration: positiveDuration() }).meta({ id: 'ExtendGrantRequest' });

export const ProvisioningEntry = z
  .object({
    phase: z.enum(['provision', 'deprovision']),
    policy: z.string().meta({ description: 'unconfigured, manual, webhook, delegated, multiStep, connector, …' }),
    step: z.string().meta({ description: '"" for the policy itself, provisionSteps[i] for a multiStep step.' }),
    state: z.enum(['PENDING', 'DONE', 'FAILED']),
    attempts: z.number().int(),
    startedAt: z.string().nullable().meta({ format: 'date-time' }),
    finishedAt: z.string().nullable().meta({ format: 'date-time' }),
    error: z.string().nullable(),
    detail: z.record(z.string(), z.unknown()),
  })
  .meta({ id: 'ProvisioningEntry' });
export const Grant = z
  .object({
    id: z.string(),
    userId: z.string(),
    appId: z.string(),
    appEntitlementId: z.string(),
    state: GrantState,
    requestedBy: z.string(),
    justification: z.string(),
    createdAt: z.string().meta({ format: 'date-time' }),
    grantedAt: z.string().nullable().meta({ format: 'date-time' }),
    expiresAt: z.string().nullable().meta({ format: 'date-time', description: 'null: standing access.' }),
    revokedAt: z.string().nullable().meta({ format: 'date-time' }),
    revokedBy: z.string().nullable(),
    revokeReason: z.string().nullable(),
    error: z.string().nullable(),
    provisioning: z.array(ProvisioningEntry),
  })
  .meta({ id: 'Grant' });
export const GrantResponse = z.object({ grant: Grant }).meta({ id: 'GrantResponse' });
export const CreateGrantResponse = z
  .object({
    grant: Grant,
    created: z.boolean().meta({ description: 'false: the live grant the user already held, unchanged.' }),
  })
  .meta({ id: 'CreateGrantResponse' });
export const GrantList = z
  .object({ list: z.array(z.object({ grant: Grant })), nextPageToken: z.string() })
  .meta({ id: 'GrantList' });

// ---------------------------------------------------------------- provisioning webhooks

export const CreateProvisioningWebhookRequest = z
  .object({
    displayName: z
      .string({
        error: (issue) => (issue.input === undefined || issue.input === null ? 'is required' : 'must be a string'),
      })
      .regex(/\S/, 'must not be empty')
      .max(200, 'must be at most 200 characters'),
    url: z
      .string({
        error: (issue) => (issue.input === undefined || issue.input === null ? 'is required' : 'must be a string'),
      })
      .max(2048, 'must be at most 2048 characters'),
    signingSecret: z
      .string()
      .max(200, 'must be at most 200 characters')
      .nullish()
      .meta({ description: "The name of an outbound secret (Standard Webhooks format) that allows the URL's origin." }),
  })
  .meta({ id: 'CreateProvisioningWebhookRequest' });
export const ProvisioningWebhook = z
  .object({
    id: z.string(),
    displayName: z.string(),
    url: z.string(),
    signingSecret: z.string().nullable().meta({ description: 'The secret name, never its value.' }),
    createdAt: z.string().meta({ format: 'date-time' }),
  })
  .meta({ id: 'ProvisioningWebhook' });
export const ProvisioningWebhookResponse = z
  .object({ provisioningWebhook: ProvisioningWebhook })
  .meta({ id: 'ProvisioningWebhookResponse' });
export const ProvisioningWebhookList = z
  .object({ list: z.array(z.object({ provisioningWebhook: ProvisioningWebhook })), nextPageToken: z.string() })
  .meta({ id: 'ProvisioningWebhookList' });
export const ProvisioningCallbackRequest = z
  .object({
    status: z.enum(['done', 'failed'], { error: 'must be "done" or "failed"' }),
    message: z.string().max(1000, 'must be at most 1000 characters').nullish(),
  })
  .meta({ id: 'ProvisioningCallbackRequest' });

// ---------------------------------------------------------------- provisioning tasks

export const ProvisioningTaskState = z.enum(['OPEN', 'DONE', 'FAILED']).meta({ id: 'ProvisioningTaskState' });
export const ProvisioningTask = z
  .object({
    id: z.string(),
    grantId: z.string(),
    phase: z.enum(['provision', 'deprovision']),
    step: z.string().meta({ description: '"" for the policy itself, provisionSteps[i] for a multiStep step.' }),
    instructions: z.string(),
    assigneeUserIds: z.array(z.string()),
    state: ProvisioningTaskState,
    createdAt: z.string().meta({ format: 'date-time' }),
    closedAt: z.string().nullable().meta({ format: 'date-time' }),
    closedBy: z.string().nullable().meta({ description: 'The actor who completed or failed it.' }),
    comment: z.string().nullable(),
  })
  .meta({ id: 'ProvisioningTask' });
export const ProvisioningTaskResponse = z
  .object({ provisioningTask: ProvisioningTask })
  .meta({ id: 'ProvisioningTaskResponse' });
export const ProvisioningTaskList = z
  .object({ list: z.array(z.object({ provisioningTask: ProvisioningTask })), nextPageToken: z.string() })
  .meta({ id: 'ProvisioningTaskList' });
export const CloseProvisioningTaskRequest = z
  .object({ comment: z.string().max(1000, 'must be at most 1000 characters').nullish() })
  .meta({ id: 'CloseProvisioningTaskRequest' });

// ---------------------------------------------------------------- webhook receiver, operations

export const WebhookAccepted = z
  .object({
    eventId: z.string().meta({ description: 'The Webhook-Event-Id, lower case.' }),
    executionId: z
      .string()
      .nullable()
      .meta({ description: 'The run started for the event; null when the filter was false.' }),
    filtered: z
      .literal(true)
      .optional()
      .meta({ description: "Present when the version's filter was false: the event is recorded, no run started." }),
  })
  .meta({ id: 'WebhookAccepted' });

/** Any JSON value (at most 64 KiB): the automation's ctx.trigger. */
export const WebhookPayload = z
  .unknown()
  .meta({ id: 'WebhookPayload', description: 'Any JSON value, at most 65,536 bytes.' });

export const HealthStatus = z.object({ status: z.literal('ok') }).meta({ id: 'HealthStatus' });
export const ReadyStatus = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    checks: z.object({ store: z.boolean(), temporal: z.boolean() }),
  })
  .meta({ id: 'ReadyStatus' });
