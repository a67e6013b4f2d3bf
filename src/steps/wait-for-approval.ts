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
 *
 * `title` and `details` say what the approver decides on: evaluated when the step starts waiting
 * (an error fails the step, naming `title` or `details.<label>`), kept on the run for the inbox
 * and the run page with when it was asked and when the timeout decides.
 */
import { z } from 'zod';
import { parseDuration } from '../duration';
import {
  boundedRecord,
  celSchema,
  defineStep,
  describeValue,
  durationWithin,
  StepError,
  type ApprovalAsk,
} from './kind';

/** Longest approval timeout: 30 days. */
export const MAX_APPROVAL_TIMEOUT_SECONDS = 30 * 24 * 3600;

/** Failure reason of a run ended by a rejection. */
export const REJECTED = 'rejected';

/** Longest title an approver reads; a longer one is cut, its `…` included. */
export const MAX_APPROVAL_TITLE = 200;
/** Most details, the longest label and the longest value (cut, its `…` included). */
export const MAX_APPROVAL_DETAILS = 20;
export const MAX_APPROVAL_LABEL = 60;
export const MAX_APPROVAL_VALUE = 500;

const LABEL_ERROR = `each label must be 1 to ${MAX_APPROVAL_LABEL} characters`;

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
      title: celSchema()
        .nullish()
        .meta({
          description: `What the approver decides on, e.g. \`'Offboard ' + ctx.trigger.email\` (a CEL string; at most ${MAX_APPROVAL_TITLE} characters are shown). Unset: "<automation name>: <step id>".`,
        }),
      details: boundedRecord(
        z.string({ error: LABEL_ERROR }).min(1, { error: LABEL_ERROR }).max(MAX_APPROVAL_LABEL, { error: LABEL_ERROR }),
        celSchema(),
        { max: MAX_APPROVAL_DETAILS },
        `must have at most ${MAX_APPROVAL_DETAILS} labels of 1 to ${MAX_APPROVAL_LABEL} characters`,
      )
        .nullish()
        .meta({
          description: `Label → CEL expression, shown in the order written (a string as it is, any other value as its JSON; at most ${MAX_APPROVAL_VALUE} characters each).`,
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
      approvalAsk(body),
    );
    const output = decided ?? { decision: 'timed_out' as const, by: null, at: null, comment: null };
    const approved =
      output.decision === 'approved' || (output.decision === 'timed_out' && body.onTimeout === 'approve');
    if (!approved && (body.onReject ?? 'fail') === 'fail') {
      throw new StepError(REJECTED, { ...output });
    }
    return { ...output };
  },
  // The history holds the evaluation of the title and details, not the decision (an update).
  outputFromHistory: () => null,
});

/** The expressions of a step's title and details, and how their values read. */
export function approvalAsk(body: {
  title?: string | null | undefined;
  details?: Record<string, string> | null | undefined;
}): ApprovalAsk {
  const labels = Object.keys(body.details ?? {});
  const expressions: Record<string, string> = {};
  if (body.title) expressions.title = body.title;
  for (const label of labels) expressions[`details.${label}`] = body.details![label]!;
  return {
    expressions,
    present(values, defaultTitle) {
      let title = defaultTitle;
      if (body.title) {
        const value = values.title;
        if (typeof value !== 'string') throw new StepError(`title: must be a string, not ${describeValue(value)}`);
        title = value;
      }
      return {
        title: cut(title, MAX_APPROVAL_TITLE),
        details: labels.map((label) => ({ label, value: cut(shown(values[`details.${label}`]), MAX_APPROVAL_VALUE) })),
      };
    },
  };
}

/** A string as it is, any other value as its JSON (`3`, not `3.0`; nothing as `null`). */
function shown(value: unknown): string {
  return typeof value === 'string' ? value : (JSON.stringify(value) ?? 'null');
}

/** At most `max` characters (code points), the `…` of a cut one included. */
function cut(text: string, max: number): string {
  const chars = [...text];
  return chars.length <= max ? text : `${chars.slice(0, max - 1).join('')}…`;
}
