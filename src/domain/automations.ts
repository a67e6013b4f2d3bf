/**
 * Automations: create, read, list, update (with updateMask), publish, rotate the signing secret,
 * and the public view of a record (never the secret). Whether a trigger has a signing secret, and
 * how one is made, is its authentication method's business (src/webhooks/authenticators): it is
 * issued when a trigger gets such a method and on rotation, and dropped when it loses it.
 * Each publish snapshots a version (display name and steps) in automation_versions: the receiver
 * runs the latest published snapshot, so edits change nothing for new runs until published again.
 */
import type { Db } from '../store/db';
import { newId, randomToken } from '../ids';
import * as store from '../store/automations';
import type { AutomationRecord } from '../store/automations';
import { sealContext, type SecretBox } from '../crypto/secret-box';
import { recordAudit } from '../store/audit';
import { deleteScheduleActions } from '../store/schedule-actions';
import { syncSchedule, type ScheduleEngine } from './schedules';
import {
  getLatestPublishedVersion,
  getPublishedVersion,
  latestPublishedVersionNumbers,
  recordPublishedVersion,
} from '../store/automation-versions';
import type { StepDefinition } from '../steps';
import { listenerChanged } from './listener-changes';
import type { Queryable } from '../store/db';
import { authenticatorOf, methodsWithSecret, type AuthenticatorConfig } from '../webhooks/authenticators';
import { isWebhookTrigger, triggerView, type StoredTrigger } from '../triggers';
import { triggerFlowViolations, type AutomationChange, type AutomationDraft } from './automation-validation';
import { parseOrThrow } from './validation';
import { missingSecretViolations } from './outbound-secrets';
import { isString, pageOf } from './listing';
import { flowControlOf, liveFlowControlOf } from '../flow';
import type { Page, PageRequest, PageTokens } from './pagination';
import { invalidArgument, notFound, StaleRevisionError } from '../errors';
import { automationWriteRequests, type Automation } from './api-schemas';

export const WEBHOOK_PATH_PREFIX = '/api/v1/webhooks/incoming/';

export function listenerUrl(baseUrl: string, listenerId: string): string {
  return `${baseUrl}${WEBHOOK_PATH_PREFIX}${listenerId}`;
}

/**
 * A record with the number of its latest published version (`null`: never published), which new
 * runs execute while the automation is published; `version` is the draft's.
 */
export type AutomationWithPublishedVersion = AutomationRecord & { publishedVersion: number | null };

/** Adds `publishedVersion` to one record. */
export async function withPublishedVersion(
  db: Queryable,
  record: AutomationRecord,
): Promise<AutomationWithPublishedVersion> {
  return { ...record, publishedVersion: (await getLatestPublishedVersion(db, record.id))?.version ?? null };
}

/** Adds `publishedVersion` to each record of a page, in one query. */
export async function withPublishedVersions(
  db: Queryable,
  records: AutomationRecord[],
): Promise<AutomationWithPublishedVersion[]> {
  const versions = await latestPublishedVersionNumbers(
    db,
    records.map((record) => record.id),
  );
  return records.map((record) => ({ ...record, publishedVersion: versions.get(record.id) ?? null }));
}

/** The public view; `publishedVersion` is shown when the record carries it (see withPublishedVersion). */
export function automationView(
  record: AutomationRecord & { publishedVersion?: number | null },
  baseUrl: string,
  breaker?: Automation['breaker'],
): Automation {
  return {
    id: record.id,
    displayName: record.displayName,
    description: record.description,
    published: record.published,
    version: record.version,
    ...(record.publishedVersion !== undefined ? { publishedVersion: record.publishedVersion } : {}),
    trigger: triggerView(record.trigger, {
      listenerId: record.listenerId,
      listenerUrl: (listenerId) => listenerUrl(baseUrl, listenerId),
    }) as Automation['trigger'],
    steps: record.steps.map((step) => ({ ...step })),
    ...flowControlOf(record.flow),
    ...liveFlowControlOf(record.liveFlow),
    ...(breaker ? { breaker } : {}),
    createdAt: record.createdAt,
    updatedAt: record.updatedAt,
  };
}

/** The automation with its published version number; 404 when there is none with this id. */
export async function getAutomation(db: Queryable, id: string): Promise<AutomationWithPublishedVersion> {
  const record = await store.getAutomation(db, id);
  if (!record) throw notFound('automation');
  return withPublishedVersion(db, record);
}

/** One page of automations by id, each with its published version number. */
export function listAutomations(
  db: Queryable,
  tokens: PageTokens,
  page: PageRequest,
): Promise<Page<AutomationWithPublishedVersion>> {
  return pageOf(tokens, page, {
    name: 'automations',
    filter: {},
    isCursor: isString,
    fetch: async (after, limit) => withPublishedVersions(db, await store.listAutomations(db, after, limit)),
    keyOf: (record) => record.id,
    toItem: (record) => record,
  });
}

/** Whether the trigger has a signing secret (an incoming webhook whose method has one). */
function hasSecret(trigger: StoredTrigger): boolean {
  return isWebhookTrigger(trigger) && authenticatorOf(trigger.authMethod).secret !== undefined;
}

/** A new signing secret for this trigger, or null when it has none. */
function newSecretFor(trigger: StoredTrigger): string | null {
  return isWebhookTrigger(trigger) ? (authenticatorOf(trigger.authMethod).secret?.generate() ?? null) : null;
}

/** The trigger's method when it is an incoming webhook, else its kind (a switch between them issues or drops a secret). */
function secretIdentity(trigger: StoredTrigger): string {
  return isWebhookTrigger(trigger) ? trigger.authMethod : (trigger.kind ?? '');
}

export interface AutomationOptions {
  /** What trigger validation depends on (the JWKS URL policy). */
  authenticators: AuthenticatorConfig;
  secretBox: SecretBox;
  /** Who makes the change, for the audit trail. */
  actor: string;
  /** The revisions the caller names (`If-Match`): a write to another one changes nothing (StaleRevisionError). */
  expectedRevisions?: readonly number[] | undefined;
  /** The engine's Schedules: a write to a schedule automation puts or removes its Schedule before the commit. */
  schedules?: ScheduleEngine | undefined;
}

/** Refuses a conditional write to a record whose revision moved on. */
function checkRevision(record: AutomationRecord, expected: readonly number[] | undefined): void {
  if (expected !== undefined && !expected.includes(record.revision))
    throw new StaleRevisionError('automation', record.revision);
}

/** Creates an automation from a body not yet parsed (scripts, tests): parsed as the API parses it. */
export function createAutomation(
  db: Db,
  body: Record<string, unknown>,
  options: AutomationOptions,
): Promise<{ record: AutomationWithPublishedVersion; signingSecret: string | null }> {
  return createAutomationFrom(db, parseOrThrow(automationWriteRequests(options.authenticators).create, body), options);
}

/** Creates an automation from its parsed draft; a step that reads a secret that does not exist is a 400. */
export async function createAutomationFrom(
  db: Db,
  draft: AutomationDraft,
  options: AutomationOptions,
): Promise<{ record: AutomationWithPublishedVersion; signingSecret: string | null }> {
  const missing = await missingSecretViolations(db, draft.steps);
  if (missing.length > 0) throw invalidArgument(missing);
  const signingSecret = newSecretFor(draft.trigger);
  const record = await db.transaction(async (tx) => {
    const id = newId();
    const inserted = await store.insertAutomation(tx, {
      id,
      ...draft,
      listenerId: randomToken(18),
      sealedSigningSecret:
        signingSecret === null
          ? null
          : options.secretBox.seal(signingSecret, sealContext('automation_signing_secret', id)),
    });
    await recordAudit(tx, {
      actor: options.actor,
      action: 'automation.create',
      resourceType: 'automation',
      resourceId: inserted.id,
    });
    return inserted;
  });
  listenerChanged(record.listenerId);
  return { record: { ...record, publishedVersion: null }, signingSecret };
}

/** Applies `{automation, updateMask}` from a body not yet parsed (scripts, tests): parsed as the API parses it. */
export function updateAutomation(
  db: Db,
  id: string,
  body: Record<string, unknown>,
  options: AutomationOptions,
): Promise<{ record: AutomationWithPublishedVersion; signingSecret: string | null }> {
  return updateAutomationWith(
    db,
    id,
    parseOrThrow(automationWriteRequests(options.authenticators).update, body),
    options,
  );
}

/**
 * Applies a parsed update under the row lock (404, then the revision's 412). A trigger switched to
 * a method with a signing secret (HMAC) gets a new secret (returned once); one switched to a method
 * without (JWT) loses its secret.
 */
export async function updateAutomationWith(
  db: Db,
  id: string,
  change: AutomationChange,
  options: AutomationOptions,
): Promise<{ record: AutomationWithPublishedVersion; signingSecret: string | null }> {
  const result = await db.transaction(async (tx) => {
    const current = await store.getAutomation(tx, id, true);
    if (!current) throw notFound('automation');
    checkRevision(current, options.expectedRevisions);
    const next: AutomationRecord = { ...current, ...change.fields, flow: { ...current.flow, ...change.flow } };
    const refused = triggerFlowViolations(next.trigger, flowControlOf(next.flow), 'automation.');
    if (refused.length > 0) throw invalidArgument(refused);
    if (change.fields.steps) {
      const missing = await missingSecretViolations(tx, next.steps);
      if (missing.length > 0) throw invalidArgument(missing);
    }
    let signingSecret: string | null = null;
    const switched = secretIdentity(next.trigger) !== secretIdentity(current.trigger);
    if (!hasSecret(next.trigger)) {
      next.sealedSigningSecret = null;
    } else if (switched || !current.sealedSigningSecret) {
      signingSecret = newSecretFor(next.trigger);
      next.sealedSigningSecret =
        signingSecret === null
          ? null
          : options.secretBox.seal(signingSecret, sealContext('automation_signing_secret', current.id));
    }
    const saved = await store.saveAutomation(tx, next);
    // A trigger is live: a published automation's Schedule follows it at once (503 if the engine does not answer).
    await syncSchedule(options.schedules, current, saved);
    await recordAudit(tx, {
      actor: options.actor,
      action: 'automation.update',
      resourceType: 'automation',
      resourceId: id,
      details: { fields: [...change.mask], version: saved.version },
    });
    return { record: await withPublishedVersion(tx, saved), signingSecret };
  });
  listenerChanged(result.record.listenerId);
  return result;
}

export { DEFAULT_ROTATION_GRACE_SECONDS, gracePeriodSeconds, MAX_ROTATION_GRACE_SECONDS } from './rotation-grace';

export interface RotatedSecret {
  signingSecret: string;
  /** When the replaced secret stops verifying; null when it was revoked at once. */
  previousSecretExpiresAt: string | null;
  /** The automation's revision after the rotation (its ETag). */
  revision: number;
}

/**
 * Replaces the HMAC signing secret. For `graceSeconds` the replaced secret keeps verifying, so a
 * sender can deploy the new one without a failed delivery; a rotation during a grace period drops
 * the oldest secret (two at most). 0 revokes the old secret at once (the leak case).
 */
export async function rotateSigningSecret(
  db: Db,
  id: string,
  graceSeconds: number,
  options: AutomationOptions,
): Promise<RotatedSecret> {
  const { rotated, listenerId } = await db.transaction(async (tx) => {
    const current = await store.getAutomation(tx, id, true);
    if (!current) throw notFound('automation');
    if (!isWebhookTrigger(current.trigger)) {
      throw invalidArgument({
        field: 'trigger',
        description: `a ${current.trigger.kind} trigger has no listener and no signing secret`,
      });
    }
    const secret = newSecretFor(current.trigger);
    if (secret === null) {
      throw invalidArgument({
        field: 'trigger.incomingWebhook.authMethod',
        description: `only ${methodsWithSecret().join(' or ')} triggers have a signing secret`,
      });
    }
    const expiresAt =
      graceSeconds > 0 && current.sealedSigningSecret
        ? new Date(Date.now() + Math.round(graceSeconds * 1000))
        : undefined;
    const saved = await store.setSealedSigningSecret(
      tx,
      id,
      options.secretBox.seal(secret, sealContext('automation_signing_secret', id)),
      expiresAt && current.sealedSigningSecret ? { sealed: current.sealedSigningSecret, expiresAt } : undefined,
    );
    const previousSecretExpiresAt = expiresAt?.toISOString() ?? null;
    await recordAudit(tx, {
      actor: options.actor,
      action: 'automation.rotate_secret',
      resourceType: 'automation',
      resourceId: id,
      details: { gracePeriod: `${graceSeconds}s`, previousSecretExpiresAt },
    });
    return {
      rotated: { signingSecret: secret, previousSecretExpiresAt, revision: saved?.revision ?? current.revision + 1 },
      listenerId: current.listenerId,
    };
  });
  listenerChanged(listenerId);
  return rotated;
}

/**
 * Publish, unpublish or delete, with its audit record, in one transaction. Publishing snapshots
 * the current definition as its version (the automation's version counter); runs already started
 * keep the version they started with, whatever happens here.
 */
export async function changeAutomationState(
  db: Db,
  id: string,
  change: 'publish' | 'unpublish' | 'delete',
  actor: string,
  expectedRevisions?: readonly number[],
  schedules?: ScheduleEngine,
): Promise<AutomationWithPublishedVersion | undefined> {
  const result = await db.transaction(async (tx) => {
    let record: AutomationRecord | undefined;
    if (expectedRevisions !== undefined) {
      const locked = await store.getAutomation(tx, id, true);
      if (!locked) throw notFound('automation');
      checkRevision(locked, expectedRevisions);
    }
    if (change === 'delete') {
      record = await store.getAutomation(tx, id, true);
      if (record) await store.deleteAutomation(tx, id);
    } else {
      // The UPDATE locks the row: a concurrent edit lands wholly before or after this snapshot.
      record = await store.setPublished(tx, id, change === 'publish');
      if (record && change === 'publish') {
        // A step that reads a secret that does not exist (deleted since the save) is not published.
        const missing = await missingSecretViolations(tx, record.steps);
        if (missing.length > 0) throw invalidArgument(missing);
        await recordPublishedVersion(tx, id, record.version, {
          displayName: record.displayName,
          steps: record.steps,
          flow: record.flow,
        });
      }
    }
    if (!record) throw notFound('automation');
    if (change === 'delete') await deleteScheduleActions(tx, id);
    await syncSchedule(schedules, record, change === 'delete' ? undefined : record);
    await recordAudit(tx, {
      actor,
      action: `automation.${change}`,
      resourceType: 'automation',
      resourceId: id,
      details: { version: record.version },
    });
    return change === 'delete' ? { ...record, publishedVersion: null } : withPublishedVersion(tx, record);
  });
  if (result) listenerChanged(result.listenerId);
  return result;
}

/** The steps a run of `version` executes (the immutable published snapshot); undefined when there is no such version. */
export async function publishedSteps(
  db: Queryable,
  automationId: string,
  version: number,
): Promise<StepDefinition[] | undefined> {
  return (await getPublishedVersion(db, automationId, version))?.snapshot.steps;
}
