import { DATABASES, describeOn } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { callerWith, createGovernanceApp, createEntitlement, createUser, type Caller } from '../helpers/governance';
import { createEntitlement as createEntitlementDirect } from '../../src/domain/entitlements';

interface ListBody {
  list: Array<{ appEntitlement: { id: string } }>;
  nextPageToken: string;
}

const idsOf = (body: ListBody) => body.list.map((item) => item.appEntitlement.id);

for (const target of DATABASES) {
  describeOn(target)(`pagination (${target.label})`, () => {
    let service: TestService;
    let admin: Caller;
    let reader: Caller;
    let bigApp: string;
    let bigIds: string[];

    /** Creates `count` entitlements straight through the domain (fast), in id order. */
    async function fill(appId: string, count: number, prefix: string): Promise<string[]> {
      const ids: string[] = [];
      for (let i = 0; i < count; i += 1) {
        ids.push(
          (
            await createEntitlementDirect(service.deps.db, appId, {
              displayName: `${prefix} ${i}`,
              alias: `${prefix}-${i}`,
            })
          ).id,
        );
      }
      return ids;
    }

    beforeAll(async () => {
      service = await startTestService({ target });
      admin = await callerWith(service, 'admin');
      reader = await callerWith(service, 'read_only');
      bigApp = (await createGovernanceApp(admin, 'Big')).id;
      bigIds = await fill(bigApp, 130, 'big');
    });
    afterAll(async () => service.close());

    const listPath = (appId: string) => `/api/v1/apps/${appId}/entitlements`;

    it('clamps page_size: default 25, below 10 → 10, above 100 → 100, junk → default', async () => {
      const sizes: Array<[string, number]> = [
        ['', 25],
        ['?page_size=5', 10],
        ['?page_size=0', 10],
        ['?page_size=-3', 10],
        ['?page_size=1000', 100],
        ['?pageSize=1000', 100],
        ['?page_size=abc', 25],
        ['?page_size=42', 42],
      ];
      for (const [query, expected] of sizes) {
        const res = await reader.get(`${listPath(bigApp)}${query}`);
        expect(res.status).toBe(200);
        expect(res.body.list).toHaveLength(expected);
        expect(res.body.nextPageToken).not.toBe('');
      }
      const search = await reader.post('/api/v1/search/entitlements', { appIds: [bigApp], page_size: 1000 });
      expect(search.body.list).toHaveLength(100);
      const searchCamel = await reader.post('/api/v1/search/entitlements', { appIds: [bigApp], pageSize: 5 });
      expect(searchCamel.body.list).toHaveLength(10);
    });

    it('never ends with an avoidable empty page', async () => {
      const app = (await createGovernanceApp(admin, 'Twenty')).id;
      const ids = await fill(app, 20, 'twenty');
      const first = (await reader.get(`${listPath(app)}?page_size=10`)).body as ListBody;
      expect(idsOf(first)).toEqual(ids.slice(0, 10));
      const second = (await reader.get(`${listPath(app)}?page_size=10&page_token=${first.nextPageToken}`))
        .body as ListBody;
      expect(idsOf(second)).toEqual(ids.slice(10));
      expect(second.nextPageToken).toBe('');
      const empty = (await reader.get(listPath((await createGovernanceApp(admin, 'Empty')).id))).body as ListBody;
      expect(empty).toEqual({ list: [], nextPageToken: '' });
    });

    it('walks every row that exists throughout exactly once, under concurrent inserts and deletes', async () => {
      const app = (await createGovernanceApp(admin, 'Walk')).id;
      const initial = await fill(app, 120, 'walk');
      const deleted = new Set<string>();
      const inserted: string[] = [];
      const seen: string[] = [];
      let token = '';
      let pages = 0;
      let victim = 0;
      do {
        // Between pages, and while the page is being read: insert two rows, delete one seen and one unseen row.
        const unseen = initial[initial.length - 1 - victim]!;
        const alreadySeen = seen[victim];
        victim += 1;
        const [res] = await Promise.all([
          reader.get(`${listPath(app)}?page_size=10${token ? `&page_token=${encodeURIComponent(token)}` : ''}`),
          createEntitlement(admin, app, { displayName: `new ${pages}a` }).then((e) => inserted.push(e.id)),
          createEntitlement(admin, app, { displayName: `new ${pages}b` }).then((e) => inserted.push(e.id)),
          admin.delete(`/api/v1/apps/${app}/entitlements/${unseen}`).then(() => deleted.add(unseen)),
          alreadySeen
            ? admin.delete(`/api/v1/apps/${app}/entitlements/${alreadySeen}`).then(() => deleted.add(alreadySeen))
            : undefined,
        ]);
        expect(res.status).toBe(200);
        const body = res.body as ListBody;
        expect(body.list.length).toBeLessThanOrEqual(10);
        seen.push(...idsOf(body));
        token = body.nextPageToken;
        pages += 1;
        expect(pages).toBeLessThan(100);
      } while (token !== '');

      expect(new Set(seen).size).toBe(seen.length);
      const throughout = initial.filter((id) => !deleted.has(id));
      for (const id of throughout) expect(seen.filter((s) => s === id)).toHaveLength(1);
      expect(seen).toEqual([...seen].sort());
      expect(deleted.size).toBeGreaterThan(0);
      expect(inserted.length).toBeGreaterThan(0);
    });

    it('refuses a tampered token with 400', async () => {
      const first = (await reader.get(`${listPath(bigApp)}?page_size=10`)).body as ListBody;
      const [payload, signature] = first.nextPageToken.split('.') as [string, string];
      const cursor = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { c: string; f: string };
      const forgedPayload = Buffer.from(JSON.stringify({ ...cursor, c: bigIds[50] })).toString('base64url');
      const flip = (text: string) => `${text.slice(0, -1)}${text.endsWith('A') ? 'B' : 'A'}`;
      for (const token of [
        `${forgedPayload}.${signature}`,
        `${payload}.${flip(signature)}`,
        'garbage',
        `${payload}.${signature}.x`,
      ]) {
        const res = await reader.get(`${listPath(bigApp)}?page_token=${encodeURIComponent(token)}`);
        expect(res.status).toBe(400);
        expect(res.body.code).toBe(3);
      }
    });

    it('refuses a token from another listing or filter with 400', async () => {
      const other = (await createGovernanceApp(admin, 'Other listing')).id;
      await fill(other, 12, 'other');
      const otherToken = ((await reader.get(`${listPath(other)}?page_size=10`)).body as ListBody).nextPageToken;
      expect(otherToken).not.toBe('');
      expect((await reader.get(`${listPath(bigApp)}?page_token=${otherToken}`)).status).toBe(400);
      expect(
        (await reader.post('/api/v1/search/entitlements', { appIds: [other], page_token: otherToken })).status,
      ).toBe(400);
      const searchToken = (
        (await reader.post('/api/v1/search/entitlements', { appIds: [bigApp], query: 'big' })).body as ListBody
      ).nextPageToken;
      expect(
        (await reader.post('/api/v1/search/entitlements', { appIds: [bigApp], query: 'bi', page_token: searchToken }))
          .status,
      ).toBe(400);
      expect(
        (await reader.post('/api/v1/search/entitlements', { appIds: [bigApp], page_token: searchToken })).status,
      ).toBe(400);
      expect((await reader.get(`/api/v1/apps?page_token=${searchToken}`)).status).toBe(400);
      // The same filter, app ids in another order: the same listing.
      const twoApps = { appIds: [bigApp, other], query: 'i' };
      const page = (await reader.post('/api/v1/search/entitlements', twoApps)).body as ListBody;
      const next = await reader.post('/api/v1/search/entitlements', {
        appIds: [other, bigApp],
        query: 'i',
        pageToken: page.nextPageToken,
      });
      expect(next.status).toBe(200);
    });

    it('walks a search to the end, in id order', async () => {
      const seen: string[] = [];
      let token = '';
      do {
        const res = await reader.post('/api/v1/search/entitlements', {
          appIds: [bigApp],
          query: 'BIG',
          page_size: 40,
          page_token: token,
        });
        expect(res.status).toBe(200);
        seen.push(...idsOf(res.body as ListBody));
        token = res.body.nextPageToken;
      } while (token !== '');
      expect(seen).toEqual(bigIds);
    });

    it('pages apps and users too', async () => {
      for (let i = 0; i < 11; i += 1) {
        await createUser(admin);
        await createGovernanceApp(admin, `App ${i}`);
      }
      for (const [path, key] of [
        ['/api/v1/apps', 'app'],
        ['/api/v1/users', 'user'],
      ] as const) {
        const seen: string[] = [];
        let token = '';
        do {
          const res = await reader.get(`${path}?page_size=10${token ? `&page_token=${token}` : ''}`);
          expect(res.status).toBe(200);
          seen.push(...res.body.list.map((item: Record<string, { id: string }>) => item[key]!.id));
          token = res.body.nextPageToken;
        } while (token !== '');
        expect(seen.length).toBeGreaterThan(10);
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen).toEqual([...seen].sort());
      }
    });
  });
}
