/**
 * `waitForApproval`: the run parks (status WAITING_FOR_APPROVAL) until a person approves or rejects
 * the step through the API (a Temporal Update on the run), or until the optional timeout, when
 * `onTimeout` decides. The output, `{decision, by, at, comment}`, is readable by later steps
 * (`ctx.steps.<id>.decision` is `approved`, `rejected` or `timed_out`).
 *
 * A rejection (or a timeout with `onTimeout: reject`) ends the run as FAILED with reason
 * `rejected`, unless the step says `onReject: continue`; then the run goes on and later steps branch
 * with `when` on the decision. Failing is the default because a rejection that silently continued
 * would run the very effects a person just refused.
 */
import { z } from 'zod';
import { parseDuration } from '../duration';
import { defineStep, durationWithin, StepError } from './kind';

/** Longest approval timeout: 30 days. */
export const MAX_APPROVAL_TIMEOUT_SECONDS = 30 * 24 * 3600;

/** Failure reason of a run ended by a rejection. */
export const REJECTED = 'rejected';

const ON_TIMEOUT = ['reject', 'approve'] as const;
const ON_REJECT = ['fail', 'continue'] as const;

export const waitForApproval = defineStep({
  kind: 'waitForApproval',
  parks: true,
  schema: z
    .strictObject({
      timeout: durationWithin(MAX_APPROVAL_TIMEOUT_SECONDS, '"86400s"')
        .nullish()
        .meta({
          description: `How long to wait for a decision; at most ${MAX_APPROVAL_TIMEOUT_SECONDS}s. Unset: until someone decides.`,
        }),
      onTimeout: z.enum(ON_TIMEOUT).nullish().meta({ description: 'What a timeout decides; default reject.' }),
      onReject: z.enum(ON_REJECT).nullish().meta({
        description:
          'fail (default): a rejection ends the run as FAILED; continue: later steps branch on the decision.',
      }),
    })
    .meta({
      id: 'WaitForApprovalStep',
      description: 'Parks the run until a person approves or rejects it (or the timeout decides).',
    }),
  async run(body, effects) {
    const timeoutMs = body.timeout ? parseDuration(body.timeout) : undefined;
    effects.park('WAITING_FOR_APPROVAL');
    const decided = await effects.awaitApproval(
      timeoutMs,
      body.timeout ? `waiting for approval, up to ${body.timeout}` : 'waiting for approval',
    );
    const output = decided ?? { decision: 'timed_out' as const, by: null, at: null, comment: null };
    const approved =
      output.decision === 'approved' || (output.decision === 'timed_out' && body.onTimeout === 'approve');
    if (!approved && (body.onReject ?? 'fail') === 'fail') {
      throw new StepError(REJECTED, { ...output });
    }
    return { ...output };
  },
});
