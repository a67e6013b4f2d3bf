/**
 * Between JSON and CEL values. JSON objects become `Map`s once per evaluation batch (the CEL
 * runtime then reads them without converting again); JSON numbers stay JS numbers, i.e. CEL
 * `double`, as in cel-go with JSON payloads. Results come back as plain JSON-compatible values.
 */
import { isCelList, isCelMap, isCelType, isCelUint, type CelInput } from '@bufbuild/cel';
import { MAX_INPUT_DEPTH, MAX_RESULT_SIZE } from './limits';
import { CelEvaluationError } from '../errors';

/** Converts a JSON-like value to CEL input: objects → Map, arrays → arrays, numbers → double. */
export function toCelInput(value: unknown, depth = 0): CelInput {
  if (depth > MAX_INPUT_DEPTH) {
    throw new CelEvaluationError('ERR_CEL_LIMIT', `input is nested too deeply (at most ${MAX_INPUT_DEPTH} levels)`);
  }
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
    case 'bigint':
      return value;
    case 'undefined':
      return null;
    case 'object': {
      if (value === null) return null;
      if (Array.isArray(value)) return value.map((item) => toCelInput(item, depth + 1));
      if (value instanceof Date) return value.toISOString();
      if (value instanceof Uint8Array) return value;
      // A Map has no prototype chain to poison: a "__proto__" key is an ordinary key here.
      const map = new Map<string, CelInput>();
      for (const [key, item] of Object.entries(value)) {
        if (item !== undefined) map.set(key, toCelInput(item, depth + 1));
      }
      return map;
    }
    default:
      return null;
  }
}

/** Converts a CEL result to a JSON-compatible value, refusing results larger than MAX_RESULT_SIZE. */
export function fromCelValue(value: unknown): unknown {
  const size = { used: 0 };
  return convert(value, size, 0);
}

function charge(size: { used: number }, amount: number): void {
  size.used += amount;
  if (size.used > MAX_RESULT_SIZE) {
    throw new CelEvaluationError('ERR_CEL_LIMIT', `result is too large (more than ${MAX_RESULT_SIZE} bytes of JSON)`);
  }
}

function convert(value: unknown, size: { used: number }, depth: number): unknown {
  charge(size, 1);
  if (depth > MAX_INPUT_DEPTH) {
    throw new CelEvaluationError('ERR_CEL_LIMIT', `result is nested too deeply (at most ${MAX_INPUT_DEPTH} levels)`);
  }
  switch (typeof value) {
    case 'string':
      charge(size, value.length);
      return value;
    case 'boolean':
      return value;
    case 'number':
      if (Number.isFinite(value)) return value;
      return Number.isNaN(value) ? 'NaN' : value > 0 ? 'Infinity' : '-Infinity';
    case 'bigint':
      return integer(value);
    case 'object':
      break;
    default:
      throw new CelEvaluationError('ERR_CEL_RESULT', `result of type ${typeof value} cannot be represented as JSON`);
  }
  if (value === null) return null;
  if (isCelUint(value)) return integer(value.value);
  if (isCelList(value)) {
    const out: unknown[] = [];
    for (const item of value) out.push(convert(item, size, depth + 1));
    return out;
  }
  if (isCelMap(value)) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of value) {
      const name = isCelUint(key) ? key.value.toString() : String(key);
      charge(size, name.length);
      const converted = convert(item, size, depth + 1);
      // Defined, not assigned: `out["__proto__"] = x` would swap the object's prototype.
      if (name === '__proto__')
        Object.defineProperty(out, name, { value: converted, enumerable: true, writable: true, configurable: true });
      else out[name] = converted;
    }
    return out;
  }
  if (value instanceof Uint8Array) {
    charge(size, Math.ceil(value.length / 3) * 4);
    return Buffer.from(value).toString('base64');
  }
  if (isCelType(value)) return value.name;
  const message = wellKnownMessage(value);
  if (message) return message;
  throw new CelEvaluationError('ERR_CEL_RESULT', 'result cannot be represented as JSON');
}

/** An int or uint: a JSON number when exactly representable, else its decimal string. */
function integer(value: bigint): number | string {
  return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : value.toString();
}

/** Timestamps become RFC 3339 strings and durations protobuf-JSON strings (`"1.5s"`). */
function wellKnownMessage(value: object): string | undefined {
  const reflect = value as { desc?: { typeName?: unknown }; message?: { seconds?: unknown; nanos?: unknown } };
  const typeName = reflect.desc?.typeName;
  const seconds = reflect.message?.seconds;
  const nanos = reflect.message?.nanos;
  if (typeof seconds !== 'bigint' || typeof nanos !== 'number') return undefined;
  if (typeName === 'google.protobuf.Timestamp') {
    const whole = new Date(Number(seconds) * 1000).toISOString().replace(/\.\d{3}Z$/, '');
    return `${whole}${fraction(nanos)}Z`;
  }
  if (typeName === 'google.protobuf.Duration') {
    const negative = seconds < 0n || nanos < 0;
    const abs = seconds < 0n ? -seconds : seconds;
    return `${negative ? '-' : ''}${abs.toString()}${fraction(Math.abs(nanos))}s`;
  }
  return undefined;
}

/** Nanoseconds as protobuf JSON writes them: none, 3, 6 or 9 digits. */
function fraction(nanos: number): string {
  if (nanos === 0) return '';
  const digits = nanos.toString().padStart(9, '0');
  if (digits.endsWith('000000')) return `.${digits.slice(0, 3)}`;
  if (digits.endsWith('000')) return `.${digits.slice(0, 6)}`;
  return `.${digits}`;
}
