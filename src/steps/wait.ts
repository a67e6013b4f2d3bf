/** `wait`: a durable timer; the run parks (status WAITING) and resumes after the duration, across restarts. */
import { z } from 'zod';
import { parseDuration } from '../../workflows/duration';
import { defineStep, durationSchema } from './kind';
import { StepError } from '../errors';

/** Longest wait a step may ask for: one year. */
export const MAX_WAIT_SECONDS = 366 * 24 * 3600;

export const wait = defineStep({
  kind: 'wait',
  parks: true,
  schema: z
    .object({ duration: durationSchema().meta({ description: 'Protobuf-JSON duration, e.g. "3600s"; positive, at most one year.' }) })
    .meta({ id: 'WaitStep' }),
  validate(body, check) {
    const duration = body.duration;
    const ms = typeof duration === 'string' ? parseDuration(duration) : undefined;
    if (ms === undefined || ms <= 0 || ms > MAX_WAIT_SECONDS * 1000) {
      check.violation(`${check.at}.duration`, `must be a positive duration such as "3600s", at most ${MAX_WAIT_SECONDS}s`);
    }
    return { duration: duration as string };
  },
  async run(body, effects) {
    const ms = parseDuration(body.duration);
    if (ms === undefined) throw new StepError(`wait.duration: ${JSON.stringify(body.duration)} is not a duration such as "3600s"`);
    effects.park('WAITING');
    if (ms > 0) await effects.sleep(ms, `wait ${body.duration}`);
    return { duration: body.duration };
  },
});
