/**
 * The call of a grant's provisioning webhook (docs/api.md#provisioning-webhooks): one POST of the
 * grant, its user and its entitlement, with `Idempotency-Key` and `webhook-id` stable per grant,
 * phase, step and attempt (the service's own retries and a crashed worker's repeat send the same
 * value), Standard Webhooks signature headers when the webhook names a signing secret, and a
 * single-use callbackUrl whose token is derived from the same key (only its hash is stored). 5xx,
 * 429 and network errors throw and are retried by the workflow's policy; any other answer fails.
 */
import { createHmac } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import type { Db } from '../src/store/db';
import type { SecretBox } from '../src/crypto/secret-box';
import { findProvisioningWebhook, recordCallbackToken } from '../src/store/provisioning-webhooks';
import { sealedOutboundSecrets } from '../src/store/outbound-secrets';
import { findUser } from '../src/store/users';
import { findEntitlementById } from '../src/store/entitlements';
import { toAppEntitlement } from '../src/domain/entitlement-record';
import {
  callWebhookId,
  finishProvisioningCall,
  recordCallStarted,
  toGrant,
  type GrantEngine,
} from '../src/domain/grants';
import { callbackTokenHash } from '../src/domain/provisioning-webhooks';
import { signingKey } from '../src/webhooks/standard-webhooks';
import type { GrantActivities, ProvisioningCall } from '../src/contract/activities';
import { openSecret, postJson } from './call-webhook';

export const PROVISIONING_WEBHOOK_RETRYABLE = 'ProvisioningWebhookRetryable';
const CALL_TIMEOUT_MS = 30_000;

export interface ProvisioningWebhookDeps {
  db: Db;
  /** Tells grants' workflows of what a finished call changed (a delegated parent, revoked children). */
  engine: GrantEngine;
  allowPrivateOutbound: boolean;
  secretBox?: SecretBox;
  /** BASE_URL: the callbackUrl's origin; without it calls carry `callbackUrl: null`. */
  baseUrl?: string;
}

/** The stable key of one call. */
export function provisioningCallKey(grantId: string, call: ProvisioningCall): string {
  return `grant-${grantId}-${call.phase}-${call.step || 'policy'}-${call.attempt}`;
}

export function createProvisioningWebhookActivities(
  deps: ProvisioningWebhookDeps,
): Pick<GrantActivities, 'callProvisioningWebhook' | 'finishProvisioningCall'> {
  return {
    finishProvisioningCall: ({ grantId, outcome, ...call }) =>
      finishProvisioningCall(deps.db, deps.engine, grantId, call, outcome),

    async callProvisioningWebhook(input) {
      const { grantId: _grantId, ...call } = input;
      const row = await recordCallStarted(deps.db, input.grantId, call);
      if (!row) return { status: 'failed', error: 'the grant no longer exists' };
      const webhookId = callWebhookId(row, call);
      const webhook = await findProvisioningWebhook(deps.db, webhookId);
      if (!webhook) return { status: 'failed', error: `provisioning webhook "${webhookId}" does not exist` };
      const origin = new URL(webhook.url).origin;
      const key = provisioningCallKey(row.id, call);

      let callbackUrl: string | null = null;
      if (deps.secretBox && deps.baseUrl) {
        const token = createHmac('sha256', deps.secretBox.deriveKey('provisioning-callback'))
          .update(key)
          .digest('base64url');
        await recordCallbackToken(deps.db, {
          hash: callbackTokenHash(token),
          grantId: row.id,
          phase: call.phase,
          step: call.step,
          attempt: call.attempt,
        });
        callbackUrl = `${deps.baseUrl.replace(/\/$/, '')}/api/v1/provisioning/callbacks/${token}`;
      }
      const signingKeys: Buffer[] = [];
      if (webhook.signingSecret) {
        if (!deps.secretBox) {
          throw ApplicationFailure.create({
            type: PROVISIONING_WEBHOOK_RETRYABLE,
            message: `signing secret "${webhook.signingSecret}" cannot be opened on this worker`,
          });
        }
        const sealed = await sealedOutboundSecrets(deps.db, [webhook.signingSecret]);
        signingKeys.push(signingKey(openSecret(sealed, deps.secretBox, webhook.signingSecret, 'signingSecret')));
      }
      const user = await findUser(deps.db, row.userId);
      const entitlement = await findEntitlementById(deps.db, row.appEntitlementId);
      const body = {
        type: call.phase === 'provision' ? 'grant.provision' : 'grant.deprovision',
        grant: toGrant(row),
        user: user ?? null,
        appEntitlement: entitlement ? toAppEntitlement(entitlement) : null,
        callbackUrl,
      };
      try {
        const answer = await postJson(
          { url: webhook.url, headers: {}, body, timeoutMs: CALL_TIMEOUT_MS },
          deps.allowPrivateOutbound,
          { key, signingKeys },
        );
        if (answer.status === 202 && callbackUrl !== null) return { status: 'accepted' };
        // Recorded here, not by a second activity: one round trip less on every call answered at once.
        const step = await finishProvisioningCall(deps.db, deps.engine, row.id, call, { ok: true });
        return { status: 'done', step };
      } catch (err) {
        const failure = err instanceof ApplicationFailure ? err : undefined;
        const status = (failure?.details?.[0] as { status?: number } | undefined)?.status;
        const what = status === undefined ? 'could not be reached' : `answered HTTP ${status}`;
        const message = `provisioning webhook ${origin} ${what}`;
        if (failure && failure.nonRetryable) {
          const step = await finishProvisioningCall(deps.db, deps.engine, row.id, call, { ok: false, error: message });
          return { status: 'failed', error: message, step };
        }
        throw ApplicationFailure.create({ type: PROVISIONING_WEBHOOK_RETRYABLE, message, nonRetryable: false });
      }
    },
  };
}
