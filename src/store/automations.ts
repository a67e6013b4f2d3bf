/** Automations table: definition, trigger (with listener id) and the HMAC signing secret. */
import type { Queryable } from './db';
import { iso } from './db';
import type { StepDefinition } from '../contract/run';
import type { StoredTrigger } from '../triggers';

/** An automation's flow control as stored: each option's settings under its name (src/flow). */
export type StoredFlow = Record<string, unknown>;

export interface AutomationRecord {
  id: string;
  displayName: string;
  description: string;
  published: boolean;
  version: number;
  trigger: StoredTrigger;
  listenerId: string;
  steps: StepDefinition[];
  /** The flow options' settings by name, as JSON (src/flow reads them: flowControlOf). */
  flow: StoredFlow;
  /** The live flow options' settings by name (the circuit breaker): not part of the draft or a version (src/flow). */
  liveFlow: StoredFlow;
  /** HMAC signing secret sealed with the SecretBox (AES-256-GCM); null for JWT. */
  sealedSigningSecret: string | null;
  /** The secret before the last rotation (sealed), still verifying until `previousSecretExpiresAt`. */
  sealedPreviousSigningSecret: string | null;
  previousSecretExpiresAt: string | null;
  /** Advanced by every write to the automation (its ETag names it); nothing else changes it. */
  revision: number;
  createdAt: string;
  updatedAt: string;
}

export interface AutomationRow {
  id: string;
  display_name: string;
  description: string;
  published: boolean;
  version: number;
  trigger: StoredTrigger;
  steps: StepDefinition[];
  flow?: StoredFlow | null;
  live_flow?: StoredFlow | null;
  listener_id: string;
  signing_secret: string | null;
  previous_signing_secret?: string | null;
  previous_secret_expires_at?: Date | null;
  revision?: number | string;
  created_at: Date;
  updated_at: Date;
}

export function toAutomationRecord(row: AutomationRow): AutomationRecord {
  return {
    id: row.id,
    displayName: row.display_name,
    description: row.description,
    published: row.published,
    version: Number(row.version),
    trigger: row.trigger,
    listenerId: row.listener_id,
    steps: row.steps,
    flow: row.flow ?? {},
    liveFlow: row.live_flow ?? {},
    sealedSigningSecret: row.signing_secret,
    sealedPreviousSigningSecret: row.previous_signing_secret ?? null,
    previousSecretExpiresAt: iso(row.previous_secret_expires_at ?? null) ?? null,
    revision: Number(row.revision ?? 1),
    createdAt: iso(row.created_at) ?? '',
    updatedAt: iso(row.updated_at) ?? '',
  };
}

export type NewAutomation = Omit<
  AutomationRecord,
  | 'createdAt'
  | 'updatedAt'
  | 'published'
  | 'version'
  | 'sealedPreviousSigningSecret'
  | 'previousSecretExpiresAt'
  | 'flow'
  | 'revision'
  | 'liveFlow'
> & { flow?: StoredFlow };

export async function insertAutomation(db: Queryable, input: NewAutomation): Promise<AutomationRecord> {
  const rows = await db.query<AutomationRow>(
    `INSERT INTO automations (id, display_name, description, trigger, steps, listener_id, signing_secret, flow)
     VALUES ($1, $2, $3, $4::jsonb, $5::json, $6, $7, $8::jsonb) RETURNING *`,
    [
      input.id,
      input.displayName,
      input.description,
      JSON.stringify(input.trigger),
      JSON.stringify(input.steps),
      input.listenerId,
      input.sealedSigningSecret,
      JSON.stringify(input.flow ?? {}),
    ],
  );
  return toAutomationRecord(rows[0]!);
}

export async function getAutomation(
  db: Queryable,
  id: string,
  forUpdate = false,
): Promise<AutomationRecord | undefined> {
  const rows = await db.query<AutomationRow>(
    `SELECT * FROM automations WHERE id = $1${forUpdate ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return rows[0] ? toAutomationRecord(rows[0]) : undefined;
}

export async function getAutomationByListener(
  db: Queryable,
  listenerId: string,
): Promise<AutomationRecord | undefined> {
  const rows = await db.query<AutomationRow>('SELECT * FROM automations WHERE listener_id = $1', [listenerId]);
  return rows[0] ? toAutomationRecord(rows[0]) : undefined;
}

export async function listAutomations(
  db: Queryable,
  afterId: string | undefined,
  limit: number,
): Promise<AutomationRecord[]> {
  const rows = await db.query<AutomationRow>(
    'SELECT * FROM automations WHERE ($1::text IS NULL OR id > $1) ORDER BY id LIMIT $2',
    [afterId ?? null, limit],
  );
  return rows.map(toAutomationRecord);
}

/** The published automations whose trigger is of `kind` (a schedule's reconciliation). */
export async function publishedOfTriggerKind(db: Queryable, kind: string): Promise<AutomationRecord[]> {
  const rows = await db.query<AutomationRow>(
    "SELECT * FROM automations WHERE published AND trigger->>'kind' = $1 ORDER BY id",
    [kind],
  );
  return rows.map(toAutomationRecord);
}

/** Saves a changed definition; every change makes a new version. */
export async function saveAutomation(db: Queryable, record: AutomationRecord): Promise<AutomationRecord> {
  const rows = await db.query<AutomationRow>(
    `UPDATE automations SET display_name = $2, description = $3, trigger = $4::jsonb, steps = $5::json,
       signing_secret = $6, published = $7, flow = $8::jsonb, version = version + 1, revision = revision + 1, updated_at = now(),
       previous_signing_secret = CASE WHEN $6::text IS NULL THEN NULL ELSE previous_signing_secret END,
       previous_secret_expires_at = CASE WHEN $6::text IS NULL THEN NULL ELSE previous_secret_expires_at END
     WHERE id = $1 RETURNING *`,
    [
      record.id,
      record.displayName,
      record.description,
      JSON.stringify(record.trigger),
      JSON.stringify(record.steps),
      record.sealedSigningSecret,
      record.published,
      JSON.stringify(record.flow),
    ],
  );
  return toAutomationRecord(rows[0]!);
}

export async function setPublished(
  db: Queryable,
  id: string,
  published: boolean,
): Promise<AutomationRecord | undefined> {
  const rows = await db.query<AutomationRow>(
    'UPDATE automations SET published = $2, revision = revision + 1, updated_at = now() WHERE id = $1 RETURNING *',
    [id, published],
  );
  return rows[0] ? toAutomationRecord(rows[0]) : undefined;
}

/**
 * Replaces the signing secret. With `previous` the replaced secret keeps verifying until
 * `previous.expiresAt` (an older previous one is dropped); without it, it stops at once.
 */
export async function setSealedSigningSecret(
  db: Queryable,
  id: string,
  sealed: string,
  previous?: { sealed: string; expiresAt: Date },
): Promise<AutomationRecord | undefined> {
  const rows = await db.query<AutomationRow>(
    `UPDATE automations SET signing_secret = $2, previous_signing_secret = $3, previous_secret_expires_at = $4, revision = revision + 1, updated_at = now()
     WHERE id = $1 RETURNING *`,
    [id, sealed, previous?.sealed ?? null, previous?.expiresAt ?? null],
  );
  return rows[0] ? toAutomationRecord(rows[0]) : undefined;
}

/** Sets (or, with null, removes) a live flow option's settings; a write to the automation (its revision advances). */
export async function setLiveFlowOption(
  db: Queryable,
  id: string,
  name: string,
  settings: unknown,
): Promise<AutomationRecord | undefined> {
  const rows = await db.query<AutomationRow>(
    `UPDATE automations SET live_flow = CASE WHEN $3::jsonb IS NULL THEN live_flow - $2 ELSE live_flow || jsonb_build_object($2::text, $3::jsonb) END,
       revision = revision + 1, updated_at = now()
     WHERE id = $1 RETURNING *`,
    [id, name, settings === null ? null : JSON.stringify(settings)],
  );
  return rows[0] ? toAutomationRecord(rows[0]) : undefined;
}

export async function deleteAutomation(db: Queryable, id: string): Promise<boolean> {
  return (await db.query('DELETE FROM automations WHERE id = $1 RETURNING id', [id])).length > 0;
}

/** The display names of the automations among `ids` that exist, by id (one statement). */
export async function automationNames(db: Queryable, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = await db.query<{ id: string; display_name: string }>(
    'SELECT id, display_name FROM automations WHERE id = ANY($1::text[])',
    [[...new Set(ids)]],
  );
  return new Map(rows.map((row) => [row.id, row.display_name]));
}
