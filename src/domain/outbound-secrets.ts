/**
 * Named outbound secrets: credentials that callWebhook steps send (`'Bearer ' + secrets.crm_token`
 * in a header value), kept out of automations, run histories and logs, and bound to the origins
 * they may be sent to (`allowedOrigins`, src/domain/secret-origins.ts). The value is sealed with
 * the secret box, read back only by the worker's callWebhook activity, and never returned, logged,
 * audited or put in an error message: every response carries the name and timestamps only.
 */
import { sealContext, type SecretBox } from '../crypto/secret-box';
import { recordAudit } from '../store/audit';
import type { Db, Queryable } from '../store/db';
import * as store from '../store/outbound-secrets';
import { secretNames } from '../cel';
import { STEP_REGISTRY, stepKind, type SecretRead, type StepDefinition } from '../steps';
import { SECRET_NAME } from '../steps/kind';
import { allowedOriginsOf, originRefusal, refusedSecret, staticOrigin } from './secret-origins';
import { DEFAULT_ROTATION_GRACE_SECONDS, gracePeriodSeconds } from './rotation-grace';
import type { CreateSecretRequest, ReplaceSecretRequest } from './secret-schemas';
import { isString, pageOf } from './listing';
import type { Page, PageRequest, PageTokens } from './pagination';
import { ConflictError, type FieldViolation, notFound } from '../errors';

export type OutboundSecret = store.OutboundSecretMetadata;

export interface SecretChange {
  secretBox: SecretBox;
  /** Who makes the change, for the audit trail. */
  actor: string;
}

/** `{name, value, allowedOrigins}` (parsed by CreateSecretRequest) → the new secret's metadata; 409 when the name is taken. */
export async function createOutboundSecret(
  db: Db,
  body: CreateSecretRequest,
  change: SecretChange,
): Promise<OutboundSecret> {
  const { name, value, allowedOrigins: origins } = body;
  const sealed = change.secretBox.seal(value, sealContext('outbound_secret', name));
  return db.transaction(async (tx) => {
    const created = await store.insertOutboundSecret(tx, name, sealed, origins);
    if (!created)
      throw new ConflictError(`a secret named "${name}" exists already (replace its value with PUT)`, { name });
    await recordAudit(tx, {
      actor: change.actor,
      action: 'outbound_secret.create',
      resourceType: 'outbound_secret',
      resourceId: name,
      details: { allowedOrigins: origins },
    });
    return created;
  });
}

/** A replaced secret, and when its previous value stops signing calls (null: not replaced, or dropped at once). */
export type ReplacedOutboundSecret = OutboundSecret & { previousValueExpiresAt: string | null };

/**
 * `{value?, gracePeriod?, allowedOrigins?}` (parsed by ReplaceSecretRequest: value or allowedOrigins,
 * at least one; `gracePeriod` with a value only) → replaces the
 * value (rotation: the next request of every run uses it) and/or where the secret may be sent (the
 * next request is checked against the new list); 404 when unknown. With a new value, for
 * `gracePeriod` (default 24 h, at most 7 days, "0s" at once) the replaced value keeps signing
 * callWebhook requests next to the new one (two signatures), so a receiver can deploy the new value
 * without a failed verification; header values use the new value at once.
 */
export async function replaceOutboundSecret(
  db: Db,
  name: string,
  body: ReplaceSecretRequest,
  change: SecretChange,
): Promise<ReplacedOutboundSecret> {
  const { value, allowedOrigins: origins } = body;
  const graceSeconds =
    value === undefined
      ? 0
      : body.gracePeriod === undefined
        ? DEFAULT_ROTATION_GRACE_SECONDS
        : gracePeriodSeconds(body.gracePeriod);
  if (!SECRET_NAME.test(name)) throw notFound('secret', name);
  const sealed = value === undefined ? undefined : change.secretBox.seal(value, sealContext('outbound_secret', name));
  return db.transaction(async (tx) => {
    let replaced: ReplacedOutboundSecret | undefined;
    if (origins !== undefined) {
      const updated = await store.replaceOutboundSecretOrigins(tx, name, origins);
      if (!updated) throw notFound('secret', name);
      replaced = { ...updated, previousValueExpiresAt: null };
      await recordAudit(tx, {
        actor: change.actor,
        action: 'outbound_secret.set_origins',
        resourceType: 'outbound_secret',
        resourceId: name,
        details: { allowedOrigins: origins },
      });
    }
    if (sealed !== undefined) {
      replaced = await store.replaceOutboundSecret(tx, name, sealed, graceSeconds);
      if (!replaced) throw notFound('secret', name);
      await recordAudit(tx, {
        actor: change.actor,
        action: 'outbound_secret.rotate',
        resourceType: 'outbound_secret',
        resourceId: name,
        details: { gracePeriod: `${graceSeconds}s`, previousValueExpiresAt: replaced.previousValueExpiresAt },
      });
    }
    return replaced!;
  });
}

/** Deletes a secret; runs whose steps read it fail (non-retryably) at their next request. 404 when unknown. */
export async function deleteOutboundSecret(db: Db, name: string, actor: string): Promise<void> {
  if (!SECRET_NAME.test(name)) throw notFound('secret', name);
  await db.transaction(async (tx) => {
    if (!(await store.deleteOutboundSecret(tx, name))) throw notFound('secret', name);
    await recordAudit(tx, {
      actor,
      action: 'outbound_secret.delete',
      resourceType: 'outbound_secret',
      resourceId: name,
    });
  });
}

export async function getOutboundSecret(db: Queryable, name: string): Promise<OutboundSecret> {
  const found = SECRET_NAME.test(name) ? await store.findOutboundSecret(db, name) : undefined;
  if (!found) throw notFound('secret', name);
  return found;
}

export function listOutboundSecrets(
  db: Queryable,
  tokens: PageTokens,
  page: PageRequest,
): Promise<Page<OutboundSecret>> {
  return pageOf(tokens, page, {
    name: 'secrets',
    filter: {},
    isCursor: isString,
    fetch: (after, limit) => store.listOutboundSecrets(db, after, limit),
    keyOf: (row) => row.name,
    toItem: (row) => row,
  });
}

/** Every secret the steps read (each kind says where, `secretReads`): field path (`steps[i].callWebhook.headers.<name>`) → secret names. */
export function secretReferences(
  steps: readonly StepDefinition[],
  prefix = 'steps',
): Array<{ field: string; stepId: string; names: string[]; origin: string | undefined }> {
  const out: Array<{ field: string; stepId: string; names: string[]; origin: string | undefined }> = [];
  steps.forEach((step, index) => {
    const kind = stepKind(step);
    const reads =
      kind === undefined
        ? undefined
        : (STEP_REGISTRY[kind] as { secretReads?(body: unknown): SecretRead[] }).secretReads;
    if (kind === undefined || reads === undefined) return;
    for (const read of reads((step as unknown as Record<string, unknown>)[kind])) {
      let names: string[];
      try {
        names = read.name !== undefined ? [read.name] : secretNames(read.expression ?? '');
      } catch {
        continue; // refused by validation already
      }
      const origin = read.url === undefined ? undefined : staticOrigin(read.url);
      out.push({ field: `${prefix}[${index}].${kind}.${read.field}`, stepId: step.id, names, origin });
    }
  });
  return out;
}

/** The secrets the steps read that exist, with where each may be sent (for the dry run). */
export async function existingSecretsReadBy(
  db: Queryable,
  steps: readonly StepDefinition[],
): Promise<Map<string, string[]>> {
  return allowedOriginsOf(db, [...new Set(secretReferences(steps).flatMap((ref) => ref.names))]);
}

/**
 * A violation for every secret the steps read that does not exist, and for every secret read by a
 * step whose URL has a fixed origin (src/domain/secret-origins.ts, `staticOrigin`) that the secret
 * does not allow: named by the header, the secret and the origin. A step whose URL comes from the
 * run's input is checked by the callWebhook activity instead, before anything is sent.
 */
export async function missingSecretViolations(
  db: Queryable,
  steps: readonly StepDefinition[],
  prefix = 'steps',
): Promise<FieldViolation[]> {
  const references = secretReferences(steps, prefix);
  const originsOf = await allowedOriginsOf(db, [...new Set(references.flatMap((ref) => ref.names))]);
  const violations: FieldViolation[] = [];
  for (const ref of references) {
    for (const name of ref.names) {
      if (!originsOf.has(name)) {
        violations.push({
          field: ref.field,
          description: `step "${ref.stepId}": secret "${name}" does not exist (create it with POST /api/v1/secrets)`,
        });
      } else if (ref.origin !== undefined && refusedSecret(ref.origin, [name], originsOf) !== undefined) {
        violations.push({
          field: ref.field,
          description: `step "${ref.stepId}": ${originRefusal(name, ref.origin, originsOf.get(name)!)}`,
        });
      }
    }
  }
  return violations;
}
