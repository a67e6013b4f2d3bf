/** Automations API: create, update, delete, publish, rotate secret, dry run (super_admin); read and list (admin too, never a secret). */
import type Router from '@koa/router';
import type { Context } from 'koa';
import type { AppDeps } from '../context';
import { revisionTag } from '../errors';

import * as api from '../../domain/api-schemas';
import * as gov from '../../domain/schemas';
import { dryRunSteps } from '../../domain/automation-dry-run';
import { draftUnderTest } from '../../domain/automation-validation';
import { invalidArgument, type FieldViolation } from '../../errors';
import { dryRunFlowControl } from '../../flow';
import { existingSecretsReadBy } from '../../domain/outbound-secrets';
import { breakerView } from '../../domain/circuit-breaker';
import { backfillSchedule, NEXT_RUNS, scheduleView, triggerSchedule } from '../../domain/schedules';
import { nextRunsOf } from '../../domain/schedule-dst';
import { isScheduleTrigger, validateTrigger } from '../../triggers';
import { isObject } from '../../json';
import {
  automationView,
  changeAutomationState,
  createAutomationFrom,
  getAutomation,
  listAutomations,
  DEFAULT_ROTATION_GRACE_SECONDS,
  gracePeriodSeconds,
  rotateSigningSecret,
  updateAutomationWith,
  type AutomationOptions,
  type AutomationWithPublishedVersion,
} from '../../domain/automations';
import {
  ITEM_READ_ERRORS,
  ITEM_WRITE_ERRORS,
  mountOperations,
  operation,
  READ_ERRORS,
  WRITE_ERRORS,
  type Grant,
  exactRouter,
} from '../operation';

const AUTOMATIONS: Grant = { area: 'automations', mode: 'write' };
const READ: Grant = { area: 'automations', mode: 'read' };
const TAG = 'Automations';
const COLLECTION = '/api/v1/automations';
const ITEM = `${COLLECTION}/{id}` as const;

const optionsOf = (deps: AppDeps, actor: string, expectedRevisions?: number[]): AutomationOptions => ({
  authenticators: deps.config,
  secretBox: deps.secretBox,
  actor,
  expectedRevisions,
  schedules: deps.engine,
});
const view = (deps: AppDeps, record: AutomationWithPublishedVersion): api.Automation =>
  automationView(record, deps.config.baseUrl);
/** The view of one automation with its circuit breaker's state (GET of one automation, the breaker's writes). */
export const viewWithBreaker = async (
  deps: AppDeps,
  record: AutomationWithPublishedVersion,
): Promise<api.Automation> => {
  const [breaker, schedule] = await Promise.all([
    breakerView(deps.db, record),
    scheduleView(deps.db, deps.engine, record, deps.logger),
  ]);
  return { ...automationView(record, deps.config.baseUrl, breaker), ...(schedule ? { schedule } : {}) };
};

/** `If-Match` of a conditional write: the request header documented on each operation that reads it. */
export const IF_MATCH = [
  {
    name: 'If-Match',
    required: false,
    description:
      'The ETag the caller read: when the automation has changed since, 412 and nothing changes. Without it, the write is unconditional.',
  },
];

/**
 * The revisions an `If-Match` names: undefined without the header or with `*` (any current
 * revision); the tags this service gives (a weak or foreign tag names none, so never matches).
 */
export function expectedRevisions(ctx: Context): number[] | undefined {
  const header = ctx.get('if-match').trim();
  if (header === '' || header === '*') return undefined;
  const revisions: number[] = [];
  for (const tag of header.split(',').map((part) => part.trim())) {
    const match = /^"r(\d{1,15})"$/.exec(tag);
    if (match) revisions.push(Number(match[1]));
  }
  return revisions;
}

/** Sets the answer's ETag to the record's revision and hands the record back. */
export function tagged<T extends { revision: number }>(ctx: Context, record: T): T {
  ctx.set('ETag', revisionTag(record.revision));
  return record;
}

const stateChange = (action: 'publish' | 'unpublish', summary: string) =>
  operation({
    method: 'post',
    path: `${ITEM}/${action}`,
    operationId: `automations.${action}`,
    tag: TAG,
    access: AUTOMATIONS,
    // Publishing re-checks the secrets the steps read (400 when one was deleted or no longer allows the step's origin).
    summary,
    ok: api.AutomationResponse,
    errors: action === 'publish' ? [...ITEM_WRITE_ERRORS, 412, 503] : [...ITEM_READ_ERRORS, 412, 503],
    headers: IF_MATCH,
    etag: true,
    handle: async (input, ctx, deps) => ({
      automation: view(
        deps,
        tagged(
          ctx,
          (await changeAutomationState(
            deps.db,
            input.params.id,
            action,
            input.actor,
            expectedRevisions(ctx),
            deps.engine,
          ))!,
        ),
      ),
    }),
  });

// The write bodies are parsed by their schemas as the configuration makes them (deps.automationRequests):
// every CEL expression is compiled and each error names its step and field, all in one 400.
export const AUTOMATION_OPERATIONS = [
  operation({
    method: 'post',
    path: COLLECTION,
    operationId: 'automations.create',
    tag: TAG,
    access: AUTOMATIONS,
    summary: 'Create an automation (super_admin). Every expression is compiled as CEL; errors name the step and field.',
    body: {
      schema: api.CreateAutomationRequest,
      required: true,
      validation: 'schema',
      validator: (deps: AppDeps) => deps.automationRequests.create,
    },
    ok: api.AutomationWriteResponse,
    errors: WRITE_ERRORS,
    etag: true,
    handle: async (input, ctx, deps) => {
      const { record, signingSecret } = await createAutomationFrom(
        deps.db,
        await input.body(),
        optionsOf(deps, input.actor),
      );
      return { automation: view(deps, tagged(ctx, record)), ...(signingSecret ? { signingSecret } : {}) };
    },
  }),
  operation({
    method: 'get',
    path: COLLECTION,
    operationId: 'automations.list',
    tag: TAG,
    paged: true,
    access: READ,
    summary: 'List automations (admin or super_admin).',
    ok: api.AutomationList,
    errors: READ_ERRORS,
    handle: async (input, _ctx, deps) => {
      const page = await listAutomations(deps.db, deps.pageTokens, input.page);
      return {
        list: page.items.map((record) => ({ automation: view(deps, record) })),
        nextPageToken: page.nextPageToken,
      };
    },
  }),
  operation({
    method: 'get',
    path: ITEM,
    operationId: 'automations.get',
    tag: TAG,
    access: READ,
    summary: 'Get an automation (admin or super_admin); the ETag names its revision.',
    ok: api.AutomationResponse,
    errors: ITEM_READ_ERRORS,
    etag: true,
    handle: async (input, ctx, deps) => ({
      automation: await viewWithBreaker(deps, tagged(ctx, await getAutomation(deps.db, input.params.id))),
    }),
  }),
  operation({
    method: 'post',
    path: ITEM,
    operationId: 'automations.update',
    tag: TAG,
    access: AUTOMATIONS,
    summary: 'Update an automation (super_admin); a trigger switched to HMAC returns a new signingSecret.',
    // The body is checked before the lookup: none of its rules needs the stored automation.
    body: {
      schema: api.UpdateAutomationRequest,
      required: true,
      validation: 'schema',
      validator: (deps: AppDeps) => deps.automationRequests.update,
    },
    ok: api.AutomationWriteResponse,
    errors: [...ITEM_WRITE_ERRORS, 412, 503],
    headers: IF_MATCH,
    etag: true,
    handle: async (input, ctx, deps) => {
      const { record, signingSecret } = await updateAutomationWith(
        deps.db,
        input.params.id,
        await input.body(),
        optionsOf(deps, input.actor, expectedRevisions(ctx)),
      );
      return { automation: view(deps, tagged(ctx, record)), ...(signingSecret ? { signingSecret } : {}) };
    },
  }),
  operation({
    method: 'delete',
    path: ITEM,
    operationId: 'automations.delete',
    tag: TAG,
    access: AUTOMATIONS,
    summary: 'Delete an automation (super_admin).',
    ok: gov.EmptyResponse,
    errors: [...ITEM_READ_ERRORS, 412, 503],
    headers: IF_MATCH,
    handle: async (input, ctx, deps) => {
      await changeAutomationState(deps.db, input.params.id, 'delete', input.actor, expectedRevisions(ctx), deps.engine);
      return {};
    },
  }),
  stateChange('publish', 'Publish an automation: its webhook listener starts accepting events.'),
  stateChange('unpublish', 'Unpublish an automation.'),
  operation({
    method: 'post',
    path: `${ITEM}/test`,
    operationId: 'automations.test',
    tag: TAG,
    access: AUTOMATIONS,
    summary:
      'Dry run: evaluate every step over a sample payload, without any effect; with `automation`, of that draft instead of the saved one.',
    // An unknown automation is a 404 before the body is read.
    body: { schema: api.DryRunRequest, required: true, validation: 'schema' },
    ok: api.DryRunResponse,
    errors: ITEM_WRITE_ERRORS,
    handle: async (input, _ctx, deps) => {
      const record = await getAutomation(deps.db, input.params.id);
      const { payload, automation } = await input.body();
      const violations: FieldViolation[] = [];
      const draft = draftUnderTest(automation, violations);
      // A schedule draft (or the saved schedule) answers its next times too, by the contract's rules.
      const trigger =
        isObject(automation) && automation.trigger !== undefined
          ? validateTrigger(automation.trigger, deps.config, violations, 'automation.trigger')
          : record.trigger;
      if (violations.length > 0) throw invalidArgument(violations);
      const tested = draft.steps ?? record.steps;
      const existingSecrets = await existingSecretsReadBy(deps.db, tested);
      const steps = await dryRunSteps(tested, payload, {
        allowInsecureOutbound: deps.config.allowPrivateOutbound,
        existingSecrets,
      });
      return {
        ...steps,
        flowControl: dryRunFlowControl({ ...record.flow, ...draft.flow }, payload),
        ...(isScheduleTrigger(trigger)
          ? { nextRuns: trigger.enabled ? nextRunsOf(trigger, Date.now(), NEXT_RUNS) : [] }
          : {}),
      };
    },
  }),
  operation({
    method: 'post',
    path: `${ITEM}/trigger/rotate-secret`,
    operationId: 'automations.rotateSecret',
    tag: TAG,
    access: AUTOMATIONS,
    summary:
      'Rotate the HMAC signing secret (400 for a JWT trigger); the old one verifies during gracePeriod (default 24 h).',
    body: { schema: api.RotateSecretRequest, required: false, validation: 'schema' },
    ok: api.RotateSecretResponse,
    errors: [400, 401, 403, 404, 500],
    etag: true,
    handle: async (input, ctx, deps) => {
      const { gracePeriod } = await input.body();
      const seconds = gracePeriod === undefined ? DEFAULT_ROTATION_GRACE_SECONDS : gracePeriodSeconds(gracePeriod);
      const { revision, ...rotated } = await rotateSigningSecret(
        deps.db,
        input.params.id,
        seconds,
        optionsOf(deps, input.actor),
      );
      tagged(ctx, { revision });
      return rotated;
    },
  }),
  operation({
    method: 'post',
    path: `${ITEM}/schedule/backfill`,
    operationId: 'automations.scheduleBackfill',
    tag: TAG,
    access: AUTOMATIONS,
    summary:
      'Run the actions of a past range (super_admin): at most 1,000; a time that already ran is skipped and counted.',
    body: { schema: api.ScheduleBackfillRequest, required: true, validation: 'schema' },
    ok: api.ScheduleBackfillResponse,
    errors: [...ITEM_WRITE_ERRORS, 409, 503],
    handle: async (input, _ctx, deps) =>
      backfillSchedule(deps.db, deps.engine, input.params.id, await input.body(), input.actor),
  }),
  operation({
    method: 'post',
    path: `${ITEM}/schedule/trigger`,
    operationId: 'automations.scheduleTrigger',
    tag: TAG,
    access: AUTOMATIONS,
    summary: "Run one action now (super_admin; also while paused): kind manual, the schedule's overlap.",
    ok: api.ScheduleTriggerResponse,
    errors: [...ITEM_WRITE_ERRORS, 409, 503],
    handle: async (input, _ctx, deps) => triggerSchedule(deps.db, deps.engine, input.params.id, input.actor),
  }),
];

export function createAutomationsRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, AUTOMATION_OPERATIONS);
}
