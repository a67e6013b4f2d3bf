/**
 * Runs take references, not steps: the worker loads the steps of a published version from the
 * store. Tests that start the workflow directly record their steps as a published version first.
 */
import { randomUUID } from 'node:crypto';
import type { Db } from '../../src/store/db';
import { recordPublishedVersion } from '../../src/store/automation-versions';
import type { AutomationRunInput, StepDefinition } from '../../src/contract/run';

/** Stores `steps` as version 1 of a new automation; answers a run input that refers to it. */
export async function publishedRunInput(
  db: Db,
  steps: StepDefinition[],
  trigger: unknown,
  name = 'Test automation',
): Promise<AutomationRunInput> {
  const automationId = `auto-${randomUUID()}`;
  const listenerId = `listener-${randomUUID()}`;
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
  return { automationId, version: 1, listenerId, eventId: randomUUID(), receivedAt: new Date().toISOString(), trigger };
}
