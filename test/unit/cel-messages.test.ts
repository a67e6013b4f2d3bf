/**
 * What an evaluation error says (src/cel/index.ts): the position of the failing node, the
 * expression quoted (cut at 200 characters), the field of a batch that failed, and a secret that
 * is not available named without its value. Found as mutants StrykerJS left alive (docs/testing.md#mutation-testing).
 */
import { evaluate, evaluateAll, evaluateSecretExpression } from '../../src/cel';
import { CelEvaluationError } from '../../src/errors';

const ctx = { trigger: { a: 1 }, steps: {} };

function failure(fn: () => unknown): { code: string; message: string; field: string | undefined } {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof CelEvaluationError)) throw err;
    return { code: err.code, message: err.message, field: err.field };
  }
  throw new Error('expected a failure');
}

describe('evaluation errors', () => {
  it('name the position of the failing node and quote the expression', () => {
    expect(failure(() => evaluate("'x'\n + ctx.trigger.missing", ctx))).toEqual({
      code: 'ERR_CEL_EVALUATION',
      message: `field not found: missing at line 2, column 15 in ${JSON.stringify("'x'\n + ctx.trigger.missing")}`,
      field: 'value',
    });
  });

  it('quote at most 200 characters of a long expression', () => {
    const source = `ctx.trigger.missing + '${'y'.repeat(300)}'`;
    const { message } = failure(() => evaluate(source, ctx));
    expect(message).toBe(
      `field not found: missing at line 1, column 12 in ${JSON.stringify(`${source.slice(0, 200)}…`)}`,
    );
    const exactly = `ctx.trigger.missing + '${'y'.repeat(200 - 24)}'`;
    expect(exactly).toHaveLength(200);
    expect(failure(() => evaluate(exactly, ctx)).message).toBe(
      `field not found: missing at line 1, column 12 in ${JSON.stringify(exactly)}`,
    );
  });

  it('name the field of a batch whose expression did not compile', () => {
    expect(failure(() => evaluateAll({ a: 'ctx.trigger.a', b: 'ctx.trigger.(' }, ctx))).toEqual({
      code: 'ERR_CEL_SYNTAX',
      message: 'syntax error at line 1, column 12: found . but expecting end of input',
      field: 'b',
    });
    expect(failure(() => evaluateAll({ a: 'nope', b: 'ctx.trigger.a' }, ctx))).toMatchObject({
      code: 'ERR_CEL_UNKNOWN_NAME',
      field: 'a',
    });
  });
});

describe('evaluateSecretExpression', () => {
  it('binds every secret the expression reads, and names one that is missing without any value', () => {
    expect(evaluateSecretExpression("secrets.a + ':' + secrets.b", { a: 'x', b: 'y' })).toBe('x:y');
    const missing = failure(() => evaluateSecretExpression('secrets.a + secrets.b', { a: 'value-of-a' }));
    expect(missing).toEqual({ code: 'ERR_CEL_EVALUATION', message: 'secret "b" is not available', field: undefined });
    // a name that Object.prototype holds is not a secret
    expect(failure(() => evaluateSecretExpression('secrets.toString', {})).message).toBe(
      'secret "toString" is not available',
    );
  });
});
