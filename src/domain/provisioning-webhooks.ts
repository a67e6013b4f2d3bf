/**
 * Provisioning webhooks (docs/api.md#provisioning-webhooks): the receivers a `webhook`
 * ProvisionPolicy names, with the same outbound rules as callWebhook (https to public addresses
 * unless the deployment allows private targets) and an optional named signing secret that must
 * allow the URL's origin. And the single-use callback of a call answered 202.
 */
import { createHash } from 'node:crypto';
import { newId } from '../ids';
import type { Db, Queryable } from '../store/db';
import * as store from '../store/provisioning-webhooks';
import { allowedOriginsOf } from '../store/secret-origins';
import { validateOutboundUrl } from '../outbound/policy';
import { FailedPreconditionError, invalidArgument, notFound } from '../errors';
import { isString, pageOf } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import { originRefusal, targetOrigin } from './secret-origins';
import type { RunEngine } from './engine';

export interface ProvisioningWebhook {
  id: string;
  displayName: string;
  url: string;
  signingSecret: string | null;
  createdAt: string;
}

const toView = (row: store.ProvisioningWebhookRow): ProvisioningWebhook => ({ ...row });

export async function createProvisioningWebhook(
  db: Db,
  body: { displayName: string; url: string; signingSecret?: string | null | undefined },
  allowPrivate: boolean,
): Promise<ProvisioningWebhook> {
  const problem = validateOutboundUrl(body.url, allowPrivate);
  if (problem !== undefined) throw invalidArgument({ field: 'url', description: problem });
  const secret = body.signingSecret ?? null;
  if (secret !== null) {
    const allowed = (await allowedOriginsOf(db, [secret])).get(secret);
    if (!allowed) throw invalidArgument({ field: 'signingSecret', description: `secret "${secret}" does not exist` });
    const origin = targetOrigin(body.url)!;
    if (!allowed.includes(origin)) {
      throw invalidArgument({ field: 'signingSecret', description: originRefusal(secret, origin, allowed) });
    }
  }
  return toView(
    await store.insertProvisioningWebhook(db, {
      id: newId(),
      displayName: body.displayName,
      url: body.url,
      signingSecret: secret,
    }),
  );
}

export async function getProvisioningWebhook(db: Queryable, id: string): Promise<ProvisioningWebhook> {
  const row = await store.findProvisioningWebhook(db, id);
  if (!row) throw notFound('provisioning webhook', id);
  return toView(row);
}

export function listProvisioningWebhooks(
  db: Db,
  tokens: PageTokens,
  page: PageRequest,
): Promise<Page<ProvisioningWebhook>> {
  return pageOf(tokens, page, {
    name: 'provisioning_webhooks',
    filter: {},
    isCursor: isString,
    fetch: (after, limit) => store.listProvisioningWebhooks(db, after, limit),
    keyOf: (row) => row.id,
    toItem: toView,
  });
}

/** Deletes the webhook; 404 unknown, 409 while a live entitlement's policy names it. */
export async function deleteProvisioningWebhook(db: Db, id: string): Promise<void> {
  await db.transaction(async (tx) => {
    if (!(await store.findProvisioningWebhook(tx, id))) throw notFound('provisioning webhook', id);
    if (await store.provisioningWebhookInUse(tx, id)) {
      throw new FailedPreconditionError('an entitlement policy names this provisioning webhook');
    }
    await store.deleteProvisioningWebhook(tx, id);
  });
}

export function callbackTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

/**
 * A receiver's callback: uses the token once and tells the grant's workflow. 404 for an unknown
 * or used token (nothing changes); 503 when the engine cannot be told (the token stays usable).
 */
export async function receiveCallback(
  db: Db,
  engine: RunEngine,
  token: string,
  outcome: { status: 'done' | 'failed'; message?: string | null | undefined },
): Promise<void> {
  await db.transaction(async (tx) => {
    const used = await store.useCallbackToken(tx, callbackTokenHash(token), {
      status: outcome.status,
      message: outcome.message ?? null,
    });
    if (!used) throw notFound('callback');
    await engine.signalGrant(used.grantId, {
      type: 'callback',
      phase: used.phase as 'provision' | 'deprovision',
      step: used.step,
      attempt: used.attempt,
      status: outcome.status,
      message: outcome.message ?? null,
    });
  });
}
