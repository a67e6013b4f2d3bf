import { celLimits, checkExpression, evaluate, evaluateAll, type CelContext } from '../../src/cel';
import { CelEvaluationError } from '../../src/errors';

const ctx: CelContext = {
  trigger: {
    kind: 'hire',
    service_account: 'svc-1',
    entitlement: 'ent-1',
    email: 'robot@corp.example',
    count: 3,
    ratio: 0.5,
    tags: ['a', 'contractor'],
    nested: { deep: { value: true } },
    'with-dash': 'dashed',
  },
  steps: { own: { userId: 'svc-1', createdAt: '2024-01-01T00:00:00.000Z' } },
};

function evalError(source: string, context: CelContext = ctx): CelEvaluationError {
  try {
    evaluateAll({ value: source }, context);
  } catch (err) {
    expect(err).toBeInstanceOf(CelEvaluationError);
    return err as CelEvaluationError;
  }
  throw new Error(`expected ${source} to fail`);
}

describe('evaluate', () => {
  it('reads trigger fields with both syntaxes', () => {
    expect(evaluate('ctx.trigger.service_account', ctx)).toBe('svc-1');
    expect(evaluate('ctx.trigger["entitlement"]', ctx)).toBe('ent-1');
    expect(evaluate("ctx.trigger['with-dash']", ctx)).toBe('dashed');
    expect(evaluate('ctx.trigger.nested.deep.value', ctx)).toBe(true);
  });

  it('reads outputs of earlier steps', () => {
    expect(evaluate('ctx.steps.own.userId', ctx)).toBe('svc-1');
    expect(evaluate('ctx.steps["own"].userId == ctx.trigger.service_account', ctx)).toBe(true);
  });

  it('supports string methods, macros and matches (RE2)', () => {
    expect(evaluate('ctx.trigger.email.endsWith("@corp.example")', ctx)).toBe(true);
    expect(evaluate('ctx.trigger.email.startsWith("robot") && ctx.trigger.email.contains("@")', ctx)).toBe(true);
    expect(evaluate('ctx.trigger.tags.exists(t, t == "contractor")', ctx)).toBe(true);
    expect(evaluate('ctx.trigger.tags.all(t, t.size() > 5)', ctx)).toBe(false);
    expect(evaluate('ctx.trigger.tags.map(t, t.upperAscii())', ctx)).toEqual(['A', 'CONTRACTOR']);
    expect(evaluate('ctx.trigger.tags.filter(t, t != "a")', ctx)).toEqual(['contractor']);
    expect(evaluate("ctx.trigger.email.matches('^[a-z]+@corp\\\\.example$')", ctx)).toBe(true);
    expect(evaluate("ctx.trigger.kind == 'hire' ? 'owner' : 'viewer'", ctx)).toBe('owner');
  });

  it('has() tests presence; a missing field is an evaluation error', () => {
    expect(evaluate('has(ctx.trigger.kind)', ctx)).toBe(true);
    expect(evaluate('has(ctx.trigger.missing)', ctx)).toBe(false);
    expect(evaluate('has(ctx.steps.later)', ctx)).toBe(false);
    const err = evalError('ctx.trigger.missing');
    expect(err.code).toBe('ERR_CEL_EVALUATION');
    expect(err.message).toContain('missing');
    expect(err.message).toContain('ctx.trigger.missing');
    expect(evalError('ctx.steps.later.userId').code).toBe('ERR_CEL_EVALUATION');
  });

  it('treats JSON numbers as doubles', () => {
    expect(evaluate('ctx.trigger.count', ctx)).toBe(3);
    expect(evaluate('ctx.trigger.count == 3', ctx)).toBe(true);
    expect(evaluate('ctx.trigger.count + 1.5', ctx)).toBe(4.5);
    expect(evaluate('ctx.trigger.ratio * 2.0', ctx)).toBe(1);
    expect(evaluate('type(ctx.trigger.count) == double', ctx)).toBe(true);
    // double + int has no overload in CEL
    expect(evalError('ctx.trigger.count + 1').message).toContain('no matching overload');
  });

  it('returns plain JSON values', () => {
    expect(evaluate('{"a": [1, 2u, 2.5, null, true], "big": 9223372036854775807}', ctx)).toEqual({
      a: [1, 2, 2.5, null, true],
      big: '9223372036854775807',
    });
    expect(evaluate('ctx.trigger.nested', ctx)).toEqual({ deep: { value: true } });
    expect(evaluate('timestamp("2024-05-01T10:00:00Z")', ctx)).toBe('2024-05-01T10:00:00Z');
    expect(evaluate('duration("90m")', ctx)).toBe('5400s');
    expect(evaluate('b"hi"', ctx)).toBe('aGk=');
  });

  it('evaluates a batch over one conversion and names the failing field', () => {
    expect(evaluateAll({ a: 'ctx.trigger.kind', b: 'ctx.steps.own.userId' }, ctx)).toEqual({ a: 'hire', b: 'svc-1' });
    try {
      evaluateAll({ a: 'ctx.trigger.kind', b: 'ctx.trigger.nope' }, ctx);
      throw new Error('expected a failure');
    } catch (err) {
      expect(err).toBeInstanceOf(CelEvaluationError);
      expect((err as CelEvaluationError).field).toBe('b');
    }
  });

  it('does not let one evaluation see another context (cache holds plans, not values)', () => {
    expect(evaluate('ctx.trigger.kind', { trigger: { kind: 'a' }, steps: {} })).toBe('a');
    expect(evaluate('ctx.trigger.kind', { trigger: { kind: 'b' }, steps: {} })).toBe('b');
  });
});

describe('checkExpression', () => {
  it('accepts valid expressions', () => {
    expect(checkExpression("ctx.trigger.kind == 'hire'")).toBeUndefined();
    expect(checkExpression('ctx.trigger.tags.exists(t, t.endsWith("x"))')).toBeUndefined();
    expect(checkExpression('[1, 2].map(x, [3].map(y, x + y))')).toBeUndefined();
    expect(checkExpression('strings.quote(ctx.trigger.kind)')).toBeUndefined();
    expect(evaluate("ctx.trigger.kind.upperAscii() + '-' + ['a', 'b'].join(',')", ctx)).toBe('HIRE-a,b');
    expect(checkExpression('type(ctx.trigger.kind) == string')).toBeUndefined();
  });

  it('reports syntax errors with their position', () => {
    expect(checkExpression('ctx.trigger.kind ==')).toMatch(/^syntax error at line 1, column \d+/);
    expect(checkExpression('ctx.trigger.(kind)')).toMatch(/syntax error at line 1, column 12/);
    expect(checkExpression('ctx.trigger.a\n  .(b)')).toMatch(/line 2, column 3/);
    expect(checkExpression('   ')).toBe('expression is empty');
  });

  it('refuses names other than ctx', () => {
    expect(checkExpression('trigger.kind')).toMatch(/unknown name "trigger" at line 1, column 1/);
    expect(checkExpression('ctx.trigger.tags.exists(t, t == other)')).toMatch(/unknown name "other"/);
    // comprehension variables are in scope only inside their comprehension
    expect(checkExpression('ctx.trigger.tags.exists(t, true) && t == 1')).toMatch(/unknown name "t"/);
    // the macro accumulator cannot be named
    expect(checkExpression('ctx.trigger.tags.map(t, @result)')).toMatch(/syntax error/);
  });

  it('refuses expressions over the length cap', () => {
    const long = `ctx.trigger.kind == '${'x'.repeat(celLimits.MAX_EXPRESSION_LENGTH)}'`;
    expect(checkExpression(long)).toMatch(/too long/);
    expect(() => evaluate(long, ctx)).toThrow(/too long/);
  });

  it('refuses deep nesting and huge expressions', () => {
    const lists = celLimits.MAX_AST_DEPTH - 1; // lists around a constant: MAX_AST_DEPTH levels
    expect(checkExpression(`${'['.repeat(lists)}1${']'.repeat(lists)}`)).toBeUndefined();
    expect(checkExpression(`${'['.repeat(lists + 1)}1${']'.repeat(lists + 1)}`)).toMatch(/nested too deeply/);
    // parentheses and repeated unary operators add no AST levels, but thousands of them would
    // overflow the parser's stack: refused as too deep, never a crash
    expect(checkExpression(`${'('.repeat(2000)}1${')'.repeat(2000)}`)).toMatch(/nested too deeply/);
    expect(checkExpression(`${'['.repeat(1500)}${']'.repeat(1500)}`)).toMatch(/nested too deeply/);
    expect(checkExpression(`1${' + 1'.repeat(200)}`)).toMatch(/nested too deeply/);
    expect(checkExpression(`[${Array.from({ length: 1200 }, () => '1').join(',')}]`)).toMatch(/too big/);
  });
});

describe('hostile expressions are bounded', () => {
  const ten = '[0,1,2,3,4,5,6,7,8,9]';

  it('stops nested comprehensions by the iteration budget', () => {
    const nested = `${ten}.map(a, ${ten}.map(b, ${ten}.map(c, ${ten}.map(d, ${ten}.map(e, ${ten}.map(f, a + b + c + d + e + f))))))`;
    expect(checkExpression(nested)).toBeUndefined();
    const err = evalError(nested);
    expect(err.code).toBe('ERR_CEL_LIMIT');
    expect(err.message).toMatch(/iterate more than/);
  });

  it('still fails when || absorbs the budget error', () => {
    const absorbed = `${ten}.exists(a, ${ten}.exists(b, ${ten}.exists(c, ${ten}.exists(d, ${ten}.exists(e, false))))) || true`;
    expect(evalError(absorbed).code).toBe('ERR_CEL_LIMIT');
  });

  it('caps the size of the result', () => {
    let doubling = '[1]';
    for (let i = 0; i < 25; i++) doubling += '.map(y, [y, y])';
    expect(evalError(doubling).code).toBe('ERR_CEL_LIMIT');
  });

  it('stops work that needs few iterations but much work by the cost budget', () => {
    // 2^25 shared list nodes: cheap to build, exponential to compare
    let doubling = '[1]';
    for (let i = 0; i < 25; i++) doubling += '.map(y, [y, y])';
    try {
      evaluateAll({ eq: `${doubling} == ${doubling}` }, ctx);
      throw new Error('expected the cost budget to stop it');
    } catch (err) {
      expect(err).toBeInstanceOf(CelEvaluationError);
      expect((err as CelEvaluationError).code).toBe('ERR_CEL_LIMIT');
      expect((err as CelEvaluationError).message).toBe(
        `evaluation exceeds the cost budget of ${celLimits.MAX_EVALUATION_COST}`,
      );
      expect((err as CelEvaluationError).field).toBe('eq');
    }
    // the module still works afterwards
    expect(evaluate('ctx.trigger.kind', ctx)).toBe('hire');
  });

  it('charges regular expressions by the size of their input', () => {
    const long = { ...ctx, trigger: { s: 'a'.repeat(100_000), l: Array.from({ length: 99 }, (_, i) => i) } };
    // one scan fits the budget; 99 × 99 scans do not
    expect(evaluate("ctx.trigger.s.matches('^(a|b)*$')", long)).toBe(true);
    const err = evalError("ctx.trigger.l.all(x, ctx.trigger.l.all(y, ctx.trigger.s.matches('^(a|b)*$')))", long);
    expect(err.code).toBe('ERR_CEL_LIMIT');
    expect(err.message).toMatch(/cost budget/);
  });

  it('charges string growth by length, so doubling a string stops long before memory runs out', () => {
    // 40 doublings: 2^40 characters if nothing stopped it
    const err = evalError(`'x'${".replace('x', 'xx')".repeat(40)}.size()`);
    expect(err.code).toBe('ERR_CEL_LIMIT');
    expect(err.message).toMatch(/cost budget/);
  });

  it('gives the same verdict every time: the cost is counted, not timed', () => {
    const near = `${ten}.map(a, ${ten}.map(b, ${ten}.map(c, a + b + c))).size()`;
    for (let i = 0; i < 5; i++) expect(evaluate(near, ctx)).toBe(10);
  });
});

describe('payload keys that name Object.prototype members', () => {
  it('keeps "__proto__" as an ordinary key in inputs and results', () => {
    const trigger = JSON.parse('{"__proto__": {"polluted": true}, "a": 1}') as unknown;
    const result = evaluate('ctx.trigger', { trigger, steps: {} }) as Record<string, unknown>;
    expect(Object.getPrototypeOf(result)).toBe(Object.prototype);
    expect(result.polluted).toBeUndefined();
    expect(Object.keys(result)).toEqual(['__proto__', 'a']);
    expect(JSON.stringify(result)).toBe('{"__proto__":{"polluted":true},"a":1}');
    expect(evaluate('ctx.trigger["__proto__"].polluted', { trigger, steps: {} })).toBe(true);
    const literal = evaluate('{"__proto__": {"polluted": true}}', ctx) as Record<string, unknown>;
    expect(Object.getPrototypeOf(literal)).toBe(Object.prototype);
    expect(literal.polluted).toBeUndefined();
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});
