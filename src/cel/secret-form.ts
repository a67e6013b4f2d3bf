/**
 * The closed grammar of a header value that reads named secrets: `secrets.<name>` and string
 * literals joined by `+`, nothing else. No function, method, operator, conditional, index, macro
 * or other literal: an automation cannot take a secret apart (`secrets.k.substring(0, 3)`) or test
 * it (`secrets.k.startsWith('sk_l') ? 'a' : 1`), so nothing a step shows or decides can depend on
 * a secret's value. Checked on the parsed AST (never on the text), once when the expression is
 * compiled: on save, and again by the worker before it evaluates anything.
 */
import type { parse } from '@bufbuild/cel';
import { CelEvaluationError } from '../errors';

type Expr = ReturnType<typeof parse>['expr'];

/** What a header value may hold: tabs and printable Latin-1 (as src/steps/call-webhook.ts HEADER_VALUE). */
const HEADER_TEXT = /^[\t\x20-\x7e\x80-\xff]*$/;

/** The closed form, for messages. */
export const SECRET_FORM =
  "secrets.<name> and string literals joined by + (e.g. 'Bearer ' + secrets.crm_token), nothing else";

/** Throws CelEvaluationError (ERR_CEL_SECRET_FORM) naming the first node outside the closed grammar. */
export function checkSecretForm(
  root: Expr,
  variable: string,
  positionOf: (id: bigint | undefined) => string | undefined,
): void {
  const work: Expr[] = [root];
  for (let expr = work.pop(); expr; expr = work.pop()) {
    const kind = expr.exprKind;
    const refuse = (what: string): never => {
      const where = positionOf(expr.id);
      throw new CelEvaluationError(
        'ERR_CEL_SECRET_FORM',
        `a header value that reads ${variable} is ${SECRET_FORM}; found ${what}${where ? ` at ${where}` : ''}`,
      );
    };
    switch (kind.case) {
      case 'constExpr':
        if (kind.value.constantKind.case !== 'stringValue') refuse('a literal that is not a string');
        if (!HEADER_TEXT.test(kind.value.constantKind.value as string))
          refuse('a string literal with characters a header cannot carry');
        break;
      case 'selectExpr': {
        const operand = kind.value.operand;
        if (kind.value.testOnly) refuse('has()');
        if (operand?.exprKind.case !== 'identExpr' || operand.exprKind.value.name !== variable)
          refuse(`a field selection other than ${variable}.<name>`);
        break;
      }
      case 'callExpr':
        if (kind.value.function !== '_+_' || kind.value.target !== undefined || kind.value.args.length !== 2)
          refuse(`${describeCall(kind.value.function)}`);
        work.push(...kind.value.args);
        break;
      case 'identExpr':
        refuse(`the name ${kind.value.name}`);
        break;
      default:
        refuse(
          kind.case === 'comprehensionExpr'
            ? 'a macro'
            : kind.case === 'listExpr'
              ? 'a list'
              : kind.case === 'structExpr'
                ? 'a map or message'
                : 'an expression',
        );
    }
  }
}

function describeCall(fn: string): string {
  if (fn === '_?_:_') return 'a conditional (?:)';
  if (fn === '_[_]' || fn === '_[?_]') return 'an index ([])';
  if (/^_.*_$/.test(fn) || fn === '!_' || fn === '-_') return `the operator ${fn.replace(/_/g, ' ').trim()}`;
  return `a call to ${fn}()`;
}

/**
 * The text an expression certainly starts with: the string literals at the head of its `+` chain
 * (`'https://crm.example/u/' + ctx.trigger.id` → `https://crm.example/u/`), with `complete` true
 * when the whole expression is such literals. Undefined when it does not start with a literal or
 * does not parse. For finding a URL's origin on save.
 */
export function literalPrefix(parsed: Expr): { text: string; complete: boolean } | undefined {
  // Flatten the left-leaning `+` chain: a + b + c parses as (a + b) + c.
  const parts: Expr[] = [];
  const work: Expr[] = [parsed];
  for (let expr = work.pop(); expr; expr = work.pop()) {
    const kind = expr.exprKind;
    if (
      kind.case === 'callExpr' &&
      kind.value.function === '_+_' &&
      kind.value.target === undefined &&
      kind.value.args.length === 2
    ) {
      work.push(kind.value.args[1]!, kind.value.args[0]!);
    } else {
      parts.push(expr);
    }
  }
  let text = '';
  for (const [index, part] of parts.entries()) {
    const kind = part.exprKind;
    if (kind.case !== 'constExpr' || kind.value.constantKind.case !== 'stringValue') {
      return index === 0 ? undefined : { text, complete: false };
    }
    text += kind.value.constantKind.value;
  }
  return { text, complete: true };
}

/** Every `secrets.<name>` an expression selects, whatever its form (for migrating stored automations). */
export function selectedSecrets(parsed: Expr, variable: string): string[] {
  const names: string[] = [];
  const work: Expr[] = [parsed];
  for (let expr = work.pop(); expr; expr = work.pop()) {
    const kind = expr.exprKind;
    if (kind.case === 'selectExpr') {
      const operand = kind.value.operand;
      if (operand?.exprKind.case === 'identExpr' && operand.exprKind.value.name === variable) {
        if (!names.includes(kind.value.field)) names.push(kind.value.field);
        continue;
      }
      if (operand) work.push(operand);
    } else if (kind.case === 'callExpr') {
      if (kind.value.target) work.push(kind.value.target);
      work.push(...kind.value.args);
    } else if (kind.case === 'listExpr') {
      work.push(...kind.value.elements);
    } else if (kind.case === 'structExpr') {
      for (const entry of kind.value.entries) {
        if (entry.keyKind.case === 'mapKey') work.push(entry.keyKind.value);
        if (entry.value) work.push(entry.value);
      }
    } else if (kind.case === 'comprehensionExpr') {
      const c = kind.value;
      work.push(
        ...[c.iterRange, c.accuInit, c.loopCondition, c.loopStep, c.result].filter((e): e is Expr => e !== undefined),
      );
    }
  }
  return names;
}
