/**
 * `notify`: posts a message to a Slack-compatible incoming webhook: `{"text": <text>}`, JSON. The
 * webhook's URL carries its token, so it is a named outbound secret (`webhook`), bound to its
 * origin like every secret (`allowedOrigins`); the notify activity (activities/notify.ts) opens it
 * and posts through the outbound policy, with the call's Idempotency-Key. Output: `{status, text}`.
 */
import { z } from 'zod';
import { celSchema, defineEffect, defineStep, describeValue, SECRET_NAME } from './kind';
import { StepError } from '../errors';

/** Longest message posted; longer texts are cut with an ellipsis. */
export const MAX_NOTIFY_TEXT = 4000;
/** Deadline of the post, and the time the activity gets. */
export const NOTIFY_TIMEOUT_MS = 10_000;

export interface NotifyRequest {
  /** The named secret whose value is the incoming webhook's URL. */
  webhook: string;
  text: string;
}

export const notifyEffect = defineEffect<NotifyRequest>()('notify', { timeoutMs: () => NOTIFY_TIMEOUT_MS + 5_000 });

export const notify = defineStep({
  kind: 'notify',
  retryable: true,
  schema: z
    .strictObject({
      webhook: z
        .string({ error: 'must name a secret: ^[a-z][a-z0-9_]{0,62}$' })
        .regex(SECRET_NAME, { error: 'must name a secret: ^[a-z][a-z0-9_]{0,62}$' })
        .meta({
          description:
            'The named outbound secret whose value is the incoming webhook URL (it must exist and allow the URL’s origin).',
        }),
      text: celSchema().meta({ description: 'CEL giving the message (a string).' }),
    })
    .meta({
      id: 'NotifyStep',
      description: 'Posts {"text": …} to a Slack-compatible incoming webhook kept as a named secret.',
    }),
  effect: notifyEffect,
  sendsCallKey: true,
  async run(body, effects) {
    const { text } = await effects.evaluate({ text: body.text }, 'evaluate notify');
    if (typeof text !== 'string' || text === '')
      throw new StepError(`notify.text: must evaluate to a non-empty string, got ${describeValue(text)}`);
    return effects.perform(notifyEffect, {
      webhook: body.webhook,
      text: text.length > MAX_NOTIFY_TEXT ? `${text.slice(0, MAX_NOTIFY_TEXT)}…` : text,
    });
  },
  secretReads: (body) => [{ field: 'webhook', name: body.webhook }],
});
