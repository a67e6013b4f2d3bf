/**
 * Who may use the codec endpoint with a bearer token: the roles that read runs through the API,
 * `admin` and `super_admin` (src/auth/roles.ts: `automations` read), since the codec never shows
 * more than the executions API does; `read_only` is refused (403), and without a token a caller
 * from anywhere but an allowed loopback is asked for one (401). Real app, real tokens, the test
 * run's payload codec; loopback allowance off, so the token is what decides.
 */
import request from 'supertest';
import { defaultPayloadConverter } from '@temporalio/common';
import { startTestService, type TestService } from '../helpers/test-service';

describe('the codec endpoint by role', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ env: { CODEC_ALLOW_LOOPBACK: 'false' } });
  });
  afterAll(async () => service?.close());

  const base64 = (bytes: Uint8Array | null | undefined) => Buffer.from(bytes ?? new Uint8Array()).toString('base64');

  it('admin and super_admin decode a run payload (200); read_only is 403 and no token 401, in the error shape', async () => {
    const plain = defaultPayloadConverter.toPayload({ email: 'ada@example.com' });
    const wire = {
      payloads: [
        {
          metadata: Object.fromEntries(Object.entries(plain.metadata ?? {}).map(([k, v]) => [k, base64(v)])),
          data: base64(plain.data),
        },
      ],
    };
    const encoded = await request(service.server)
      .post('/codec/encode')
      .set('Authorization', `Bearer ${await service.tokenFor('super_admin')}`)
      .send(wire);
    expect(encoded.status).toBe(200);
    expect(encoded.body.payloads[0].data).not.toBe(wire.payloads[0]!.data);

    for (const role of ['admin', 'super_admin'] as const) {
      const decoded = await request(service.server)
        .post('/codec/decode')
        .set('Authorization', `Bearer ${await service.tokenFor(role)}`)
        .send(encoded.body);
      expect([role, decoded.status, decoded.body]).toEqual([role, 200, wire]);
    }
    const refused = await request(service.server)
      .post('/codec/decode')
      .set('Authorization', `Bearer ${await service.tokenFor('read_only')}`)
      .send(encoded.body);
    expect([refused.status, refused.body]).toEqual([
      403,
      { code: 7, message: 'role does not allow reading automation runs', details: [] },
    ]);
    const anonymous = await request(service.server).post('/codec/decode').send(encoded.body);
    expect([anonymous.status, anonymous.body.code]).toEqual([401, 16]);
  });
});
