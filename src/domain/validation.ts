/**
 * From zod issues to the API's field violations: a field path in the JSON shape the caller sent
 * (`provisionerPolicy.multiStep.provisionSteps[1].manual.assignee`, `annotations["bad key"]`).
 */
import { z } from 'zod';
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

/**
 * Parameters of a check that runs only while the value has no issue yet: of a chain of rules, the
 * first one broken is the one reported. (Zod's `abort: true` would also stop the checks of every
 * enclosing schema, `oneViolation` and `closedObject` among them.)
 */
export const whileValid = { when: (payload: z.core.ParsePayload) => payload.issues.length === 0 };

/** At most this many violations are reported for one request. */
export const MAX_VIOLATIONS = 20;

export function violationsOf(issues: readonly z.core.$ZodIssue[], prefix = ''): FieldViolation[] {
  return issues.slice(0, MAX_VIOLATIONS).map((issue) => ({
    field: namedField(issue) ?? fieldPath(issue.path, prefix),
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

/**
 * `schema`, whose issues (a wrong type, a bad item, a length) are reported as one violation of the
 * field itself with `message`: the rule as the API states it, not the first item that broke it.
 */
export function oneViolation<S extends z.ZodType>(schema: S, message: string): S {
  return schema.check(
    z.superRefine(
      (_value, ctx) => {
        if (ctx.issues.length === 0) return;
        ctx.issues.length = 0;
        ctx.addIssue({ code: 'custom', message, input: ctx.value });
      },
      { when: () => true },
    ),
  );
}

/** An object that refuses fields outside `shape`: each unknown one is a violation of its own name. */
export function closedObject<Shape extends z.ZodRawShape>(shape: Shape) {
  const rule = `is not a field of this request (only ${Object.keys(shape).join(', ')})`;
  return z.strictObject(shape).check(
    z.superRefine(
      (_value, ctx) => {
        const unknown = ctx.issues.filter(
          (issue) => issue.code === 'unrecognized_keys' && (issue.path ?? []).length === 0,
        );
        if (unknown.length === 0) return;
        ctx.issues.splice(0, ctx.issues.length, ...ctx.issues.filter((issue) => !unknown.includes(issue)));
        for (const key of unknown.flatMap((issue) => (issue.code === 'unrecognized_keys' ? issue.keys : []))) {
          ctx.addIssue({ code: 'custom', message: rule, input: ctx.value, path: [key] });
        }
      },
      { when: () => true },
    ),
  );
}

/**
 * `schema` as the document shows it, ruled by `problemOf`: a value is refused with the problem it
 * names (and accepted when it names none), whatever the document's own constraints said of it.
 */
export function ruledBy<S extends z.ZodType>(schema: S, problemOf: (value: unknown) => string | undefined): S {
  return schema.check(
    z.superRefine(
      (_value, ctx) => {
        ctx.issues.length = 0;
        const problem = problemOf(ctx.value);
        if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem, input: ctx.value });
      },
      { when: () => true },
    ),
  );
}

/** The field a rule of `ruledByViolations` named, as the rule wrote it (e.g. `steps[0].callWebhook.headers.X-Tenant`). */
function namedField(issue: z.core.$ZodIssue): string | undefined {
  const field: unknown = issue.code === 'custom' ? issue.params?.[RULE_FIELD] : undefined;
  return typeof field === 'string' ? field : undefined;
}
const RULE_FIELD = 'field';

/**
 * `schema` as the document shows it, with its own issues set aside so that a rule (`ruledByViolations`)
 * decides the value: the rule reads the value as sent, with the fields a strict object refused put
 * back (zod leaves them out of its output, and the rule names each unknown field itself). Applied
 * before `.meta({ id })`, which a check would drop.
 */
export function setAside<S extends z.ZodType>(schema: S): S {
  return schema.check(
    z.superRefine(
      (_value, ctx) => {
        for (const issue of ctx.issues)
          if (issue.code === 'unrecognized_keys') putBack(ctx.value, issue.path ?? [], issue.keys, issue.input);
        if (ctx.value !== null && typeof ctx.value === 'object')
          setAsideIssues.set(
            ctx.value,
            ctx.issues.filter((issue) => issue.code !== 'unrecognized_keys'),
          );
        ctx.issues.length = 0;
      },
      { when: () => true },
    ),
  );
}

/**
 * The shape's own issues `setAside` took off a value, by value: when the rule finds nothing, these
 * still refuse it, so a body the document forbids is refused even where the rule is silent.
 */
const setAsideIssues = new WeakMap<object, z.core.$ZodRawIssue[]>();

/** Copies `keys` of `sent` (the object as sent) into the object at `path` of `value`. */
function putBack(value: unknown, path: readonly PropertyKey[], keys: readonly string[], sent: unknown): void {
  let target = value;
  for (const segment of path)
    target =
      target !== null && typeof target === 'object' ? (target as Record<PropertyKey, unknown>)[segment] : undefined;
  if (target === null || typeof target !== 'object' || sent === null || typeof sent !== 'object') return;
  // Defined, not assigned: a field named `__proto__` stays a field (JSON.parse makes it one).
  for (const key of keys)
    Object.defineProperty(target, key, {
      value: (sent as Record<string, unknown>)[key],
      enumerable: true,
      writable: true,
      configurable: true,
    });
}

/**
 * `schema` (made with `setAside`) ruled by `rule`, which reports every violation it finds, each
 * by its field path and message, and answers the parsed value: all of them in one 400, as the
 * rules of a whole body (an automation's steps, with every expression compiled) name them.
 */
export function ruledByViolations<S extends z.ZodType, T>(
  schema: S,
  rule: (value: unknown, violations: FieldViolation[]) => T,
) {
  return schema.transform((value, ctx): T => {
    const violations: FieldViolation[] = [];
    const parsed = rule(value, violations);
    for (const { field, description } of violations)
      ctx.issues.push({
        code: 'custom',
        message: description,
        input: value,
        path: [],
        params: { [RULE_FIELD]: field },
      });
    if (violations.length === 0 && value !== null && typeof value === 'object')
      ctx.issues.push(...(setAsideIssues.get(value) ?? []));
    return parsed;
  });
}
