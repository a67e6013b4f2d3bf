/**
 * Validation of automation writes: trigger (auth method, JWKS URL, CIDRs) and steps (ids, one kind
 * each, every expression compiled as CEL, retry policies of effectful steps). Errors name the
 * field path and, for steps, the step id.
 */
import { checkExpression } from '../cel';
import { parseCidrList, validateJwksUrl } from '../webhooks';
import { parseDuration } from '../../workflows/duration';
import {
  CALL_WEBHOOK_MAX_TIMEOUT_MS,
  CALL_WEBHOOK_RESERVED_HEADERS,
  RETRY_DEFAULTS,
  RETRY_LIMITS,
  RETRYABLE_STEP_KINDS,
  STEP_KINDS,
  type OwnershipStepFields,
  type StepDefinition,
  type StepKind,
  type StepRetryPolicy,
} from '../../workflows/types';
import type { FieldViolation } from './errors';

export const MAX_STEPS = 50;
export const MAX_VARIABLES_PER_STEP = 50;
/** Longest wait a step may ask for: one year. */
export const MAX_WAIT_SECONDS = 366 * 24 * 3600;
const STEP_ID = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const OWNERSHIP_FIELDS: (keyof OwnershipStepFields)[] = ['userId', 'roleSlug', 'appId', 'entitlementId'];
/** Most fields of a callWebhook body given field by field, and most headers. */
export const MAX_WEBHOOK_BODY_FIELDS = 50;
export const MAX_WEBHOOK_HEADERS = 20;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const STEP_FIELDS = new Set(['id', 'when', 'retry', ...STEP_KINDS]);

export type AuthMethod = 'HMAC' | 'JWT';

export interface IncomingWebhookTrigger {
  authMethod: AuthMethod;
  jwksUrl: string;
  allowedCidrs: string[];
  enabled: boolean;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

export function validateDisplayName(value: unknown, field: string, violations: FieldViolation[]): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200) {
    violations.push({ field, description: 'must be a non-empty string of at most 200 characters' });
    return '';
  }
  return value.trim();
}

export function validateDescription(value: unknown, field: string, violations: FieldViolation[]): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string' || value.length > 4000) {
    violations.push({ field, description: 'must be a string of at most 4000 characters' });
    return '';
  }
  return value;
}

/** The trigger `{incomingWebhook: {...}}`; JWT needs a JWKS URL, HMAC must not have one. */
export function validateTrigger(value: unknown, allowInsecureJwks: boolean, violations: FieldViolation[]): IncomingWebhookTrigger {
  const field = 'trigger.incomingWebhook';
  const fallback: IncomingWebhookTrigger = { authMethod: 'HMAC', jwksUrl: '', allowedCidrs: [], enabled: true };
  if (!isObject(value) || !isObject(value.incomingWebhook)) {
    violations.push({ field, description: 'is required: the only trigger kind is incomingWebhook' });
    return fallback;
  }
  const hook = value.incomingWebhook;
  const authMethod = hook.authMethod;
  if (authMethod !== 'HMAC' && authMethod !== 'JWT') {
    violations.push({ field: `${field}.authMethod`, description: 'must be HMAC or JWT' });
    return fallback;
  }
  let jwksUrl = '';
  if (authMethod === 'JWT') {
    if (typeof hook.jwksUrl !== 'string' || hook.jwksUrl === '') {
      violations.push({ field: `${field}.jwksUrl`, description: 'is required for JWT authentication' });
    } else {
      const problem = validateJwksUrl(hook.jwksUrl, allowInsecureJwks);
      if (problem) violations.push({ field: `${field}.jwksUrl`, description: problem });
      jwksUrl = hook.jwksUrl;
    }
  } else if (hook.jwksUrl !== undefined && hook.jwksUrl !== null && hook.jwksUrl !== '') {
    violations.push({ field: `${field}.jwksUrl`, description: 'is only for JWT authentication' });
  }
  let allowedCidrs: string[] = [];
  if (hook.allowedCidrs !== undefined && hook.allowedCidrs !== null) {
    const parsed = parseCidrList(hook.allowedCidrs);
    if (parsed.ok) allowedCidrs = parsed.cidrs;
    else violations.push({ field: `${field}.allowedCidrs${parsed.index >= 0 ? `[${parsed.index}]` : ''}`, description: parsed.error });
  }
  let enabled = true;
  if (hook.enabled !== undefined && hook.enabled !== null) {
    if (typeof hook.enabled !== 'boolean') violations.push({ field: `${field}.enabled`, description: 'must be a boolean' });
    else enabled = hook.enabled;
  }
  return { authMethod, jwksUrl, allowedCidrs, enabled };
}

function checkCel(source: unknown, field: string, stepId: string, violations: FieldViolation[]): string {
  if (typeof source !== 'string' || source.trim() === '') {
    violations.push({ field, description: `step "${stepId}": must be a CEL expression (a non-empty string)` });
    return '';
  }
  const problem = checkExpression(source);
  if (problem) violations.push({ field, description: `step "${stepId}": ${problem}` });
  return source;
}

/** Steps: an array of `{id, when?, <one kind>}`, ids unique and usable as `ctx.steps.<id>`. */
export function validateSteps(value: unknown, violations: FieldViolation[]): StepDefinition[] {
  if (!Array.isArray(value)) {
    violations.push({ field: 'steps', description: 'must be an array of steps' });
    return [];
  }
  if (value.length > MAX_STEPS) {
    violations.push({ field: 'steps', description: `at most ${MAX_STEPS} steps` });
    return [];
  }
  const seen = new Set<string>();
  const steps: StepDefinition[] = [];
  value.forEach((raw, index) => {
    const at = `steps[${index}]`;
    if (!isObject(raw)) {
      violations.push({ field: at, description: 'must be an object' });
      return;
    }
    const id = raw.id;
    if (typeof id !== 'string' || !STEP_ID.test(id)) {
      violations.push({ field: `${at}.id`, description: 'must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$ (it is read as ctx.steps.<id>)' });
      return;
    }
    if (seen.has(id)) violations.push({ field: `${at}.id`, description: `step id "${id}" is used twice` });
    seen.add(id);
    const kinds = STEP_KINDS.filter((kind) => raw[kind] !== undefined && raw[kind] !== null);
    if (kinds.length !== 1) {
      violations.push({
        field: at,
        description: `step "${id}": exactly one of ${STEP_KINDS.join(', ')} must be set (found ${kinds.length})`,
      });
      return;
    }
    const kind = kinds[0] as StepKind;
    const step: Record<string, unknown> = { id };
    if (raw.when !== undefined && raw.when !== null) step.when = checkCel(raw.when, `${at}.when`, id, violations);
    if (raw.retry !== undefined && raw.retry !== null) {
      if (!RETRYABLE_STEP_KINDS.includes(kind)) {
        violations.push({ field: `${at}.retry`, description: `step "${id}": retry applies only to ${RETRYABLE_STEP_KINDS.join(', ')} steps` });
      } else {
        step.retry = validateRetry(raw.retry, `${at}.retry`, id, violations);
      }
    }
    for (const key of Object.keys(raw)) {
      if (!STEP_FIELDS.has(key)) violations.push({ field: `${at}.${key}`, description: `step "${id}": unknown field` });
    }
    step[kind] = validateStepBody(kind, raw[kind], `${at}.${kind}`, id, violations);
    steps.push(step as unknown as StepDefinition);
  });
  return steps;
}

function validateStepBody(kind: StepKind, body: unknown, at: string, id: string, violations: FieldViolation[]): unknown {
  if (!isObject(body)) {
    violations.push({ field: at, description: `step "${id}": must be an object` });
    return {};
  }
  switch (kind) {
    case 'setVariables': {
      const entries = Object.entries(body);
      if (entries.length === 0 || entries.length > MAX_VARIABLES_PER_STEP) {
        violations.push({ field: at, description: `step "${id}": set 1 to ${MAX_VARIABLES_PER_STEP} variables` });
      }
      const result: Record<string, string> = {};
      for (const [name, source] of entries) {
        if (!VARIABLE_NAME.test(name)) {
          violations.push({ field: `${at}.${name}`, description: `step "${id}": variable names must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$` });
          continue;
        }
        result[name] = checkCel(source, `${at}.${name}`, id, violations);
      }
      return result;
    }
    case 'wait': {
      const duration = body.duration;
      const ms = typeof duration === 'string' ? parseDuration(duration) : undefined;
      if (ms === undefined || ms <= 0 || ms > MAX_WAIT_SECONDS * 1000) {
        violations.push({
          field: `${at}.duration`,
          description: `step "${id}": must be a positive duration such as "3600s", at most ${MAX_WAIT_SECONDS}s`,
        });
      }
      return { duration };
    }
    case 'createEntitlementOwner':
    case 'deleteEntitlementOwner': {
      const result: Record<string, string> = {};
      for (const name of OWNERSHIP_FIELDS) result[name] = checkCel(body[name], `${at}.${name}`, id, violations);
      return result;
    }
    case 'callWebhook':
      return validateCallWebhook(body, at, id, violations);
    case 'fail':
      unknownFields(body, ['message'], at, id, violations);
      return { message: checkCel(body.message, `${at}.message`, id, violations) };
  }
}

function unknownFields(body: Record<string, unknown>, known: string[], at: string, id: string, violations: FieldViolation[]): void {
  for (const key of Object.keys(body)) {
    if (!known.includes(key)) violations.push({ field: `${at}.${key}`, description: `step "${id}": unknown field; expected ${known.join(', ')}` });
  }
}

/** A callWebhook body field name: 1 to 128 characters, no control characters (U+0000 to U+001F). */
function isBodyFieldName(name: string): boolean {
  if (name.length < 1 || name.length > 128) return false;
  for (let i = 0; i < name.length; i++) if (name.charCodeAt(i) < 0x20) return false;
  return true;
}

/** `{url, body: {field: CEL} | CEL, headers?: {name: CEL}, timeoutMs?}`. */
function validateCallWebhook(body: Record<string, unknown>, at: string, id: string, violations: FieldViolation[]): Record<string, unknown> {
  unknownFields(body, ['url', 'body', 'headers', 'timeoutMs'], at, id, violations);
  const result: Record<string, unknown> = { url: checkCel(body.url, `${at}.url`, id, violations) };
  const payload = body.body;
  if (typeof payload === 'string') {
    result.body = checkCel(payload, `${at}.body`, id, violations);
  } else if (isObject(payload)) {
    const entries = Object.entries(payload);
    if (entries.length > MAX_WEBHOOK_BODY_FIELDS) {
      violations.push({ field: `${at}.body`, description: `step "${id}": at most ${MAX_WEBHOOK_BODY_FIELDS} fields` });
    }
    const fields: Record<string, string> = {};
    for (const [name, source] of entries) {
      if (!isBodyFieldName(name)) {
        violations.push({ field: `${at}.body.${name}`, description: `step "${id}": field names are 1 to 128 characters without control characters` });
        continue;
      }
      fields[name] = checkCel(source, `${at}.body.${name}`, id, violations);
    }
    result.body = fields;
  } else {
    violations.push({
      field: `${at}.body`,
      description: `step "${id}": must be a map of field name → CEL expression, or one CEL expression giving a map`,
    });
  }
  if (body.headers !== undefined && body.headers !== null) {
    if (!isObject(body.headers)) {
      violations.push({ field: `${at}.headers`, description: `step "${id}": must be a map of header name → CEL expression` });
    } else {
      const entries = Object.entries(body.headers);
      if (entries.length > MAX_WEBHOOK_HEADERS) {
        violations.push({ field: `${at}.headers`, description: `step "${id}": at most ${MAX_WEBHOOK_HEADERS} headers` });
      }
      const headers: Record<string, string> = {};
      const seen = new Set<string>();
      for (const [name, source] of entries) {
        const lower = name.toLowerCase();
        if (!HEADER_NAME.test(name)) {
          violations.push({ field: `${at}.headers.${name}`, description: `step "${id}": not a valid header name` });
        } else if (CALL_WEBHOOK_RESERVED_HEADERS.includes(lower) || lower.startsWith('proxy-')) {
          violations.push({ field: `${at}.headers.${name}`, description: `step "${id}": the service sets this header itself` });
        } else if (seen.has(lower)) {
          violations.push({ field: `${at}.headers.${name}`, description: `step "${id}": header names are case-insensitive; this one is given twice` });
        } else {
          headers[name] = checkCel(source, `${at}.headers.${name}`, id, violations);
        }
        seen.add(lower);
      }
      result.headers = headers;
    }
  }
  if (body.timeoutMs !== undefined && body.timeoutMs !== null) {
    const timeoutMs = body.timeoutMs;
    if (typeof timeoutMs !== 'number' || !Number.isInteger(timeoutMs) || timeoutMs < 1 || timeoutMs > CALL_WEBHOOK_MAX_TIMEOUT_MS) {
      violations.push({ field: `${at}.timeoutMs`, description: `step "${id}": must be an integer from 1 to ${CALL_WEBHOOK_MAX_TIMEOUT_MS}` });
    } else {
      result.timeoutMs = timeoutMs;
    }
  }
  return result;
}

/** `{maximumAttempts 1..20, initialInterval, maximumInterval (durations, ≤ 1 h), backoffCoefficient 1..10}`, all optional. */
function validateRetry(value: unknown, at: string, id: string, violations: FieldViolation[]): StepRetryPolicy {
  if (!isObject(value)) {
    violations.push({ field: at, description: `step "${id}": must be an object` });
    return {};
  }
  unknownFields(value, ['maximumAttempts', 'initialInterval', 'maximumInterval', 'backoffCoefficient'], at, id, violations);
  const retry: StepRetryPolicy = {};
  const [minAttempts, maxAttempts] = RETRY_LIMITS.maximumAttempts;
  const attempts = value.maximumAttempts;
  if (attempts !== undefined && attempts !== null) {
    if (typeof attempts !== 'number' || !Number.isInteger(attempts) || attempts < minAttempts || attempts > maxAttempts) {
      violations.push({ field: `${at}.maximumAttempts`, description: `step "${id}": must be an integer from ${minAttempts} to ${maxAttempts}` });
    } else {
      retry.maximumAttempts = attempts;
    }
  }
  const [minCoefficient, maxCoefficient] = RETRY_LIMITS.backoffCoefficient;
  const coefficient = value.backoffCoefficient;
  if (coefficient !== undefined && coefficient !== null) {
    if (typeof coefficient !== 'number' || !Number.isFinite(coefficient) || coefficient < minCoefficient || coefficient > maxCoefficient) {
      violations.push({ field: `${at}.backoffCoefficient`, description: `step "${id}": must be a number from ${minCoefficient} to ${maxCoefficient}` });
    } else {
      retry.backoffCoefficient = coefficient;
    }
  }
  const intervals: Record<'initialInterval' | 'maximumInterval', number | undefined> = { initialInterval: undefined, maximumInterval: undefined };
  for (const name of ['initialInterval', 'maximumInterval'] as const) {
    const text = value[name];
    if (text === undefined || text === null) continue;
    const ms = typeof text === 'string' ? parseDuration(text) : undefined;
    if (ms === undefined || ms <= 0 || ms > RETRY_LIMITS.maxIntervalSeconds * 1000) {
      violations.push({
        field: `${at}.${name}`,
        description: `step "${id}": must be a positive duration such as "1s" or "0.5s", at most ${RETRY_LIMITS.maxIntervalSeconds}s`,
      });
    } else {
      retry[name] = text as string;
      intervals[name] = ms;
    }
  }
  const initial = intervals.initialInterval ?? parseDuration(RETRY_DEFAULTS.initialInterval) ?? 0;
  if (intervals.maximumInterval !== undefined && intervals.maximumInterval < initial) {
    violations.push({ field: `${at}.maximumInterval`, description: `step "${id}": must not be shorter than initialInterval (${retry.initialInterval ?? RETRY_DEFAULTS.initialInterval})` });
  }
  return retry;
}
