/** `setVariables`: evaluates named CEL expressions; the values are the step's output (`ctx.steps.<id>.<name>`). */
import { z } from 'zod';
import { boundedRecord, celSchema, defineStep, IDENTIFIER, lastResult } from './kind';

export const MAX_VARIABLES_PER_STEP = 50;

export const setVariables = defineStep({
  kind: 'setVariables',
  schema: boundedRecord(
    z.string().regex(IDENTIFIER, { error: 'variable names must match ^[A-Za-z_][A-Za-z0-9_]{0,63}$' }),
    celSchema(),
    { min: 1, max: MAX_VARIABLES_PER_STEP },
    `set 1 to ${MAX_VARIABLES_PER_STEP} variables`,
  ).meta({
    id: 'SetVariablesStep',
    description: 'Variable name → CEL expression; read later as ctx.steps.<id>.<name>.',
  }),
  // Not async: the evaluation's promise is the step's (one promise fewer per step in a run).
  run: (body, effects) =>
    Object.keys(body).length === 0 ? Promise.resolve({}) : effects.evaluate(body, 'evaluate setVariables'),
  outputFromHistory: (_body, effects) => lastResult(effects) ?? {},
});
