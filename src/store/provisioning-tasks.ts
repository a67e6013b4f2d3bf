/**
 * The provisioning_tasks table: the work a `manual` provisioning member gives people, one row per
 * grant, phase, step path and attempt (`provisioning_tasks_call`), so opening a task again (an
 * activity's retry) finds the one already open. Listed oldest first by id (ids are time-ordered).
 */
import { iso, type Queryable } from './db';

export const TASK_STATES = ['OPEN', 'DONE', 'FAILED'] as const;
export type TaskState = (typeof TASK_STATES)[number];

export interface ProvisioningTaskRow {
  id: string;
  grantId: string;
  phase: 'provision' | 'deprovision';
  step: string;
  attempt: number;
  instructions: string;
  assigneeUserIds: string[];
  state: TaskState;
  createdAt: string;
  closedAt: string | null;
  closedBy: string | null;
  comment: string | null;
}

const COLUMNS = `id, grant_id AS "grantId", phase, step, attempt, instructions, assignee_user_ids AS "assigneeUserIds",
  state, created_at AS "createdAt", closed_at AS "closedAt", closed_by AS "closedBy", comment`;

type RawRow = Record<keyof ProvisioningTaskRow, unknown>;

function toRow(raw: RawRow): ProvisioningTaskRow {
  const assignees = raw.assigneeUserIds;
  return {
    id: raw.id as string,
    grantId: raw.grantId as string,
    phase: raw.phase as ProvisioningTaskRow['phase'],
    step: raw.step as string,
    attempt: Number(raw.attempt),
    instructions: raw.instructions as string,
    assigneeUserIds: (typeof assignees === 'string' ? JSON.parse(assignees) : assignees) as string[],
    state: raw.state as TaskState,
    createdAt: iso(raw.createdAt)!,
    closedAt: iso(raw.closedAt),
    closedBy: raw.closedBy as string | null,
    comment: raw.comment as string | null,
  };
}

export type NewTask = Pick<
  ProvisioningTaskRow,
  'id' | 'grantId' | 'phase' | 'step' | 'attempt' | 'instructions' | 'assigneeUserIds'
>;

/** Opens the task of one call, or answers the one already there for it. */
export async function openTask(db: Queryable, task: NewTask): Promise<ProvisioningTaskRow> {
  await db.query(
    `INSERT INTO provisioning_tasks (id, grant_id, phase, step, attempt, instructions, assignee_user_ids)
     VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb)
     ON CONFLICT (grant_id, phase, step, attempt) DO NOTHING`,
    [
      task.id,
      task.grantId,
      task.phase,
      task.step,
      task.attempt,
      task.instructions,
      JSON.stringify(task.assigneeUserIds),
    ],
  );
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM provisioning_tasks WHERE grant_id = $1 AND phase = $2 AND step = $3 AND attempt = $4`,
    [task.grantId, task.phase, task.step, task.attempt],
  );
  return toRow(rows[0]!);
}

export async function findTask(
  db: Queryable,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<ProvisioningTaskRow | undefined> {
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM provisioning_tasks WHERE id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [id],
  );
  return rows[0] && toRow(rows[0]);
}

/** Closes an OPEN task; undefined when it is not OPEN (nothing written). */
export async function closeTask(
  db: Queryable,
  id: string,
  close: { state: 'DONE' | 'FAILED'; by: string; comment: string | null },
): Promise<ProvisioningTaskRow | undefined> {
  const rows = await db.query<RawRow>(
    `UPDATE provisioning_tasks SET state = $2, closed_by = $3, comment = $4, closed_at = now()
     WHERE id = $1 AND state = 'OPEN' RETURNING ${COLUMNS}`,
    [id, close.state, close.by, close.comment],
  );
  return rows[0] && toRow(rows[0]);
}

/** Closes the grant's OPEN tasks of a phase as FAILED (a revoke stops the provisioning). */
export async function failOpenTasks(
  db: Queryable,
  grantId: string,
  phase: string,
  close: { by: string; comment: string },
): Promise<void> {
  await db.query(
    `UPDATE provisioning_tasks SET state = 'FAILED', closed_by = $3, comment = $4, closed_at = now()
     WHERE grant_id = $1 AND phase = $2 AND state = 'OPEN'`,
    [grantId, phase, close.by, close.comment],
  );
}

export interface TaskFilter {
  states?: readonly TaskState[];
  grantId?: string;
}

/** Up to `limit` tasks matching `filter` with ids after `afterId`, oldest first. */
export async function listTasks(
  db: Queryable,
  filter: TaskFilter,
  afterId: string | undefined,
  limit: number,
): Promise<ProvisioningTaskRow[]> {
  const values: unknown[] = [];
  const param = (value: unknown): string => {
    values.push(value);
    return `$${values.length}`;
  };
  const where: string[] = [];
  if (filter.grantId !== undefined) where.push(`grant_id = ${param(filter.grantId)}`);
  if (filter.states && filter.states.length > 0) where.push(`state = ANY(${param([...filter.states])}::text[])`);
  if (afterId !== undefined) where.push(`id > ${param(afterId)}`);
  const rows = await db.query<RawRow>(
    `SELECT ${COLUMNS} FROM provisioning_tasks ${where.length ? `WHERE ${where.join(' AND ')}` : ''}
     ORDER BY id LIMIT ${param(limit)}`,
    values,
  );
  return rows.map(toRow);
}

/** The users who own an entitlement (its ownership records), oldest first. */
export async function entitlementOwnerIds(db: Queryable, appId: string, entitlementId: string): Promise<string[]> {
  const rows = await db.query<{ userId: string }>(
    `SELECT user_id AS "userId", min(created_at) AS first FROM entitlement_owners
     WHERE app_id = $1 AND entitlement_id = $2 GROUP BY user_id ORDER BY first, user_id`,
    [appId, entitlementId],
  );
  return rows.map((r) => r.userId);
}

/** The users holding a GRANTED grant of an entitlement (a `group` assignee's members). */
export async function grantedUserIds(db: Queryable, appEntitlementId: string, limit = 100): Promise<string[]> {
  const rows = await db.query<{ userId: string }>(
    `SELECT user_id AS "userId" FROM grants WHERE app_entitlement_id = $1 AND state = 'GRANTED' ORDER BY id LIMIT $2`,
    [appEntitlementId, limit],
  );
  return rows.map((r) => r.userId);
}
