/**
 * Validation of AppEntitlement writes: the JSON depth bound first (so that no recursive check can
 * run away), then the zod schema (types, annotations, durations, exactly-one members, multiStep
 * nesting), then defaults. Also the update mask of `POST /apps/{app_id}/entitlements/{id}`.
 */
import { MAX_JSON_DEPTH } from '../json';
import { withDefaults, type EntitlementFields } from './entitlement-record';
import { AppEntitlementInput, UpdateMask, type WritableField } from './schemas';
import { fieldPath, parseOrThrow, violationsOf } from './validation';
import { type FieldViolation, invalidArgument } from '../errors';

export type WriteValidation = { ok: true; fields: EntitlementFields } | { ok: false; violations: FieldViolation[] };

/** Validates the writable fields of an AppEntitlement; `prefix` is the path of the object in the body. */
export function validateEntitlementWrite(input: unknown, prefix = ''): WriteValidation {
  const bound = jsonDepthViolation(input, prefix);
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

/** First value nested deeper than MAX_JSON_DEPTH, found without recursion. */
export function jsonDepthViolation(input: unknown, prefix = ''): FieldViolation | undefined {
  const stack: Array<{ value: unknown; path: PropertyKey[] }> = [{ value: input, path: [] }];
  while (stack.length > 0) {
    const { value, path } = stack.pop()!;
    if (value === null || typeof value !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) {
      return { field: fieldPath(path, prefix), description: `nested deeper than ${MAX_JSON_DEPTH} levels` };
    }
    const children: Array<[PropertyKey, unknown]> = Array.isArray(value)
      ? value.map((child, i) => [i, child])
      : Object.entries(value);
    for (const [key, child] of children) stack.push({ value: child, path: [...path, key] });
  }
  return undefined;
}

/** The writable fields an update mask names (UpdateMask); 400 for a mask that is not one. */
export function parseUpdateMask(mask: unknown): WritableField[] {
  return parseOrThrow(UpdateMask, mask, 'updateMask');
}
