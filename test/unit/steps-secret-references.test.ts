/**
 * The workflow-side lexer (readsSecrets in src/steps/secret-references.ts) on the edges of its
 * grammar: every kind of white space, comments, escapes, raw and triple-quoted strings, string
 * prefixes, numbers, and what may stand before `.secrets` for it to be a field. Each case names
 * the right answer for the CEL grammar, so a lexer that misroutes one (a secret-bearing header
 * evaluated in the workflow, or a plain one sent to the activity) fails here.
 */
import { readsSecrets, splitSecretHeaders, SECRETS_IDENTIFIER } from '../../src/steps';

describe('readsSecrets on the edges of the grammar', () => {
  it.each([
    // White space of every kind is skipped, so it never hides the dot of a field.
    ['x. secrets', false],
    ['x.\tsecrets', false],
    ['x.\nsecrets', false],
    ['x.\rsecrets', false],
    ['x.\fsecrets', false],
    ['x.\vsecrets', false],
    ['x .secrets', false],
    ['\t\n\r\f\v secrets', true],
    // What stands before `.secrets` decides whether it is a field or the root name.
    ['a.secrets', false],
    ['Z.secrets', false],
    ['_.secrets', false],
    ['a9.secrets', false],
    ['1.secrets', false],
    ['"s".secrets', false],
    ["'s'.secrets", false],
    ['(a).secrets', false],
    ['a[0].secrets', false],
    ['{}.secrets', false],
    ['.secrets', true],
    ['+.secrets', true],
    ['(.secrets.k)', true],
    ['[.secrets.k]', true],
    ['a + .secrets', true],
    ['a,.secrets', true],
    ['a . b . secrets', false],
    // Words: only the whole word `secrets`.
    ['secretsx', false],
    ['xsecrets', false],
    ['secrets_', false],
    ['secrets9', false],
    ['Secrets', false],
    ['a(secrets)', true],
    // Numbers swallow letters that follow them.
    ['1secrets', false],
    ['0x1fsecrets', false],
    ['1 secrets', true],
    ['0x1f.secrets', false],
    // Comments run to the end of the line.
    ['// secrets', false],
    ['//secrets', false],
    ['// x\nsecrets', true],
    ['x.//c\nsecrets', false],
    ['a / secrets', true],
    ['a /secrets', true],
    ['a/ /secrets', true],
    // Strings: escapes, raw strings, triple quotes, unterminated ones.
    ["'secrets'", false],
    ['"secrets"', false],
    ["'a\\' secrets'", false],
    ["'a\\\\' + secrets", true],
    ["r'a\\' + secrets", true],
    ["R'a\\' + secrets", true],
    ["rb'a\\' + secrets", true],
    ["Rb'a\\' + secrets", true],
    ["bR'a\\' + secrets", true],
    ["BR'a\\' + secrets", true],
    ["b'a\\' secrets'", false],
    ["B'a\\' secrets'", false],
    ["x'a\\' secrets'", false],
    ["rx'a\\' secrets'", false],
    ["rbr'a\\' secrets'", false],
    ['r"secrets"', false],
    ['r"a\\" + secrets', true],
    ["r'x'.secrets", false],
    ['b"x".secrets', false],
    ["b'secrets'", false],
    ["'''a ' secrets'''", false],
    ['"""a\nsecrets"""', false],
    ["'''a''' + secrets", true],
    ['"""a"" secrets"""', false],
    ["'abc\nsecrets", true],
    ['"abc\nsecrets', true],
    ["'unterminated secrets", false],
    ["'''unterminated\nsecrets", false],
    ["'a' secrets", true],
    ["'a'.secrets", false],
    ['""', false],
    ['', false],
    [SECRETS_IDENTIFIER, true],
  ])('%j → %s', (source, expected) => {
    expect(readsSecrets(source)).toBe(expected);
  });
});

describe('splitSecretHeaders', () => {
  it('sends secret-bearing header sources to the activity and keeps the others plain, by name', () => {
    expect(
      splitSecretHeaders({
        Authorization: "'Bearer ' + secrets.crm_token",
        'X-Trace': 'ctx.trigger.id',
        'X-Literal': "'secrets.k'",
        'X-Key': '.secrets.k',
      }),
    ).toEqual({
      plain: { 'X-Trace': 'ctx.trigger.id', 'X-Literal': "'secrets.k'" },
      secret: { Authorization: "'Bearer ' + secrets.crm_token", 'X-Key': '.secrets.k' },
    });
  });

  it('no headers give two empty maps', () => {
    expect(splitSecretHeaders(undefined)).toEqual({ plain: {}, secret: {} });
    expect(splitSecretHeaders(null)).toEqual({ plain: {}, secret: {} });
    expect(splitSecretHeaders({})).toEqual({ plain: {}, secret: {} });
  });
});
