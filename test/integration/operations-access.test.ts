/**
 * /ready and /metrics are operator endpoints: behind ADMIN_TOKEN, or only on the admin listener
 * (ADMIN_PORT); /health stays public; readiness is checked once for a burst of probes.
 */
import request from 'supertest';
import { startTestService, NO_TEMPORAL, type TestService } from '../helpers/test-service';
import { createAdminApp } from '../../src/http/admin';
import type { RunEngine } from '../../src/domain/engine';

const ADMIN_TOKEN = 'admin-token-for-tests-0123456789abcdef';

function countingRuns(): RunEngine & { pings: number } {
  const runs = {
    ...NO_TEMPORAL,
    pings: 0,
    async ping() {
      runs.pings += 1;
    },
  };
  return runs;
}

describe('operations endpoints behind ADMIN_TOKEN', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService({ env: { ADMIN_TOKEN }, engine: countingRuns() });
  });
  afterAll(async () => service.close());

  it('/metrics and /ready need the admin token; /health does not', async () => {
    for (const path of ['/metrics', '/ready']) {
      const anonymous = await request(service.server).get(path);
      expect([path, anonymous.status, anonymous.body.code]).toEqual([path, 401, 16]);
      expect(anonymous.headers['www-authenticate']).toBe('Bearer');
      const wrong = await request(service.server).get(path).set('Authorization', 'Bearer not-the-admin-token');
      expect([path, wrong.status]).toEqual([path, 401]);
      // An API access token is not the admin token either.
      const apiToken = await service.tokenFor('super_admin');
      expect([
        path,
        (await request(service.server).get(path).set('Authorization', `Bearer ${apiToken}`)).status,
      ]).toEqual([path, 401]);
      const admin = await request(service.server).get(path).set('Authorization', `Bearer ${ADMIN_TOKEN}`);
      expect([path, admin.status]).toEqual([path, 200]);
    }
    expect((await request(service.server).get('/health')).status).toBe(200);
  });
});

describe('operations endpoints on the admin port', () => {
  let service: TestService;
  let runs: ReturnType<typeof countingRuns>;
  beforeAll(async () => {
    runs = countingRuns();
    service = await startTestService({ env: { ADMIN_PORT: '0' }, engine: runs });
  });
  afterAll(async () => service.close());

  it('serves /ready and /metrics only on the admin listener; /health on both', async () => {
    expect((await request(service.server).get('/metrics')).status).toBe(404);
    expect((await request(service.server).get('/ready')).status).toBe(404);
    expect((await request(service.server).get('/health')).status).toBe(200);
    const admin = createAdminApp(service.deps).callback();
    expect((await request(admin).get('/metrics')).status).toBe(200);
    expect((await request(admin).get('/health')).status).toBe(200);
    const ready = await request(admin).get('/ready');
    expect([ready.status, ready.body]).toEqual([200, { status: 'ready', checks: { store: true, temporal: true } }]);
    expect((await request(admin).get('/api/v1/apps')).status).toBe(404);
  });

  it('checks readiness once for probes that come together', async () => {
    const admin = createAdminApp(service.deps).callback();
    const before = runs.pings;
    const answers = await Promise.all(Array.from({ length: 5 }, () => request(admin).get('/ready')));
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
    expect(runs.pings - before).toBeLessThanOrEqual(1);
  });
});
