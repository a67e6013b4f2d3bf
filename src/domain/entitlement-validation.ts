/**
 * Validation of AppEntitlement writes: nesting bounds first (so that no recursive check can run
 * away), then the zod schema (types, annotations, durations, exactly-one members), then defaults.
 * Also the update mask of `POST /apps/{app_id}/entitlements/{id}`.
 */
import { MAX_JSON_DEPTH } from '../json';
import { MAX_MULTI_STEP_DEPTH } from './entitlement-rules';
import { READ_ONLY_FIELDS, WRITABLE_FIELDS, withDefaults, type EntitlementFields, type WritableField } from './entitlement-record';
import { AppEntitlementInput } from './schemas';
import { fieldPath, violationsOf } from './validation';
import { type FieldViolation, invalidArgument } from '../errors';
import { isObject } from '../json';

export type WriteValidation = { ok: true; fields: EntitlementFields } | { ok: false; violations: FieldViolation[] };

/** Validates the writable fields of an AppEntitlement; `prefix` is the path of the object in the body. */
export function validateEntitlementWrite(input: unknown, prefix = ''): WriteValidation {
  const bound = nestingViolation(input, prefix);
  if (bound) return { ok: false, violations: [bound] };
  const result = AppEntitlementInput.safeParse(input);
  if (!result.success) return { ok: false, violations: violationsOf(result.error.issues, prefix) };
  return { ok: true, fields: withDefaults(result.data) };
}

/** Like `validateEntitlementWrite`, throwing a 400 naming every offending field. */
export function parseEntitlementWrite(input: unknown, prefix = ''): EntitlementFields {
  const result = validateEntitlementWrite(input, prefix);
  if (!result.ok) throw invalidArgument(result.violations);
  return result.fields;
}

function join(prefix: string, field: string): string {
  return prefix ? `${prefix}.${field}` : field;
}

function nestingViolation(input: unknown, prefix: string): FieldViolation | undefined {
  const deep = jsonDepthViolation(input, prefix);
  if (deep || !isObject(input)) return deep;
  for (const field of ['provisionerPolicy', 'deprovisionerPolicy']) {
    const violation = multiStepViolation(input[field], join(prefix, field), 1);
    if (violation) return violation;
  }
  return undefined;
}

/** First `multiStep` nested more than MAX_MULTI_STEP_DEPTH levels deep; stops descending there. */
function multiStepViolation(policy: unknown, path: string, depth: number): FieldViolation | undefined {
  if (!isObject(policy) || !isObject(policy.multiStep)) return undefined;
  const field = `${path}.multiStep`;
  if (depth > MAX_MULTI_STEP_DEPTH) {
    return { field, description: `multiStep may nest at most ${MAX_MULTI_STEP_DEPTH} levels` };
  }
  const steps = policy.multiStep.provisionSteps;
  if (!Array.isArray(steps)) return undefined;
  for (const [index, step] of steps.entries()) {
    const violation = multiStepViolation(step, `${field}.provisionSteps[${index}]`, depth + 1);
    if (violation) return violation;
  }
  return undefined;
}

/** First value nested deeper than MAX_JSON_DEPTH, found without recursion. */
export function jsonDepthViolation(input: unknown, prefix = ''): FieldViolation | undefined {
  const stack: Array<{ value: unknown; path: PropertyKey[] }> = [{ value: input, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) {
      return { field: fieldPath(path, prefix), description: `nested deeper than ${MAX_JSON_DEPTH} levels` };
    }
    const children: Array<[PropertyKey, unknown]> = Array.isArray(value) ? value.map((child, i) => [i, child]) : Object.entries(value);
    for (const [key, child] of children) stack.push({ value: child, path: [...path, key] });
  }
  return undefined;
}

const WRITABLE = new Set<string>(WRITABLE_FIELDS);
const READ_ONLY = new Set<string>(READ_ONLY_FIELDS);

/**
 * The writable fields an update touches. Absent, empty or `*` means all writable fields;
 * read-only fields are ignored (as everywhere on writes); any other name is a 400.
 */
export function parseUpdateMask(mask: unknown): WritableField[] {
  if (mask === undefined || mask === null) return [...WRITABLE_FIELDS];
  if (typeof mask !== 'string') {
    throw invalidArgument({ field: 'updateMask', description: 'must be a comma-separated string of field names' });
  }
  const paths = mask
    .split(',')
    .map((path) => path.trim())
    .filter((path) => path !== '');
  if (paths.length === 0 || paths.includes('*')) return [...WRITABLE_FIELDS];
  const unknown = paths.filter((path) => !WRITABLE.has(path) && !READ_ONLY.has(path));
  if (unknown.length > 0) {
    throw invalidArgument({ field: 'updateMask', description: `unknown field path(s): ${unknown.join(', ')}` });
  }
  return paths.filter((path): path is WritableField => WRITABLE.has(path));
}
