/** `fail`: ends the run as FAILED with the evaluated message (a guard: `when` says when). */
import { z } from 'zod';
import { celSchema, defineStep, describeValue } from './kind';
import { StepError } from '../errors';

/** Longest message a fail step records. */
const MAX_FAIL_MESSAGE = 2000;

export const fail = defineStep({
  kind: 'fail',
  schema: z
    .strictObject({ message: celSchema() })
    .meta({ id: 'FailStep', description: 'Ends the run as FAILED with the evaluated message.' }),
  async run(body, effects) {
    const { message } = await effects.evaluate({ message: body.message }, 'evaluate fail');
    if (typeof message !== 'string' || message === '')
      throw new StepError(`fail.message: must evaluate to a non-empty string, got ${describeValue(message)}`);
    return effects.fail(message.length > MAX_FAIL_MESSAGE ? `${message.slice(0, MAX_FAIL_MESSAGE)}…` : message);
  },
});
