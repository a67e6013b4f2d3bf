import request from 'supertest';
import { DATABASES, describeOn } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { createClient, ensureBootstrapClient } from '../../src/auth/clients';

for (const target of DATABASES) {
  describeOn(target)(`auth (${target.label})`, () => {
    let service: TestService;
    let clientId: string;
    let clientSecret: string;

    beforeAll(async () => {
      service = await startTestService({ target });
      ({
        client: { clientId },
        clientSecret,
      } = await createClient(service.deps.db, service.deps.secretBox, { displayName: 'ops', roles: ['admin'] }));
    });
    afterAll(async () => service.close());

    describe('POST /auth/v1/token', () => {
      it('issues a bearer token for form-encoded credentials', async () => {
        const res = await request(service.server)
          .post('/auth/v1/token')
          .type('form')
          .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
        expect(res.status).toBe(200);
        expect(res.headers['cache-control']).toBe('no-store');
        expect(res.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 600 });
        const principal = await service.deps.tokens.verify(res.body.access_token);
        expect(principal).toEqual({ clientId, roles: ['admin'] });
      });

      it('accepts JSON credentials too', async () => {
        const res = await request(service.server)
          .post('/auth/v1/token')
          .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
        expect(res.status).toBe(200);
        expect(res.body.token_type).toBe('Bearer');
      });

      it('refuses a wrong secret and an unknown client alike with 401 invalid_client', async () => {
        for (const [id, secret] of [
          [clientId, 'wrong'],
          ['cli_unknown', clientSecret],
        ]) {
          const res = await request(service.server)
            .post('/auth/v1/token')
            .type('form')
            .send({ grant_type: 'client_credentials', client_id: id, client_secret: secret });
          expect(res.status).toBe(401);
          expect(res.body.error).toBe('invalid_client');
          expect(JSON.stringify(res.body)).not.toContain(clientSecret);
        }
      });

      it('refuses credentials in a Basic header with invalid_request', async () => {
        const res = await request(service.server)
          .post('/auth/v1/token')
          .auth(clientId, clientSecret)
          .type('form')
          .send({ grant_type: 'client_credentials' });
        expect(res.status).toBe(400);
        expect(res.body.error).toBe('invalid_request');
        expect(res.body.error_description).toMatch(/body/);
      });

      it('answers unsupported_grant_type and invalid_request per RFC 6749', async () => {
        const wrongGrant = await request(service.server)
          .post('/auth/v1/token')
          .type('form')
          .send({ grant_type: 'password', client_id: clientId, client_secret: clientSecret });
        expect(wrongGrant.status).toBe(400);
        expect(wrongGrant.body.error).toBe('unsupported_grant_type');
        const missing = await request(service.server)
          .post('/auth/v1/token')
          .type('form')
          .send({ grant_type: 'client_credentials' });
        expect(missing.status).toBe(400);
        expect(missing.body.error).toBe('invalid_request');
        const noGrant = await request(service.server).post('/auth/v1/token').type('form').send({ client_id: clientId });
        expect(noGrant.body.error).toBe('invalid_request');
      });

      it('serves the public signing keys without private parts', async () => {
        const res = await request(service.server).get('/auth/v1/jwks');
        expect(res.status).toBe(200);
        expect(res.body.keys).toHaveLength(1);
        expect(res.body.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256' });
        expect(res.body.keys[0].d).toBeUndefined();
      });
    });

    describe('bearer authentication and roles', () => {
      it('401 with WWW-Authenticate for a missing or invalid token', async () => {
        const missing = await request(service.server).get('/api/v1/iam/clients');
        expect(missing.status).toBe(401);
        expect(missing.headers['www-authenticate']).toMatch(/^Bearer/);
        expect(missing.body).toMatchObject({ code: 16, message: expect.any(String), details: [] });
        const forged = await request(service.server)
          .get('/api/v1/iam/clients')
          .set('Authorization', 'Bearer not.a.jwt');
        expect(forged.status).toBe(401);
        expect(forged.headers['www-authenticate']).toMatch(/^Bearer/);
      });

      it('403 for a caller whose role does not cover API clients', async () => {
        const res = await request(service.server)
          .get('/api/v1/iam/clients')
          .set('Authorization', `Bearer ${await service.tokenFor('admin')}`);
        expect(res.status).toBe(403);
        expect(res.body.code).toBe(7);
      });
    });

    describe('/api/v1/iam/clients', () => {
      it('creates a client whose secret is shown once and stored hashed', async () => {
        const token = await service.tokenFor('super_admin');
        const created = await request(service.server)
          .post('/api/v1/iam/clients')
          .set('Authorization', `Bearer ${token}`)
          .send({ displayName: 'ci', roles: ['read_only'] });
        expect(created.status).toBe(200);
        expect(created.body.client).toMatchObject({
          displayName: 'ci',
          roles: ['read_only'],
          clientId: expect.any(String),
        });
        const secret: string = created.body.clientSecret;
        expect(secret.length).toBeGreaterThanOrEqual(43);

        const stored = await service.deps.db.query<{ secret_hash: string }>(
          'SELECT secret_hash FROM api_clients WHERE id = $1',
          [created.body.client.id],
        );
        expect(stored[0]!.secret_hash).toMatch(/^hmac-sha256\$/);
        expect(stored[0]!.secret_hash).not.toContain(secret);

        const list = await request(service.server).get('/api/v1/iam/clients').set('Authorization', `Bearer ${token}`);
        expect(list.status).toBe(200);
        expect(JSON.stringify(list.body)).not.toContain(secret);
        expect(list.body.list.map((item: { client: { id: string } }) => item.client.id)).toContain(
          created.body.client.id,
        );
        expect(list.body.nextPageToken).toBe('');

        const tokenRes = await request(service.server)
          .post('/auth/v1/token')
          .type('form')
          .send({ grant_type: 'client_credentials', client_id: created.body.client.clientId, client_secret: secret });
        expect(tokenRes.status).toBe(200);

        const removed = await request(service.server)
          .delete(`/api/v1/iam/clients/${created.body.client.id}`)
          .set('Authorization', `Bearer ${token}`);
        expect(removed.status).toBe(200);
        const again = await request(service.server)
          .post('/auth/v1/token')
          .type('form')
          .send({ grant_type: 'client_credentials', client_id: created.body.client.clientId, client_secret: secret });
        expect(again.status).toBe(401);
      });

      it('refuses unknown roles with 400 naming the field', async () => {
        const res = await request(service.server)
          .post('/api/v1/iam/clients')
          .set('Authorization', `Bearer ${await service.tokenFor('super_admin')}`)
          .send({ displayName: 'x', roles: ['root'] });
        expect(res.status).toBe(400);
        expect(res.body.details[0].fieldViolations[0].field).toBe('roles');
      });
    });

    describe('bootstrap', () => {
      it('makes the configured super_admin client, and resets its secret to the configured one', async () => {
        const db = service.deps.db;
        const first = await ensureBootstrapClient(db, service.deps.secretBox, {
          clientId: 'boot',
          clientSecret: 'first-secret-value',
        });
        expect(first).toEqual({ kind: 'configured', clientId: 'boot' });
        await ensureBootstrapClient(db, service.deps.secretBox, {
          clientId: 'boot',
          clientSecret: 'second-secret-value',
        });
        const res = await request(service.server)
          .post('/auth/v1/token')
          .type('form')
          .send({ grant_type: 'client_credentials', client_id: 'boot', client_secret: 'second-secret-value' });
        expect(res.status).toBe(200);
        expect(await service.deps.tokens.verify(res.body.access_token)).toEqual({
          clientId: 'boot',
          roles: ['super_admin'],
        });
        const old = await request(service.server)
          .post('/auth/v1/token')
          .type('form')
          .send({ grant_type: 'client_credentials', client_id: 'boot', client_secret: 'first-secret-value' });
        expect(old.status).toBe(401);
      });

      it('does not make the configured client again once it was deleted through the API', async () => {
        const db = service.deps.db;
        const bootstrap = { clientId: 'boot-deleted', clientSecret: 'boot-deleted-secret-value-0123456789' };
        expect(await ensureBootstrapClient(db, service.deps.secretBox, bootstrap)).toEqual({
          kind: 'configured',
          clientId: 'boot-deleted',
        });
        const [row] = await db.query<{ id: string }>('SELECT id FROM api_clients WHERE client_id = $1', [
          'boot-deleted',
        ]);
        const deleted = await request(service.server)
          .delete(`/api/v1/iam/clients/${row!.id}`)
          .set('Authorization', `Bearer ${await service.tokenFor('super_admin')}`);
        expect(deleted.status).toBe(200);
        // The next start (the same environment) leaves it deleted, and says so.
        expect(await ensureBootstrapClient(db, service.deps.secretBox, bootstrap)).toEqual({
          kind: 'deleted',
          clientId: 'boot-deleted',
        });
        expect(await db.query('SELECT 1 FROM api_clients WHERE client_id = $1', ['boot-deleted'])).toHaveLength(0);
        const token = await request(service.server).post('/auth/v1/token').type('form').send({
          grant_type: 'client_credentials',
          client_id: bootstrap.clientId,
          client_secret: bootstrap.clientSecret,
        });
        expect(token.status).toBe(401);
      });

      it('makes one client when none exists and none is configured, and none after that', async () => {
        const fresh = await startTestService({ target });
        try {
          const made = await ensureBootstrapClient(fresh.deps.db, fresh.deps.secretBox, undefined);
          expect(made.kind).toBe('created');
          expect(await ensureBootstrapClient(fresh.deps.db, fresh.deps.secretBox, undefined)).toEqual({
            kind: 'existing',
          });
        } finally {
          await fresh.close();
        }
      });
    });
  });
}
