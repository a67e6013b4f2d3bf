/**
 * `log`: writes one structured line to the run's history (the summary of an event, shown in the
 * Web UI) and to the worker's log. The output is `{level, message}`.
 */
import { z } from 'zod';
import { celSchema, defineStep, describeValue, type LogLevel } from './kind';
import { StepError } from '../errors';
import { isObject } from '../json';

const LEVELS = ['info', 'warn', 'error'] as const satisfies readonly LogLevel[];
/** Longest line recorded; longer messages are cut with an ellipsis. */
export const MAX_LOG_LINE = 500;

export const log = defineStep({
  kind: 'log',
  schema: z
    .strictObject({
      message: celSchema().meta({ description: 'CEL giving the line (a string).' }),
      level: z.enum(LEVELS).nullish().meta({ description: 'Default info.' }),
    })
    .meta({ id: 'LogStep', description: 'Writes one line to the run’s history and the worker’s log.' }),
  async run(body, effects) {
    const { message } = await effects.evaluate({ message: body.message }, 'evaluate log');
    if (typeof message !== 'string')
      throw new StepError(`log.message: must evaluate to a string, got ${describeValue(message)}`);
    const line = message.length > MAX_LOG_LINE ? `${message.slice(0, MAX_LOG_LINE)}…` : message;
    const level = body.level ?? 'info';
    await effects.annotate(level, line);
    return { level, message: line };
  },
  // The history holds the line the annotation recorded (the level is the step's).
  outputFromHistory(body, effects) {
    const line = effects.find((e) => e.kind === 'annotate')?.result;
    return isObject(line) ? { level: body.level ?? 'info', message: line.line } : null;
  },
});
