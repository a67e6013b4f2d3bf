/**
 * The closed grammar of secret-bearing header values (src/cel/secret-form.ts), through the public
 * functions of src/cel: what passes, and for each kind of node outside the grammar the exact reason
 * and position given. Also the literal prefix of a URL expression and the secrets an expression
 * selects whatever its form.
 */
import { checkSecretExpression, constantPrefix, secretNames, secretsSelectedBy } from '../../src/cel';

const FORM =
  "a header value that reads secrets is secrets.<name> and string literals joined by + (e.g. 'Bearer ' + secrets.crm_token), nothing else; found";

describe('the closed secret grammar', () => {
  it.each([
    ["'Bearer ' + secrets.k", ['k']],
    ['secrets.k', ['k']],
    ['secrets.a + secrets.b', ['b', 'a']],
    ["secrets.k + 'a' + 'b'", ['k']],
    ['secrets.k + secrets.k + secrets.j', ['j', 'k']],
    ["'\\t' + secrets.k", ['k']],
    ["'é' + secrets.k", ['k']],
    ['secrets.k + "\\x80"', ['k']],
    ["'' + secrets.k", ['k']],
    ["'~ !' + secrets.k + '\\xff'", ['k']],
  ])('accepts %s', (source, secrets) => {
    expect(checkSecretExpression(source)).toEqual({ secrets });
    expect(secretNames(source)).toEqual(secrets);
  });

  it.each([
    ['1 + secrets.k', 'a literal that is not a string at line 1, column 1'],
    ['true + secrets.k', 'a literal that is not a string at line 1, column 1'],
    ["b'x' + secrets.k", 'a literal that is not a string at line 1, column 1'],
    ['secrets.k + null', 'a literal that is not a string at line 1, column 13'],
    ['secrets.k + 1u', 'a literal that is not a string at line 1, column 13'],
    ['secrets.k + 1.0', 'a literal that is not a string at line 1, column 13'],
    ['secrets.k + \n  1', 'a literal that is not a string at line 2, column 3'],
    ["'\\u0001' + secrets.k", 'a string literal with characters a header cannot carry at line 1, column 1'],
    ["'\\x7f' + secrets.k", 'a string literal with characters a header cannot carry at line 1, column 1'],
    ["'\\u0100' + secrets.k", 'a string literal with characters a header cannot carry at line 1, column 1'],
    ["'a\\nb' + secrets.k", 'a string literal with characters a header cannot carry at line 1, column 1'],
    ["secrets.k + 'ok' + '\\r'", 'a string literal with characters a header cannot carry at line 1, column 20'],
    ['secrets.k.substring(0,3)', 'a call to substring() at line 1, column 10'],
    ['size(secrets.k)', 'a call to size() at line 1, column 1'],
    ["secrets.k == 'x'", 'the operator == at line 1, column 11'],
    ["secrets.k - 'a'", 'the operator - at line 1, column 11'],
    ['-secrets.k', 'the operator - at line 1, column 1'],
    ['!secrets.k', 'the operator ! at line 1, column 1'],
    ["secrets.k ? 'a' : 'b'", 'a conditional (?:) at line 1, column 1'],
    ["secrets.k in ['a']", 'a call to @in() at line 1, column 11'],
    ['[secrets.k]', 'a list at line 1, column 1'],
    ["{'a': secrets.k}", 'a map or message at line 1, column 1'],
    ['secrets.k.x', 'a field selection other than secrets.<name> at line 1, column 10'],
    ['secrets.k.all(x, true)', 'a macro at line 1, column 10'],
    ['[1].exists(x, x == secrets.k)', 'a macro at line 1, column 4'],
  ])('refuses %s: found %s', (source, found) => {
    expect(checkSecretExpression(source)).toEqual({ problem: `${FORM} ${found}` });
    expect(() => secretNames(source)).toThrow(expect.objectContaining({ code: 'ERR_CEL_SECRET_FORM' }));
  });

  it('refuses an index into secrets, has(), ctx and other names before the grammar check', () => {
    expect(checkSecretExpression("secrets['k']").problem).toBe(
      'secrets at line 1, column 1 must be read as secrets.<name>',
    );
    expect(checkSecretExpression("has(secrets.k) ? 'a' : secrets.k").problem).toBe(
      'secrets at line 1, column 5 must be read as secrets.<name>',
    );
    expect(checkSecretExpression('secrets.k + ctx').problem).toBe(
      'a header value that reads secrets may not read ctx (at line 1, column 13): only secrets.<name> and literals',
    );
    expect(checkSecretExpression('x.secrets.k + secrets.k').problem).toMatch(/^unknown name "x" at line 1, column 1/);
  });
});

describe('constantPrefix', () => {
  it.each<[string, { text: string; complete: boolean } | undefined]>([
    ["'https://a/' + ctx.x", { text: 'https://a/', complete: false }],
    ["'a' + 'b'", { text: 'ab', complete: true }],
    ["'a' + 'b' + ctx.x + 'c'", { text: 'ab', complete: false }],
    ["'a' + 'b' + 'c'", { text: 'abc', complete: true }],
    ["'a' + ('b' + 'c')", { text: 'abc', complete: true }],
    ["ctx.x + 'a'", undefined],
    ["'a'", { text: 'a', complete: true }],
    ['1', undefined],
    ["'a' + 1", { text: 'a', complete: false }],
    ['(', undefined],
    ["'a'.size()", undefined],
    ["x + y + 'z'", undefined],
    ["'a' - 'b'", undefined],
    ["size('a', 'b')", undefined],
  ])('%s → %j', (source, expected) => {
    expect(constantPrefix(source)).toEqual(expected);
  });
});

describe('secretsSelectedBy', () => {
  it.each([
    ['secrets.a + secrets.b + secrets.a', ['a', 'b']],
    ['size(secrets.a)', ['a']],
    ['secrets.a.b', ['a']],
    ['x.secrets.c', []],
    ['[secrets.d]', ['d']],
    ["{'k': secrets.e, secrets.f: 1}", ['f', 'e']],
    ['[1].all(x, x == secrets.g)', ['g']],
    ['[secrets.g2].map(x, x)', ['g2']],
    ["secrets['h']", []],
    ['(', []],
    ['f(secrets.i).m(secrets.j)', ['j', 'i']],
    ['x.y.secrets.k', []],
    ["secrets.l.startsWith('a')", ['l']],
    ["has(secrets.m) ? secrets.n : ''", ['n', 'm']],
    ['ctx.a.b', []],
  ])('%s → %j', (source, expected) => {
    expect(secretsSelectedBy(source)).toEqual(expected);
  });
});
