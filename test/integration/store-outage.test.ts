/**
 * The store goes away while webhooks arrive: the receiver answers 503 with Retry-After (the sender
 * retries later), never a 500 and never a 200, and no run is started for the refused event.
 * Real PostgreSQL behind a relay that is cut (or the embedded PGlite closed), real Temporal, real HTTP.
 */
import { WorkflowNotFoundError } from '@temporalio/client';
import { DATABASES, describeOn } from '../helpers/databases';
import { openStoreWithOutage } from '../helpers/store-outage';
import { deliver, hmacEvent, listenerPath, startStack } from '../helpers/stack';
import { runWorkflowId } from '../../src/contract/run';

const STEPS = [{ id: 'vars', setVariables: { who: 'ctx.trigger.employee_id' } }];

// Every store: PostgreSQL behind a relay that is cut, and the embedded PGlite closed under the app
// (what its failure looks like in-process); both answer 503, never 500.
for (const target of DATABASES) {
  describeOn(target)(`store unavailable during a webhook (${target.label})`, () => {
    it('answers 503 + Retry-After in the error shape, and starts no run', async () => {
      const store = await openStoreWithOutage(target);
      const stack = await startStack({ db: store.db });
      try {
        const created = await stack.createAutomation({
          displayName: 'store outage',
          trigger: { incomingWebhook: { authMethod: 'HMAC' } },
          steps: STEPS,
        });
        const path = listenerPath(created.automation);
        const first = hmacEvent(created.signingSecret!, { employee_id: '1' });
        const before = await deliver(stack, path, first);
        expect(before.status).toBe(200);
        // That run ends before the store goes (a run caught mid-step would retry its store reads
        // until the worker's shutdown gives up on it, which is not what this test is about).
        const firstRun = stack.client.workflow.getHandle(
          runWorkflowId(created.automation.trigger.incomingWebhook.listenerId, first.eventId),
        );
        await firstRun.result();
        // A listener the receiver has not read yet: its lookup needs the store (one read within the
        // last second may be served from the listener cache, and its event is then durably accepted).
        const cold = await stack.createAutomation({
          displayName: 'store outage, cold',
          trigger: { incomingWebhook: { authMethod: 'HMAC' } },
          steps: STEPS,
        });

        await store.takeDown();
        const event = hmacEvent(cold.signingSecret!, { employee_id: '2' });
        const res = await deliver(stack, listenerPath(cold.automation), event);
        expect([res.status, res.body.code]).toEqual([503, 14]);
        expect(Object.keys(res.body).sort()).toEqual(['code', 'details', 'message']);
        expect(res.body.message).toMatch(/\S/);
        expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
        expect(JSON.stringify(res.body)).not.toContain(cold.signingSecret!);

        const listenerId = cold.automation.trigger.incomingWebhook.listenerId;
        await expect(
          stack.client.workflow.getHandle(runWorkflowId(listenerId, event.eventId)).describe(),
        ).rejects.toBeInstanceOf(WorkflowNotFoundError);
      } finally {
        await stack.close();
        await store.close();
      }
    });
  });
}
