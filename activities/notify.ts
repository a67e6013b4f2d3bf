/**
 * The notify activity: posts `{"text": …}` to the incoming webhook whose URL is the named secret
 * `webhook`, with the callWebhook activity's machinery (activities/call-webhook.ts): the secret is
 * opened from the store, its URL must pass the outbound policy (https, public address; checked
 * again at connect time) and be at an origin the secret allows (`allowedOrigins`), and the post
 * carries the call's key as `Idempotency-Key`. Messages name the field, the secret and the origin,
 * never the URL's path (the token). The output is `{status, text}`: not the response, which could
 * echo the URL.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { SecretBox } from '../src/crypto/secret-box';
import type { Queryable } from '../src/store/db';
import { sealedOutboundSecrets } from '../src/store/outbound-secrets';
import { callKey } from '../src/webhooks/standard-webhooks';
import { NOTIFY_TIMEOUT_MS, type NotifyRequest } from '../src/steps/notify';
import type { EffectContext } from '../src/steps';
import { activityRun, CALL_WEBHOOK_SECRET_UNAVAILABLE, openSecret, postJson, refused, urlProblem } from './call-webhook';
import { checkSecretOrigins } from './secret-origin-check';

export type NotifyInput = NotifyRequest & EffectContext;

export interface NotifyDeps {
  allowPrivateOutbound: boolean;
  db: Queryable;
  secretBox?: SecretBox;
}

export function createNotifyActivities(deps: NotifyDeps) {
  return {
    async notify(input: NotifyInput): Promise<{ status: number; text: string }> {
      return relabelled(async () => {
        if (!deps.secretBox) {
          throw ApplicationFailure.create({ type: CALL_WEBHOOK_SECRET_UNAVAILABLE, message: 'notify: this worker has no secret key to open named secrets', nonRetryable: false });
        }
        const sealed = await sealedOutboundSecrets(deps.db, [input.webhook]);
        const url = openSecret(sealed, deps.secretBox, input.webhook, 'webhook');
        const problem = urlProblem(url, deps.allowPrivateOutbound);
        if (problem !== undefined) throw refused(`webhook: secret "${input.webhook}" holds a URL the outbound policy refuses: ${problem}`);
        await checkSecretOrigins(deps.db, new URL(url).origin, [{ name: input.webhook, field: 'webhook' }]);
        const key = callKey(input.keysOf ?? activityRun(), input.stepId);
        const response = await postJson({ url, body: { text: input.text }, headers: {}, timeoutMs: NOTIFY_TIMEOUT_MS }, deps.allowPrivateOutbound, { key, signingKeys: [] });
        return { status: response.status, text: input.text };
      });
    },
  };
}

/** The shared machinery's failures, named for this step (`notify: …` rather than `callWebhook: …`). */
async function relabelled<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || !err.message.startsWith('callWebhook: ')) throw err;
    throw ApplicationFailure.create({
      type: err.type ?? undefined,
      message: `notify: ${err.message.slice('callWebhook: '.length)}`,
      nonRetryable: err.nonRetryable ?? false,
      details: err.details ? [...err.details] : [],
      ...(err.nextRetryDelay !== undefined && err.nextRetryDelay !== null ? { nextRetryDelay: err.nextRetryDelay } : {}),
    });
  }
}
