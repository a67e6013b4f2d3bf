/**
 * Grants end to end (docs/api.md#grants): real HTTP, the real store (PGlite, and PostgreSQL with
 * DATABASE_URL), the real Temporal dev server and a real worker running each grant's workflow.
 * One live grant per user and entitlement (asking again answers it, also under concurrency); the
 * duration rule; revoke and extend; expiry by the workflow's durable timer, also when the time
 * passed while no worker ran; the connector members fail at once; deleting an entitlement revokes
 * its grants; grantCount is exact on every read, list and search (a property over random
 * sequences and 50 concurrent creates and revokes); each change writes its directory event;
 * every refusal is the one error shape naming the field, and writes nothing; 503 without the engine.
 */
import fc from 'fast-check';
import { DATABASES, describeOn } from '../helpers/databases';
import { startStack, type Stack } from '../helpers/stack';
import { startTestService, type TestService } from '../helpers/test-service';
import { callerFor, createEntitlement, createGovernanceApp, violatedFields, type Caller } from '../helpers/governance';
import { startWorker } from '../helpers/workers';
import { testTemporal, testWorkflowBundle } from '../helpers/temporal';
import { poll, until } from '../helpers/wait';
import { undispatchedEvents } from '../../src/store/directory-events';
import { listAuditEvents } from '../../src/store/audit';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

async function newUser(caller: Caller, email = 'someone@acme.example'): Promise<string> {
  const res = await caller.post('/api/v1/users', { displayName: 'Someone', email, type: 'USER_TYPE_HUMAN' });
  expect(res.status).toBe(200);
  return res.body.user.id as string;
}

for (const target of DATABASES) {
  describeOn(target)(`grants (${target.label})`, () => {
    let stack: Stack;
    let admin: Caller;
    let readOnly: Caller;
    let actor: string;

    beforeAll(async () => {
      stack = await startStack({ target });
      const token = await stack.service.tokenFor('admin');
      admin = callerFor(stack.service, token);
      readOnly = callerFor(stack.service, await stack.service.tokenFor('read_only'));
      actor = `client:${(await stack.service.deps.tokens.verify(token))!.clientId}`;
    });
    afterAll(async () => stack?.close());

    async function entitlement(fields: Record<string, unknown> = {}): Promise<{ appId: string; id: string }> {
      const app = await createGovernanceApp(admin);
      const made = await createEntitlement(admin, app.id, fields);
      return { appId: app.id, id: made.id };
    }

    const grantOf = async (id: string): Promise<Json> => (await admin.get(`/api/v1/grants/${id}`)).body.grant;
    const countOf = async (e: { appId: string; id: string }): Promise<string> =>
      (await admin.get(`/api/v1/apps/${e.appId}/entitlements/${e.id}`)).body.appEntitlement.grantCount;
    const ask = (userId: string, e: { appId: string; id: string }, extra: Record<string, unknown> = {}) =>
      admin.post('/api/v1/grants', { userId, appId: e.appId, appEntitlementId: e.id, ...extra });

    it('an unconfigured grant is GRANTED at once, once per user and entitlement, and counted on every read', async () => {
      const e = await entitlement();
      const userId = await newUser(admin);
      const first = await ask(userId, e, { justification: 'joiner' });
      expect(first.status).toBe(200);
      expect(first.body.created).toBe(true);
      const grant = first.body.grant;
      expect(grant).toMatchObject({
        userId,
        appId: e.appId,
        appEntitlementId: e.id,
        state: 'GRANTED',
        requestedBy: actor,
        justification: 'joiner',
        expiresAt: null,
        revokedAt: null,
        error: null,
      });
      expect(grant.grantedAt).toEqual(expect.any(String));
      expect(grant.provisioning).toEqual([
        expect.objectContaining({ phase: 'provision', policy: 'unconfigured', step: '', state: 'DONE' }),
      ]);

      const again = await ask(userId, e, { duration: '60s', justification: 'other' });
      expect(again.status).toBe(200);
      expect(again.body).toEqual({ grant, created: false });

      expect(await countOf(e)).toBe('1');
      const listed = await admin.get(`/api/v1/apps/${e.appId}/entitlements`);
      expect(listed.body.list.map((x: Json) => x.appEntitlement.grantCount)).toEqual(['1']);
      const searched = await admin.post('/api/v1/search/entitlements', { appIds: [e.appId] });
      expect(searched.body.list.map((x: Json) => x.appEntitlement.grantCount)).toEqual(['1']);
      expect(await readOnly.get(`/api/v1/grants/${grant.id}`)).toMatchObject({ status: 200, body: { grant } });

      const audit = await listAuditEvents(stack.service.deps.db, 'grant', grant.id);
      expect(audit.map((a) => [a.action, a.actor])).toEqual([['grant.create', actor]]);
    });

    it('the entitlement durationGrant is the maximum; durationUnset or none leaves the ask (or standing access)', async () => {
      const bounded = await entitlement({ durationGrant: '3600s' });
      const unset = await entitlement({ durationUnset: {} });
      const span = (g: Json) => Date.parse(g.expiresAt) - Date.parse(g.grantedAt);
      const longer = (await ask(await newUser(admin), bounded, { duration: '7200s' })).body.grant;
      expect(span(longer)).toBe(3_600_000);
      const shorter = (await ask(await newUser(admin), bounded, { duration: '600s' })).body.grant;
      expect(span(shorter)).toBe(600_000);
      const none = (await ask(await newUser(admin), bounded)).body.grant;
      expect(span(none)).toBe(3_600_000);
      const asked = (await ask(await newUser(admin), unset, { duration: '90000s' })).body.grant;
      expect(span(asked)).toBe(90_000_000);
      expect((await ask(await newUser(admin), unset)).body.grant.expiresAt).toBeNull();
    });

    it('refuses bad asks with the field named and writes nothing: 400 for ids and durations, 404 for unknown things', async () => {
      const e = await entitlement();
      const other = await entitlement();
      const userId = await newUser(admin);
      const eventsBefore = (await undispatchedEvents(stack.service.deps.db, 100_000)).length;
      const bad: Array<[Record<string, unknown>, string]> = [
        [{ appId: e.appId, appEntitlementId: e.id }, 'userId'],
        [{ userId, appEntitlementId: e.id }, 'appId'],
        [{ userId, appId: e.appId }, 'appEntitlementId'],
        [{ userId, appId: e.appId, appEntitlementId: e.id, duration: '0s' }, 'duration'],
        [{ userId, appId: e.appId, appEntitlementId: e.id, duration: '-5s' }, 'duration'],
        [{ userId, appId: e.appId, appEntitlementId: e.id, duration: '1 hour' }, 'duration'],
      ];
      for (const [body, field] of bad) {
        const res = await admin.post('/api/v1/grants', body);
        expect([res.status, violatedFields(res.body)]).toEqual([400, [field]]);
      }
      const unknown = [
        { userId: 'nope', appId: e.appId, appEntitlementId: e.id },
        { userId, appId: 'nope', appEntitlementId: e.id },
        { userId, appId: e.appId, appEntitlementId: 'nope' },
        // an entitlement of another app is unknown under this one
        { userId, appId: e.appId, appEntitlementId: other.id },
      ];
      for (const body of unknown) expect((await admin.post('/api/v1/grants', body)).status).toBe(404);
      expect((await admin.delete(`/api/v1/apps/${e.appId}/entitlements/${e.id}`)).status).toBe(200);
      expect((await ask(userId, e)).status).toBe(404);
      expect(
        (await readOnly.post('/api/v1/grants', { userId, appId: other.appId, appEntitlementId: other.id })).status,
      ).toBe(403);

      expect((await admin.get(`/api/v1/grants?userId=${userId}`)).body.list).toEqual([]);
      expect(await undispatchedEvents(stack.service.deps.db, 100_000)).toHaveLength(eventsBefore);
    });

    it('revoke needs a reason, ends an unconfigured grant REVOKED, is idempotent, and writes its events', async () => {
      const e = await entitlement();
      const userId = await newUser(admin);
      const grant = (await ask(userId, e)).body.grant;
      const missing = await admin.post(`/api/v1/grants/${grant.id}/revoke`, {});
      expect([missing.status, violatedFields(missing.body)]).toEqual([400, ['reason']]);
      const long = await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'x'.repeat(501) });
      expect([long.status, violatedFields(long.body)]).toEqual([400, ['reason']]);
      expect(await countOf(e)).toBe('1');

      const revoked = await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'leaver' });
      expect(revoked.status).toBe(200);
      expect(revoked.body.grant).toMatchObject({
        state: 'REVOKED',
        revokedBy: actor,
        revokeReason: 'leaver',
        revokedAt: expect.any(String),
      });
      expect(await countOf(e)).toBe('0');
      const again = await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'again' });
      expect(again.body).toEqual(revoked.body);
      expect((await admin.post('/api/v1/grants/nope/revoke', { reason: 'x' })).status).toBe(404);

      const events = (await undispatchedEvents(stack.service.deps.db, 100_000)).filter(
        (ev) => (ev.payload.grant as Json)?.id === grant.id,
      );
      expect(events.map((ev) => [ev.type, ev.actor, (ev.payload.grant as Json).state])).toEqual([
        ['grant.created', actor, 'GRANTED'],
        ['grant.granted', actor, 'GRANTED'],
        ['grant.revoked', actor, 'REVOKED'],
      ]);
      expect(events[0]!.payload.user).toMatchObject({ id: userId });
      expect(events[0]!.payload.appEntitlement).toMatchObject({ id: e.id, grantCount: '1' });

      // A new ask after the revoke is a new grant.
      const next = await ask(userId, e);
      expect(next.body.created).toBe(true);
      expect(next.body.grant.id).not.toBe(grant.id);
    });

    it('extend moves expiresAt (bounded by durationGrant); shorter is 400, a grant not GRANTED 409', async () => {
      const e = await entitlement({ durationGrant: '7200s' });
      const grant = (await ask(await newUser(admin), e, { duration: '600s' })).body.grant;
      const shorter = await admin.post(`/api/v1/grants/${grant.id}/extend`, { duration: '60s' });
      expect([shorter.status, violatedFields(shorter.body)]).toEqual([400, ['duration']]);
      const zero = await admin.post(`/api/v1/grants/${grant.id}/extend`, { duration: '0s' });
      expect([zero.status, violatedFields(zero.body)]).toEqual([400, ['duration']]);
      const before = Date.now();
      const extended = await admin.post(`/api/v1/grants/${grant.id}/extend`, { duration: '99999s' });
      expect(extended.status).toBe(200);
      const expiresAt = Date.parse(extended.body.grant.expiresAt);
      expect(expiresAt).toBeGreaterThanOrEqual(before + 7_200_000 - 1000);
      expect(expiresAt).toBeLessThanOrEqual(Date.now() + 7_200_000 + 1000);
      const audit = await listAuditEvents(stack.service.deps.db, 'grant', grant.id);
      expect(audit.map((a) => a.action)).toEqual(['grant.create', 'grant.extend']);

      await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'done' });
      expect((await admin.post(`/api/v1/grants/${grant.id}/extend`, { duration: '600s' })).status).toBe(409);
    });

    it('a grant expires by its durable timer: DEPROVISIONING then REVOKED with reason expired by system:expiry', async () => {
      const e = await entitlement();
      const userId = await newUser(admin);
      const grant = (await ask(userId, e, { duration: '2s' })).body.grant;
      expect(await countOf(e)).toBe('1');
      const ended = await poll(
        () => grantOf(grant.id),
        (g) => g.state === 'REVOKED',
        {
          what: 'the grant to expire',
        },
      );
      expect(ended).toMatchObject({ revokeReason: 'expired', revokedBy: 'system:expiry' });
      expect(Date.parse(ended.revokedAt)).toBeGreaterThanOrEqual(Date.parse(ended.expiresAt));
      expect(await countOf(e)).toBe('0');
      const types = (await undispatchedEvents(stack.service.deps.db, 100_000))
        .filter((ev) => (ev.payload.grant as Json)?.id === grant.id)
        .map((ev) => [ev.type, ev.actor]);
      expect(types).toEqual([
        ['grant.created', actor],
        ['grant.granted', actor],
        ['grant.expired', 'system:expiry'],
      ]);
      const audit = await listAuditEvents(stack.service.deps.db, 'grant', grant.id);
      expect(audit.map((a) => [a.action, a.actor])).toEqual([
        ['grant.create', actor],
        ['grant.expire', 'system:expiry'],
      ]);
    });

    it('the connector members fail at once with the contract message, leave no access and are not live', async () => {
      const e = await entitlement({ provisionerPolicy: { externalTicket: { appId: 'x' } } });
      const userId = await newUser(admin);
      const res = await ask(userId, e);
      expect(res.status).toBe(200);
      expect(res.body.grant).toMatchObject({
        state: 'FAILED',
        error: 'provisioning by externalTicket needs a connector, which this service does not run',
      });
      expect(await countOf(e)).toBe('0');
      const revoke = await admin.post(`/api/v1/grants/${res.body.grant.id}/revoke`, { reason: 'x' });
      expect(revoke.status).toBe(409);
      expect((await ask(userId, e)).body.created).toBe(true);
    });

    it('deleting an entitlement revokes its open grants first (reason entitlement deleted, by the deleter)', async () => {
      const e = await entitlement();
      const grant = (await ask(await newUser(admin), e)).body.grant;
      expect((await admin.delete(`/api/v1/apps/${e.appId}/entitlements/${e.id}`)).status).toBe(200);
      expect(await grantOf(grant.id)).toMatchObject({
        state: 'REVOKED',
        revokeReason: 'entitlement deleted',
        revokedBy: actor,
      });
    });

    it('lists newest first with filters and page tokens; a bad state is 400 naming state', async () => {
      const e = await entitlement();
      const other = await entitlement();
      const ids: string[] = [];
      for (let i = 0; i < 12; i += 1) ids.push((await ask(await newUser(admin), e)).body.grant.id);
      const lone = (await ask(await newUser(admin), other)).body.grant.id;
      await admin.post(`/api/v1/grants/${ids[0]}/revoke`, { reason: 'x' });
      const first = await admin.get(`/api/v1/grants?appEntitlementId=${e.id}&page_size=10`);
      expect(first.body.list.map((x: Json) => x.grant.id)).toEqual([...ids].reverse().slice(0, 10));
      const second = await admin.get(
        `/api/v1/grants?appEntitlementId=${e.id}&page_size=10&page_token=${first.body.nextPageToken}`,
      );
      expect(second.body).toEqual({
        list: [{ grant: await grantOf(ids[1]!) }, { grant: await grantOf(ids[0]!) }],
        nextPageToken: '',
      });
      const granted = await admin.get(
        `/api/v1/grants?appEntitlementId=${e.id}&state=GRANTED&state=FAILED&page_size=100`,
      );
      expect(granted.body.list).toHaveLength(11);
      const revoked = await readOnly.get(`/api/v1/grants?appId=${e.appId}&state=REVOKED`);
      expect(revoked.body.list.map((x: Json) => x.grant.id)).toEqual([ids[0]]);
      expect((await admin.get(`/api/v1/grants?appId=${other.appId}`)).body.list.map((x: Json) => x.grant.id)).toEqual([
        lone,
      ]);
      const bad = await admin.get('/api/v1/grants?state=LIVE');
      expect([bad.status, violatedFields(bad.body)]).toEqual([400, ['state']]);
    });

    it('grantCount equals the GRANTED + DEPROVISIONING grants after random creates and revokes (property)', async () => {
      const e = await entitlement();
      const users = [await newUser(admin), await newUser(admin), await newUser(admin)];
      const op = fc.record({ kind: fc.constantFrom('create', 'revoke'), user: fc.integer({ min: 0, max: 2 }) });
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 8 }), async (ops) => {
          for (const { kind, user } of ops) {
            const userId = users[user]!;
            if (kind === 'create') {
              expect((await ask(userId, e)).status).toBe(200);
            } else {
              const live = await admin.get(`/api/v1/grants?userId=${userId}&appEntitlementId=${e.id}&state=GRANTED`);
              for (const { grant } of live.body.list) {
                expect((await admin.post(`/api/v1/grants/${grant.id}/revoke`, { reason: 'prop' })).status).toBe(200);
              }
            }
          }
          const open = await admin.get(
            `/api/v1/grants?appEntitlementId=${e.id}&state=GRANTED&state=DEPROVISIONING&page_size=100`,
          );
          expect(await countOf(e)).toBe(String(open.body.list.length));
          const perUser = new Set(open.body.list.map((x: Json) => x.grant.userId));
          expect(perUser.size).toBe(open.body.list.length);
        }),
        { numRuns: 8 },
      );
    });

    it('50 concurrent creates and revokes of one entitlement: one live grant per user, grantCount exact', async () => {
      const e = await entitlement();
      const users: string[] = [];
      for (let i = 0; i < 25; i += 1) users.push(await newUser(admin));
      // Each user asked for twice at once: 50 concurrent creates, 25 grants.
      const made = await Promise.all([...users, ...users].map((userId) => ask(userId, e)));
      expect(made.map((r) => r.status)).toEqual(made.map(() => 200));
      expect(made.filter((r) => r.body.created)).toHaveLength(25);
      const byUser = new Map<string, Set<string>>();
      for (const r of made)
        byUser.set(r.body.grant.userId, (byUser.get(r.body.grant.userId) ?? new Set()).add(r.body.grant.id));
      expect([...byUser.values()].map((s) => s.size)).toEqual(users.map(() => 1));
      expect(await countOf(e)).toBe('25');
      // Revoke the first 12 (twice each, at once) while the other 13 ask again.
      const grantIds = users.map((u) => [...byUser.get(u)!][0]!);
      const mixed = await Promise.all([
        ...grantIds
          .slice(0, 12)
          .flatMap((id) => [
            admin.post(`/api/v1/grants/${id}/revoke`, { reason: 'bulk' }),
            admin.post(`/api/v1/grants/${id}/revoke`, { reason: 'bulk' }),
          ]),
        ...users.slice(12).map((userId) => ask(userId, e)),
      ]);
      expect(mixed.map((r) => r.status)).toEqual(mixed.map(() => 200));
      expect(await countOf(e)).toBe('13');
      const open = await admin.get(`/api/v1/grants?appEntitlementId=${e.id}&state=GRANTED&page_size=100`);
      expect(open.body.list).toHaveLength(13);
    });
  });

  describeOn(target)(`grants while parts are down (${target.label})`, () => {
    it('503 without the engine, and nothing is written', async () => {
      const service: TestService = await startTestService({ target });
      try {
        const admin = callerFor(service, await service.tokenFor('admin'));
        const app = await createGovernanceApp(admin);
        const e = await createEntitlement(admin, app.id);
        const userId = await newUser(admin);
        const before = (await undispatchedEvents(service.deps.db, 100_000)).length;
        const res = await admin.post('/api/v1/grants', { userId, appId: app.id, appEntitlementId: e.id });
        expect(res.status).toBe(503);
        expect((await admin.get('/api/v1/grants')).body.list).toEqual([]);
        expect(await undispatchedEvents(service.deps.db, 100_000)).toHaveLength(before);
      } finally {
        await service.close();
      }
    });

    it('a grant whose time passed while no worker ran expires as soon as one is back', async () => {
      const stack = await startStack({ target, worker: false });
      try {
        const admin = callerFor(stack.service, await stack.service.tokenFor('admin'));
        const app = await createGovernanceApp(admin);
        const e = await createEntitlement(admin, app.id);
        const userId = await newUser(admin);
        const made = await admin.post('/api/v1/grants', {
          userId,
          appId: app.id,
          appEntitlementId: e.id,
          duration: '1s',
        });
        expect(made.body.grant.state).toBe('GRANTED');
        // Past its expiresAt with no worker: still GRANTED (nothing can expire it).
        await until(() => Date.now() > Date.parse(made.body.grant.expiresAt) + 1500, 'the expiry to pass');
        expect((await admin.get(`/api/v1/grants/${made.body.grant.id}`)).body.grant.state).toBe('GRANTED');
        const temporal = await testTemporal();
        const bundle = testWorkflowBundle();
        const worker = await startWorker({
          address: temporal.address,
          namespace: temporal.namespace,
          taskQueue: stack.taskQueue,
          db: stack.service.deps.db,
          ...(bundle ? { bundle } : {}),
        });
        try {
          const ended = await poll(
            async () => (await admin.get(`/api/v1/grants/${made.body.grant.id}`)).body.grant,
            (g: Json) => g.state === 'REVOKED',
            { what: 'the grant to expire once a worker is back' },
          );
          expect(ended).toMatchObject({ revokeReason: 'expired', revokedBy: 'system:expiry' });
        } finally {
          await worker.stop();
        }
      } finally {
        await stack.close();
      }
    });
  });
}
