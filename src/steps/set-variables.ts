/** `setVariables`: evaluates named CEL expressions; the values are the step's output (`ctx.steps.<id>.<name>`). */
import { z } from 'zod';
import { celSchema, defineStep, IDENTIFIER } from './kind';

export const MAX_VARIABLES_PER_STEP = 50;

export const setVariables = defineStep({
  kind: 'setVariables',
  schema: z.record(z.string().regex(IDENTIFIER), celSchema()).meta({
    id: 'SetVariablesStep',
    minProperties: 1,
    maxProperties: MAX_VARIABLES_PER_STEP,
    description: 'Variable name → CEL expression; read later as ctx.steps.<id>.<name>.',
  }),
  validate(body, check) {
    const entries = Object.entries(body);
    if (entries.length === 0 || entries.length > MAX_VARIABLES_PER_STEP) check.violation(check.at, `set 1 to ${MAX_VARIABLES_PER_STEP} variables`);
    const result: Record<string, string> = {};
    for (const [name, source] of entries) {
      if (!IDENTIFIER.test(name)) {
        check.violation(`${check.at}.${name}`, 'variable names must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$');
        continue;
      }
      result[name] = check.cel(source, `${check.at}.${name}`);
    }
    return result;
  },
  async run(body, effects) {
    if (Object.keys(body).length === 0) return {};
    return effects.evaluate(body, 'evaluate setVariables');
  },
});
