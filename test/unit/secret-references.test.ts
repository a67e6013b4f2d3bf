/**
 * The workflow-side lexer that decides which callWebhook header values read named secrets, and
 * the CEL checks it is paired with: both must agree on every expression the validator accepts,
 * or a header could be evaluated in the workflow (its value in the history) after passing as a
 * secret-bearing one on save.
 */
import fc from 'fast-check';
import { checkExpression, checkSecretExpression, evaluateSecretExpression } from '../../src/cel';
import { readsSecrets } from '../../src/steps';

describe('readsSecrets', () => {
  it.each([
    ["'Bearer ' + secrets.crm_token", true],
    ['secrets.a + secrets.b', true],
    ["r'raw' + secrets.k", true],
    ['"a\\"" + secrets.k', true],
    ['secrets', true],
    ["'secrets.crm_token'", false],
    ['"""secrets.x"""', false],
    ["r'secrets'", false],
    ['ctx.trigger.secrets', false],
    ['ctx.trigger . secrets', false],
    ['.secrets.k', true],
    ["'a' + .secrets.k", true],
    ['ctx.steps.x[0].secrets', false],
    ['// secrets.x\n"y"', false],
    ['my_secrets + 1', false],
  ])('%s → %s', (source, expected) => {
    expect(readsSecrets(source)).toBe(expected);
  });
});

describe('secret-bearing expressions', () => {
  it('read only secrets.<name> and literals, and name what they read', () => {
    expect(checkSecretExpression("'Bearer ' + secrets.crm_token")).toEqual({ secrets: ['crm_token'] });
    expect(checkSecretExpression("secrets.user + ':' + secrets.pass + secrets.user")).toEqual({
      secrets: ['user', 'pass'],
    });
    expect(checkSecretExpression('ctx.trigger.a + secrets.b').problem).toMatch(/may not read ctx/);
    expect(checkSecretExpression("secrets['b']").problem).toMatch(/secrets\.<name>/);
    expect(checkSecretExpression("'no secret'").problem).toMatch(/at least one secret/);
    expect(checkExpression('secrets.b')).toMatch(/only in callWebhook header values/);
    expect(evaluateSecretExpression("'Bearer ' + secrets.k", { k: 'v-1' })).toBe('Bearer v-1');
    expect(() => evaluateSecretExpression("'Bearer ' + secrets.k", {})).toThrow(/secret "k" is not available/);
  });

  it('no expression is both a plain and a secret-bearing one, and the lexer finds every secret-bearing one', () => {
    const piece = fc.constantFrom(
      'secrets.a',
      'secrets.b_2',
      'ctx.trigger.x',
      'ctx.trigger.secrets',
      "'secrets.a'",
      '"secrets"',
      "r'x'",
      "b'y'",
      "'''t'''",
      '1',
      'true',
      '// secrets\n',
      ' + ',
      ' + ',
      ' == ',
      '(',
      ')',
      'size(',
      '[',
      ']',
      ',',
      '.secrets',
      'secrets',
      '.',
    );
    fc.assert(
      fc.property(fc.array(piece, { minLength: 1, maxLength: 7 }), (pieces) => {
        const source = pieces.join('');
        const asSecret = checkSecretExpression(source).problem === undefined;
        const asPlain = checkExpression(source) === undefined;
        expect([source, asSecret && asPlain]).toEqual([source, false]);
        // What the CEL parser accepts as secret-bearing, the workflow's lexer routes to the activity.
        if (asSecret) expect([source, readsSecrets(source)]).toEqual([source, true]);
      }),
      { numRuns: 3000 },
    );
  });
});
