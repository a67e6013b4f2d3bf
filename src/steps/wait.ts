/** `wait`: a durable timer; the run parks (status WAITING) and resumes after the duration, across restarts. */
import { z } from 'zod';
import { parseDuration } from '../duration';
import { defineStep, durationWithin, StepError } from './kind';

/** Longest wait a step may ask for: one year. */
export const MAX_WAIT_SECONDS = 366 * 24 * 3600;

export const wait = defineStep({
  kind: 'wait',
  parks: true,
  schema: z
    .object({
      duration: durationWithin(MAX_WAIT_SECONDS, '"3600s"').meta({
        description: 'Protobuf-JSON duration, e.g. "3600s"; positive, at most one year.',
      }),
    })
    .meta({ id: 'WaitStep' }),
  async run(body, effects) {
    const ms = parseDuration(body.duration);
    if (ms === undefined)
      throw new StepError(`wait.duration: ${JSON.stringify(body.duration)} is not a duration such as "3600s"`);
    effects.park('WAITING');
    if (ms > 0) await effects.sleep(ms, `wait ${body.duration}`);
    return { duration: body.duration };
  },
  // The timer is all the history holds of a wait: its output is its duration.
  outputFromHistory: (body) => ({ duration: body.duration }),
});
