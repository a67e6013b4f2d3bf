import { DATABASES, describeOn } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import {
  callerFor,
  callerWith,
  createGovernanceApp,
  createEntitlement,
  violatedFields,
  type Caller,
} from '../helpers/governance';

/** Every field of the AppEntitlement record (docs/api.md#app-entitlements), in its order. */
const SEED_FIELDS = [
  'id',
  'appId',
  'appResourceId',
  'appResourceTypeId',
  'alias',
  'displayName',
  'description',
  'slug',
  'purpose',
  'durationUnset',
  'durationGrant',
  'grantPolicyId',
  'revokePolicyId',
  'certifyPolicyId',
  'emergencyGrantEnabled',
  'emergencyGrantPolicyId',
  'provisionerPolicy',
  'deprovisionerPolicy',
  'complianceFrameworkValueIds',
  'riskLevelValueId',
  'requestSchemaId',
  'defaultValuesApplied',
  'overrideAccessRequestsDefaults',
  'isManuallyManaged',
  'isAutomationEnabled',
  'matchBatonId',
  'externalId',
  'sourceConnectorIds',
  'grantCount',
  'systemBuiltin',
  'userEditedMask',
  'createdAt',
  'updatedAt',
  'deletedAt',
  'annotations',
];

for (const target of DATABASES) {
  describeOn(target)(`governance API (${target.label})`, () => {
    let service: TestService;
    let admin: Caller;
    let reader: Caller;

    beforeAll(async () => {
      service = await startTestService({ target });
      admin = await callerWith(service, 'admin');
      reader = await callerWith(service, 'read_only');
    });
    afterAll(async () => service.close());

    /** Live entitlements of the app, straight from the table. */
    async function storedCount(appId: string): Promise<number> {
      const rows = await service.deps.db.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM app_entitlements WHERE app_id = $1',
        [appId],
      );
      return Number(rows[0]!.n);
    }

    describe('apps', () => {
      it('creates, gets and lists apps', async () => {
        const res = await admin.post('/api/v1/apps', { displayName: 'Okta', description: 'IdP', extra: 1 });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({
          app: {
            id: expect.any(String),
            displayName: 'Okta',
            description: 'IdP',
            createdAt: expect.any(String),
            updatedAt: expect.any(String),
          },
        });
        const got = await reader.get(`/api/v1/apps/${res.body.app.id}`);
        expect(got.status).toBe(200);
        expect(got.body).toEqual(res.body);
        const list = await reader.get('/api/v1/apps');
        expect(list.status).toBe(200);
        expect(list.body.list).toContainEqual({ app: res.body.app });
        expect(list.body.nextPageToken).toBe('');
      });

      it('validates displayName and answers 404 for an unknown app', async () => {
        for (const body of [{}, { displayName: '' }, { displayName: 3 }, { displayName: 'x', description: 5 }]) {
          const res = await admin.post('/api/v1/apps', body);
          expect(res.status).toBe(400);
          expect(res.body.code).toBe(3);
          expect(violatedFields(res.body)).toEqual([
            'displayName' in body && body.displayName === 'x' ? 'description' : 'displayName',
          ]);
        }
        const missing = await reader.get('/api/v1/apps/nope');
        expect(missing.status).toBe(404);
        expect(missing.body.code).toBe(5);
      });
    });

    describe('users', () => {
      it('creates, gets and lists users of both types', async () => {
        for (const type of ['USER_TYPE_SERVICE', 'USER_TYPE_HUMAN']) {
          const res = await admin.post('/api/v1/users', { displayName: 'Bot', email: 'bot@example.com', type });
          expect(res.status).toBe(200);
          expect(res.body).toEqual({
            user: {
              id: expect.any(String),
              displayName: 'Bot',
              email: 'bot@example.com',
              type,
              status: 'USER_STATUS_ENABLED',
              createdAt: expect.any(String),
            },
          });
          expect((await reader.get(`/api/v1/users/${res.body.user.id}`)).body).toEqual(res.body);
          expect((await reader.get('/api/v1/users?page_size=100')).body.list).toContainEqual({ user: res.body.user });
        }
      });

      it('refuses a bad type, a missing displayName and a bad email', async () => {
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ displayName: 'x', type: 'USER_TYPE_ROBOT' }, 'type'],
          [{ displayName: 'x' }, 'type'],
          [{ type: 'USER_TYPE_HUMAN' }, 'displayName'],
          [{ displayName: 'x', type: 'USER_TYPE_HUMAN', email: 'not-an-email' }, 'email'],
        ];
        for (const [body, field] of cases) {
          const res = await admin.post('/api/v1/users', body);
          expect(res.status).toBe(400);
          expect(violatedFields(res.body)).toEqual([field]);
        }
        expect((await reader.get('/api/v1/users/nope')).status).toBe(404);
      });
    });

    describe('entitlements', () => {
      let appId: string;
      beforeAll(async () => {
        appId = (await createGovernanceApp(admin, 'Entitlements app')).id;
      });

      it('returns every seed field, with defaults where unset', async () => {
        const res = await admin.post(`/api/v1/apps/${appId}/entitlements`, {
          displayName: 'Reader',
          grantCount: '7',
          id: 'mine',
        });
        expect(res.status).toBe(200);
        const entitlement = res.body.appEntitlement;
        expect(Object.keys(entitlement)).toEqual(SEED_FIELDS);
        expect(entitlement).toMatchObject({
          appId,
          displayName: 'Reader',
          alias: '',
          purpose: 'APP_ENTITLEMENT_PURPOSE_VALUE_UNSPECIFIED',
          durationUnset: null,
          durationGrant: null,
          provisionerPolicy: null,
          complianceFrameworkValueIds: null,
          emergencyGrantEnabled: false,
          isAutomationEnabled: false,
          externalId: '',
          sourceConnectorIds: {},
          grantCount: '0',
          systemBuiltin: false,
          userEditedMask: null,
          deletedAt: null,
          annotations: {},
        });
        expect(entitlement.id).not.toBe('mine');
        const got = await reader.get(`/api/v1/apps/${appId}/entitlements/${entitlement.id}`);
        expect(got.status).toBe(200);
        expect(got.body).toEqual(res.body);
      });

      it('stores and echoes a full record, unknown purpose included', async () => {
        const fields = {
          appResourceId: 'r1',
          appResourceTypeId: 'rt1',
          alias: 'db-admin',
          description: 'Database admin',
          slug: 'admin',
          purpose: 'APP_ENTITLEMENT_PURPOSE_VALUE_FUTURE',
          durationGrant: '3600s',
          grantPolicyId: 'gp',
          revokePolicyId: 'rp',
          certifyPolicyId: 'cp',
          emergencyGrantEnabled: true,
          emergencyGrantPolicyId: 'ep',
          provisionerPolicy: {
            multiStep: {
              provisionSteps: [{ manual: { instructions: 'x', assignee: { manager: { fallbackUserIds: ['u'] } } } }],
            },
          },
          deprovisionerPolicy: {
            connector: { account: { connectorId: 'c', config: { a: [1, { b: null }] }, doNotSave: {} } },
          },
          complianceFrameworkValueIds: ['sox'],
          riskLevelValueId: 'high',
          requestSchemaId: 'rs',
          defaultValuesApplied: true,
          overrideAccessRequestsDefaults: true,
          isManuallyManaged: true,
          matchBatonId: 'mb',
          sourceConnectorIds: { conn: 'ext-1' },
          userEditedMask: 'displayName',
          annotations: { managed_by: 'terraform', iac_workspace: 'prod' },
        };
        const created = await createEntitlement(admin, appId, fields);
        expect(created).toMatchObject(fields);
        expect((await reader.get(`/api/v1/apps/${appId}/entitlements/${created.id}`)).body.appEntitlement).toEqual(
          created,
        );
      });

      it('answers 404 for an unknown app or entitlement, and for an entitlement of another app', async () => {
        expect((await admin.post('/api/v1/apps/nope/entitlements', { displayName: 'x' })).status).toBe(404);
        expect((await reader.get('/api/v1/apps/nope/entitlements')).status).toBe(404);
        expect((await reader.get(`/api/v1/apps/${appId}/entitlements/nope`)).status).toBe(404);
        const other = await createGovernanceApp(admin, 'Other');
        const entitlement = await createEntitlement(admin, appId);
        expect((await reader.get(`/api/v1/apps/${other.id}/entitlements/${entitlement.id}`)).status).toBe(404);
        expect(
          (await admin.post(`/api/v1/apps/${appId}/entitlements`, { displayName: 'x', appId: other.id })).status,
        ).toBe(400);
      });

      it('answers 404 for an unknown app or entitlement before it reads the fields of the body', async () => {
        const create = await admin.post('/api/v1/apps/nope/entitlements', { displayName: '', durationGrant: 'soon' });
        expect(create.status).toBe(404);
        const update = await admin.post(`/api/v1/apps/${appId}/entitlements/nope`, {
          appEntitlement: { displayName: '' },
          updateMask: 'displayName',
        });
        expect(update.status).toBe(404);
      });

      it('reports too deep a multiStep alone, at its path, whatever else the body gets wrong', async () => {
        let policy: Record<string, unknown> = { manual: { instructions: 'x' } };
        for (let i = 0; i < 9; i += 1) policy = { multiStep: { provisionSteps: [policy] } };
        const before = await storedCount(appId);
        const res = await admin.post(`/api/v1/apps/${appId}/entitlements`, {
          displayName: '',
          alias: 7,
          provisionerPolicy: policy,
        });
        expect(res.status).toBe(400);
        expect(res.body.details[0].fieldViolations).toEqual([
          {
            field: `provisionerPolicy${'.multiStep.provisionSteps[0]'.repeat(8)}.multiStep`,
            description: 'multiStep may nest at most 8 levels',
          },
        ]);
        expect(await storedCount(appId)).toBe(before);
      });

      it('refuses invalid writes with 400 naming the field, and writes nothing', async () => {
        const before = await storedCount(appId);
        const cases: Array<[Record<string, unknown>, string]> = [
          [{ annotations: { 'bad key': 'x' } }, 'annotations["bad key"]'],
          [{ annotations: { 'c1.internal': 'x' } }, 'annotations["c1.internal"]'],
          [{ annotations: { a: 'no spaces' } }, 'annotations["a"]'],
          [{ durationGrant: '1h' }, 'durationGrant'],
          [{ durationGrant: '10s', durationUnset: {} }, 'durationGrant'],
          [
            {
              provisionerPolicy: {
                multiStep: {
                  provisionSteps: [{ unconfigured: {} }, { manual: { assignee: { users: {}, manager: {} } } }],
                },
              },
            },
            'provisionerPolicy.multiStep.provisionSteps[1].manual.assignee',
          ],
          [{ deprovisionerPolicy: {} }, 'deprovisionerPolicy'],
          [{ complianceFrameworkValueIds: [1] }, 'complianceFrameworkValueIds[0]'],
          [{ displayName: '' }, 'displayName'],
        ];
        for (const [fields, field] of cases) {
          const res = await admin.post(`/api/v1/apps/${appId}/entitlements`, { displayName: 'x', ...fields });
          expect(res.status).toBe(400);
          expect(res.body.code).toBe(3);
          expect(violatedFields(res.body)).toContain(field);
          expect(res.body.message).toContain(field);
        }
        expect(await storedCount(appId)).toBe(before);
      });

      it('answers 400 for a body that is not JSON or not an object', async () => {
        const res = await admin
          .post(`/api/v1/apps/${appId}/entitlements`)
          .set('Content-Type', 'application/json')
          .send('[1]');
        expect(res.status).toBe(400);
      });

      describe('update', () => {
        it('changes only the masked fields', async () => {
          const created = await createEntitlement(admin, appId, {
            slug: 'keep',
            description: 'old',
            annotations: { a: '1' },
          });
          const res = await admin.post(`/api/v1/apps/${appId}/entitlements/${created.id}`, {
            appEntitlement: {
              displayName: 'Renamed',
              description: 'ignored',
              annotations: { b: '2' },
              grantCount: '5',
            },
            updateMask: 'displayName,annotations,grantCount',
          });
          expect(res.status).toBe(200);
          expect(res.body.appEntitlement).toMatchObject({
            id: created.id,
            displayName: 'Renamed',
            description: 'old',
            slug: 'keep',
            annotations: { b: '2' },
            grantCount: '0',
            createdAt: created.createdAt,
          });
          expect(Date.parse(res.body.appEntitlement.updatedAt)).toBeGreaterThanOrEqual(
            Date.parse(created.updatedAt as string),
          );
        });

        it('replaces every writable field without a mask', async () => {
          const created = await createEntitlement(admin, appId, { slug: 'gone', durationGrant: '60s' });
          const res = await admin.post(`/api/v1/apps/${appId}/entitlements/${created.id}`, {
            appEntitlement: { displayName: 'Only' },
          });
          expect(res.status).toBe(200);
          expect(res.body.appEntitlement).toMatchObject({ displayName: 'Only', slug: '', durationGrant: null });
        });

        it('refuses an unknown mask path or an invalid value and changes nothing', async () => {
          const created = await createEntitlement(admin, appId, { slug: 's' });
          const unknown = await admin.post(`/api/v1/apps/${appId}/entitlements/${created.id}`, {
            appEntitlement: { slug: 'x' },
            updateMask: 'slug,nonsense',
          });
          expect(unknown.status).toBe(400);
          expect(violatedFields(unknown.body)).toEqual(['updateMask']);
          const invalid = await admin.post(`/api/v1/apps/${appId}/entitlements/${created.id}`, {
            appEntitlement: { slug: 'x', provisionerPolicy: { manual: {}, webhook: {} } },
            updateMask: 'slug,provisionerPolicy',
          });
          expect(invalid.status).toBe(400);
          expect(violatedFields(invalid.body)).toEqual(['appEntitlement.provisionerPolicy']);
          const conflict = await admin.post(`/api/v1/apps/${appId}/entitlements/${created.id}`, {
            appEntitlement: { durationGrant: '5s', durationUnset: {} },
            updateMask: 'durationGrant,durationUnset',
          });
          expect(conflict.status).toBe(400);
          expect((await reader.get(`/api/v1/apps/${appId}/entitlements/${created.id}`)).body.appEntitlement).toEqual(
            created,
          );
        });

        it('reads only the masked fields of the patch: an invalid field outside the mask is ignored', async () => {
          const created = await createEntitlement(admin, appId, { slug: 'old' });
          const res = await admin.post(`/api/v1/apps/${appId}/entitlements/${created.id}`, {
            appEntitlement: {
              slug: 'new',
              displayName: '',
              durationGrant: 'soon',
              provisionerPolicy: { manual: {}, webhook: {} },
            },
            updateMask: 'slug',
          });
          expect(res.status).toBe(200);
          expect(res.body.appEntitlement).toMatchObject({
            slug: 'new',
            displayName: created.displayName,
            durationGrant: null,
            provisionerPolicy: null,
          });
        });

        it('refuses a patch that is not an object or a mask that is not a string, naming the field, and changes nothing', async () => {
          const created = await createEntitlement(admin, appId, { slug: 's' });
          const cases: Array<[Record<string, unknown>, { field: string; description: string }]> = [
            [{ appEntitlement: 'slug=x' }, { field: 'appEntitlement', description: 'must be an object' }],
            [{ appEntitlement: [{ slug: 'x' }] }, { field: 'appEntitlement', description: 'must be an object' }],
            [
              { appEntitlement: { slug: 'x' }, updateMask: ['slug'] },
              { field: 'updateMask', description: 'must be a comma-separated string of field names' },
            ],
            [
              { appEntitlement: { slug: 'x' }, updateMask: 'slug, bogus' },
              { field: 'updateMask', description: 'unknown field path(s): bogus' },
            ],
          ];
          for (const [body, violation] of cases) {
            const res = await admin.post(`/api/v1/apps/${appId}/entitlements/${created.id}`, body);
            expect(res.status).toBe(400);
            expect(res.body.details[0].fieldViolations).toEqual([violation]);
          }
          expect((await reader.get(`/api/v1/apps/${appId}/entitlements/${created.id}`)).body.appEntitlement).toEqual(
            created,
          );
        });

        it('answers 404 for an unknown or deleted entitlement', async () => {
          expect(
            (await admin.post(`/api/v1/apps/${appId}/entitlements/nope`, { appEntitlement: { displayName: 'x' } }))
              .status,
          ).toBe(404);
        });
      });

      it('soft-deletes: gone from get, list and search; a second delete is 404', async () => {
        const created = await createEntitlement(admin, appId, { alias: 'to-delete' });
        const res = await admin.delete(`/api/v1/apps/${appId}/entitlements/${created.id}`);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({});
        expect((await reader.get(`/api/v1/apps/${appId}/entitlements/${created.id}`)).status).toBe(404);
        const list = await reader.get(`/api/v1/apps/${appId}/entitlements?page_size=100`);
        expect(list.body.list.map((e: { appEntitlement: { id: string } }) => e.appEntitlement.id)).not.toContain(
          created.id,
        );
        expect((await reader.post('/api/v1/search/entitlements', { alias: 'to-delete' })).body.list).toEqual([]);
        expect((await admin.delete(`/api/v1/apps/${appId}/entitlements/${created.id}`)).status).toBe(404);
        const rows = await service.deps.db.query<{ deleted_at: unknown }>(
          'SELECT deleted_at FROM app_entitlements WHERE id = $1',
          [created.id],
        );
        expect(rows[0]!.deleted_at).not.toBeNull();
      });

      it('searches by query (case-insensitive substring), exact alias and app ids', async () => {
        const a = await createGovernanceApp(admin, 'Search A');
        const b = await createGovernanceApp(admin, 'Search B');
        const one = await createEntitlement(admin, a.id, { displayName: 'Payroll Viewer', alias: 'payroll-view' });
        const two = await createEntitlement(admin, b.id, {
          displayName: 'x',
          slug: 'PAYROLL-edit',
          alias: 'payroll-edit',
        });
        const three = await createEntitlement(admin, b.id, { displayName: 'y', description: 'grants 100%_payroll' });
        const ids = async (body: Record<string, unknown>) => {
          const res = await reader.post('/api/v1/search/entitlements', { appIds: [a.id, b.id], ...body });
          expect(res.status).toBe(200);
          return res.body.list.map((e: { appEntitlement: { id: string } }) => e.appEntitlement.id);
        };
        expect(await ids({ query: 'payroll' })).toEqual([one.id, two.id, three.id]);
        expect(await ids({ query: '%_pay' })).toEqual([three.id]);
        expect(await ids({ query: 'a%b' })).toEqual([]);
        expect(await ids({ alias: 'payroll-edit' })).toEqual([two.id]);
        expect(await ids({ alias: 'payroll' })).toEqual([]);
        expect(await ids({ appIds: [a.id] })).toEqual([one.id]);
        const all = await reader.post('/api/v1/search/entitlements', { alias: 'payroll-view' });
        expect(all.body.list.map((e: { appEntitlement: { id: string } }) => e.appEntitlement.id)).toEqual([one.id]);
      });

      it('refuses badly typed search filters', async () => {
        for (const [body, field] of [
          [{ query: 1 }, 'query'],
          [{ appIds: 'x' }, 'appIds'],
          [{ appIds: ['a', 2] }, 'appIds[1]'],
          [{ alias: {} }, 'alias'],
        ] as const) {
          const res = await reader.post('/api/v1/search/entitlements', body);
          expect(res.status).toBe(400);
          expect(violatedFields(res.body)).toEqual([field]);
        }
      });
    });

    describe('access', () => {
      it('answers 401 without a token on every route', async () => {
        const anonymous = callerFor(service, undefined);
        for (const res of [
          await anonymous.get('/api/v1/apps'),
          await anonymous.post('/api/v1/apps', { displayName: 'x' }),
          await anonymous.get('/api/v1/users'),
          await anonymous.get('/api/v1/apps/x/entitlements'),
          await anonymous.post('/api/v1/search/entitlements', {}),
        ]) {
          expect(res.status).toBe(401);
          expect(res.body.code).toBe(16);
          expect(res.headers['www-authenticate']).toMatch(/^Bearer/);
        }
      });

      it('lets read_only read and search but not write', async () => {
        const app = await createGovernanceApp(admin, 'Access');
        const entitlement = await createEntitlement(admin, app.id);
        for (const res of [
          await reader.post('/api/v1/apps', { displayName: 'x' }),
          await reader.post('/api/v1/users', { displayName: 'x', type: 'USER_TYPE_HUMAN' }),
          await reader.post(`/api/v1/apps/${app.id}/entitlements`, { displayName: 'x' }),
          await reader.post(`/api/v1/apps/${app.id}/entitlements/${entitlement.id}`, {
            appEntitlement: { displayName: 'x' },
          }),
          await reader.delete(`/api/v1/apps/${app.id}/entitlements/${entitlement.id}`),
        ]) {
          expect(res.status).toBe(403);
          expect(res.body.code).toBe(7);
        }
        expect((await reader.post('/api/v1/search/entitlements', {})).status).toBe(200);
        const superAdmin = await callerWith(service, 'super_admin');
        expect((await superAdmin.get(`/api/v1/apps/${app.id}/entitlements/${entitlement.id}`)).status).toBe(200);
      });
    });
  });
}
