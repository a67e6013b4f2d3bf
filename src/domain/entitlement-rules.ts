/**
 * The AppEntitlement rules (docs/api.md#app-entitlements) as small pure functions, used by the zod schemas
 * (src/domain/schemas.ts): annotations limits, protobuf-JSON durations, and "exactly one member"
 * of the oneof-like objects (ProvisionPolicy, ConnectorProvision, ProvisionerAssignment).
 */
import type { z } from 'zod';
import { isObject } from '../json';

/** Annotations rule 2: key of 1..128 characters. */
export const ANNOTATION_KEY = /^[A-Za-z][A-Za-z0-9._/-]{0,127}$/;
/**
 * Annotations rule 3, "URL-safe ASCII": RFC 3986 unreserved characters plus the reserved
 * (gen-delims, sub-delims) and `%` characters, i.e. every character that may appear unescaped in
 * a URL. Spaces, quotes, `<>`, `\`, `^`, backtick, `{|}`, controls and non-ASCII are refused.
 */
export const ANNOTATION_VALUE = /^[A-Za-z0-9._~:/?#[\]@!$&'()*+,;=%-]*$/;
export const ANNOTATION_VALUE_MAX = 256;
export const ANNOTATIONS_MAX_ENTRIES = 16;
/** Annotations rule 4: `JSON.stringify(annotations)` in UTF-8 bytes. */
export const ANNOTATIONS_MAX_BYTES = 4096;
/** Annotations rule 5: the service's own key prefix. */
export const RESERVED_ANNOTATION_PREFIX = 'c1.';

/** Largest protobuf Duration: 10,000 years. */
export const DURATION_MAX_SECONDS = 315_576_000_000;
/** Protobuf-JSON duration: non-negative seconds with up to 9 fractional digits and an `s`. */
const DURATION = /^(\d{1,12})(?:\.(\d{1,9}))?s$/;

/** How deep `multiStep.provisionSteps` may nest inside one policy. */
export const MAX_MULTI_STEP_DEPTH = 8;

/** The path of the first `multiStep` nested deeper than MAX_MULTI_STEP_DEPTH in a write, if any. */
export function tooDeepMultiStep(input: unknown): Array<string | number> | undefined {
  if (!isObject(input)) return undefined;
  for (const field of ['provisionerPolicy', 'deprovisionerPolicy']) {
    const path = multiStepTooDeep(input[field], [field], 1);
    if (path) return path;
  }
  return undefined;
}

/** Stops descending at the first level too deep, so it never walks the whole of a deep body. */
function multiStepTooDeep(
  policy: unknown,
  path: Array<string | number>,
  depth: number,
): Array<string | number> | undefined {
  if (!isObject(policy) || !isObject(policy.multiStep)) return undefined;
  const here = [...path, 'multiStep'];
  if (depth > MAX_MULTI_STEP_DEPTH) return here;
  const steps = policy.multiStep.provisionSteps;
  if (!Array.isArray(steps)) return undefined;
  for (const [index, step] of steps.entries()) {
    const deeper = multiStepTooDeep(step, [...here, 'provisionSteps', index], depth + 1);
    if (deeper) return deeper;
  }
  return undefined;
}

export function isDuration(value: string): boolean {
  const match = DURATION.exec(value);
  if (!match) return false;
  const seconds = Number(match[1]);
  const fraction = Number(match[2] ?? '0');
  return seconds < DURATION_MAX_SECONDS || (seconds === DURATION_MAX_SECONDS && fraction === 0);
}

export function isReservedAnnotationKey(key: string): boolean {
  return key.startsWith(RESERVED_ANNOTATION_PREFIX);
}

/** Rules 1 and 4, over the whole map (keys and values are checked one by one by the schema). */
export function checkAnnotationLimits(annotations: Record<string, string>, ctx: z.RefinementCtx): void {
  const entries = Object.keys(annotations).length;
  if (entries > ANNOTATIONS_MAX_ENTRIES) {
    ctx.addIssue({ code: 'custom', message: `at most ${ANNOTATIONS_MAX_ENTRIES} entries (got ${entries})` });
  }
  const bytes = Buffer.byteLength(JSON.stringify(annotations), 'utf8');
  if (bytes > ANNOTATIONS_MAX_BYTES) {
    ctx.addIssue({
      code: 'custom',
      message: `serialized size must be at most ${ANNOTATIONS_MAX_BYTES} bytes (got ${bytes})`,
    });
  }
}

function setMembers(value: Record<string, unknown>, members: readonly string[]): string[] {
  return members.filter((member) => value[member] !== null && value[member] !== undefined);
}

/** Refinement: exactly one of `members` is set (present and not null). */
export function exactlyOne(members: readonly string[]) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const set = setMembers(value, members);
    if (set.length === 0) {
      ctx.addIssue({ code: 'custom', message: `exactly one of ${members.join(', ')} must be set` });
    } else if (set.length > 1) {
      ctx.addIssue({
        code: 'custom',
        message: `exactly one of ${members.join(', ')} must be set (got ${set.join(', ')})`,
      });
    }
  };
}

/** Refinement: at most one of `members` is set; the issue names the second one. */
export function atMostOne(members: readonly string[]) {
  return (value: Record<string, unknown>, ctx: z.RefinementCtx): void => {
    const set = setMembers(value, members);
    if (set.length > 1) {
      ctx.addIssue({ code: 'custom', path: [set[1]!], message: `only one of ${members.join(', ')} may be set` });
    }
  };
}
