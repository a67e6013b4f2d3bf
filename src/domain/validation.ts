/**
 * From zod issues to the API's field violations: a field path in the JSON shape the caller sent
 * (`provisionerPolicy.multiStep.provisionSteps[1].manual.assignee`, `annotations["bad key"]`).
 */
import type { z } from 'zod';
import { type FieldViolation, invalidArgument } from '../errors';

/** Fields whose keys are data, not names: their entries are written `field["key"]`. */
const MAP_FIELDS = new Set(['annotations', 'sourceConnectorIds', 'config']);
const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;
/** Longer keys are cut in field paths, so that an error never echoes a large part of the body. */
const MAX_KEY_SHOWN = 256;

/** `prefix` + path, with array indexes as `[n]` and map keys or odd names as `["key"]`. */
export function fieldPath(path: readonly PropertyKey[], prefix = ''): string {
  let out = prefix;
  let previous: PropertyKey | undefined;
  for (const segment of path) {
    if (typeof segment === 'number') {
      out += `[${segment}]`;
    } else {
      const full = String(segment);
      const name = full.length > MAX_KEY_SHOWN ? `${full.slice(0, MAX_KEY_SHOWN)}…` : full;
      const isMapKey = typeof previous === 'string' && MAP_FIELDS.has(previous);
      if (isMapKey || !IDENTIFIER.test(name)) out += `[${JSON.stringify(name)}]`;
      else out += out === '' ? name : `.${name}`;
    }
    previous = segment;
  }
  return out === '' ? '(body)' : out;
}

/** At most this many violations are reported for one request. */
export const MAX_VIOLATIONS = 20;

export function violationsOf(issues: readonly z.core.$ZodIssue[], prefix = ''): FieldViolation[] {
  return issues.slice(0, MAX_VIOLATIONS).map((issue) => ({
    field: fieldPath(issue.path, prefix),
    // A bad record key carries the key's own issues; their message says what is wrong.
    description: issue.code === 'invalid_key' ? (issue.issues[0]?.message ?? issue.message) : issue.message,
  }));
}

/** Parses `input` or throws a 400 naming every offending field. */
export function parseOrThrow<S extends z.ZodType>(schema: S, input: unknown, prefix = ''): z.output<S> {
  const result = schema.safeParse(input);
  if (!result.success) throw invalidArgument(violationsOf(result.error.issues, prefix));
  return result.data;
}
