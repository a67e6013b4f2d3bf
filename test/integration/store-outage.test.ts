/**
 * The store goes away while webhooks arrive: the receiver answers 503 with Retry-After (the sender
 * retries later), never a 500 and never a 200, and no run is started for the refused event.
 * Real PostgreSQL behind a relay that is cut, real Temporal, real HTTP.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { DATABASES } from '../helpers/databases';
import { openStoreWithOutage } from '../helpers/store-outage';
import { deliver, hmacEvent, listenerPath, startStack } from '../helpers/stack';
import { runWorkflowId } from '../../src/temporal/runs';

const STEPS = [{ id: 'vars', setVariables: { who: 'ctx.trigger.employee_id' } }];

// PostgreSQL only: an embedded PGlite lives in this process and cannot become unreachable (closing
// it is a shutdown, not an outage; the app answers 500 then). Without DATABASE_URL the test is
// reported as skipped.
const REMOTE_STORES = DATABASES.filter((target) => target.url !== undefined);
if (REMOTE_STORES.length === 0) {
  describe.skip('store unavailable during a webhook (needs DATABASE_URL)', () => {
    it('answers 503 + Retry-After in the error shape, and starts no run', () => undefined);
  });
}

for (const target of REMOTE_STORES) {
  describe(`store unavailable during a webhook (${target.name})`, () => {
    it('answers 503 + Retry-After in the error shape, and starts no run', async () => {
      const store = await openStoreWithOutage(target);
      const stack = await startStack({ db: store.db });
      try {
        const created = await stack.createAutomation({ displayName: 'store outage', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps: STEPS });
        const path = listenerPath(created.automation);
        const before = await deliver(stack, path, hmacEvent(created.signingSecret!, { employee_id: '1' }));
        expect(before.status).toBe(200);
        // A listener the receiver has not read yet: its lookup needs the store (one read within the
        // last second may be served from the listener cache, and its event is then durably accepted).
        const cold = await stack.createAutomation({ displayName: 'store outage, cold', trigger: { incomingWebhook: { authMethod: 'HMAC' } }, steps: STEPS });

        await store.takeDown();
        const event = hmacEvent(cold.signingSecret!, { employee_id: '2' });
        const res = await deliver(stack, listenerPath(cold.automation), event);
        expect([res.status, res.body.code]).toEqual([503, 14]);
        expect(Object.keys(res.body).sort()).toEqual(['code', 'details', 'message']);
        expect(res.body.message).toMatch(/\S/);
        expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
        expect(JSON.stringify(res.body)).not.toContain(cold.signingSecret!);

        const listenerId = cold.automation.trigger.incomingWebhook.listenerId;
        await expect(stack.client.workflow.getHandle(runWorkflowId(listenerId, event.eventId)).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
      } finally {
        await stack.close();
        await store.close();
      }
    });
  });
}
