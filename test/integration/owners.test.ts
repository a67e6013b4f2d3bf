import { DATABASES, describeOn, openTestDb } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import {
  callerFor,
  callerWith,
  createGovernanceApp,
  createEntitlement,
  createUser,
  violatedFields,
  type Caller,
} from '../helpers/governance';
import { createEntitlementOwner, deleteEntitlementOwner } from '../../src/domain/owners';
import { NotFoundError, ServiceError } from '../../src/errors';
import { sleep } from '../helpers/wait';
import { listAuditEvents } from '../../src/store/audit';
import { listOwnedEntitlements } from '../../src/store/owners';
import type { Db } from '../../src/store/db';
import { createUser as createUserRow } from '../../src/domain/users';
import { createApp } from '../../src/domain/apps';
import { createEntitlement as createEntitlementRow } from '../../src/domain/entitlements';
import { AppEntitlementInput } from '../../src/domain/schemas';

for (const target of DATABASES) {
  describeOn(target)(`entitlement owners (${target.label})`, () => {
    let service: TestService;
    let admin: Caller;
    let reader: Caller;
    let serviceUser: string;
    let human: string;
    let appId: string;
    let entitlementId: string;

    const path = (userId: string, role: string, app: string, entitlement: string) =>
      `/api/v2/users/${userId}/owners/entitlements/${role}/${app}/${entitlement}`;
    const ownersOf = (userId: string) => `/api/v2/users/${userId}/owners/entitlements`;

    beforeAll(async () => {
      service = await startTestService({ target });
      admin = await callerWith(service, 'admin');
      reader = await callerWith(service, 'read_only');
      serviceUser = (await createUser(admin, 'USER_TYPE_SERVICE')).id;
      human = (await createUser(admin, 'USER_TYPE_HUMAN')).id;
      appId = (await createGovernanceApp(admin, 'Owned')).id;
      entitlementId = (await createEntitlement(admin, appId, { displayName: 'Owned entitlement', alias: 'owned' })).id;
    });
    afterAll(async () => service.close());

    it('creates an ownership and returns the full entitlement', async () => {
      const res = await admin.post(path(serviceUser, 'owner', appId, entitlementId), {
        appEntitlementRef: { appId, id: entitlementId },
      });
      expect(res.status).toBe(200);
      const entitlement = (await reader.get(`/api/v1/apps/${appId}/entitlements/${entitlementId}`)).body.appEntitlement;
      expect(res.body).toEqual({
        userOwnerEntitlement: {
          appEntitlement: entitlement,
          createdAt: expect.any(String),
          roleSlug: 'owner',
          userId: serviceUser,
        },
      });
      expect(Object.keys(res.body.userOwnerEntitlement)).toEqual(['appEntitlement', 'createdAt', 'roleSlug', 'userId']);
    });

    it('is idempotent: a repeat returns the original createdAt', async () => {
      const first = await admin.post(path(serviceUser, 'approver', appId, entitlementId));
      expect(first.status).toBe(200);
      await sleep(20);
      const again = await admin.post(path(serviceUser, 'approver', appId, entitlementId), { appEntitlementRef: null });
      expect(again.status).toBe(200);
      expect(again.body.userOwnerEntitlement.createdAt).toBe(first.body.userOwnerEntitlement.createdAt);
      const rows = await service.deps.db.query(
        'SELECT 1 FROM entitlement_owners WHERE user_id = $1 AND role_slug = $2',
        [serviceUser, 'approver'],
      );
      expect(rows).toHaveLength(1);
    });

    it('concurrent creates of one ownership all succeed with one createdAt', async () => {
      const results = await Promise.all(
        Array.from({ length: 6 }, () => admin.post(path(serviceUser, 'race', appId, entitlementId))),
      );
      expect(results.map((res) => res.status)).toEqual(Array(6).fill(200));
      expect(new Set(results.map((res) => res.body.userOwnerEntitlement.createdAt)).size).toBe(1);
    });

    it('accepts an omitted, null or partial appEntitlementRef and refuses one that differs from the path', async () => {
      for (const body of [undefined, {}, { appEntitlementRef: null }, { appEntitlementRef: { appId } }]) {
        expect((await admin.post(path(serviceUser, 'ref-ok', appId, entitlementId), body)).status).toBe(200);
      }
      const wrongApp = await admin.post(path(serviceUser, 'ref', appId, entitlementId), {
        appEntitlementRef: { appId: 'other', id: entitlementId },
      });
      expect(wrongApp.status).toBe(400);
      expect(wrongApp.body.code).toBe(3);
      expect(violatedFields(wrongApp.body)).toEqual(['appEntitlementRef.appId']);
      const wrongId = await admin.post(path(serviceUser, 'ref', appId, entitlementId), {
        appEntitlementRef: { appId, id: 'other' },
      });
      expect(violatedFields(wrongId.body)).toEqual(['appEntitlementRef.id']);
      const notAnObject = await admin.post(path(serviceUser, 'ref', appId, entitlementId), { appEntitlementRef: 'x' });
      expect(violatedFields(notAnObject.body)).toEqual(['appEntitlementRef']);
      const rows = await service.deps.db.query('SELECT 1 FROM entitlement_owners WHERE role_slug = $1', ['ref']);
      expect(rows).toHaveLength(0);
    });

    it('answers 404 for an unknown user, app or entitlement, or an entitlement of another app', async () => {
      const otherApp = (await createGovernanceApp(admin, 'Other')).id;
      const deleted = (await createEntitlement(admin, appId)).id;
      expect((await admin.delete(`/api/v1/apps/${appId}/entitlements/${deleted}`)).status).toBe(200);
      for (const p of [
        path('nobody', 'owner', appId, entitlementId),
        path(serviceUser, 'owner', 'noapp', entitlementId),
        path(serviceUser, 'owner', appId, 'noentitlement'),
        path(serviceUser, 'owner', otherApp, entitlementId),
        path(serviceUser, 'owner', appId, deleted),
      ]) {
        const res = await admin.post(p);
        expect(res.status).toBe(404);
        expect(res.body.code).toBe(5);
      }
    });

    it('answers 400 for a human user and for a malformed role slug', async () => {
      const res = await admin.post(path(human, 'owner', appId, entitlementId));
      expect(res.status).toBe(400);
      expect(violatedFields(res.body)).toEqual(['userId']);
      for (const slug of ['Owner', '-x', 'a'.repeat(65), 'has%20space']) {
        const bad = await admin.post(path(serviceUser, slug, appId, entitlementId));
        expect(bad.status).toBe(400);
        expect(violatedFields(bad.body)).toEqual(['roleSlug']);
      }
    });

    it('lists the ownerships of a user, page by page', async () => {
      const user = (await createUser(admin)).id;
      const roles = Array.from({ length: 12 }, (_, i) => `role-${String(i).padStart(2, '0')}`);
      for (const role of roles) expect((await admin.post(path(user, role, appId, entitlementId))).status).toBe(200);
      const first = await reader.get(`${ownersOf(user)}?page_size=10`);
      expect(first.status).toBe(200);
      expect(first.body.list).toHaveLength(10);
      expect(first.body.list[0].userOwnerEntitlement).toMatchObject({
        roleSlug: 'role-00',
        userId: user,
        appEntitlement: { id: entitlementId },
      });
      const second = await reader.get(`${ownersOf(user)}?pageSize=10&pageToken=${first.body.nextPageToken}`);
      expect(second.body.nextPageToken).toBe('');
      const seen = [...first.body.list, ...second.body.list].map(
        (item: { userOwnerEntitlement: { roleSlug: string } }) => item.userOwnerEntitlement.roleSlug,
      );
      expect(seen).toEqual(roles);
      const foreign = await reader.get(`${ownersOf(serviceUser)}?page_token=${first.body.nextPageToken}`);
      expect(foreign.status).toBe(400);
      expect((await reader.get(ownersOf('nobody'))).status).toBe(404);
    });

    it('deletes an ownership; deleting it again is 404', async () => {
      expect((await admin.post(path(serviceUser, 'temp', appId, entitlementId))).status).toBe(200);
      const res = await admin.delete(path(serviceUser, 'temp', appId, entitlementId));
      expect(res.status).toBe(200);
      expect(res.body).toEqual({});
      const again = await admin.delete(path(serviceUser, 'temp', appId, entitlementId));
      expect(again.status).toBe(404);
      expect(again.body.code).toBe(5);
      const list = await reader.get(`${ownersOf(serviceUser)}?page_size=100`);
      expect(
        list.body.list.map(
          (item: { userOwnerEntitlement: { roleSlug: string } }) => item.userOwnerEntitlement.roleSlug,
        ),
      ).not.toContain('temp');
    });

    it('needs a token (401) and write access (403)', async () => {
      const anonymous = callerFor(service, undefined);
      expect((await anonymous.post(path(serviceUser, 'owner', appId, entitlementId))).status).toBe(401);
      expect((await anonymous.get(ownersOf(serviceUser))).status).toBe(401);
      expect((await anonymous.delete(path(serviceUser, 'owner', appId, entitlementId))).status).toBe(401);
      const created = await reader.post(path(serviceUser, 'owner', appId, entitlementId));
      expect(created.status).toBe(403);
      expect(created.body.code).toBe(7);
      expect((await reader.delete(path(serviceUser, 'owner', appId, entitlementId))).status).toBe(403);
      expect((await reader.get(ownersOf(serviceUser))).status).toBe(200);
    });

    describe('domain functions (used by the automation activities)', () => {
      it('create is idempotent and delete reports whether the ownership existed', async () => {
        const ref = { userId: serviceUser, roleSlug: 'domain', appId, entitlementId };
        const first = await createEntitlementOwner(service.deps.db, ref);
        const again = await createEntitlementOwner(service.deps.db, ref);
        expect(again).toEqual(first);
        expect(first.userOwnerEntitlement.appEntitlement.id).toBe(entitlementId);
        expect(await deleteEntitlementOwner(service.deps.db, ref)).toBe(true);
        expect(await deleteEntitlementOwner(service.deps.db, ref)).toBe(false);
      });

      it('writes one audit event per change, none for a repeat or a refusal, and nothing at all when a check fails', async () => {
        const ref = { userId: serviceUser, roleSlug: 'audited', appId, entitlementId };
        const events = async () =>
          (await listAuditEvents(service.deps.db, 'app_entitlement', entitlementId))
            .filter((event) => event.details.roleSlug === 'audited')
            .map((event) => `${event.action} ${String(event.details.userId)}`);
        const owned = async (userId: string) =>
          (await listOwnedEntitlements(service.deps.db, userId, undefined, 100)).filter(
            ({ owner }) => owner.roleSlug === 'audited',
          ).length;

        await createEntitlementOwner(service.deps.db, ref, 'client:a');
        await createEntitlementOwner(service.deps.db, ref, 'client:b');
        expect(await events()).toEqual([`entitlement_owner.create ${serviceUser}`]);

        // Refused: a human user (checked before the app, as the API documents), an app or entitlement that does not exist.
        const refusal = (other: Partial<typeof ref>): Promise<ServiceError> =>
          createEntitlementOwner(service.deps.db, { ...ref, ...other }).then(
            () => Promise.reject(new Error('accepted')),
            (err: unknown) => err as ServiceError,
          );
        expect((await refusal({ userId: human, appId: 'no-such-app' })).code).toBe('ERR_INVALID_ARGUMENT');
        expect(
          [(await refusal({ appId: 'no-such-app' })) as NotFoundError].map((err) => [err.resource, err.id]),
        ).toEqual([['app', 'no-such-app']]);
        expect(((await refusal({ entitlementId: 'no-such-entitlement' })) as NotFoundError).resource).toBe(
          'app entitlement',
        );
        expect(await owned(human)).toBe(0);
        expect(await events()).toEqual([`entitlement_owner.create ${serviceUser}`]);

        expect(await deleteEntitlementOwner(service.deps.db, ref, 'client:a')).toBe(true);
        expect(await deleteEntitlementOwner(service.deps.db, ref, 'client:a')).toBe(false);
        expect(await owned(serviceUser)).toBe(0);
        expect(await events()).toEqual([
          `entitlement_owner.create ${serviceUser}`,
          `entitlement_owner.delete ${serviceUser}`,
        ]);
      });

      it('throws domain errors: not found (naming the id) and invalid argument', async () => {
        const kindOf = async (ref: Parameters<typeof createEntitlementOwner>[1]) => {
          try {
            await createEntitlementOwner(service.deps.db, ref);
            return 'ok';
          } catch (err) {
            expect(err).toBeInstanceOf(ServiceError);
            return (err as ServiceError).code;
          }
        };
        expect(await kindOf({ userId: 'nobody', roleSlug: 'owner', appId, entitlementId })).toBe('ERR_NOT_FOUND');
        const missing = await createEntitlementOwner(service.deps.db, {
          userId: 'nobody',
          roleSlug: 'owner',
          appId,
          entitlementId,
        }).catch((err: unknown) => err);
        expect(missing).toBeInstanceOf(NotFoundError);
        expect([(missing as NotFoundError).resource, (missing as NotFoundError).id]).toEqual(['user', 'nobody']);
        expect(await kindOf({ userId: human, roleSlug: 'owner', appId, entitlementId })).toBe('ERR_INVALID_ARGUMENT');
        expect(await kindOf({ userId: serviceUser, roleSlug: '', appId, entitlementId })).toBe('ERR_INVALID_ARGUMENT');
        expect(
          await kindOf({ userId: serviceUser, roleSlug: 'owner', appId, entitlementId: 42 as unknown as string }),
        ).toBe('ERR_INVALID_ARGUMENT');
      });
    });
  });

  describeOn(target)(`the ownership statement, prepared (${target.label})`, () => {
    // A store of its own: nothing else uses its connections, so every statement below runs on the
    // one session (PGlite's; pg's pool hands back its last released connection).
    let db: Db;
    let ref: { userId: string; roleSlug: string; appId: string; entitlementId: string };

    beforeAll(async () => {
      db = await openTestDb(target);
      const user = await createUserRow(
        db,
        { displayName: 'Robot', email: 'robot@example.com', type: 'USER_TYPE_SERVICE' },
        'client:test',
      );
      const app = await createApp(db, { displayName: 'Prepared' });
      const entitlement = await createEntitlementRow(
        db,
        app.id,
        AppEntitlementInput.parse({ displayName: 'Prepared entitlement' }),
      );
      ref = { userId: user.id, roleSlug: 'owner', appId: app.id, entitlementId: entitlement.id };
    });
    afterAll(async () => db.close());

    /** How often the session ran its prepared `record_owner` ([] when it has none). */
    const executions = async (): Promise<number[]> =>
      (
        await db.query<{ runs: unknown }>(
          `SELECT generic_plans + custom_plans AS runs FROM pg_prepared_statements WHERE name = 'record_owner'`,
        )
      ).map((row) => Number(row.runs));

    it('is prepared on its first use and run from then on without being prepared again; its results are as before', async () => {
      expect(await executions()).toEqual([]);
      const first = await createEntitlementOwner(db, ref);
      expect(await executions()).toEqual([1]);
      const again = await createEntitlementOwner(db, ref);
      const other = await createEntitlementOwner(db, { ...ref, roleSlug: 'backup' });
      expect(await executions()).toEqual([3]);
      expect(again).toEqual(first);
      expect(first.userOwnerEntitlement).toMatchObject({
        userId: ref.userId,
        roleSlug: 'owner',
        appEntitlement: { id: ref.entitlementId, appId: ref.appId },
      });
      expect(other.userOwnerEntitlement.roleSlug).toBe('backup');
      expect(Date.parse(first.userOwnerEntitlement.createdAt)).not.toBeNaN();
      // A check that fails runs the same prepared statement and still names what is missing.
      await expect(createEntitlementOwner(db, { ...ref, appId: 'no-such-app' })).rejects.toMatchObject({
        resource: 'app',
        id: 'no-such-app',
      });
      expect(await executions()).toEqual([4]);
      expect((await listOwnedEntitlements(db, ref.userId, undefined, 10)).map(({ owner }) => owner.roleSlug)).toEqual([
        'backup',
        'owner',
      ]);
    });

    it('refuses another text under the same name, and a failed run leaves the store usable', async () => {
      await expect(db.query('SELECT 1 AS one', [], { prepare: 'record_owner' })).rejects.toThrow();
      // A statement that fails while it runs (its parameter is not an integer) rejects, and the next one runs.
      await expect(db.query('SELECT $1::int AS n', ['not a number'], { prepare: 'bad_int' })).rejects.toThrow(
        /invalid input syntax/,
      );
      expect(await db.query<{ n: number }>('SELECT $1::int AS n', ['7'], { prepare: 'bad_int' })).toEqual([{ n: 7 }]);
      expect((await createEntitlementOwner(db, ref)).userOwnerEntitlement.roleSlug).toBe('owner');
    });
  });
}
