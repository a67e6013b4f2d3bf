/**
 * The nodes of the closed secret grammar (src/cel/secret-form.ts) that get past the name check of
 * src/cel/compile.ts (`inspect`) and so are refused by the grammar itself: type names used as
 * values (`int`, `string`), `has()` and field selections on them, indexes, calls to functions
 * whose names look like operators, message literals. Each case pins the reason given, so that a
 * grammar that lets the node through, or names it wrongly, fails here (these cases were the
 * mutants StrykerJS found alive; see docs/testing.md, "Mutation testing").
 */
import { checkSecretExpression, secretsSelectedBy } from '../../src/cel';

const FORM = "a header value that reads secrets is secrets.<name> and string literals joined by + (e.g. 'Bearer ' + secrets.crm_token), nothing else; found";

describe('the closed secret grammar, past the name check', () => {
  it.each([
    // Type names are identifiers the name check allows (`type(x) == string`): the grammar refuses them.
    ['string + secrets.k', 'the name string at line 1, column 1'],
    ["secrets.k + 'a' + int", 'the name int at line 1, column 19'],
    // has() on an allowed name: the grammar's own has() check, not the field-selection one.
    ['has(int.a) + secrets.k', 'has() at line 1, column 1'],
    // A selection on a name other than secrets (the operand is an identifier, but not `secrets`).
    ['int.a + secrets.k', 'a field selection other than secrets.<name> at line 1, column 4'],
    ['secrets.k + bool.x', 'a field selection other than secrets.<name> at line 1, column 17'],
    // Indexes into anything but secrets (an index into secrets is refused by the name check).
    ["'x'[0] + secrets.k", 'an index ([]) at line 1, column 4'],
    ["secrets.k + {'a': 'b'}['a']", 'an index ([]) at line 1, column 23'],
    // Function names are described as operators only when they start and end with `_`.
    ['a_b_(1) + secrets.k', 'a call to a_b_() at line 1, column 1'],
    ['_a_b(1) + secrets.k', 'a call to _a_b() at line 1, column 1'],
    ['_a_b_(1) + secrets.k', 'the operator a b at line 1, column 1'],
    // A message literal, named or qualified.
    ['Foo{a: secrets.k}', 'a map or message at line 1, column 1'],
    ['x.Y{a: secrets.k}', 'a map or message at line 1, column 1'],
  ])('refuses %s: found %s', (source, found) => {
    expect(checkSecretExpression(source)).toEqual({ problem: `${FORM} ${found}` });
  });
});

describe('secretsSelectedBy, past the grammar', () => {
  it.each([
    // The field names of a message literal are strings, not expressions: only its values are read.
    ['Foo{a: secrets.x}', ['x']],
    ['Foo{a: secrets.x, b: secrets.y}', ['y', 'x']],
    ['has(int.a) + secrets.k', ['k']],
  ])('%s → %j', (source, expected) => {
    expect(secretsSelectedBy(source)).toEqual(expected);
  });
});
