/**
 * The provisioning members beyond webhook and unconfigured, end to end (docs/api.md#grants): real
 * HTTP, the real store (PGlite, and PostgreSQL with DATABASE_URL), the real Temporal dev server and
 * worker, and a real receiver for webhook steps. `manual` opens a provisioning task for the
 * assignees the contract resolves, a person completes or fails it (once: a second decision is 409);
 * `multiStep` runs its steps in order and, when one fails, undoes those done before it in reverse
 * (no access left behind); a multiStep deprovisioner runs in written order; `delegated` makes a
 * child grant of the target (or links the user's live one, never revoked with the parent), waits
 * for it, gives it the parent's expiry and revokes it after the parent's deprovision; a chain that
 * comes back, or names an unknown entitlement, fails naming the chain; a revoke during a manual
 * provision closes its task as failed.
 */
import { DATABASES, describeOn } from '../helpers/databases';
import { startStack, type Stack } from '../helpers/stack';
import {
  callerFor,
  createEntitlement,
  createGovernanceApp,
  createUser,
  violatedFields,
  type Caller,
} from '../helpers/governance';
import { startReceiver, type Receiver } from '../helpers/receiver';
import { poll } from '../helpers/wait';
import { listAuditEvents } from '../../src/store/audit';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

for (const target of DATABASES) {
  describeOn(target)(`provisioning members (${target.label})`, () => {
    let stack: Stack;
    let admin: Caller;
    let readOnly: Caller;
    let superAdmin: Caller;
    let actor: string;
    let receiver: Receiver;
    let hookA: string;
    let hookB: string;
    const bodies = (path: string): Json[] =>
      receiver.received.filter((r) => r.path === path).map((r) => JSON.parse(r.body.toString('utf8')));

    beforeAll(async () => {
      receiver = await startReceiver(() => ({ status: 200 }));
      stack = await startStack({ target });
      const token = await stack.service.tokenFor('admin');
      admin = callerFor(stack.service, token);
      readOnly = callerFor(stack.service, await stack.service.tokenFor('read_only'));
      superAdmin = callerFor(stack.service, await stack.service.tokenFor('super_admin'));
      actor = `client:${(await stack.service.deps.tokens.verify(token))!.clientId}`;
      const hook = async (path: string) => {
        const res = await superAdmin.post('/api/v1/provisioning_webhooks', {
          displayName: path,
          url: `${receiver.origin}${path}`,
        });
        expect(res.status).toBe(200);
        return res.body.provisioningWebhook.id as string;
      };
      hookA = await hook('/a');
      hookB = await hook('/b');
    });
    afterAll(async () => {
      await stack?.close();
      await receiver?.close();
    });

    async function entitlement(fields: Record<string, unknown> = {}, appId?: string) {
      const app = appId ?? (await createGovernanceApp(admin)).id;
      const made = await createEntitlement(admin, app, fields);
      return { appId: app, id: made.id };
    }
    async function newUser(email = 'member@acme.example'): Promise<string> {
      const res = await admin.post('/api/v1/users', { displayName: 'Member', email, type: 'USER_TYPE_HUMAN' });
      expect(res.status).toBe(200);
      return res.body.user.id as string;
    }
    async function ask(userId: string, e: { appId: string; id: string }, extra: Record<string, unknown> = {}) {
      const res = await admin.post('/api/v1/grants', { userId, appId: e.appId, appEntitlementId: e.id, ...extra });
      expect(res.status).toBe(200);
      return res.body.grant as Json;
    }
    const grantOf = async (id: string): Promise<Json> => (await admin.get(`/api/v1/grants/${id}`)).body.grant;
    const settled = (id: string, states = ['GRANTED', 'FAILED', 'REVOKED']) =>
      poll(
        () => grantOf(id),
        (g) => states.includes(g.state),
        { what: `grant ${id} in ${states.join('/')}` },
      );
    const countOf = async (e: { appId: string; id: string }): Promise<string> =>
      (await admin.get(`/api/v1/apps/${e.appId}/entitlements/${e.id}`)).body.appEntitlement.grantCount;
    const openTask = async (grantId: string, phase = 'provision'): Promise<Json> =>
      (
        await poll(
          async () => (await admin.get(`/api/v1/provisioning_tasks?grantId=${grantId}&state=OPEN`)).body.list,
          (list: Json[]) => list.some((t) => t.provisioningTask.phase === phase),
          { what: `an open ${phase} task of ${grantId}` },
        )
      ).find((t: Json) => t.provisioningTask.phase === phase).provisioningTask;

    it('manual: a task for the assignees, completed once by a person (409 twice), then GRANTED and counted', async () => {
      const assignee = await newUser('assignee@acme.example');
      const e = await entitlement({
        provisionerPolicy: {
          manual: { instructions: 'Add to the LDAP group', assignee: { users: { userIds: [assignee] } } },
        },
      });
      const userId = await newUser();
      const grant = await ask(userId, e);
      expect(grant.state).toBe('PROVISIONING');
      const task = await openTask(grant.id);
      expect(task).toMatchObject({
        grantId: grant.id,
        phase: 'provision',
        step: '',
        instructions: 'Add to the LDAP group',
        assigneeUserIds: [assignee],
        state: 'OPEN',
        closedAt: null,
      });
      expect((await grantOf(grant.id)).provisioning).toEqual([
        expect.objectContaining({ phase: 'provision', policy: 'manual', state: 'PENDING' }),
      ]);
      // read_only neither reads nor decides.
      expect((await readOnly.get('/api/v1/provisioning_tasks')).status).toBe(403);
      expect((await readOnly.post(`/api/v1/provisioning_tasks/${task.id}/complete`, {})).status).toBe(403);
      expect(
        (await admin.post(`/api/v1/provisioning_tasks/${task.id}/complete`, { comment: 'x'.repeat(1001) })).status,
      ).toBe(400);
      expect((await admin.post('/api/v1/provisioning_tasks/no-such-task/complete', {})).status).toBe(404);
      const badState = await admin.get('/api/v1/provisioning_tasks?state=NOPE');
      expect([badState.status, violatedFields(badState.body)]).toEqual([400, ['state']]);
      const twice = await admin.get(`/api/v1/provisioning_tasks?grantId=a&grantId=b`);
      expect([twice.status, violatedFields(twice.body)]).toEqual([400, ['grantId']]);
      // A NUL character reaches no store (PostgreSQL refuses it): 400, not 500, for tasks and grants alike.
      const nul = await admin.get('/api/v1/provisioning_tasks?grantId=a%00b');
      expect([nul.status, violatedFields(nul.body)]).toEqual([400, ['grantId']]);
      const nulGrants = await admin.get('/api/v1/grants?userId=%00');
      expect([nulGrants.status, violatedFields(nulGrants.body)]).toEqual([400, ['userId']]);

      const done = await admin.post(`/api/v1/provisioning_tasks/${task.id}/complete`, { comment: 'added' });
      expect(done.status).toBe(200);
      expect(done.body.provisioningTask).toMatchObject({ state: 'DONE', closedBy: actor, comment: 'added' });
      const granted = await settled(grant.id);
      expect(granted.state).toBe('GRANTED');
      expect(granted.provisioning).toEqual([expect.objectContaining({ policy: 'manual', state: 'DONE', attempts: 1 })]);
      expect(await countOf(e)).toBe('1');

      const again = await admin.post(`/api/v1/provisioning_tasks/${task.id}/fail`, { comment: 'changed my mind' });
      expect(again.status).toBe(409);
      expect(again.body.code).toEqual(expect.any(Number));
      expect((await grantOf(grant.id)).state).toBe('GRANTED');
      const audit = await listAuditEvents(stack.service.deps.db, 'provisioning_task', task.id);
      expect(audit.map((a) => a.action)).toEqual(['provisioning_task.complete']);
    });

    it('manual: a failed task fails the grant with the comment; entitlementOwners falls back, then names the owners', async () => {
      const fallback = await newUser('fallback@acme.example');
      const e = await entitlement({
        provisionerPolicy: {
          manual: { instructions: 'Open the ticket', assignee: { entitlementOwners: { fallbackUserIds: [fallback] } } },
        },
      });
      const first = await ask(await newUser('first@acme.example'), e);
      const task = await openTask(first.id);
      expect(task.assigneeUserIds).toEqual([fallback]);
      expect(
        (await admin.post(`/api/v1/provisioning_tasks/${task.id}/fail`, { comment: 'no licence left' })).status,
      ).toBe(200);
      const failed = await settled(first.id);
      expect(failed.state).toBe('FAILED');
      expect(failed.error).toBe(`the provisioning task was failed by ${actor}: no licence left`);
      expect(await countOf(e)).toBe('0');

      const owner = await createUser(admin, 'USER_TYPE_SERVICE');
      const owned = await admin.post(`/api/v2/users/${owner.id}/owners/entitlements/owner/${e.appId}/${e.id}`, {});
      expect(owned.status).toBe(200);
      const second = await ask(await newUser('second@acme.example'), e);
      expect((await openTask(second.id)).assigneeUserIds).toEqual([owner.id]);
    });

    it('multiStep: the steps in order (unconfigured, webhook, manual), then GRANTED; its deprovisioner in written order', async () => {
      const e = await entitlement({
        provisionerPolicy: {
          multiStep: {
            provisionSteps: [
              { unconfigured: {} },
              { webhook: { webhookId: hookA } },
              { manual: { instructions: 'Check the licence' } },
            ],
          },
        },
        deprovisionerPolicy: {
          multiStep: { provisionSteps: [{ webhook: { webhookId: hookB } }, { webhook: { webhookId: hookA } }] },
        },
      });
      const grant = await ask(await newUser('steps@acme.example'), e);
      const task = await openTask(grant.id);
      expect(task.step).toBe('provisionSteps[2]');
      const before = await grantOf(grant.id);
      expect(before.state).toBe('PROVISIONING');
      expect(before.provisioning.map((p: Json) => [p.step, p.policy, p.state])).toEqual([
        ['provisionSteps[0]', 'unconfigured', 'DONE'],
        ['provisionSteps[1]', 'webhook', 'DONE'],
        ['provisionSteps[2]', 'manual', 'PENDING'],
      ]);
      expect(bodies('/a').map((b) => [b.type, b.grant.id])).toEqual([['grant.provision', grant.id]]);
      await admin.post(`/api/v1/provisioning_tasks/${task.id}/complete`, {});
      expect((await settled(grant.id)).state).toBe('GRANTED');

      const a = bodies('/a').length;
      expect((await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'leaver' })).status).toBe(200);
      const revoked = await settled(grant.id, ['REVOKED']);
      const order = receiver.received
        .filter((r) => r.path === '/a' || r.path === '/b')
        .slice(a)
        .map((r) => [r.path, JSON.parse(r.body.toString('utf8')).type]);
      expect(order).toEqual([
        ['/b', 'grant.deprovision'],
        ['/a', 'grant.deprovision'],
      ]);
      expect(
        revoked.provisioning.filter((p: Json) => p.phase === 'deprovision').map((p: Json) => [p.step, p.state]),
      ).toEqual([
        ['provisionSteps[0]', 'DONE'],
        ['provisionSteps[1]', 'DONE'],
      ]);
    });

    it('multiStep: a failing step undoes the steps done before it, last first, and the grant fails naming the step', async () => {
      const e = await entitlement({
        provisionerPolicy: {
          multiStep: {
            provisionSteps: [
              { webhook: { webhookId: hookB } },
              { webhook: { webhookId: hookA } },
              { manual: { instructions: 'Approve the seat' } },
            ],
          },
        },
      });
      const grant = await ask(await newUser('undo@acme.example'), e);
      const task = await openTask(grant.id);
      const seenA = bodies('/a').length;
      const seenB = bodies('/b').length;
      await admin.post(`/api/v1/provisioning_tasks/${task.id}/fail`, { comment: 'no seat' });
      const failed = await settled(grant.id);
      expect(failed.state).toBe('FAILED');
      expect(failed.error).toBe(`provisionSteps[2]: the provisioning task was failed by ${actor}: no seat`);
      // Undone last first: the step at provisionSteps[1] (hook A), then provisionSteps[0] (hook B).
      const undone = receiver.received
        .filter((r) => r.path === '/a' || r.path === '/b')
        .map((r) => ({ path: r.path, body: JSON.parse(r.body.toString('utf8')), key: r.headers['idempotency-key'] }))
        .filter((r) => r.body.type === 'grant.deprovision' && r.body.grant.id === grant.id);
      expect(undone.map((r) => r.path)).toEqual(['/a', '/b']);
      expect(bodies('/a').length).toBe(seenA + 1);
      expect(bodies('/b').length).toBe(seenB + 1);
      expect(new Set(undone.map((r) => r.key)).size).toBe(2);
      expect(
        failed.provisioning.filter((p: Json) => p.phase === 'deprovision').map((p: Json) => [p.step, p.state]),
      ).toEqual([
        ['provisionSteps[1]', 'DONE'],
        ['provisionSteps[0]', 'DONE'],
      ]);
      expect(await countOf(e)).toBe('0');
    });

    it('delegated: a child grant of the target with the parent as requester and its expiry, revoked after the parent', async () => {
      const app = (await createGovernanceApp(admin)).id;
      const child = await entitlement({}, app);
      const parent = await entitlement(
        { provisionerPolicy: { delegated: { appId: app, entitlementId: child.id } } },
        app,
      );
      const userId = await newUser('delegate@acme.example');
      const grant = await ask(userId, parent, { duration: '3600s' });
      const granted = await settled(grant.id);
      expect(granted.state).toBe('GRANTED');
      const entry = granted.provisioning.find((p: Json) => p.policy === 'delegated');
      expect(entry).toMatchObject({ state: 'DONE', detail: expect.objectContaining({ linked: false }) });
      const made = await grantOf(entry.detail.grantId);
      expect(made).toMatchObject({
        userId,
        appEntitlementId: child.id,
        state: 'GRANTED',
        requestedBy: `grant:${grant.id}`,
        expiresAt: granted.expiresAt,
      });
      expect(await countOf(child)).toBe('1');
      // Extending the parent moves the child's expiry with it.
      const extended = await admin.post(`/api/v1/grants/${grant.id}/extend`, { duration: '7200s' });
      expect(extended.status).toBe(200);
      expect((await grantOf(made.id)).expiresAt).toBe(extended.body.grant.expiresAt);
      await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'mover' });
      expect((await settled(grant.id, ['REVOKED'])).state).toBe('REVOKED');
      const gone = await settled(made.id, ['REVOKED']);
      expect(gone).toMatchObject({ revokedBy: `grant:${grant.id}`, revokeReason: 'mover' });
      expect(await countOf(child)).toBe('0');
    });

    it('delegated: the parent waits for a child that waits for a person; a live grant of the target is linked, never revoked', async () => {
      const app = (await createGovernanceApp(admin)).id;
      const child = await entitlement({ provisionerPolicy: { manual: { instructions: 'by hand' } } }, app);
      const parent = await entitlement(
        { provisionerPolicy: { delegated: { appId: app, entitlementId: child.id } } },
        app,
      );
      const userId = await newUser('waits@acme.example');
      const grant = await ask(userId, parent);
      const childGrant = await poll(
        async () => (await admin.get(`/api/v1/grants?userId=${userId}&appEntitlementId=${child.id}`)).body.list,
        (list: Json[]) => list.length === 1,
      );
      const task = await openTask(childGrant[0].grant.id);
      expect((await grantOf(grant.id)).state).toBe('PROVISIONING');
      await admin.post(`/api/v1/provisioning_tasks/${task.id}/complete`, {});
      expect((await settled(grant.id)).state).toBe('GRANTED');

      // Another user already holds the target: linked, and kept when the parent goes.
      const holder = await newUser('holder@acme.example');
      const held = await ask(holder, child);
      const heldTask = await openTask(held.id);
      await admin.post(`/api/v1/provisioning_tasks/${heldTask.id}/complete`, {});
      await settled(held.id);
      const linkedParent = await ask(holder, parent);
      const linked = await settled(linkedParent.id);
      expect(linked.provisioning.find((p: Json) => p.policy === 'delegated').detail).toMatchObject({
        grantId: held.id,
        linked: true,
      });
      await admin.post(`/api/v1/grants/${linkedParent.id}/revoke`, { reason: 'done' });
      await settled(linkedParent.id, ['REVOKED']);
      expect((await grantOf(held.id)).state).toBe('GRANTED');
    });

    it('delegated: a chain that comes back, and an unknown target, fail naming the chain', async () => {
      const app = (await createGovernanceApp(admin)).id;
      const first = await entitlement({}, app);
      const second = await entitlement(
        { provisionerPolicy: { delegated: { appId: app, entitlementId: first.id } } },
        app,
      );
      const update = await admin.post(`/api/v1/apps/${app}/entitlements/${first.id}`, {
        appEntitlement: { provisionerPolicy: { delegated: { appId: app, entitlementId: second.id } } },
        updateMask: 'provisionerPolicy',
      });
      expect(update.status).toBe(200);
      const userId = await newUser('cycle@acme.example');
      const grant = await ask(userId, first);
      expect((await settled(grant.id)).state).toBe('FAILED');
      // The child (second) failed on the chain first -> second -> first; the parent fails with it.
      const childGrant = (await admin.get(`/api/v1/grants?userId=${userId}&appEntitlementId=${second.id}`)).body.list[0]
        .grant;
      expect(childGrant.error).toBe(
        `delegation comes back to an entitlement of its chain: ${first.id} -> ${second.id} -> ${first.id}`,
      );
      expect((await grantOf(grant.id)).error).toContain(childGrant.error);

      const lost = await entitlement(
        { provisionerPolicy: { delegated: { appId: app, entitlementId: 'no-such' } } },
        app,
      );
      const orphan = await settled((await ask(userId, lost)).id);
      expect(orphan.state).toBe('FAILED');
      expect(orphan.error).toBe(`delegation to an unknown entitlement: ${lost.id} -> no-such`);
    });

    it('a revoke during a manual provision closes its task as failed and ends REVOKED, not counted', async () => {
      const e = await entitlement({ provisionerPolicy: { manual: { instructions: 'slow' } } });
      const grant = await ask(await newUser('stopped@acme.example'), e);
      const task = await openTask(grant.id);
      expect((await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'cancelled' })).status).toBe(200);
      expect((await settled(grant.id, ['REVOKED'])).state).toBe('REVOKED');
      const closed = (await admin.get(`/api/v1/provisioning_tasks?grantId=${grant.id}`)).body.list[0].provisioningTask;
      expect(closed).toMatchObject({ id: task.id, state: 'FAILED', comment: 'the grant was revoked' });
      expect((await admin.post(`/api/v1/provisioning_tasks/${task.id}/complete`, {})).status).toBe(409);
      expect(await countOf(e)).toBe('0');
    });
  });
}
