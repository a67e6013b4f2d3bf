/**
 * The exactly-once checks of the crash test and the drill count the effect where a duplicate would
 * show (test/helpers/effects.ts). This proves the counter can see one: a run that executes the
 * ownership step twice for the same ownership leaves one row (the key and ON CONFLICT DO NOTHING
 * hold it) and one creation, yet two completed activities in its history, and the counter says 2.
 */
import { startStack, hmacEvent, deliver, listenerPath, type Stack } from '../helpers/stack';
import { callerFor, createGovernanceApp, createEntitlement, createUser } from '../helpers/governance';
import { completedActivities } from '../helpers/effects';
import { listAuditEvents } from '../../src/store/audit';

describe('counting the ownership effect', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await startStack();
  });
  afterAll(async () => stack?.close());

  it('sees the second execution that the ownership rows cannot', async () => {
    const caller = callerFor(stack.service, stack.adminToken);
    const app = await createGovernanceApp(caller);
    const entitlement = await createEntitlement(caller, app.id);
    const user = await createUser(caller);
    const ref = {
      userId: `'${user.id}'`,
      roleSlug: 'ctx.trigger.role',
      appId: `'${app.id}'`,
      entitlementId: `'${entitlement.id}'`,
    };
    const twice = await stack.createAutomation({
      displayName: 'owns twice',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [
        { id: 'first', createEntitlementOwner: ref },
        { id: 'again', createEntitlementOwner: ref },
      ],
    });
    const once = await stack.createAutomation({
      displayName: 'owns once',
      trigger: { incomingWebhook: { authMethod: 'HMAC' } },
      steps: [{ id: 'only', createEntitlementOwner: { ...ref, roleSlug: "'single'" } }],
    });

    const runs = [];
    for (const [created, role] of [
      [twice, 'double'],
      [once, 'single'],
    ] as const) {
      const res = await deliver(stack, listenerPath(created.automation), hmacEvent(created.signingSecret!, { role }));
      expect(res.status).toBe(200);
      const handle = stack.client.workflow.getHandle(res.body.executionId);
      await handle.result();
      runs.push({ workflowId: handle.workflowId, runId: (await handle.describe()).runId });
    }

    const rows = await stack.service.deps.db.query<{ role_slug: string }>(
      'SELECT role_slug FROM entitlement_owners WHERE user_id = $1 ORDER BY role_slug',
      [user.id],
    );
    expect(rows.map((r) => r.role_slug)).toEqual(['double', 'single']); // one row each: rows cannot tell
    const creations = (await listAuditEvents(stack.service.deps.db, 'app_entitlement', entitlement.id)).filter(
      (e) => e.action === 'entitlement_owner.create',
    );
    expect(creations.map((e) => e.details.roleSlug).sort()).toEqual(['double', 'single']); // one creation each, too

    const counted = await completedActivities(stack.client, runs, 'createEntitlementOwner');
    expect([counted.get(runs[0]!.workflowId), counted.get(runs[1]!.workflowId)]).toEqual([2, 1]);
  });
});
