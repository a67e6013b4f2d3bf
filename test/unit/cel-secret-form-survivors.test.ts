/**
 * The nodes of the closed secret grammar (src/cel/secret-form.ts) that get past the name check of
 * src/cel/compile.ts (`inspect`) and so are refused by the grammar itself: type names used as
 * values (`int`, `string`), `has()` and field selections on them, indexes, calls to functions
 * whose names look like operators, message literals. Each case pins the reason given, so that a
 * grammar that lets the node through, or names it wrongly, fails here (these cases were the
 * mutants StrykerJS found alive; see docs/testing.md#mutation-testing).
 */
import { parse } from '@bufbuild/cel';
import { checkSecretExpression, secretsSelectedBy } from '../../src/cel';
import { checkSecretForm, literalPrefix, selectedSecrets } from '../../src/cel/secret-form';
import { CelEvaluationError } from '../../src/errors';

const FORM =
  "a header value that reads secrets is secrets.<name> and string literals joined by + (e.g. 'Bearer ' + secrets.crm_token), nothing else; found";

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

/**
 * Nodes the parser never builds, made by hand from parsed ones: the grammar and its two readers
 * must still fail closed on them (refuse, or read no literal prefix), not accept them or throw a
 * TypeError, so that a parser that one day builds such a node cannot open the grammar.
 */
describe('the secret grammar on nodes the parser does not build', () => {
  type Expr = ReturnType<typeof parse>['expr'];
  const node = (source: string): Expr => parse(source).expr;
  const call = (expr: Expr) => {
    if (expr.exprKind.case !== 'callExpr') throw new Error(`not a call: ${expr.exprKind.case}`);
    return expr.exprKind.value;
  };
  const select = (expr: Expr) => {
    if (expr.exprKind.case !== 'selectExpr') throw new Error(`not a selection: ${expr.exprKind.case}`);
    return expr.exprKind.value;
  };
  /** `'a' + 'b'` with a target (`'x'._+_('a', 'b')`). */
  const plusWithTarget = (): Expr => {
    const expr = node("'a' + 'b'");
    call(expr).target = node("'x'");
    return expr;
  };
  /** `_+_('a', 'b', 'c')`: three arguments. */
  const plusOfThree = (): Expr => {
    const expr = node("'a' + 'b'");
    call(expr).args.push(node("'c'"));
    return expr;
  };
  /** An expression of no kind (a kind this grammar does not know). */
  const kindless = (): Expr => ({ ...node("'a'"), exprKind: { case: undefined } });
  /** The refusal of checkSecretForm, without positions (positionOf finds none). */
  const refusal = (expr: Expr): { code: string; message: string } | 'accepted' => {
    try {
      checkSecretForm(expr, 'secrets', () => undefined);
      return 'accepted';
    } catch (err) {
      if (!(err instanceof CelEvaluationError)) throw err;
      return { code: err.code, message: err.message };
    }
  };

  it.each([
    ['a + call with a target', plusWithTarget, 'the operator +'],
    ['a + call with three arguments', plusOfThree, 'the operator +'],
    ['a node of no kind', kindless, 'an expression'],
    [
      'a selection without an operand',
      () => {
        const expr = node('secrets.k');
        select(expr).operand = undefined;
        return expr;
      },
      'a field selection other than secrets.<name>',
    ],
    [
      'an optional index (_[?_])',
      () => {
        const expr = node("'x'[0] + secrets.k");
        call(call(expr).args[0]!).function = '_[?_]';
        return expr;
      },
      'an index ([])',
    ],
    // Without a position, the message ends at the node's name.
    ['a number, with no position', () => node('secrets.k + 1'), 'a literal that is not a string'],
  ])('refuses %s', (_name, make, found) => {
    expect(refusal(make())).toStrictEqual({ code: 'ERR_CEL_SECRET_FORM', message: `${FORM} ${found}` });
  });

  it.each([
    ['a + call with a target', plusWithTarget],
    ['a + call with three arguments', plusOfThree],
    ['a node of no kind', kindless],
  ])('reads no literal prefix from %s', (_name, make) => {
    expect(literalPrefix(make())).toBeUndefined();
  });

  it.each([
    [
      // The selection without an operand is read first (the last argument); the walk goes on to secrets.k.
      'a selection without an operand',
      () => {
        const expr = node('secrets.k + x.y');
        select(call(expr).args[1]!).operand = undefined;
        return expr;
      },
      ['k'],
    ],
    [
      'a map entry without a value',
      () => {
        const expr = node("{secrets.a: 'v'}");
        if (expr.exprKind.case !== 'structExpr') throw new Error(`not a map: ${expr.exprKind.case}`);
        expr.exprKind.value.entries[0]!.value = undefined;
        return expr;
      },
      ['a'],
    ],
    [
      'a macro without its result',
      () => {
        const expr = node('[1].all(x, x == secrets.g)');
        if (expr.exprKind.case !== 'comprehensionExpr') throw new Error(`not a macro: ${expr.exprKind.case}`);
        expr.exprKind.value.result = undefined;
        return expr;
      },
      ['g'],
    ],
    ['a node of no kind', kindless, []],
  ])('selects the secrets of %s', (_name, make, expected) => {
    expect(selectedSecrets(make(), 'secrets')).toStrictEqual(expected);
  });
});
