/**
 * Provisioning webhooks (what a `webhook` ProvisionPolicy names) and the callback tokens of their
 * calls: a token is kept only as its SHA-256, and is used at most once (`used_at`).
 */
import { iso, type Queryable } from './db';

export interface ProvisioningWebhookRow {
  id: string;
  displayName: string;
  url: string;
  signingSecret: string | null;
  createdAt: string;
}

const COLUMNS = `id, display_name AS "displayName", url, signing_secret AS "signingSecret", created_at AS "createdAt"`;

function toRow(raw: Record<string, unknown>): ProvisioningWebhookRow {
  return {
    id: raw.id as string,
    displayName: raw.displayName as string,
    url: raw.url as string,
    signingSecret: (raw.signingSecret as string | null) ?? null,
    createdAt: iso(raw.createdAt)!,
  };
}

export async function insertProvisioningWebhook(
  db: Queryable,
  row: Omit<ProvisioningWebhookRow, 'createdAt'>,
): Promise<ProvisioningWebhookRow> {
  const rows = await db.query<Record<string, unknown>>(
    `INSERT INTO provisioning_webhooks (id, display_name, url, signing_secret) VALUES ($1, $2, $3, $4) RETURNING ${COLUMNS}`,
    [row.id, row.displayName, row.url, row.signingSecret],
  );
  return toRow(rows[0]!);
}

export async function findProvisioningWebhook(db: Queryable, id: string): Promise<ProvisioningWebhookRow | undefined> {
  const rows = await db.query<Record<string, unknown>>(`SELECT ${COLUMNS} FROM provisioning_webhooks WHERE id = $1`, [
    id,
  ]);
  return rows[0] && toRow(rows[0]);
}

/** Up to `limit` webhooks with ids after `afterId`, by id. */
export async function listProvisioningWebhooks(
  db: Queryable,
  afterId: string | undefined,
  limit: number,
): Promise<ProvisioningWebhookRow[]> {
  const rows =
    afterId === undefined
      ? await db.query<Record<string, unknown>>(`SELECT ${COLUMNS} FROM provisioning_webhooks ORDER BY id LIMIT $1`, [
          limit,
        ])
      : await db.query<Record<string, unknown>>(
          `SELECT ${COLUMNS} FROM provisioning_webhooks WHERE id > $1 ORDER BY id LIMIT $2`,
          [afterId, limit],
        );
  return rows.map(toRow);
}

/** Whether a live entitlement's provisioner or deprovisioner policy names the webhook (at any depth). */
export async function provisioningWebhookInUse(db: Queryable, id: string): Promise<boolean> {
  const rows = await db.query<{ id: string }>(
    `SELECT id FROM app_entitlements WHERE deleted_at IS NULL
       AND jsonb_path_exists(record, '$.**.webhookId ? (@ == $id)', jsonb_build_object('id', $1::text))
     LIMIT 1`,
    [id],
  );
  return rows.length > 0;
}

export async function deleteProvisioningWebhook(db: Queryable, id: string): Promise<boolean> {
  const rows = await db.query(`DELETE FROM provisioning_webhooks WHERE id = $1 RETURNING id`, [id]);
  return rows.length > 0;
}

/** Records a call's callback token (by its hash); a repeat of the same call changes nothing. */
export async function recordCallbackToken(
  db: Queryable,
  token: { hash: string; grantId: string; phase: string; step: string; attempt: number },
): Promise<void> {
  await db.query(
    `INSERT INTO provisioning_callbacks (token_hash, grant_id, phase, step, attempt) VALUES ($1, $2, $3, $4, $5)
     ON CONFLICT (token_hash) DO NOTHING`,
    [token.hash, token.grantId, token.phase, token.step, token.attempt],
  );
}

export interface UsedCallback {
  grantId: string;
  phase: string;
  step: string;
  attempt: number;
}

/** Uses the token once: its call, or undefined when it is unknown or was used (nothing changes then). */
export async function useCallbackToken(
  db: Queryable,
  hash: string,
  outcome: { status: string; message: string | null },
): Promise<UsedCallback | undefined> {
  const rows = await db.query<UsedCallback>(
    `UPDATE provisioning_callbacks SET used_at = now(), status = $2, message = $3
     WHERE token_hash = $1 AND used_at IS NULL RETURNING grant_id AS "grantId", phase, step, attempt`,
    [hash, outcome.status, outcome.message],
  );
  return rows[0];
}

/** Makes every unused token of the grant unusable (a revoke stops the provisioning). */
export async function closeCallbackTokens(db: Queryable, grantId: string, phase: string): Promise<void> {
  await db.query(
    `UPDATE provisioning_callbacks SET used_at = now(), status = 'closed' WHERE grant_id = $1 AND phase = $2 AND used_at IS NULL`,
    [grantId, phase],
  );
}
