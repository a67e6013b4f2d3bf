/**
 * The automation the webhook and end-to-end figures use, created through the API: setVariables →
 * createEntitlementOwner (a service user owning an entitlement, both made through the API) →
 * setVariables. When the governance routes or the ownership step are missing, it falls back to
 * three setVariables steps and says so.
 */
import { hmacEvent } from '../test/helpers/signing';
import { request } from './util';

export interface BenchAutomation {
  id: string;
  /** Path of the listener URL, e.g. /api/v1/webhooks/incoming/<id>. */
  listenerPath: string;
  signingSecret: string;
  /** The three steps, e.g. "setVariables, createEntitlementOwner, setVariables". */
  shape: string;
  /** Why the fallback was used; undefined when the ownership step runs. */
  fallback: string | undefined;
  /** The automation has its createEntitlementOwner step, and `body` names the ownership it records. */
  ownership: boolean;
  /** A 1 KB JSON body for this automation. */
  body: string;
}

const BODY_BYTES = 1024;

/** A JSON body of exactly 1 KB carrying what the steps read. */
export function webhookBody(fields: Record<string, unknown>): string {
  const base = {
    user: { email: 'dana@acme.com', name: 'Dana Scully', id: 'u-1842' },
    count: 7,
    tags: ['new', 'eu', 'vip', 'annual'],
    ...fields,
    padding: '',
  };
  const size = Buffer.byteLength(JSON.stringify(base));
  if (size > BODY_BYTES) throw new Error(`webhook body is already ${size} bytes`);
  return JSON.stringify({ ...base, padding: 'x'.repeat(BODY_BYTES - size) });
}

/**
 * Creates and publishes the automation. `withOwnership: false` makes the three-setVariables
 * variant on purpose (a diagnostic of the end-to-end figure), without calling it a fallback.
 */
export async function createBenchAutomation(
  apiUrl: string,
  token: string,
  options: { withOwnership: boolean } = { withOwnership: true },
): Promise<BenchAutomation> {
  const first = {
    id: 'vars',
    setVariables: { who: 'ctx.trigger.user.email', vip: 'ctx.trigger.tags.exists(t, t == "vip")' },
  };
  let fallback: string | undefined;
  let middle: Record<string, unknown> | undefined;
  let third: Record<string, unknown> = {
    id: 'done',
    setVariables: { owner: 'ctx.steps.own.userId', since: 'ctx.steps.own.createdAt' },
  };
  let fields: Record<string, unknown> = {};

  const owner = options.withOwnership ? await prepareOwnership(apiUrl, token) : '';
  if (owner === '') {
    // three setVariables steps on purpose
  } else if (typeof owner === 'string') {
    fallback = owner;
  } else {
    fields = { serviceAccount: owner.userId, appId: owner.appId, entitlementId: owner.entitlementId };
    middle = {
      id: 'own',
      createEntitlementOwner: {
        userId: 'ctx.trigger.serviceAccount',
        roleSlug: '"owner"',
        appId: 'ctx.trigger.appId',
        entitlementId: 'ctx.trigger.entitlementId',
      },
    };
  }
  let created = middle ? await postAutomation(apiUrl, token, [first, middle, third]) : undefined;
  if (created && created.status !== 200) {
    fallback = `the API refused the createEntitlementOwner step (${created.status}: ${String(created.body.message)})`;
    created = undefined;
  }
  if (!created) {
    middle = { id: 'mid', setVariables: { count: 'ctx.trigger.count', plan: 'ctx.trigger.user.name' } };
    third = { id: 'done', setVariables: { who: 'ctx.steps.vars.who', count: 'ctx.steps.mid.count' } };
    created = await postAutomation(apiUrl, token, [first, middle, third]);
    if (created.status !== 200) throw new Error(`create automation: ${created.status} ${JSON.stringify(created.body)}`);
  }
  const automation = created.body.automation as { id: string; trigger: { incomingWebhook: { url: string } } };
  const published = await request('POST', `${apiUrl}/api/v1/automations/${automation.id}/publish`, { token });
  if (published.status !== 200)
    throw new Error(`publish automation: ${published.status} ${JSON.stringify(published.body)}`);
  return {
    id: automation.id,
    listenerPath: new URL(automation.trigger.incomingWebhook.url).pathname,
    signingSecret: String(created.body.signingSecret),
    shape: !options.withOwnership
      ? 'setVariables ×3'
      : fallback
        ? 'setVariables ×3 (fallback)'
        : 'setVariables, createEntitlementOwner, setVariables',
    fallback,
    ownership: options.withOwnership && fallback === undefined,
    body: webhookBody(fields),
  };
}

function postAutomation(apiUrl: string, token: string, steps: Array<Record<string, unknown>>) {
  return request('POST', `${apiUrl}/api/v1/automations`, {
    token,
    body: JSON.stringify({
      displayName: 'Bench: grant ownership',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps,
    }),
  });
}

/** A service user, an app and an entitlement; or the reason they could not be made. */
async function prepareOwnership(
  apiUrl: string,
  token: string,
): Promise<{ userId: string; appId: string; entitlementId: string } | string> {
  const user = await request('POST', `${apiUrl}/api/v1/users`, {
    token,
    body: JSON.stringify({
      displayName: 'Bench service account',
      email: 'svc-bench@acme.com',
      type: 'USER_TYPE_SERVICE',
    }),
  });
  if (user.status !== 200) return `POST /api/v1/users answered ${user.status}`;
  const app = await request('POST', `${apiUrl}/api/v1/apps`, {
    token,
    body: JSON.stringify({ displayName: 'Bench app' }),
  });
  if (app.status !== 200) return `POST /api/v1/apps answered ${app.status}`;
  const appId = String(app.body.app.id);
  const entitlement = await request('POST', `${apiUrl}/api/v1/apps/${appId}/entitlements`, {
    token,
    body: JSON.stringify({ displayName: 'Bench admin', slug: 'bench-admin' }),
  });
  if (entitlement.status !== 200) return `POST /api/v1/apps/{id}/entitlements answered ${entitlement.status}`;
  return { userId: String(user.body.user.id), appId, entitlementId: String(entitlement.body.appEntitlement.id) };
}

/** POSTs the automation's body as one new signed event (a fresh event id) to the API at `apiUrl`. */
export function postEvent(apiUrl: string, automation: BenchAutomation): ReturnType<typeof request> {
  const { body, headers } = hmacEvent(automation.signingSecret, undefined, { body: automation.body });
  return request('POST', `${apiUrl}${automation.listenerPath}`, { body, headers });
}
