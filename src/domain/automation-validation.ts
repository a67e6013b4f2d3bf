/**
 * Validation of automation writes: trigger (auth method, JWKS URL, CIDRs) and steps (through the
 * step registry, src/steps, with every expression compiled as CEL). Errors name the field path and,
 * for steps, the step id.
 */
import { checkExpression } from '../cel';
import { parseCidrList, validateJwksUrl } from '../webhooks';
import { validateSteps as validateRegisteredSteps, type StepDefinition } from '../steps';
import type { FieldViolation } from './errors';

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

/** Steps: the step registry checks each kind; every CEL expression is compiled here. */
export function validateSteps(value: unknown, violations: FieldViolation[]): StepDefinition[] {
  return validateRegisteredSteps(value, checkExpression, violations);
}
