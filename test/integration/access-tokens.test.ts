/**
 * The API's own access tokens, refused in every way they can be wrong: expired, another issuer,
 * another audience, another `typ`, signed by a key that is not the service's (even under its kid),
 * no signature, and the token of a client that has since been deleted. Each is a 401 with
 * `WWW-Authenticate: Bearer error="invalid_token"` in the one error shape; a valid token is the
 * control. Real app, real store (every database), tokens made with jose.
 */
import request from 'supertest';
import { SignJWT, generateKeyPair, importJWK, type JWK, type JWTPayload, type KeyLike } from 'jose';
import { DATABASES, describeOn } from '../helpers/databases';
import { startTestService, type TestService } from '../helpers/test-service';
import { getOrCreateServiceKey } from '../../src/store/service-keys';
import { SIGNING_KEY_SECRET } from '../../src/auth/tokens';

const ISSUER = 'urn:automation-governance';
const AUDIENCE = 'urn:automation-governance:api';

for (const target of DATABASES) {
  describeOn(target)(`access tokens (${target.label})`, () => {
    let service: TestService;
    let serviceKey: { key: KeyLike; kid: string };
    let clientId: string;
    let clientSecret: string;

    beforeAll(async () => {
      service = await startTestService({ target });
      const ring = JSON.parse(
        await getOrCreateServiceKey(service.deps.db, service.deps.secretBox, SIGNING_KEY_SECRET, () => 'unused'),
      ) as { current: JWK };
      const jwk = ring.current;
      serviceKey = { key: (await importJWK(jwk, 'ES256')) as KeyLike, kid: jwk.kid! };
      const created = await request(service.server)
        .post('/api/v1/iam/clients')
        .set('Authorization', `Bearer ${await service.tokenFor('super_admin')}`)
        .send({ displayName: 'token subject', roles: ['admin'] });
      expect(created.status).toBe(200);
      clientId = created.body.client.clientId;
      clientSecret = created.body.clientSecret;
    });
    afterAll(async () => service?.close());

    const now = (): number => Math.floor(Date.now() / 1000);

    /** A token as the service makes it, with `changes` applied. */
    async function token(
      changes: { claims?: JWTPayload; header?: Record<string, unknown>; key?: KeyLike; sub?: string } = {},
    ): Promise<string> {
      return new SignJWT({
        roles: ['admin'],
        iss: ISSUER,
        aud: AUDIENCE,
        sub: changes.sub ?? clientId,
        iat: now(),
        exp: now() + 300,
        jti: 'j1',
        ...changes.claims,
      })
        .setProtectedHeader({ alg: 'ES256', kid: serviceKey.kid, typ: 'at+jwt', ...changes.header })
        .sign(changes.key ?? serviceKey.key);
    }

    async function callWith(bearer: string): Promise<request.Response> {
      return request(service.server).get('/api/v1/apps').set('Authorization', `Bearer ${bearer}`);
    }

    function expectInvalidToken(res: request.Response): void {
      expect([res.status, res.headers['www-authenticate']]).toEqual([401, 'Bearer error="invalid_token"']);
      expect(res.body).toEqual({ code: 16, message: 'invalid or expired access token', details: expect.any(Array) });
    }

    it('control: a token made like the service makes it is accepted', async () => {
      expect((await callWith(await token())).status).toBe(200);
    });

    it('401: expired (exp one second past, or exactly now)', async () => {
      expectInvalidToken(await callWith(await token({ claims: { exp: now() - 1 } })));
      expectInvalidToken(await callWith(await token({ claims: { iat: now() - 700, exp: now() - 600 } })));
    });

    it('401: another issuer, another audience, or neither', async () => {
      expectInvalidToken(await callWith(await token({ claims: { iss: 'urn:someone-else' } })));
      expectInvalidToken(await callWith(await token({ claims: { aud: 'urn:automation-governance:other' } })));
      expectInvalidToken(await callWith(await token({ claims: { iss: undefined, aud: undefined } })));
    });

    it('401: typ other than at+jwt (JWT, none), and a token without exp', async () => {
      expectInvalidToken(await callWith(await token({ header: { typ: 'JWT' } })));
      expectInvalidToken(await callWith(await token({ header: { typ: undefined } })));
      expectInvalidToken(await callWith(await token({ claims: { exp: undefined } })));
    });

    it("401: signed by a foreign key, even under the service key's kid", async () => {
      const foreign = await generateKeyPair('ES256');
      expectInvalidToken(await callWith(await token({ key: foreign.privateKey })));
      const rsa = await generateKeyPair('RS256');
      const rs256 = await new SignJWT({ roles: ['admin'], iss: ISSUER, aud: AUDIENCE, sub: clientId, exp: now() + 300 })
        .setProtectedHeader({ alg: 'RS256', kid: serviceKey.kid, typ: 'at+jwt' })
        .sign(rsa.privateKey);
      expectInvalidToken(await callWith(rs256));
    });

    it('401: no signature (alg none), or a signature cut off', async () => {
      const valid = await token();
      const [, payload] = valid.split('.');
      const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${payload}.`;
      expectInvalidToken(await callWith(none));
      expectInvalidToken(await callWith(valid.split('.').slice(0, 2).join('.') + '.'));
    });

    it("401: a deleted client's token, at once (not when it expires)", async () => {
      const created = await request(service.server)
        .post('/api/v1/iam/clients')
        .set('Authorization', `Bearer ${await service.tokenFor('super_admin')}`)
        .send({ displayName: 'short-lived', roles: ['admin'] });
      expect(created.status).toBe(200);
      const issued = await request(service.server).post('/auth/v1/token').type('form').send({
        grant_type: 'client_credentials',
        client_id: created.body.client.clientId,
        client_secret: created.body.clientSecret,
      });
      expect(issued.status).toBe(200);
      const bearer: string = issued.body.access_token;
      expect((await callWith(bearer)).status).toBe(200);

      const removed = await request(service.server)
        .delete(`/api/v1/iam/clients/${created.body.client.id}`)
        .set('Authorization', `Bearer ${await service.tokenFor('super_admin')}`);
      expect(removed.status).toBe(200);
      expectInvalidToken(await callWith(bearer));
      // A client that never existed fares no better with a correctly signed token.
      expectInvalidToken(await callWith(await token({ sub: 'cli_never_made' })));
    });

    it('the token endpoint issues tokens for a live client (the one the tests above forge)', async () => {
      const issued = await request(service.server)
        .post('/auth/v1/token')
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret });
      expect(issued.status).toBe(200);
      expect((await callWith(issued.body.access_token)).status).toBe(200);
    });
  });
}
