/**
 * Ownership changes made by automations are audited with the run as actor,
 * `automation:<automationId>:<eventId>` (the workflow passes it), and `system` when not told:
 * whether the workflow sends the ids or (from 0.5.0) the step's fields for the activity to evaluate.
 */
import { randomUUID } from 'node:crypto';
import { startTestService, type TestService } from '../helpers/test-service';
import { callerWith, createGovernanceApp, createEntitlement, createUser } from '../helpers/governance';
import { createOwnershipActivities } from '../../activities/owners';
import { listAuditEvents } from '../../src/store/audit';

describe('ownership activities: audit actor', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service.close());

  it('records automation:<automationId>:<eventId> for create and delete', async () => {
    const caller = await callerWith(service, 'admin');
    const app = await createGovernanceApp(caller);
    const entitlement = await createEntitlement(caller, app.id);
    const user = await createUser(caller);
    const ref = { userId: user.id, roleSlug: 'owner', appId: app.id, entitlementId: entitlement.id };
    const actor = `automation:${randomUUID()}:${randomUUID()}`;
    const activities = createOwnershipActivities({ db: service.deps.db });

    await activities.createEntitlementOwner({ ...ref, actor });
    expect((await activities.deleteEntitlementOwner({ ...ref, actor })).deleted).toBe(true);
    await activities.createEntitlementOwner(ref);

    const events = await listAuditEvents(service.deps.db, 'app_entitlement', entitlement.id);
    expect(events.filter((e) => e.action.startsWith('entitlement_owner.')).map((e) => [e.action, e.actor])).toEqual([
      ['entitlement_owner.create', actor],
      ['entitlement_owner.delete', actor],
      ['entitlement_owner.create', 'system'],
    ]);
  });

  it("records the actor too when the activity evaluates the step's fields itself (0.5.0)", async () => {
    const caller = await callerWith(service, 'admin');
    const app = await createGovernanceApp(caller);
    const entitlement = await createEntitlement(caller, app.id);
    const user = await createUser(caller);
    const actor = `automation:${randomUUID()}:${randomUUID()}`;
    const activities = createOwnershipActivities({ db: service.deps.db });
    const evaluating = {
      stepId: 'own',
      actor,
      expressions: {
        userId: 'ctx.trigger.user',
        roleSlug: "'owner'",
        appId: 'ctx.trigger.app',
        entitlementId: 'ctx.steps.pick.id',
      },
      ctx: { trigger: { user: user.id, app: app.id }, steps: { pick: { id: entitlement.id } } },
    };

    expect(await activities.createEntitlementOwner(evaluating)).toMatchObject({
      userId: user.id,
      roleSlug: 'owner',
      appId: app.id,
      entitlementId: entitlement.id,
    });
    expect((await activities.deleteEntitlementOwner(evaluating)).deleted).toBe(true);

    const events = await listAuditEvents(service.deps.db, 'app_entitlement', entitlement.id);
    expect(events.filter((e) => e.action.startsWith('entitlement_owner.')).map((e) => [e.action, e.actor])).toEqual([
      ['entitlement_owner.create', actor],
      ['entitlement_owner.delete', actor],
    ]);
  });
});
