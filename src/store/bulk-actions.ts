/**
 * Bulk actions on runs and their matched sets. A dry run's preview is a row of its own (state
 * PREVIEW, with `expires_at`) so that an action can take exactly its set; an action's rows in
 * `bulk_action_runs` are its matched set, fixed at creation, each with the run's outcome once the
 * bulk action workflow has acted on it. Counters move in the same statement as the outcomes they
 * count, and only when an outcome is first written, so they add up to `matched` at the end.
 */
import type { Queryable } from './db';
import { iso } from './db';

export type BulkActionKind = 'cancel' | 'terminate' | 'rerun';
export type BulkActionState = 'PREVIEW' | 'RUNNING' | 'COMPLETED' | 'CANCELED';
export type BulkOutcome = 'succeeded' | 'skipped' | 'failed';

export interface BulkActionRecord {
  id: string;
  action: BulkActionKind | null;
  automationId: string;
  filter: Record<string, unknown>;
  reason: string;
  by: string;
  state: BulkActionState;
  matched: number;
  whereErrors: number;
  succeeded: number;
  skipped: number;
  failed: number;
  previewId: string | null;
  createdAt: string;
  expiresAt: string | null;
  finishedAt: string | null;
}

interface BulkActionRow {
  id: string;
  action: BulkActionKind | null;
  automation_id: string;
  filter: Record<string, unknown> | string;
  reason: string;
  actor: string;
  state: BulkActionState;
  matched: number | string;
  where_errors: number | string;
  succeeded: number | string;
  skipped: number | string;
  failed: number | string;
  preview_id: string | null;
  created_at: Date | string;
  expires_at: Date | string | null;
  finished_at: Date | string | null;
}

function toRecord(row: BulkActionRow): BulkActionRecord {
  return {
    id: row.id,
    action: row.action,
    automationId: row.automation_id,
    filter: typeof row.filter === 'string' ? (JSON.parse(row.filter) as Record<string, unknown>) : row.filter,
    reason: row.reason,
    by: row.actor,
    state: row.state,
    matched: Number(row.matched),
    whereErrors: Number(row.where_errors),
    succeeded: Number(row.succeeded),
    skipped: Number(row.skipped),
    failed: Number(row.failed),
    previewId: row.preview_id,
    createdAt: iso(row.created_at) ?? '',
    expiresAt: iso(row.expires_at),
    finishedAt: iso(row.finished_at),
  };
}

export interface NewBulkSet {
  id: string;
  action: BulkActionKind | null;
  automationId: string;
  filter: Record<string, unknown>;
  reason: string;
  by: string;
  state: 'PREVIEW' | 'RUNNING';
  matched: number;
  whereErrors: number;
  previewId: string | null;
  /** For a preview: seconds until it expires. */
  expiresInSeconds?: number;
}

/** Rows per INSERT of a matched set (one array parameter each). */
const INSERT_CHUNK = 10_000;

/** Records an action or a preview with its matched set, in the caller's transaction. */
export async function insertBulkSet(
  tx: Queryable,
  set: NewBulkSet,
  runIds: readonly string[],
): Promise<BulkActionRecord> {
  const rows = await tx.query<BulkActionRow>(
    `INSERT INTO bulk_actions (id, action, automation_id, filter, reason, actor, state, matched, where_errors, preview_id, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, CASE WHEN $11::integer IS NULL THEN NULL ELSE now() + make_interval(secs => $11::integer) END)
     RETURNING *`,
    [
      set.id,
      set.action,
      set.automationId,
      JSON.stringify(set.filter),
      set.reason,
      set.by,
      set.state,
      set.matched,
      set.whereErrors,
      set.previewId,
      set.expiresInSeconds ?? null,
    ],
  );
  for (let start = 0; start < runIds.length; start += INSERT_CHUNK) {
    await tx.query(
      `INSERT INTO bulk_action_runs (bulk_action_id, seq, run_id)
       SELECT $1, ($2::integer + s.ord)::integer, s.id FROM unnest($3::text[]) WITH ORDINALITY AS s(id, ord)`,
      [set.id, start, runIds.slice(start, start + INSERT_CHUNK)],
    );
  }
  return toRecord(rows[0]!);
}

/** An action made from a preview takes the preview's set, in its order. */
export async function copyPreviewRuns(tx: Queryable, previewId: string, actionId: string): Promise<void> {
  await tx.query(
    `INSERT INTO bulk_action_runs (bulk_action_id, seq, run_id) SELECT $2, seq, run_id FROM bulk_action_runs WHERE bulk_action_id = $1`,
    [previewId, actionId],
  );
}

/** Forgets previews past their expiry (their sets go with them). */
export async function deleteExpiredPreviews(db: Queryable): Promise<void> {
  await db.query(`DELETE FROM bulk_actions WHERE state = 'PREVIEW' AND expires_at < now()`);
}

/** A bulk action or a preview (`expired`: a preview past its time). */
export async function getBulkAction(
  db: Queryable,
  id: string,
): Promise<(BulkActionRecord & { expired: boolean }) | undefined> {
  const rows = await db.query<BulkActionRow & { expired: boolean }>(
    `SELECT *, (expires_at IS NOT NULL AND expires_at < now()) AS expired FROM bulk_actions WHERE id = $1`,
    [id],
  );
  return rows[0] ? { ...toRecord(rows[0]), expired: rows[0].expired === true } : undefined;
}

/** Bulk actions (never previews), newest first, before the id `before`. */
export async function listBulkActions(
  db: Queryable,
  before: string | undefined,
  limit: number,
): Promise<BulkActionRecord[]> {
  const rows = await db.query<BulkActionRow>(
    `SELECT * FROM bulk_actions WHERE state <> 'PREVIEW' AND ($1::text IS NULL OR id < $1) ORDER BY id DESC LIMIT $2`,
    [before ?? null, limit],
  );
  return rows.map(toRecord);
}

/** RUNNING actions recorded at least `olderThanSeconds` ago, oldest first (the restart of their workflows). */
export async function runningBulkActionIds(db: Queryable, olderThanSeconds: number, limit: number): Promise<string[]> {
  const rows = await db.query<{ id: string }>(
    `SELECT id FROM bulk_actions WHERE state = 'RUNNING' AND created_at <= now() - make_interval(secs => $1) ORDER BY created_at, id LIMIT $2`,
    [olderThanSeconds, limit],
  );
  return rows.map((row) => row.id);
}

/** The first `limit` run ids of a set, in order. */
export async function bulkSetSample(db: Queryable, id: string, limit: number): Promise<string[]> {
  const rows = await db.query<{ run_id: string }>(
    'SELECT run_id FROM bulk_action_runs WHERE bulk_action_id = $1 ORDER BY seq LIMIT $2',
    [id, limit],
  );
  return rows.map((row) => row.run_id);
}

/** Every run id of a set, in order (tests and the audit check read it). */
export async function bulkSetRunIds(db: Queryable, id: string): Promise<string[]> {
  const rows = await db.query<{ run_id: string }>(
    'SELECT run_id FROM bulk_action_runs WHERE bulk_action_id = $1 ORDER BY seq',
    [id],
  );
  return rows.map((row) => row.run_id);
}

/** RUNNING → CANCELED; undefined when the action was not running. */
export async function stopBulkAction(db: Queryable, id: string): Promise<BulkActionRecord | undefined> {
  const rows = await db.query<BulkActionRow>(
    `UPDATE bulk_actions SET state = 'CANCELED', finished_at = now() WHERE id = $1 AND state = 'RUNNING' RETURNING *`,
    [id],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

/** RUNNING → COMPLETED; undefined when the action was not running (stopped, or finished already). */
export async function completeBulkAction(db: Queryable, id: string): Promise<BulkActionRecord | undefined> {
  const rows = await db.query<BulkActionRow>(
    `UPDATE bulk_actions SET state = 'COMPLETED', finished_at = now() WHERE id = $1 AND state = 'RUNNING' RETURNING *`,
    [id],
  );
  return rows[0] ? toRecord(rows[0]) : undefined;
}

export interface PendingRun {
  seq: number;
  runId: string;
}

/** The next `limit` runs of an action not yet acted on, in order. */
export async function pendingRuns(db: Queryable, id: string, limit: number): Promise<PendingRun[]> {
  const rows = await db.query<{ seq: number | string; run_id: string }>(
    'SELECT seq, run_id FROM bulk_action_runs WHERE bulk_action_id = $1 AND outcome IS NULL ORDER BY seq LIMIT $2',
    [id, limit],
  );
  return rows.map((row) => ({ seq: Number(row.seq), runId: row.run_id }));
}

/**
 * Claims the runs `seqs` of an action for acting on them, in one statement, only while the action
 * is RUNNING (a stopped action claims nothing more) and only those without an outcome. Answers,
 * for each run claimed, whether an earlier attempt had claimed it already (that attempt may have
 * acted before it died); a run missing from the answer may not be acted on.
 */
export async function claimRuns(
  db: Queryable,
  id: string,
  seqs: readonly number[],
): Promise<Map<number, { claimedBefore: boolean }>> {
  // `prior` reads the rows as they were before this statement's update: their earlier claims.
  const rows = await db.query<{ seq: number | string; before: Date | string | null }>(
    `WITH prior AS (SELECT seq, claimed_at FROM bulk_action_runs WHERE bulk_action_id = $1 AND seq = ANY($2::integer[]))
     UPDATE bulk_action_runs r SET claimed_at = now() FROM prior
     WHERE r.bulk_action_id = $1 AND r.seq = prior.seq AND r.outcome IS NULL
       AND EXISTS (SELECT 1 FROM bulk_actions b WHERE b.id = $1 AND b.state = 'RUNNING')
     RETURNING r.seq, prior.claimed_at AS before`,
    [id, seqs],
  );
  return new Map(rows.map((row) => [Number(row.seq), { claimedBefore: row.before !== null }]));
}

export interface RunOutcome {
  seq: number;
  outcome: BulkOutcome;
  reason: string | null;
  newExecutionId: string | null;
}

/**
 * Writes the outcomes of some runs of an action (none is fine) and counts them, in one statement,
 * so atomically: a run's outcome is written once, and only outcomes first written here are
 * counted, so a second write of the same runs changes nothing. Answers how many were written and
 * whether the action is still RUNNING (the page stops acting when it is not).
 */
export async function recordOutcomes(
  db: Queryable,
  id: string,
  outcomes: readonly RunOutcome[],
): Promise<{ written: number; running: boolean }> {
  const rows = await db.query<{ written: number | string; state: BulkActionState }>(
    `WITH given AS (
       SELECT * FROM unnest($2::integer[], $3::text[], $4::text[], $5::text[]) AS g(seq, outcome, reason, new_execution_id)
     ), written AS (
       UPDATE bulk_action_runs r
       SET outcome = g.outcome, outcome_reason = g.reason, new_execution_id = g.new_execution_id, acted_at = now()
       FROM given g
       WHERE r.bulk_action_id = $1 AND r.seq = g.seq AND r.outcome IS NULL
       RETURNING r.outcome
     ), counted AS (
       UPDATE bulk_actions SET
         succeeded = succeeded + (SELECT count(*) FROM written WHERE outcome = 'succeeded'),
         skipped = skipped + (SELECT count(*) FROM written WHERE outcome = 'skipped'),
         failed = failed + (SELECT count(*) FROM written WHERE outcome = 'failed')
       WHERE id = $1
       RETURNING state
     )
     SELECT (SELECT count(*) FROM written) AS written, state FROM counted`,
    [
      id,
      outcomes.map((o) => o.seq),
      outcomes.map((o) => o.outcome),
      outcomes.map((o) => o.reason),
      outcomes.map((o) => o.newExecutionId),
    ],
  );
  return { written: Number(rows[0]?.written ?? 0), running: rows[0]?.state === 'RUNNING' };
}

/** The outcome of each run of a set, in order (for tests and the runbook's checks). */
export async function bulkRunOutcomes(
  db: Queryable,
  id: string,
): Promise<
  Array<{ runId: string; outcome: BulkOutcome | null; reason: string | null; newExecutionId: string | null }>
> {
  const rows = await db.query<{
    run_id: string;
    outcome: BulkOutcome | null;
    outcome_reason: string | null;
    new_execution_id: string | null;
  }>(
    'SELECT run_id, outcome, outcome_reason, new_execution_id FROM bulk_action_runs WHERE bulk_action_id = $1 ORDER BY seq',
    [id],
  );
  return rows.map((row) => ({
    runId: row.run_id,
    outcome: row.outcome,
    reason: row.outcome_reason,
    newExecutionId: row.new_execution_id,
  }));
}

/**
 * The bulk action that touched a run last: one that acted on it (succeeded) or whose rerun it is;
 * undefined when none did.
 */
export async function bulkActionOfRun(db: Queryable, runId: string): Promise<string | undefined> {
  const rows = await db.query<{ bulk_action_id: string }>(
    `SELECT bulk_action_id FROM bulk_action_runs
     WHERE (run_id = $1 AND outcome = 'succeeded') OR new_execution_id = $1
     ORDER BY acted_at DESC NULLS LAST LIMIT 1`,
    [runId],
  );
  return rows[0]?.bulk_action_id;
}

/** The reruns bulk actions started of a run, oldest first. */
export async function bulkRerunsOf(db: Queryable, runId: string): Promise<string[]> {
  const rows = await db.query<{ new_execution_id: string }>(
    `SELECT new_execution_id FROM bulk_action_runs WHERE run_id = $1 AND new_execution_id IS NOT NULL ORDER BY acted_at, bulk_action_id`,
    [runId],
  );
  return rows.map((row) => row.new_execution_id);
}

/** Whether `runId` is in the matched set of the (non-preview) bulk action `id`. */
export async function inBulkSet(db: Queryable, id: string, runId: string): Promise<boolean> {
  const rows = await db.query(
    `SELECT 1 FROM bulk_action_runs r JOIN bulk_actions b ON b.id = r.bulk_action_id
     WHERE r.bulk_action_id = $1 AND r.run_id = $2 AND b.state <> 'PREVIEW' LIMIT 1`,
    [id, runId],
  );
  return rows.length > 0;
}

/** Removes an action or a preview with its set (and, with `withAudit`, its audit record: an action that never started). */
export async function deleteBulkAction(tx: Queryable, id: string, withAudit = false): Promise<void> {
  if (withAudit)
    await tx.query(`DELETE FROM audit_events WHERE resource_type = 'bulk_action' AND resource_id = $1`, [id]);
  await tx.query('DELETE FROM bulk_actions WHERE id = $1', [id]);
}

/** Completes the counts of the bulk action's one audit record when the action ends. */
export async function addBulkCountsToAudit(tx: Queryable, id: string, counts: Record<string, unknown>): Promise<void> {
  await tx.query(
    `UPDATE audit_events SET details = jsonb_set(details, '{counts}', $2::jsonb)
     WHERE resource_type = 'bulk_action' AND resource_id = $1 AND action = 'bulk_action.create'`,
    [id, JSON.stringify(counts)],
  );
}
