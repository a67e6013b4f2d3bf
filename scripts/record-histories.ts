/**
 * npm run record-histories: runs real automations on a dev server of its own (in-memory store,
 * loopback HTTP target) and saves each run's history with its input under
 * histories/<release>/ (release = package.json version), then rewrites the manifest
 * (sha256 of every file). Committed histories are append-only: a release folder that is already in
 * the manifest is refused unless --force (only for a release that has not been merged yet).
 *
 *   npm run record-histories [-- --force] [-- --only <name>]
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Client, Connection, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, NativeConnection, Worker } from '@temporalio/worker';
import { createActivities } from '../activities';
import { SecretBox, sealContext } from '../src/crypto/secret-box';
import { insertOutboundSecret } from '../src/store/outbound-secrets';
import { recordPublishedVersion } from '../src/store/automation-versions';
import { openDb, type Db } from '../src/store/db';
import { lanePlacesTaken, takeLanePlace } from '../src/store/lane-places';
import { freePort, startDevServer } from '../src/temporal/devserver';
import { HISTORIES_DIR, historyToJson, installQuietRuntime } from '../src/temporal/history-replay';
import { ensureNamespace } from '../src/temporal/setup';
import { tracingWorkerOptions } from '../src/temporal/tracing';
import { automationBundleOptions } from '../src/temporal/worker';
import { bulkAction, type automation } from '../workflows';
import {
  ApprovalWaitKey,
  SCHEDULED_RUN_WORKFLOW,
  type ScheduledRunInput,
  type ScheduledRunResult,
} from '../src/contract/workflows';
import { bulkActionWorkflowId, createTemporalEngine, grantWorkflowId, scheduleIdOf } from '../src/temporal/engine';
import { scheduleDefinitionOf } from '../src/domain/schedules';
import { getAutomation } from '../src/store/automations';
import { insertBulkSet, stopBulkAction } from '../src/store/bulk-actions';
import { bulkRerunId } from '../src/domain/runs';
import { createGrant, extendGrant, revokeGrant } from '../src/domain/grants';
import { closeTask } from '../src/domain/provisioning-tasks';
import { receiveCallback } from '../src/domain/provisioning-webhooks';
import { findGrant } from '../src/store/grants';
import { listTasks } from '../src/store/provisioning-tasks';
import { createUser } from '../src/domain/users';
import { createApp } from '../src/domain/apps';
import { createEntitlement } from '../src/domain/entitlements';
import {
  BREAKER_RESUME_SIGNAL,
  type BreakerResume,
  DECIDE_UPDATE,
  LANE_ACQUIRE_SIGNAL,
  LANE_RELEASE_SIGNAL,
  RUN_GRANT_SIGNAL,
  RUN_STATE_QUERY,
  type AutomationRunInput,
  type DecideInput,
  type LaneAcquire,
  type LaneGrant,
  type RunState,
  type StepDefinition,
} from '../src/contract/run';
import type { AutomationActivities } from '../src/contract/activities';
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { ensureTemporalCli } = require('./temporal-cli.js') as { ensureTemporalCli: () => Promise<string> };

const ROOT = path.resolve(__dirname, '..');
const RELEASE = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
export const MANIFEST = path.join(HISTORIES_DIR, 'manifest.json');
/** Where this release's histories are written. */
const RELEASE_DIR = path.join(HISTORIES_DIR, RELEASE);

type Handle = WorkflowHandle<typeof automation>;

/** What a scenario does with its run once started; answers how the run ended. */
type Drive = (
  handle: Handle,
  ctx: { client: Client; db: Db; releaseHolder: () => Promise<void>; lane?: string },
) => Promise<string>;

/** A run of the automation workflow, started and driven to its end (recordRun). */
interface RunScenario {
  name: string;
  description: string;
  steps: StepDefinition[];
  trigger: unknown;
  /** Extra run input (rerunOf, resume, flow). */
  extra?: Partial<AutomationRunInput>;
  /** Before the run starts, another run takes the only permit of the run's lane (`extra.flow.queue`), so the run is QUEUED. */
  laneHeld?: boolean;
  /** With `laneHeld`: the queue bound the holder's ask carries (LANE_QUEUE_LIMIT), so that the lane says when its queue is full. */
  laneMaxWaiting?: number;
  drive?: Drive;
}

/** A bulk action's workflow over a set of its own: parked runs it acts on, and a run that does not exist (skipped; recordBulk). */
interface BulkScenario {
  name: string;
  description: string;
  action: 'cancel' | 'terminate' | 'rerun';
  /** Parked runs of the set (each waits for an approval), besides one unknown run id. */
  runs: number;
  /** The action is stopped before its workflow starts: it acts on nothing. */
  stopped?: boolean;
}

/** A grant's workflow (workflows/grant.ts): a grant made through the domain, then driven (recordGrant). */
interface GrantScenario {
  name: string;
  description: string;
  grant: {
    /** The entitlement's provisionerPolicy (none: unconfigured). */
    provisionerPolicy?: Record<string, unknown>;
    /** The entitlement's deprovisionerPolicy (none: unconfigured). */
    deprovisionerPolicy?: Record<string, unknown>;
    duration?: string;
    /**
     * What happens: nothing (it expires, or fails by itself), a revoke, an extension then a revoke;
     * its provisioning task completed then a revoke; the receiver's callback after a 202 then a
     * revoke; the first of two tasks completed, the second failed, the undo task completed.
     */
    then: 'expire' | 'revoke' | 'extend-revoke' | 'none' | 'task-revoke' | 'callback-revoke' | 'undo-tasks';
  };
}

/**
 * A schedule automation's action (workflows/scheduled-run.ts): the Schedule's own (its id carries
 * the scheduled time), or a backfill of two times one after another. Its run is its child.
 */
interface ScheduleScenario {
  name: string;
  description: string;
  schedule: { kind: 'scheduled' | 'backfill' };
}

/** A recorded scenario; its name names its files under histories/<release>/. */
type Scenario = RunScenario | BulkScenario | GrantScenario | ScheduleScenario;

function isBulk(scenario: Scenario): scenario is BulkScenario {
  return 'action' in scenario;
}

function isGrant(scenario: Scenario): scenario is GrantScenario {
  return 'grant' in scenario;
}

function isSchedule(scenario: Scenario): scenario is ScheduleScenario {
  return 'schedule' in scenario;
}

/** The queue of a run admitted through a lane of limit 1 that it asks itself (as a rerun does). */
function laneQueue(name: string): NonNullable<AutomationRunInput['flow']> {
  return { queue: { key: 'user-1', lane: `lane:auto-${name}:recorded`, limit: 1, requested: false } };
}

/** Waits until the run says it is QUEUED. */
async function untilQueued(handle: Handle): Promise<void> {
  await until(async () => (await handle.query<RunState>(RUN_STATE_QUERY).catch(() => undefined))?.status === 'QUEUED');
}

/** Waits until the run says it is PAUSED (held by the circuit breaker). */
async function untilPaused(handle: Handle): Promise<void> {
  await until(async () => (await handle.query<RunState>(RUN_STATE_QUERY).catch(() => undefined))?.status === 'PAUSED');
}

/** The value of the named secret the secret-header scenario sends; never written to a history (checked). */
const HISTORY_SECRET = `sk_history_${randomBytes(12).toString('hex')}`;
/** The signing secret of the signed-call scenario (Standard Webhooks format); never written to a history (checked). */
const HISTORY_SIGNING_SECRET = `whsec_${randomBytes(24).toString('base64')}`;

/** The token in the URL of the notify scenario's incoming webhook (a named secret); never written to a history (checked). */
const HISTORY_HOOK_TOKEN = `T0/B0/${randomBytes(12).toString('hex')}`;

/** The role whose first createEntitlementOwner attempt fails (the ownership-retried-after-local-attempt scenario). */
const FLAKY_ROLE = 'flaky-first';

/** The activities, except that the first ownership of FLAKY_ROLE fails as a store that did not answer would (retryable). */
function withFlakyOwnership<T extends { createEntitlementOwner: AutomationActivities['createEntitlementOwner'] }>(
  activities: T,
): T {
  const create = activities.createEntitlementOwner.bind(activities);
  let failed = false;
  return {
    ...activities,
    createEntitlementOwner: async (input: Parameters<AutomationActivities['createEntitlementOwner']>[0]) => {
      // The role as sent (before 0.5.0) or as the step's expression (from 0.5.0: the activity evaluates it).
      const role = 'expressions' in input ? input.expressions.roleSlug : `'${input.roleSlug}'`;
      if (role === `'${FLAKY_ROLE}'` && !failed) {
        failed = true;
        throw new Error('the store did not answer (injected by the recorder)');
      }
      return create(input);
    },
  };
}

const OWNERSHIP = {
  userId: "'svc-1'",
  roleSlug: "'owner'",
  appId: "'app-1'",
  entitlementId: 'ctx.trigger.entitlement',
};

/**
 * Every scenario the recorder runs, one function each (given the loopback target's origin), in one
 * list: a new scenario is a new function here. The runs are recorded all at once, then the bulk actions.
 */
const SCENARIOS: ReadonlyArray<(target: string) => Scenario> = [
  (): RunScenario => ({
    name: 'set-variables-completed',
    description: 'setVariables over the trigger, completed',
    steps: [{ id: 'vars', setVariables: { who: 'ctx.trigger.employee_id', status: 'ctx.trigger["status"]' } }],
    trigger: { employee_id: '12345', status: 'terminated' },
  }),
  (): RunScenario => ({
    name: 'wait-completed',
    description: 'a 1 s wait (durable timer), then setVariables',
    steps: [
      { id: 'pause', wait: { duration: '1s' } },
      { id: 'after', setVariables: { done: 'true' } },
    ],
    trigger: {},
  }),
  (): RunScenario => ({
    name: 'ownership-create-delete',
    description: 'createEntitlementOwner then deleteEntitlementOwner reading the first output',
    steps: [
      { id: 'own', createEntitlementOwner: OWNERSHIP },
      {
        id: 'disown',
        deleteEntitlementOwner: {
          userId: 'ctx.steps.own.userId',
          roleSlug: 'ctx.steps.own.roleSlug',
          appId: 'ctx.steps.own.appId',
          entitlementId: 'ctx.steps.own.entitlementId',
        },
      },
    ],
    trigger: { entitlement: 'ent-1' },
  }),
  (): RunScenario => ({
    name: 'ownership-after-a-skipped-one',
    description: 'a createEntitlementOwner skipped by its condition, then one that runs',
    steps: [
      { id: 'maybe', when: 'ctx.trigger.entitlement == "none"', createEntitlementOwner: OWNERSHIP },
      { id: 'own', createEntitlementOwner: OWNERSHIP },
    ],
    trigger: { entitlement: 'ent-1' },
  }),
  (): RunScenario => ({
    name: 'ownership-retried-after-local-attempt',
    description:
      'createEntitlementOwner whose first (local) attempt fails: a timer, then the regular activity with the rest of the policy',
    steps: [
      {
        id: 'own',
        retry: { initialInterval: '0.1s', maximumAttempts: 3 },
        createEntitlementOwner: { ...OWNERSHIP, roleSlug: `'${FLAKY_ROLE}'` },
      },
    ],
    trigger: { entitlement: 'ent-1' },
  }),
  (target: string): RunScenario => ({
    name: 'call-webhook-completed',
    description: 'callWebhook answered 200 at once',
    steps: [
      {
        id: 'notify',
        callWebhook: { url: `'${target}/ok'`, body: '{"who": ctx.trigger.user}', headers: { 'X-Run': "'history'" } },
      },
    ],
    trigger: { user: 'u-1' },
  }),
  (target: string): RunScenario => ({
    name: 'call-webhook-retried',
    description: 'callWebhook answered 500 twice, then 200 (retried under the step policy)',
    steps: [
      {
        id: 'notify',
        retry: { initialInterval: '0.2s', maximumInterval: '0.5s', maximumAttempts: 5 },
        callWebhook: { url: `'${target}/flaky/' + ctx.trigger.key`, body: {} },
      },
    ],
    trigger: { key: randomUUID() },
  }),
  (target: string): RunScenario => ({
    name: 'call-webhook-secret-header',
    description:
      'callWebhook with a header reading a named secret (resolved in the activity) and a plain header, answered 200',
    steps: [
      {
        id: 'notify',
        callWebhook: {
          url: `'${target}/ok'`,
          body: { who: 'ctx.trigger.user' },
          headers: { Authorization: "'Bearer ' + secrets.history_token", 'X-Run': "'history'" },
        },
      },
    ],
    trigger: { user: 'u-3' },
  }),
  (target: string): RunScenario => ({
    name: 'call-webhook-secret-missing',
    description:
      'callWebhook with a header reading a secret that does not exist: the step fails at once, naming the secret',
    steps: [
      {
        id: 'notify',
        callWebhook: {
          url: `'${target}/ok'`,
          body: {},
          headers: { Authorization: "'Bearer ' + secrets.deleted_token" },
        },
      },
    ],
    trigger: {},
  }),
  (target: string): RunScenario => ({
    name: 'call-webhook-signed',
    description:
      'a callWebhook signed with a named secret (Standard Webhooks), answered 500 twice, then 200: three attempts with one call key',
    steps: [
      {
        id: 'notify',
        retry: { initialInterval: '0.2s', maximumInterval: '0.5s', maximumAttempts: 5 },
        callWebhook: {
          url: `'${target}/flaky/' + ctx.trigger.key`,
          body: { who: 'ctx.trigger.user' },
          signature: { secret: 'history_signing' },
        },
      },
    ],
    trigger: { key: randomUUID(), user: 'u-4' },
  }),
  (target: string): RunScenario => ({
    name: 'retry-from-failed-step-call-key',
    description: 'a retry from the failed step whose callWebhook carries the original run’s call key (resume.keysOf)',
    steps: [
      { id: 'first', setVariables: { who: '"u-10"' } },
      { id: 'notify', callWebhook: { url: `'${target}/ok'`, body: { who: 'ctx.steps.first.who' } } },
    ],
    trigger: {},
    extra: {
      rerunOf: 'webhook:listener-original:event-original',
      resume: {
        fromStepId: 'notify',
        steps: [{ id: 'first', status: 'DONE', output: { who: 'u-10' } }],
        keysOf: {
          workflowId: 'webhook:listener-original:event-original',
          runId: '0193a0c4-0000-7000-8000-000000000000',
        },
      },
    },
  }),
  (): RunScenario => ({
    name: 'ensure-user',
    description: 'ensureUser makes a user, a second ensureUser of the same email in other case finds it',
    steps: [
      { id: 'person', ensureUser: { email: 'ctx.trigger.email', displayName: 'ctx.trigger.name' } },
      { id: 'again', ensureUser: { email: "'JOINER@EXAMPLE.COM'" } },
    ],
    trigger: { email: 'joiner@example.com', name: 'Joiner' },
  }),
  (): RunScenario => ({
    name: 'grant-revoke-entitlements',
    description:
      'grantEntitlements grants one for an hour (unconfigured: GRANTED at once), then revokeEntitlements takes it back and reports one not held',
    steps: [
      {
        id: 'grant',
        grantEntitlements: {
          userId: "'svc-1'",
          entitlements: '[{"appId": "app-1", "entitlementId": ctx.trigger.entitlement}]',
          duration: '3600s',
          justification: "'recorded'",
        },
      },
      {
        id: 'revoke',
        revokeEntitlements: {
          userId: "'svc-1'",
          entitlements:
            '[{"appId": "app-1", "entitlementId": ctx.trigger.entitlement}, {"appId": "app-1", "entitlementId": "ent-none"}]',
          reason: "'leaver'",
        },
      },
    ],
    trigger: { entitlement: 'ent-1' },
  }),
  (): RunScenario => ({
    name: 'grant-entitlements-wait-failed',
    description:
      'grantEntitlements of an entitlement delegated to one that does not exist: PROVISIONING, the step waits (a timer, a check) until the grant is FAILED, and fails naming it',
    steps: [
      {
        id: 'grant',
        grantEntitlements: { userId: "'svc-1'", entitlements: '[{"appId": "app-1", "entitlementId": "ent-lost"}]' },
      },
    ],
    trigger: {},
  }),
  (): RunScenario => ({
    name: 'log-completed',
    description: 'log steps at info and warn',
    steps: [
      { id: 'hello', log: { message: '"offboarding " + ctx.trigger.user' } },
      { id: 'careful', log: { message: '"second line"', level: 'warn' } },
    ],
    trigger: { user: 'u-2' },
  }),
  (): RunScenario => ({
    name: 'approval-approved',
    description: 'waitForApproval approved through the decide update, then a later step',
    steps: [
      { id: 'approve', waitForApproval: {} },
      { id: 'after', setVariables: { by: 'ctx.steps.approve.by' } },
    ],
    trigger: {},
    drive: decide('approve', 'approved'),
  }),
  (): RunScenario => ({
    name: 'approval-rejected',
    description: 'waitForApproval rejected (onReject fail): the run fails at the step',
    steps: [{ id: 'approve', waitForApproval: { timeout: '3600s' } }],
    trigger: {},
    drive: decide('approve', 'rejected'),
  }),
  (): RunScenario => ({
    name: 'approval-rejected-continue',
    description: 'waitForApproval rejected with onReject continue; a later step branches on the decision',
    steps: [
      { id: 'approve', waitForApproval: { onReject: 'continue' } },
      { id: 'ifApproved', when: 'ctx.steps.approve.decision == "approved"', setVariables: { path: '"approved"' } },
      { id: 'ifRejected', when: 'ctx.steps.approve.decision == "rejected"', setVariables: { path: '"rejected"' } },
    ],
    trigger: {},
    drive: decide('approve', 'rejected'),
  }),
  (): RunScenario => ({
    name: 'approval-wait-marked',
    description:
      'waitForApproval (0.7.0): the run holds the ApprovalWait search attribute (the step id) while it waits and clears it once approved',
    steps: [
      { id: 'review', waitForApproval: {} },
      { id: 'after', setVariables: { by: 'ctx.steps.review.by' } },
    ],
    trigger: {},
    drive: async (handle) => {
      const mark = async () => (await handle.describe()).typedSearchAttributes.get(ApprovalWaitKey);
      await until(async () => (await mark()) === 'review');
      const ended = await decide('review', 'approved')(handle, undefined as never);
      if ((await mark()) !== undefined) throw new Error('the ApprovalWait mark outlived the wait');
      return ended;
    },
  }),
  (): RunScenario => ({
    name: 'approval-with-context',
    description:
      'waitForApproval (0.15.0) with a title and details: evaluated when the wait starts, kept in the approvals memo with the deadline, then approved',
    steps: [
      {
        id: 'manager',
        when: 'ctx.trigger.email != ""',
        waitForApproval: {
          timeout: '3600s',
          title: '"Offboard " + ctx.trigger.email',
          details: { Who: 'ctx.trigger.email', Access: 'ctx.trigger.roles', Count: 'size(ctx.trigger.roles)' },
        },
      },
      { id: 'after', setVariables: { by: 'ctx.steps.manager.by' } },
    ],
    trigger: { email: 'leaver@example.com', roles: ['crm', 'erp'] },
    drive: decide('manager', 'approved'),
  }),
  (): RunScenario => ({
    name: 'approval-context-error',
    description: 'waitForApproval (0.15.0) whose title cannot be evaluated: the step fails naming title',
    steps: [{ id: 'manager', waitForApproval: { title: 'ctx.trigger.missing.deeper' } }],
    trigger: {},
  }),
  (): RunScenario => ({
    name: 'approval-timed-out',
    description: 'waitForApproval with a 1 s timeout that approves',
    steps: [
      { id: 'approve', waitForApproval: { timeout: '1s', onTimeout: 'approve' } },
      { id: 'after', setVariables: { decision: 'ctx.steps.approve.decision' } },
    ],
    trigger: {},
  }),
  (): RunScenario => ({
    name: 'when-skipped',
    description: 'a step whose when is false is skipped; the next one runs',
    steps: [
      { id: 'maybe', when: 'ctx.trigger.status == "hired"', setVariables: { x: '1' } },
      { id: 'always', setVariables: { y: '2' } },
    ],
    trigger: { status: 'terminated' },
  }),
  (): RunScenario => ({
    name: 'cel-error-failed',
    description: 'a CEL evaluation error (missing field) fails the run at the step',
    steps: [
      { id: 'ok', setVariables: { a: '1' } },
      { id: 'broken', setVariables: { b: 'ctx.trigger.missing' } },
      { id: 'never', setVariables: { c: '3' } },
    ],
    trigger: {},
  }),
  (): RunScenario => ({
    name: 'fail-step',
    description: 'a fail step ends the run as FAILED with its message',
    steps: [
      { id: 'check', setVariables: { ok: 'ctx.trigger.status == "active"' } },
      {
        id: 'stop',
        when: '!ctx.steps.check.ok',
        fail: { message: '"user " + ctx.trigger.user + " is " + ctx.trigger.status' },
      },
    ],
    trigger: { user: 'u-7', status: 'suspended' },
  }),
  (): RunScenario => ({
    name: 'terminated-mid-wait',
    description: 'terminated while parked in a 1 h wait: the history ends there',
    steps: [
      { id: 'before', setVariables: { a: '1' } },
      { id: 'pause', wait: { duration: '3600s' } },
      { id: 'after', setVariables: { b: '2' } },
    ],
    trigger: {},
    drive: async (handle) => {
      await untilStep(handle, 'pause', 'WAITING');
      await handle.terminate('recording a run parked in a wait');
      return 'TERMINATED';
    },
  }),
  (target: string): RunScenario => ({
    name: 'terminated-mid-retry',
    description: 'terminated while callWebhook backs off between attempts (target answers 500)',
    steps: [
      {
        id: 'notify',
        retry: { initialInterval: '3600s', maximumAttempts: 5 },
        callWebhook: { url: `'${target}/down'`, body: {} },
      },
    ],
    trigger: {},
    drive: async (handle) => {
      await until(async () => {
        const described = await handle.describe();
        const pending = described.raw.pendingActivities ?? [];
        return pending.some((a) => (a.attempt ?? 0) >= 2 && a.lastFailure);
      });
      await handle.terminate('recording a run parked mid-retry');
      return 'TERMINATED';
    },
  }),
  (): RunScenario => ({
    name: 'cancelled-mid-wait',
    description: 'cancelled while parked in a wait: the timer is cancelled, later steps do not run',
    steps: [
      { id: 'pause', wait: { duration: '3600s' } },
      { id: 'after', setVariables: { b: '2' } },
    ],
    trigger: {},
    drive: async (handle) => {
      await untilStep(handle, 'pause', 'WAITING');
      await handle.cancel();
      return settle(handle);
    },
  }),
  (): RunScenario => ({
    name: 'retry-from-failed-step',
    description: 'a retry from the failed step: the first step is reused from the original run (resume input)',
    steps: [
      { id: 'first', setVariables: { who: '"u-9"' } },
      { id: 'second', setVariables: { again: 'ctx.steps.first.who' } },
    ],
    trigger: {},
    extra: {
      rerunOf: 'webhook:listener-original:event-original',
      resume: { fromStepId: 'second', steps: [{ id: 'first', status: 'DONE', output: { who: 'u-9' } }] },
    },
  }),
  (): RunScenario => ({
    name: 'flow-filter-error',
    description: 'flow control: the filter could not be evaluated; the run fails at once naming filter, no step runs',
    steps: [{ id: 'v', setVariables: { a: '1' } }],
    trigger: { other: true },
    extra: { flow: { error: { field: 'filter', message: 'no such key: type' } } },
  }),
  (): RunScenario => ({
    name: 'flow-queued-then-granted',
    description:
      'flow control: QUEUED in its lane behind another run, granted when that run gives the permit back, then completed',
    steps: [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    trigger: { user: 'user-1' },
    extra: { flow: laneQueue('flow-queued-then-granted') },
    laneHeld: true,
    drive: async (handle, { releaseHolder }) => {
      await untilQueued(handle);
      await releaseHolder();
      return settle(handle);
    },
  }),
  (): RunScenario => ({
    name: 'flow-canceled-while-queued',
    description: 'flow control: canceled while QUEUED; no step runs, the request is given back to the lane',
    steps: [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    trigger: { user: 'user-1' },
    extra: { flow: laneQueue('flow-canceled-while-queued') },
    laneHeld: true,
    drive: async (handle) => {
      await untilQueued(handle);
      await handle.cancel();
      return settle(handle);
    },
  }),
  (): RunScenario => ({
    name: 'flow-queued-gives-place-back',
    description:
      "flow control: a run holding a place in its key's queue bound, QUEUED behind another run, granted, completed; it gives its permit back, then its place (releaseLanePlace, patch lane-place-release)",
    steps: [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    trigger: { user: 'user-1' },
    extra: { flow: laneQueue('flow-queued-gives-place-back') },
    laneHeld: true,
    drive: async (handle, { db, releaseHolder, lane }) => {
      // The place its delivery would have taken (src/flow/concurrency.ts), taken here as the API takes it.
      await takeLanePlace(db, lane!, handle.workflowId, 2);
      await untilQueued(handle);
      await releaseHolder();
      const outcome = await settle(handle);
      if ((await lanePlacesTaken(db, lane!)) !== 0) throw new Error('the run did not give its lane place back');
      return outcome;
    },
  }),
  (): RunScenario => ({
    name: 'flow-lane-refuses-strangers',
    description:
      'flow control (0.6.0): QUEUED behind another run in a lane bounded to one waiting run (its queueFull memo set, then cleared); the run ignores a grant naming another lane, the lane a release of a run it never admitted and an ask naming another lane; granted by its own lane, then completed',
    steps: [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    trigger: { user: 'user-1' },
    extra: { flow: laneQueue('flow-lane-refuses-strangers') },
    laneHeld: true,
    laneMaxWaiting: 1,
    drive: async (handle, { client, releaseHolder, lane }) => {
      await untilQueued(handle);
      await handle.signal(RUN_GRANT_SIGNAL, { lane: 'lane:elsewhere:recorded' } satisfies LaneGrant);
      const laneHandle = client.workflow.getHandle(lane!);
      await laneHandle.signal(LANE_RELEASE_SIGNAL, { runId: 'webhook:listener-stranger:never-admitted' });
      await laneHandle.signal(LANE_ACQUIRE_SIGNAL, {
        runId: 'webhook:listener-stranger:elsewhere',
        limit: 1,
        lane: 'lane:elsewhere:recorded',
      } satisfies LaneAcquire);
      await until(
        async () =>
          (await handle.query<RunState>(RUN_STATE_QUERY)).status === 'QUEUED' &&
          (await laneHandle.describe()).raw.pendingWorkflowTask == null,
      );
      await releaseHolder();
      return settle(handle);
    },
  }),
  (): RunScenario => ({
    name: 'breaker-paused-then-resumed',
    description: 'circuit breaker: PAUSED (no step runs) until the resume signal, then completed',
    steps: [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    trigger: { user: 'user-1' },
    extra: { flow: { paused: { since: '2026-01-01T00:00:00.000Z' } } },
    drive: async (handle) => {
      await untilPaused(handle);
      await handle.signal(BREAKER_RESUME_SIGNAL, { laneRequested: false } satisfies BreakerResume);
      return settle(handle);
    },
  }),
  (): RunScenario => ({
    name: 'breaker-paused-then-resumed-through-lane',
    description:
      'circuit breaker: PAUSED, resumed (the resume asked the lane), QUEUED behind another run, granted, completed',
    steps: [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    trigger: { user: 'user-1' },
    extra: {
      flow: {
        ...laneQueue('breaker-paused-then-resumed-through-lane'),
        paused: { since: '2026-01-01T00:00:00.000Z' },
      },
    },
    laneHeld: true,
    drive: async (handle, { releaseHolder }) => {
      await untilPaused(handle);
      await handle.signal(BREAKER_RESUME_SIGNAL, { laneRequested: false } satisfies BreakerResume);
      await untilQueued(handle);
      await releaseHolder();
      return settle(handle);
    },
  }),
  (): RunScenario => ({
    name: 'breaker-paused-then-canceled',
    description: 'circuit breaker: canceled while PAUSED; no step runs',
    steps: [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    trigger: { user: 'user-1' },
    extra: { flow: { paused: { since: '2026-01-01T00:00:00.000Z' } } },
    drive: async (handle) => {
      await untilPaused(handle);
      await handle.cancel();
      return settle(handle);
    },
  }),
  (): RunScenario => ({
    name: 'breaker-paused-then-terminated',
    description: 'circuit breaker: terminated while PAUSED; the history ends there',
    steps: [{ id: 'v', setVariables: { user: 'ctx.trigger.user' } }],
    trigger: { user: 'user-1' },
    extra: { flow: { paused: { since: '2026-01-01T00:00:00.000Z' } } },
    drive: async (handle) => {
      await untilPaused(handle);
      await handle.terminate('recording a paused run');
      return 'TERMINATED';
    },
  }),
  (): RunScenario => ({
    name: 'notify-completed',
    description:
      'a notify step posting {"text"} to an incoming webhook whose URL (with its token) is a named secret, answered 200',
    steps: [{ id: 'tell', notify: { webhook: 'history_hook', text: "'Offboarded ' + ctx.trigger.user" } }],
    trigger: { user: 'u-9' },
  }),
  (): RunScenario => ({
    name: 'notify-origin-refused',
    description:
      'a notify step whose secret does not allow the origin of the URL it holds: the step fails at once, nothing is sent',
    steps: [{ id: 'tell', notify: { webhook: 'history_hook_elsewhere', text: "'x'" } }],
    trigger: {},
  }),
  (target: string): RunScenario => ({
    name: 'many-steps',
    description: '24 steps of every non-parking kind, with skips and a short wait',
    steps: [
      ...Array.from({ length: 8 }, (_, i): StepDefinition => ({
        id: `v${i}`,
        setVariables: { n: `${i}.0 + ctx.trigger.base` },
      })),
      { id: 'skip1', when: 'ctx.steps.v0.n > 100.0', setVariables: { never: '1' } },
      { id: 'note', log: { message: '"sum " + string(ctx.steps.v7.n)' } },
      { id: 'own', createEntitlementOwner: OWNERSHIP },
      { id: 'hook', callWebhook: { url: `'${target}/ok'`, body: '{"n": ctx.steps.v3.n}' } },
      { id: 'pause', wait: { duration: '0.5s' } },
      ...Array.from({ length: 8 }, (_, i): StepDefinition => ({
        id: `w${i}`,
        when: i % 2 === 0 ? 'true' : 'false',
        setVariables: { m: `ctx.steps.v${i}.n * 2.0` },
      })),
      { id: 'disown', deleteEntitlementOwner: OWNERSHIP },
      { id: 'done', log: { message: '"done"', level: 'info' } },
    ],
    trigger: { base: 1, entitlement: 'ent-1' },
  }),
  (): BulkScenario => ({
    name: 'bulk-cancel',
    description: 'a bulk cancel of two parked runs and an unknown one (skipped)',
    action: 'cancel',
    runs: 2,
  }),
  (): BulkScenario => ({
    name: 'bulk-terminate',
    description: 'a bulk terminate of two parked runs and an unknown one (skipped)',
    action: 'terminate',
    runs: 2,
  }),
  (): BulkScenario => ({
    name: 'bulk-rerun',
    description: 'a bulk rerun of two parked runs (each rerun parks too) and an unknown one (skipped)',
    action: 'rerun',
    runs: 2,
  }),
  (): BulkScenario => ({
    name: 'bulk-stopped',
    description: 'a bulk cancel stopped before it acted on anything',
    action: 'cancel',
    runs: 1,
    stopped: true,
  }),
  (): GrantScenario => ({
    name: 'grant-expired',
    description: 'an unconfigured grant of 2 s, granted then expired by its timer',
    grant: { duration: '2s', then: 'expire' },
  }),
  (): GrantScenario => ({
    name: 'grant-revoked',
    description: 'a standing unconfigured grant, revoked',
    grant: { then: 'revoke' },
  }),
  (): GrantScenario => ({
    name: 'grant-extended',
    description: 'an unconfigured grant of 1 h, extended to 2 h, then revoked',
    grant: { duration: '3600s', then: 'extend-revoke' },
  }),
  (): GrantScenario => ({
    name: 'grant-failed',
    description: 'a grant delegated to an entitlement that does not exist, failed by its provision',
    grant: { provisionerPolicy: { delegated: { appId: 'app-1', entitlementId: 'ent-none' } }, then: 'none' },
  }),
  (): GrantScenario => ({
    name: 'grant-task-completed',
    description: 'a grant provisioned by hand: its task completed by a person (the signal), GRANTED, then revoked',
    grant: { provisionerPolicy: { manual: { instructions: 'by hand' } }, then: 'task-revoke' },
  }),
  (): GrantScenario => ({
    name: 'grant-waiting-callback',
    description: "a grant provisioned by webhook: 202, the receiver's callback (the signal), GRANTED, then revoked",
    grant: { provisionerPolicy: { webhook: { webhookId: 'hook-accept' } }, then: 'callback-revoke' },
  }),
  (): GrantScenario => ({
    name: 'grant-multistep-undone',
    description:
      'a multiStep of two manual steps: the first task completed, the second failed, the first undone by its undo task, FAILED (patch grant-provisioning-steps)',
    grant: {
      provisionerPolicy: {
        multiStep: { provisionSteps: [{ manual: { instructions: 'one' } }, { manual: { instructions: 'two' } }] },
      },
      then: 'undo-tasks',
    },
  }),
  (): GrantScenario => ({
    name: 'grant-webhook-expired',
    description:
      'a grant of 2 s provisioned and deprovisioned by a webhook answering 200: each call recorded by the call itself, the expiry starting the deprovision call',
    grant: {
      provisionerPolicy: { webhook: { webhookId: 'hook-ok' } },
      deprovisionerPolicy: { webhook: { webhookId: 'hook-ok' } },
      duration: '2s',
      then: 'expire',
    },
  }),
  (): GrantScenario => ({
    name: 'grant-delegated',
    description:
      'a grant delegated to an unconfigured entitlement (its child GRANTED at once), then revoked with its child',
    grant: { provisionerPolicy: { delegated: { appId: 'app-1', entitlementId: 'ent-1' } }, then: 'revoke' },
  }),
  (): ScheduleScenario => ({
    name: 'schedule-action',
    description: "a schedule's own action (the time in its workflow id): its run as a child, completed",
    schedule: { kind: 'scheduled' },
  }),
  (): ScheduleScenario => ({
    name: 'schedule-backfill-buffered',
    description: 'a backfill of two times one after another (BUFFER_ALL): two child runs in order',
    schedule: { kind: 'backfill' },
  }),
];

/** True when any string of the history, as it is or base64-decoded (payload data), holds HISTORY_SECRET. */
function holdsSecret(root: unknown): boolean {
  const work: unknown[] = [root];
  while (work.length > 0) {
    const node = work.pop();
    if (typeof node === 'string') {
      for (const secret of [HISTORY_SECRET, HISTORY_SIGNING_SECRET.slice('whsec_'.length), HISTORY_HOOK_TOKEN]) {
        if (node.includes(secret) || Buffer.from(node, 'base64').toString('utf8').includes(secret)) return true;
      }
    } else if (node !== null && typeof node === 'object') {
      work.push(...Object.values(node));
    }
  }
  return false;
}

function decide(stepId: string, decision: DecideInput['decision']): Drive {
  return async (handle) => {
    await untilStep(handle, stepId, 'WAITING_FOR_APPROVAL');
    await handle.executeUpdate(DECIDE_UPDATE, {
      args: [{ stepId, decision, by: 'client-recorder', comment: `${decision} while recording` } satisfies DecideInput],
    });
    return settle(handle);
  };
}

async function settle(handle: Handle): Promise<string> {
  try {
    await handle.result();
    return 'COMPLETED';
  } catch (err) {
    if (err instanceof WorkflowFailedError)
      return err.cause?.constructor.name === 'CancelledFailure' ? 'CANCELED' : 'FAILED';
    throw err;
  }
}

async function until(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

async function untilStep(handle: Handle, stepId: string, status: string): Promise<void> {
  await until(async () => {
    const state = await handle.query<RunState>(RUN_STATE_QUERY).catch(() => undefined);
    return state?.steps.find((s) => s.id === stepId)?.status === status;
  });
}

/** The callbackUrl of each call the target accepted with 202 (`/accept`). */
const ACCEPTED_CALLBACKS: Array<string | null> = [];

/**
 * Loopback target: /ok and /hooks/<token> answer 200, /flaky/<key> 500 twice then 200, /down
 * always 500, /accept 202 (its callbackUrl kept in ACCEPTED_CALLBACKS).
 */
async function startTarget(): Promise<{ origin: string; close(): Promise<void> }> {
  const attempts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const url = req.url ?? '';
      if (url === '/accept') {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { callbackUrl: string | null };
        ACCEPTED_CALLBACKS.push(body.callbackUrl);
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end('{}');
        return;
      }
      const n = (attempts.get(url) ?? 0) + 1;
      attempts.set(url, n);
      const ok = url === '/ok' || url.startsWith('/hooks/') || (url.startsWith('/flaky/') && n > 2);
      res.writeHead(ok ? 200 : 500, { 'content-type': 'application/json' });
      res.end(JSON.stringify(ok ? { ok: true } : { error: 'try again' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

async function seed(db: Db): Promise<void> {
  await db.query(`INSERT INTO users (id, display_name, type) VALUES ('svc-1', 'Robot', 'USER_TYPE_SERVICE')`);
  await db.query(`INSERT INTO apps (id, display_name) VALUES ('app-1', 'App one')`);
  await db.query(
    `INSERT INTO app_entitlements (id, app_id, display_name, slug, record) VALUES ('ent-1', 'app-1', 'Admin', 'admin', '{}'::jsonb)`,
  );
  await db.query(
    `INSERT INTO app_entitlements (id, app_id, display_name, slug, record) VALUES ('ent-lost', 'app-1', 'Lost', 'lost', $1::jsonb)`,
    [JSON.stringify({ provisionerPolicy: { delegated: { appId: 'app-1', entitlementId: 'ent-none' } } })],
  );
}

async function publish(
  db: Db,
  name: string,
  steps: StepDefinition[],
): Promise<{ automationId: string; listenerId: string }> {
  const automationId = `auto-${name}`;
  const listenerId = `listener-${name}`;
  await db.query(
    `INSERT INTO automations (id, display_name, published, version, trigger, steps, listener_id) VALUES ($1, $2, true, 1, $3, $4, $5)`,
    [
      automationId,
      name,
      JSON.stringify({ incomingWebhook: { authMethod: 'HMAC', jwksUrl: '', allowedCidrs: [], enabled: true } }),
      JSON.stringify(steps),
      listenerId,
    ],
  );
  await recordPublishedVersion(db, automationId, 1, { displayName: name, steps });
  return { automationId, listenerId };
}

/** What recording a scenario needs: the store, a client of the dev server, the worker's task queue. */
interface Recorder {
  db: Db;
  client: Client;
  taskQueue: string;
}

/** Publishes the scenario's automation, starts its run (behind a lane holder when `laneHeld`), drives it and saves its history. */
async function recordRun(scenario: RunScenario, recorder: Recorder): Promise<void> {
  const { db, client, taskQueue } = recorder;
  const { automationId, listenerId } = await publish(db, scenario.name, scenario.steps);
  const eventId = randomUUID();
  const input: AutomationRunInput = {
    automationId,
    version: 1,
    listenerId,
    eventId,
    receivedAt: new Date().toISOString(),
    trigger: scenario.trigger,
    ...scenario.extra,
  };
  const workflowId = `webhook:${listenerId}:${eventId}`;
  const queue = input.flow?.queue;
  const releaseHolder =
    scenario.laneHeld && queue
      ? await holdLane(scenario, input, workflowId, queue.lane, recorder)
      : async (): Promise<void> => undefined;
  const handle = (await client.workflow.start('automation', { taskQueue, workflowId, args: [input] })) as Handle;
  const outcome = await (scenario.drive ?? settle)(handle, {
    client,
    db,
    releaseHolder,
    ...(queue ? { lane: queue.lane } : {}),
  });
  if (scenario.laneHeld) await releaseHolder().catch(() => undefined);
  const history = await handle.fetchHistory();
  const record = {
    release: RELEASE,
    scenario: scenario.name,
    description: scenario.description,
    outcome,
    workflowId,
    steps: scenario.steps,
    input,
  };
  saveHistory(scenario.name, history, record);
  if (scenario.laneHeld && queue) {
    // The lane's own history (its grants, the release, the holder check): lanes are workflow code too.
    // Ended by hand once the scenario is over (an idle lane would wait five minutes to complete).
    const laneHandle = client.workflow.getHandle(queue.lane);
    await until(async () => (await laneHandle.describe()).raw.pendingWorkflowTask == null);
    await laneHandle.terminate('recording: the scenario is over');
    saveHistory(`lane-${scenario.name}`, await laneHandle.fetchHistory(), {
      ...record,
      scenario: `lane-${scenario.name}`,
      description: `the lane of ${scenario.name}`,
      outcome: 'TERMINATED',
      workflowId: queue.lane,
      steps: [],
    });
  }
}

/**
 * The holder of a `laneHeld` scenario's lane: a run parked for approval (version 2 of the automation)
 * that the lane grants the only permit to first. Answers how the holder gives the permit back.
 */
async function holdLane(
  scenario: RunScenario,
  input: AutomationRunInput,
  workflowId: string,
  lane: string,
  { db, client, taskQueue }: Recorder,
): Promise<() => Promise<void>> {
  await recordPublishedVersion(db, input.automationId, 2, {
    displayName: scenario.name,
    steps: [{ id: 'hold', waitForApproval: {} }],
  });
  const holder = await client.workflow.start('automation', {
    taskQueue,
    workflowId: `${workflowId}:holder`,
    args: [{ ...input, version: 2, eventId: `${input.eventId}-holder`, flow: undefined } as AutomationRunInput],
  });
  await createTemporalEngine({ client, taskQueue, db }).requestLanePermit({
    automationId: input.automationId,
    lane,
    runId: holder.workflowId,
    limit: 1,
    taskQueue,
    ...(scenario.laneMaxWaiting ? { maxWaiting: scenario.laneMaxWaiting } : {}),
  });
  return async () => {
    await client.workflow.getHandle(lane).signal(LANE_RELEASE_SIGNAL, { runId: holder.workflowId });
    await holder.terminate('recording: the holder gave its permit back');
  };
}

/** Parks the scenario's runs, then runs its bulk action over them (and one unknown run) and saves the action's history. */
async function recordBulk(scenario: BulkScenario, { db, client, taskQueue }: Recorder): Promise<void> {
  const steps: StepDefinition[] = [{ id: 'hold', waitForApproval: {} }];
  const { automationId, listenerId } = await publish(db, scenario.name, steps);
  const runIds: string[] = [];
  for (let i = 0; i < scenario.runs; i++) {
    const eventId = randomUUID();
    const input: AutomationRunInput = {
      automationId,
      version: 1,
      listenerId,
      eventId,
      receivedAt: new Date().toISOString(),
      trigger: { n: i },
    };
    const handle = await client.workflow.start('automation', {
      taskQueue,
      workflowId: `webhook:${listenerId}:${eventId}`,
      args: [input],
    });
    await untilStep(handle as Handle, 'hold', 'WAITING_FOR_APPROVAL');
    runIds.push(handle.workflowId);
  }
  runIds.push(`webhook:${listenerId}:unknown`);
  const bulkActionId = randomUUID();
  await db.transaction((tx) =>
    insertBulkSet(
      tx,
      {
        id: bulkActionId,
        action: scenario.action,
        automationId,
        filter: { automationId },
        reason: 'recording',
        by: 'client:recorder',
        state: 'RUNNING',
        matched: runIds.length,
        whereErrors: 0,
        previewId: null,
      },
      runIds,
    ),
  );
  if (scenario.stopped) await stopBulkAction(db, bulkActionId);
  const handle = await client.workflow.start(bulkAction, {
    taskQueue,
    workflowId: bulkActionWorkflowId(bulkActionId),
    args: [{ bulkActionId }],
  });
  const result = await handle.result();
  const history = await handle.fetchHistory();
  saveHistory(scenario.name, history, {
    release: RELEASE,
    scenario: scenario.name,
    description: scenario.description,
    outcome: result.state,
    workflowId: handle.workflowId,
    steps: [],
    input: { bulkActionId },
  });
  // The runs it left parked (a stopped action, the reruns) end here: nothing waits for them.
  for (const id of [...runIds, ...runIds.map((id) => bulkRerunId(id, bulkActionId))]) {
    await client.workflow
      .getHandle(id)
      .terminate('recording: the scenario is over')
      .catch(() => undefined);
  }
}

/** Writes a history and its input record (refused when the history holds the value of a named secret). */
/** Makes a user, an app and an entitlement, asks for the grant through the domain, drives it, and saves its workflow's history. */
async function recordGrant(scenario: GrantScenario, { db, client, taskQueue }: Recorder): Promise<void> {
  const engine = createTemporalEngine({ client, taskQueue, db });
  const actor = 'client:recorder';
  const user = await createUser(
    db,
    { displayName: scenario.name, email: `${scenario.name}@example.com`, type: 'USER_TYPE_HUMAN' },
    actor,
  );
  const app = await createApp(db, { displayName: scenario.name });
  const entitlement = await createEntitlement(db, app.id, {
    displayName: scenario.name,
    ...(scenario.grant.provisionerPolicy ? { provisionerPolicy: scenario.grant.provisionerPolicy } : {}),
    ...(scenario.grant.deprovisionerPolicy ? { deprovisionerPolicy: scenario.grant.deprovisionerPolicy } : {}),
  } as Parameters<typeof createEntitlement>[2]);
  const { grant } = await createGrant(
    db,
    engine,
    {
      userId: user.id,
      appId: app.id,
      appEntitlementId: entitlement.id,
      ...(scenario.grant.duration ? { duration: scenario.grant.duration } : {}),
    },
    actor,
  );
  const handle = client.workflow.getHandle(grantWorkflowId(grant.id));
  const held = async () => until(async () => (await handle.fetchHistory()).events!.length > 6);
  /** Closes the next OPEN task of the grant (of `phase`) as `state`. */
  const close = async (state: 'DONE' | 'FAILED', phase: 'provision' | 'deprovision' = 'provision') => {
    let open: Awaited<ReturnType<typeof listTasks>> = [];
    await until(async () => {
      open = (await listTasks(db, { grantId: grant.id, states: ['OPEN'] }, undefined, 10)).filter(
        (t) => t.phase === phase,
      );
      return open.length > 0;
    });
    await closeTask(db, engine, open[0]!.id, state, 'recorded', actor);
  };
  const granted = () => until(async () => (await findGrant(db, grant.id))?.state === 'GRANTED');
  if (scenario.grant.then === 'revoke') {
    await held();
    await revokeGrant(db, engine, grant.id, 'recording', actor);
  } else if (scenario.grant.then === 'task-revoke') {
    await close('DONE');
    await granted();
    await held();
    await revokeGrant(db, engine, grant.id, 'recording', actor);
  } else if (scenario.grant.then === 'callback-revoke') {
    await until(async () => ACCEPTED_CALLBACKS.some((url) => url !== null));
    const token = ACCEPTED_CALLBACKS.find((url) => url !== null)!
      .split('/')
      .pop()!;
    await receiveCallback(db, engine, token, { status: 'done' });
    await granted();
    await held();
    await revokeGrant(db, engine, grant.id, 'recording', actor);
  } else if (scenario.grant.then === 'undo-tasks') {
    await close('DONE');
    await close('FAILED');
    await close('DONE', 'deprovision');
  } else if (scenario.grant.then === 'extend-revoke') {
    await held();
    await extendGrant(db, engine, grant.id, '7200s', actor);
    await until(async () => (await handle.fetchHistory()).events!.length > 9);
    await revokeGrant(db, engine, grant.id, 'recording', actor);
  }
  const result = (await handle.result()) as { state: string };
  saveHistory(scenario.name, await handle.fetchHistory(), {
    release: RELEASE,
    scenario: scenario.name,
    description: scenario.description,
    outcome: result.state,
    workflowId: handle.workflowId,
    workflowType: 'grant',
  });
}

/** Publishes a schedule automation, starts its action as its Schedule (or a backfill) would, and saves the action's history. */
async function recordSchedule(scenario: ScheduleScenario, { db, client, taskQueue }: Recorder): Promise<void> {
  const steps: StepDefinition[] = [{ id: 'seen', setVariables: { kind: 'ctx.trigger.kind' } }];
  const automationId = `auto-${scenario.name}`;
  await db.query(
    `INSERT INTO automations (id, display_name, published, version, trigger, steps, listener_id) VALUES ($1, $2, true, 1, $3, $4, $5)`,
    [
      automationId,
      scenario.name,
      JSON.stringify({
        kind: 'schedule',
        cron: '0 9 * * *',
        interval: null,
        offset: null,
        timezone: 'Europe/Berlin',
        overlap: 'SKIP',
        catchupWindow: '300s',
        enabled: true,
      }),
      JSON.stringify(steps),
      `listener-${scenario.name}`,
    ],
  );
  await recordPublishedVersion(db, automationId, 1, { displayName: scenario.name, steps });
  let input: ScheduledRunInput;
  let handle;
  if (scenario.schedule.kind === 'scheduled') {
    // A real Schedule's action: paused, triggered once, then removed (the action is what is recorded).
    const engine = createTemporalEngine({ client, taskQueue, db });
    const automation = (await getAutomation(db, automationId))!;
    await engine.putSchedule(
      scheduleDefinitionOf({ ...automation, trigger: { ...automation.trigger, enabled: false } as never })!,
    );
    const schedule = client.schedule.getHandle(scheduleIdOf(automationId));
    await schedule.trigger();
    let workflowId: string | undefined;
    await until(async () => {
      workflowId = (await schedule.describe()).info.recentActions[0]?.action.workflow.workflowId;
      return workflowId !== undefined;
    });
    await engine.deleteSchedule(automationId);
    input = { automationId };
    handle = client.workflow.getHandle(workflowId!);
  } else {
    input = { automationId, kind: 'backfill', times: ['2027-01-04T08:00:00.000Z', '2027-01-05T08:00:00.000Z'] };
    handle = await client.workflow.start(SCHEDULED_RUN_WORKFLOW, {
      taskQueue,
      workflowId: `schedule:${automationId}-backfill-1`,
      args: [input],
    });
  }
  const workflowId = handle.workflowId;
  const result = (await handle.result()) as ScheduledRunResult;
  saveHistory(scenario.name, await handle.fetchHistory(), {
    release: RELEASE,
    scenario: scenario.name,
    description: scenario.description,
    outcome: `started ${result.started}`,
    workflowId,
    workflowType: SCHEDULED_RUN_WORKFLOW,
    steps: [],
    input,
  });
}

function saveHistory(
  name: string,
  history: Awaited<ReturnType<Handle['fetchHistory']>>,
  record: Record<string, unknown>,
): void {
  const base = path.join(RELEASE_DIR, name);
  const text = `${JSON.stringify(historyToJson(history), null, 1)}\n`;
  if (holdsSecret(JSON.parse(text))) throw new Error(`${name}: the history holds the value of a named secret`);
  fs.writeFileSync(`${base}.history.json`, text);
  fs.writeFileSync(`${base}.input.json`, `${JSON.stringify(record, null, 2)}\n`);
  console.log(`${RELEASE}/${name}: ${String(record.outcome)}, ${history.events?.length ?? 0} events`);
}

/** Records each scenario, all at once; answers the failures, one line each (name and stack). */
async function recordAll<S extends Scenario>(
  scenarios: S[],
  record: (scenario: S) => Promise<void>,
): Promise<string[]> {
  const results = await Promise.allSettled(scenarios.map(record));
  return results.flatMap((r, i) =>
    r.status === 'rejected'
      ? [`${scenarios[i]!.name}: ${r.reason instanceof Error ? r.reason.stack : String(r.reason)}`]
      : [],
  );
}

export function sha256(file: string): string {
  return createHash('sha256').update(fs.readFileSync(file)).digest('hex');
}

/** The manifest: sha256 of every committed history and input file, by path under the histories folder. */
export function readManifest(): Record<string, string> {
  return fs.existsSync(MANIFEST)
    ? (JSON.parse(fs.readFileSync(MANIFEST, 'utf8')) as { files: Record<string, string> }).files
    : {};
}

/** Rewrites the manifest: the sha256 of every file of every release folder. */
function writeManifest(): void {
  const files: Record<string, string> = {};
  for (const release of fs.readdirSync(HISTORIES_DIR, { withFileTypes: true }).filter((d) => d.isDirectory())) {
    for (const file of fs.readdirSync(path.join(HISTORIES_DIR, release.name)).sort()) {
      files[`${release.name}/${file}`] = sha256(path.join(HISTORIES_DIR, release.name, file));
    }
  }
  fs.writeFileSync(
    MANIFEST,
    `${JSON.stringify({ note: 'sha256 of every committed history; append-only (checked by test/unit/history-manifest.test.ts)', files }, null, 2)}\n`,
  );
}

/** The named secrets the scenarios read (history_token, the notify hooks, history_signing), sealed as the API seals them. */
async function insertSecrets(db: Db, secretBox: SecretBox, origin: string): Promise<void> {
  await insertOutboundSecret(
    db,
    'history_token',
    secretBox.seal(HISTORY_SECRET, sealContext('outbound_secret', 'history_token')),
    [origin],
  );
  await insertOutboundSecret(
    db,
    'history_hook_elsewhere',
    secretBox.seal(`${origin}/hooks/${HISTORY_HOOK_TOKEN}`, sealContext('outbound_secret', 'history_hook_elsewhere')),
    ['https://hooks.slack.com'],
  );
  await insertOutboundSecret(
    db,
    'history_hook',
    secretBox.seal(`${origin}/hooks/${HISTORY_HOOK_TOKEN}`, sealContext('outbound_secret', 'history_hook')),
    [origin],
  );
  await insertOutboundSecret(
    db,
    'history_signing',
    secretBox.seal(HISTORY_SIGNING_SECRET, sealContext('outbound_secret', 'history_signing')),
    [origin],
  );
}

/** The worker the runs execute on: the workflow bundle of the service, its activities (the first ownership of FLAKY_ROLE failing). */
async function createWorker(
  connection: NativeConnection,
  { db, client, taskQueue }: Recorder,
  secretBox: SecretBox,
): Promise<Worker> {
  const bundle = await bundleWorkflowCode({ ...automationBundleOptions(), logger: new DefaultLogger('WARN') });
  return Worker.create({
    connection,
    namespace: 'default',
    taskQueue,
    workflowBundle: bundle,
    // The bundle's tracing interceptors call their sink: spans dropped, as in a worker with tracing off.
    sinks: tracingWorkerOptions(undefined).sinks,
    activities: withFlakyOwnership(
      createActivities({
        db,
        allowPrivateOutbound: true,
        secretBox,
        baseUrl: 'http://127.0.0.1:1',
        engine: createTemporalEngine({ client, taskQueue, db }),
      }),
    ),
  });
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const force = args.includes('--force');
  const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
  const manifest = readManifest();
  if (!force && Object.keys(manifest).some((file) => file.startsWith(`${RELEASE}/`))) {
    throw new Error(
      `release ${RELEASE} already has committed histories; bump the version in package.json (histories are append-only), or --force before it is merged`,
    );
  }

  installQuietRuntime();
  const cliPath = await ensureTemporalCli();
  const server = await startDevServer({ cliPath, port: await freePort(), namespace: 'default' });
  const db = await openDb({});
  const target = await startTarget();
  const connection = await Connection.connect({ address: server.address });
  const nativeConnection = await NativeConnection.connect({ address: server.address });
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  try {
    await ensureNamespace(connection, 'default');
    await seed(db);
    const secretBox = new SecretBox(randomBytes(32));
    await insertSecrets(db, secretBox, target.origin);
    await db.query(`INSERT INTO provisioning_webhooks (id, display_name, url) VALUES ('hook-ok', 'Answers 200', $1)`, [
      `${target.origin}/ok`,
    ]);
    await db.query(`INSERT INTO provisioning_webhooks (id, display_name, url) VALUES ('hook-accept', 'Accepts', $1)`, [
      `${target.origin}/accept`,
    ]);
    const recorder: Recorder = {
      db,
      client: new Client({ connection, namespace: 'default' }),
      taskQueue: 'record-histories',
    };
    worker = await createWorker(nativeConnection, recorder, secretBox);
    running = worker.run();
    fs.mkdirSync(RELEASE_DIR, { recursive: true });

    const chosen = SCENARIOS.map((scenario) => scenario(target.origin)).filter((s) => !only || s.name === only);
    const failed = [
      ...(await recordAll(
        chosen.filter((s): s is RunScenario => !isBulk(s) && !isGrant(s) && !isSchedule(s)),
        (s) => recordRun(s, recorder),
      )),
      ...(await recordAll(chosen.filter(isBulk), (s) => recordBulk(s, recorder))),
      ...(await recordAll(chosen.filter(isGrant), (s) => recordGrant(s, recorder))),
      ...(await recordAll(chosen.filter(isSchedule), (s) => recordSchedule(s, recorder))),
    ];
    if (failed.length > 0) throw new Error(`recording failed (manifest not rewritten):\n${failed.join('\n')}`);
    writeManifest();
  } finally {
    worker?.shutdown();
    await running?.catch(() => undefined);
    await nativeConnection.close().catch(() => undefined);
    await connection.close().catch(() => undefined);
    await target.close();
    await db.close();
    await server.stop();
  }
}

if (require.main === module) {
  main().then(
    () => process.exit(0),
    (err: unknown) => {
      console.error(err instanceof Error ? err.message : err);
      process.exit(1);
    },
  );
}
