/** Automations API (super_admin only): create, read, list, update, delete, publish, rotate secret, dry run. */
import type Router from '@koa/router';
import type { AppDeps } from '../context';

import * as api from '../../domain/api-schemas';
import * as gov from '../../domain/schemas';
import { dryRunSteps } from '../../domain/automation-dry-run';
import { dryRunFlowControl } from '../../domain/flow-control';
import { existingSecretsReadBy } from '../../domain/outbound-secrets';
import { automationView, changeAutomationState, createAutomation, getAutomation, listAutomations, DEFAULT_ROTATION_GRACE_SECONDS, gracePeriodSeconds, rotateSigningSecret, updateAutomation, type AutomationOptions, type AutomationWithPublishedVersion } from '../../domain/automations';
import { ITEM_READ_ERRORS, ITEM_WRITE_ERRORS, mountOperations, operation, READ_ERRORS, WRITE_ERRORS, type Grant, exactRouter } from '../operation';

const AUTOMATIONS: Grant = { area: 'automations', mode: 'write' };
const TAG = 'Automations';
const COLLECTION = '/api/v1/automations';
const ITEM = `${COLLECTION}/{id}` as const;

const optionsOf = (deps: AppDeps, actor: string): AutomationOptions => ({ authenticators: deps.config, secretBox: deps.secretBox, actor });
const view = (deps: AppDeps, record: AutomationWithPublishedVersion): api.Automation => automationView(record, deps.config.baseUrl);

const stateChange = (action: 'publish' | 'unpublish', summary: string) =>
  operation({
    method: 'post', path: `${ITEM}/${action}`, operationId: `automations.${action}`, tag: TAG, access: AUTOMATIONS,
    // Publishing re-checks the secrets the steps read (400 when one was deleted or no longer allows the step's origin).
    summary, ok: api.AutomationResponse, errors: action === 'publish' ? ITEM_WRITE_ERRORS : ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({ automation: view(deps, (await changeAutomationState(deps.db, input.params.id, action, input.actor))!) }),
  });

// Bodies are validated by the domain (src/domain/automations.ts): it compiles every CEL
// expression and names the step and field of each error; the schemas document the shapes.
export const AUTOMATION_OPERATIONS = [
  operation({
    method: 'post', path: COLLECTION, operationId: 'automations.create', tag: TAG, access: AUTOMATIONS,
    summary: 'Create an automation (super_admin). Every expression is compiled as CEL; errors name the step and field.',
    body: { schema: api.CreateAutomationRequest, required: true, validation: 'handler' }, ok: api.AutomationWriteResponse, errors: WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const { record, signingSecret } = await createAutomation(deps.db, await input.body(), optionsOf(deps, input.actor));
      return { automation: view(deps, record), ...(signingSecret ? { signingSecret } : {}) };
    },
  }),
  operation({
    method: 'get', path: COLLECTION, operationId: 'automations.list', tag: TAG, paged: true, access: AUTOMATIONS,
    summary: 'List automations (super_admin).', ok: api.AutomationList, errors: READ_ERRORS,
    handle: async (input, _ctx, deps) => {
      const page = await listAutomations(deps.db, deps.pageTokens, input.page);
      return { list: page.items.map((record) => ({ automation: view(deps, record) })), nextPageToken: page.nextPageToken };
    },
  }),
  operation({
    method: 'get', path: ITEM, operationId: 'automations.get', tag: TAG, access: AUTOMATIONS,
    summary: 'Get an automation (super_admin).', ok: api.AutomationResponse, errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => ({ automation: view(deps, await getAutomation(deps.db, input.params.id)) }),
  }),
  operation({
    method: 'post', path: ITEM, operationId: 'automations.update', tag: TAG, access: AUTOMATIONS,
    summary: 'Update an automation (super_admin); a trigger switched to HMAC returns a new signingSecret.',
    body: { schema: api.UpdateAutomationRequest, required: true, validation: 'handler' }, ok: api.AutomationWriteResponse, errors: ITEM_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const { record, signingSecret } = await updateAutomation(deps.db, input.params.id, await input.body(), optionsOf(deps, input.actor));
      return { automation: view(deps, record), ...(signingSecret ? { signingSecret } : {}) };
    },
  }),
  operation({
    method: 'delete', path: ITEM, operationId: 'automations.delete', tag: TAG, access: AUTOMATIONS,
    summary: 'Delete an automation (super_admin).', ok: gov.EmptyResponse, errors: ITEM_READ_ERRORS,
    handle: async (input, _ctx, deps) => {
      await changeAutomationState(deps.db, input.params.id, 'delete', input.actor);
      return {};
    },
  }),
  stateChange('publish', 'Publish an automation: its webhook listener starts accepting events.'),
  stateChange('unpublish', 'Unpublish an automation.'),
  operation({
    method: 'post', path: `${ITEM}/test`, operationId: 'automations.test', tag: TAG, access: AUTOMATIONS,
    summary: 'Dry run: evaluate every step over a sample payload, without any effect.',
    // An unknown automation is a 404 before the body is read.
    body: { schema: api.DryRunRequest, required: true, validation: 'schema' }, ok: api.DryRunResponse, errors: ITEM_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const record = await getAutomation(deps.db, input.params.id);
      const { payload } = await input.body();
      const existingSecrets = await existingSecretsReadBy(deps.db, record.steps);
      const steps = await dryRunSteps(record.steps, payload, { allowInsecureOutbound: deps.config.allowPrivateOutbound, existingSecrets });
      return { ...steps, flowControl: dryRunFlowControl(record.flow, payload) };
    },
  }),
  operation({
    method: 'post', path: `${ITEM}/trigger/rotate-secret`, operationId: 'automations.rotateSecret', tag: TAG, access: AUTOMATIONS,
    summary: 'Rotate the HMAC signing secret (400 for a JWT trigger); the old one verifies during gracePeriod (default 24 h).',
    body: { schema: api.RotateSecretRequest, required: false, validation: 'schema' }, ok: api.RotateSecretResponse, errors: [400, 401, 403, 404, 500],
    handle: async (input, _ctx, deps) => {
      const { gracePeriod } = await input.body();
      const seconds = gracePeriod === undefined ? DEFAULT_ROTATION_GRACE_SECONDS : gracePeriodSeconds(gracePeriod);
      return rotateSigningSecret(deps.db, input.params.id, seconds, optionsOf(deps, input.actor));
    },
  }),
];

export function createAutomationsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, AUTOMATION_OPERATIONS);
}
