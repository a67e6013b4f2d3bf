/**
 * Validation of automation writes: trigger (auth method, JWKS URL, CIDRs) and steps (ids, one kind
 * each, every expression compiled as CEL). Errors name the field path and, for steps, the step id.
 */
import { checkExpression } from '../cel';
import { parseCidrList, validateJwksUrl } from '../webhooks';
import { parseDuration } from '../../workflows/duration';
import { STEP_KINDS, type OwnershipStepFields, type StepDefinition, type StepKind } from '../../workflows/types';
import type { FieldViolation } from '../http/errors';

export const MAX_STEPS = 50;
export const MAX_VARIABLES_PER_STEP = 50;
/** Longest wait a step may ask for: one year. */
export const MAX_WAIT_SECONDS = 366 * 24 * 3600;
const STEP_ID = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;
const OWNERSHIP_FIELDS: (keyof OwnershipStepFields)[] = ['userId', 'roleSlug', 'appId', 'entitlementId'];

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
  }
}
