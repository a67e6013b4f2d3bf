/**
 * Validation of a step's body on save, by its kind's schema alone: zod parses the body (the
 * schema's issues become field violations), then one walker finds the fields the schema marks as
 * CEL (`celFields`, ./kind.ts) and compiles each. A field marked `ctx-or-secrets` that reads
 * `secrets` is compiled in the closed form of the outbound-secrets grammar (src/cel/secret-form.ts);
 * any other field that reads `secrets` is refused by the CEL compiler itself. The compilers are
 * given by the caller so that this folder stays free of the CEL runtime (the workflow bundle
 * imports it). Deterministic code only.
 */
import type { z } from 'zod';
import { celFields, type CelField } from './kind';
import { readsSecrets } from './secret-references';

/** Compiles a source; answers a problem, or undefined when it compiles. */
export type CelCompiler = (source: string) => string | undefined;

export interface BodyCheck {
  /** Field path of the body, e.g. `steps[2].callWebhook`. */
  at: string;
  violation(field: string, description: string): void;
  cel: CelCompiler;
  secretCel: CelCompiler;
}

/** Parses `body` with `schema`, compiles its CEL fields; answers the body normalised (null fields dropped). */
export function validateBody<Schema extends z.ZodType>(
  schema: Schema,
  body: unknown,
  check: BodyCheck,
): z.output<Schema> | undefined {
  const parsed = schema.safeParse(body, { error: defaultMessage });
  if (!parsed.success) {
    for (const issue of parsed.error.issues) reportIssue(issue, [], schema, check);
    return undefined;
  }
  const value = withoutNulls(schema, parsed.data);
  for (const field of celFieldsOf(schema, value, [])) {
    const path = joinPath(check.at, field.path);
    const problem =
      field.mark.cel === 'ctx-or-secrets' && readsSecrets(field.source)
        ? check.secretCel(field.source)
        : check.cel(field.source);
    if (problem !== undefined) check.violation(path, problem);
  }
  return value as z.output<Schema>;
}

// ---------------------------------------------------------------- the walker

type Def = {
  type: string;
  innerType?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  valueType?: z.ZodType;
  options?: z.ZodType[];
  element?: z.ZodType;
  in?: z.ZodType;
};
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Optional, nullable, default and pipe wrappers removed. */
function unwrap(schema: z.ZodType): z.ZodType {
  let current = schema;
  for (;;) {
    if (celFields.get(current)) return current;
    const def = defOf(current);
    if (
      def.innerType &&
      ['optional', 'nullable', 'default', 'prefault', 'nonoptional', 'readonly', 'catch'].includes(def.type)
    )
      current = def.innerType;
    else if (def.type === 'pipe' && def.in) current = def.in;
    else return current;
  }
}

/** Every string the schema marks as CEL in `value` (a value the schema accepted), with its path. */
function celFieldsOf(
  schema: z.ZodType,
  value: unknown,
  path: string[],
): Array<{ path: string[]; source: string; mark: CelField }> {
  const mark = celFields.get(schema);
  if (mark && typeof value === 'string') return [{ path, source: value, mark }];
  const inner = unwrap(schema);
  if (inner !== schema) return celFieldsOf(inner, value, path);
  const def = defOf(schema);
  if (value === null || value === undefined) return [];
  if (def.type === 'object' && def.shape && typeof value === 'object') {
    return Object.entries(def.shape).flatMap(([key, child]) =>
      celFieldsOf(child, (value as Record<string, unknown>)[key], [...path, key]),
    );
  }
  if (def.type === 'record' && def.valueType && typeof value === 'object') {
    return Object.entries(value as Record<string, unknown>).flatMap(([key, child]) =>
      celFieldsOf(def.valueType!, child, [...path, key]),
    );
  }
  if (def.type === 'array' && def.element && Array.isArray(value)) {
    return value.flatMap((child, index) => celFieldsOf(def.element!, child, [...path, String(index)]));
  }
  if (def.type === 'union' && def.options) {
    const option = def.options.find((candidate) => candidate.safeParse(value).success);
    return option ? celFieldsOf(option, value, path) : [];
  }
  return [];
}

/** The value with every null or absent object field dropped (the stored step holds what is set). */
function withoutNulls(schema: z.ZodType, value: unknown): unknown {
  const inner = unwrap(schema);
  const def = defOf(inner);
  if (def.type === 'object' && def.shape && value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
      if (child === null || child === undefined) continue;
      out[key] = def.shape[key] ? withoutNulls(def.shape[key], child) : child;
    }
    return out;
  }
  return value;
}

// ---------------------------------------------------------------- issues → violations

/** Marks the default message of an unknown key, so that it is reported per key. */
const UNKNOWN_FIELD = 'unknown field';

/** The messages of issues whose schema says nothing itself. */
function defaultMessage(issue: z.core.$ZodRawIssue): string {
  switch (issue.code) {
    case 'invalid_type':
      if (issue.input === undefined) return 'is required';
      return issue.expected === 'object'
        ? 'must be an object'
        : issue.expected === 'array'
          ? 'must be an array'
          : `must be ${article(String(issue.expected))}`;
    case 'invalid_value':
      return `must be one of ${issue.values.map((value) => String(value)).join(', ')}`;
    case 'unrecognized_keys':
      return UNKNOWN_FIELD;
    case 'too_big':
      return `must be at most ${String(issue.maximum)}`;
    case 'too_small':
      return `must be at least ${String(issue.minimum)}`;
    case 'invalid_format':
      return issue.format === 'regex' && 'pattern' in issue
        ? `must match ${String(issue.pattern)}`
        : `must be a valid ${issue.format}`;
    default:
      return 'is not valid';
  }
}

function article(type: string): string {
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

function joinPath(at: string, path: readonly PropertyKey[]): string {
  return [at, ...path.map(String)].join('.');
}

/** Records one violation per problem: unknown keys one by one, a union by the branch the value was meant for. */
function reportIssue(issue: z.core.$ZodIssue, prefix: PropertyKey[], schema: z.ZodType, check: BodyCheck): void {
  const path = [...prefix, ...issue.path];
  if (issue.code === 'unrecognized_keys' && issue.message === UNKNOWN_FIELD) {
    const known = knownKeys(schema, path);
    for (const key of issue.keys)
      check.violation(
        joinPath(check.at, [...path, key]),
        known.length > 0 ? `unknown field; expected ${known.join(', ')}` : 'unknown field',
      );
    return;
  }
  if (issue.code === 'invalid_key') {
    // A map's key: its own schema's message (e.g. "not a valid header name"), at the key.
    check.violation(joinPath(check.at, path), issue.issues[0]?.message ?? issue.message);
    return;
  }
  if (issue.code === 'invalid_union') {
    // The branches the value has the shape of (not refused at their root for its type).
    const meant = issue.errors.filter(
      (branch) => !branch.some((inner) => inner.code === 'invalid_type' && inner.path.length === 0),
    );
    if (meant.length === 1) {
      for (const inner of meant[0]!) reportIssue(inner, path, schema, check);
      return;
    }
  }
  check.violation(joinPath(check.at, path), issue.message);
}

/** The fields of the strict object at `path` in `schema` (for "unknown field; expected …"). */
function knownKeys(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let current: z.ZodType | undefined = unwrap(schema);
  for (const key of path) {
    const def: Def = defOf(current);
    if (def.type === 'object' && def.shape) current = def.shape[String(key)];
    else if (def.type === 'record') current = def.valueType;
    else current = undefined;
    if (!current) return [];
    current = unwrap(current);
  }
  const def = defOf(current);
  return def.type === 'object' && def.shape ? Object.keys(def.shape) : [];
}
