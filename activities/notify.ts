/**
 * The notify activity: posts `{"text": …}` to the incoming webhook whose URL is the named secret
 * `webhook`, with the callWebhook activity's machinery (activities/call-webhook.ts): the secret is
 * opened from the store, its URL must pass the outbound policy (https, public address; checked
 * again at connect time) and be at an origin the secret allows (`allowedOrigins`), and the post
 * carries the call's key as `Idempotency-Key`. Any secret may be named (none is marked as a notify
 * URL), so no failure may tell anything of the value: every URL problem has one text naming the
 * secret only (`notifyUrlRefusal`), and the post's failures name neither the URL nor its origin.
 * The output is `{status, text}`: not the response, which could echo the URL.
 */
import { ApplicationFailure } from '@temporalio/common';
import type { SecretBox } from '../src/crypto/secret-box';
import type { Queryable } from '../src/store/db';
import { sealedOutboundSecrets } from '../src/store/outbound-secrets';
import { callKey } from '../src/webhooks/standard-webhooks';
import { NOTIFY_TIMEOUT_MS, type NotifyRequest } from '../src/steps/notify';
import type { EffectContext } from '../src/steps';
import {
  activityRun,
  CALL_WEBHOOK_HTTP_ERROR,
  CALL_WEBHOOK_NETWORK_ERROR,
  CALL_WEBHOOK_REFUSED,
  CALL_WEBHOOK_RESPONSE_TOO_LARGE,
  CALL_WEBHOOK_SECRET_UNAVAILABLE,
  MAX_RESPONSE_BYTES,
  openSecret,
  postJson,
  urlProblem,
} from './call-webhook';
import { CALL_WEBHOOK_SECRET_ORIGIN_REFUSED, checkSecretOrigins } from './secret-origin-check';

export type NotifyInput = NotifyRequest & EffectContext;

export interface NotifyDeps {
  allowPrivateOutbound: boolean;
  db: Queryable;
  secretBox?: SecretBox;
}

/**
 * The one text of every URL problem of a notify URL: not a URL, not https, credentials, a
 * non-public address (literal or resolved), an origin the secret does not allow. It names the
 * secret, never anything of its value (its origin included), so a run cannot tell what the value
 * is; the failure's type and details are the same for all of them too.
 */
export function notifyUrlRefusal(name: string): ApplicationFailure {
  return ApplicationFailure.create({
    type: CALL_WEBHOOK_REFUSED,
    message: `notify: webhook: secret "${name}" does not hold a URL this step may post to (an https URL of a public host, at an origin the secret allows)`,
    nonRetryable: true,
    details: [{ secret: name, field: 'webhook' }],
  });
}

export function createNotifyActivities(deps: NotifyDeps) {
  return {
    async notify(input: NotifyInput): Promise<{ status: number; text: string }> {
      if (!deps.secretBox) {
        throw ApplicationFailure.create({
          type: CALL_WEBHOOK_SECRET_UNAVAILABLE,
          message: 'notify: this worker has no secret key to open named secrets',
          nonRetryable: false,
        });
      }
      const sealed = await sealedOutboundSecrets(deps.db, [input.webhook]);
      const url = relabelled(() => openSecret(sealed, deps.secretBox!, input.webhook, 'webhook'));
      if (urlProblem(url, deps.allowPrivateOutbound) !== undefined) throw notifyUrlRefusal(input.webhook);
      try {
        await checkSecretOrigins(deps.db, new URL(url).origin, [{ name: input.webhook, field: 'webhook' }]);
      } catch (err) {
        if (err instanceof ApplicationFailure && err.type === CALL_WEBHOOK_SECRET_ORIGIN_REFUSED)
          throw notifyUrlRefusal(input.webhook);
        throw err;
      }
      const key = callKey(input.keysOf ?? activityRun(), input.stepId);
      try {
        const response = await postJson(
          { url, body: { text: input.text }, headers: {}, timeoutMs: NOTIFY_TIMEOUT_MS },
          deps.allowPrivateOutbound,
          {
            key,
            signingKeys: [],
          },
        );
        return { status: response.status, text: input.text };
      } catch (err) {
        throw postFailure(err, input.webhook);
      }
    },
  };
}

/** The secret's failures (missing, not openable), named for this step (`notify: …` rather than `callWebhook: …`). */
function relabelled<T>(work: () => T): T {
  try {
    return work();
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || !err.message.startsWith('callWebhook: ')) throw err;
    throw ApplicationFailure.create({
      type: err.type ?? undefined,
      message: `notify: ${err.message.slice('callWebhook: '.length)}`,
      nonRetryable: err.nonRetryable ?? false,
      details: err.details ? [...err.details] : [],
    });
  }
}

/**
 * A failure of the post, without the URL's origin (callWebhook's messages name it): a refusal at
 * connect time is the one URL text; an HTTP error keeps its status (and its retry decision); a
 * network failure or an oversized response says so without the host or the error code (a DNS
 * failure would tell the host apart).
 */
function postFailure(err: unknown, name: string): unknown {
  if (!(err instanceof ApplicationFailure)) return err;
  const same = (message: string, details: unknown[] = []): ApplicationFailure =>
    ApplicationFailure.create({
      type: err.type ?? undefined,
      message: `notify: webhook: ${message}`,
      nonRetryable: err.nonRetryable ?? false,
      details,
      ...(err.nextRetryDelay !== undefined && err.nextRetryDelay !== null
        ? { nextRetryDelay: err.nextRetryDelay }
        : {}),
    });
  switch (err.type) {
    case CALL_WEBHOOK_REFUSED:
      return notifyUrlRefusal(name);
    case CALL_WEBHOOK_HTTP_ERROR: {
      const status = (err.details?.[0] as { status?: number } | undefined)?.status;
      return same(
        `the incoming webhook answered HTTP ${status ?? 'with an error'}${status !== undefined && status >= 300 && status < 400 ? ' (redirects are not followed)' : ''}`,
        [{ status }],
      );
    }
    case CALL_WEBHOOK_NETWORK_ERROR:
      return same('the incoming webhook could not be reached, or did not answer in time');
    case CALL_WEBHOOK_RESPONSE_TOO_LARGE:
      return same(`the incoming webhook's response exceeds ${MAX_RESPONSE_BYTES} bytes`);
    default:
      return same('the post failed');
  }
}
