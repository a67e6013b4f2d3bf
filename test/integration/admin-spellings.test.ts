/**
 * The operations endpoints by another spelling. Routes match exactly (case-sensitive, a trailing
 * slash is another path), so `/METRICS`, `/metrics/`, `/Ready`, `/ready/` never reach the handlers
 * of /metrics and /ready: on the API port, on the admin listener, and through the real nginx of the
 * production shape (deploy/nginx/api.conf.template, set up by scripts/stack-prod.ts's `nginxSetup`)
 * in front of a real API that serves /metrics and /ready on its own port (no ADMIN_PORT: the worst
 * case, so the entry's own refusal is what is tested there).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { createAdminApp } from '../../src/http/admin';
import { startTestService, type TestService } from '../helpers/test-service';
import { startNginxEntry, type NginxEntry } from '../helpers/nginx-entry';

/** Other spellings of /metrics and /ready, each of which Koa's default router would have served. */
const SPELLINGS = ['/METRICS', '/Metrics', '/metrics/', '/Ready', '/READY', '/ready/', '/Ready/'];

function expectNotFound(pathname: string, res: { status: number; body: unknown; text: string }): void {
  expect([pathname, res.status, res.body]).toEqual([
    pathname,
    404,
    { code: 5, message: expect.any(String), details: [] },
  ]);
  // Neither handler's answer: no Prometheus text, no readiness report.
  expect(`${pathname}: ${res.text}`).not.toMatch(/# HELP|"checks"/);
}

describe('operations endpoints by another spelling, on the API port', () => {
  let service: TestService;
  beforeAll(async () => {
    service = await startTestService();
  });
  afterAll(async () => service?.close());

  it('serves /metrics and /ready as spelled, and answers every other spelling 404 in the error shape', async () => {
    expect((await request(service.server).get('/metrics')).status).toBe(200);
    expect((await request(service.server).get('/ready')).status).toBe(503); // no Temporal in this test
    for (const pathname of SPELLINGS) expectNotFound(pathname, await request(service.server).get(pathname));
  });

  it('matches every other route exactly too (letter case, trailing slash)', async () => {
    const token = await service.tokenFor('super_admin');
    expect((await request(service.server).get('/api/v1/apps').set('Authorization', `Bearer ${token}`)).status).toBe(
      200,
    );
    for (const pathname of ['/API/v1/apps', '/api/v1/Apps', '/api/v1/apps/', '/Health', '/health/']) {
      expectNotFound(pathname, await request(service.server).get(pathname).set('Authorization', `Bearer ${token}`));
    }
    expect((await request(service.server).get('/health')).status).toBe(200);
  });

  it('the admin listener matches exactly as well', async () => {
    const admin = createAdminApp(service.deps).callback();
    expect((await request(admin).get('/metrics')).status).toBe(200);
    for (const pathname of SPELLINGS) expectNotFound(pathname, await request(admin).get(pathname));
  });
});

describe('operations endpoints by another spelling, through the real nginx of the production shape', () => {
  let service: TestService;
  let nginx: NginxEntry | undefined;
  let entry: string;
  let dir: string;

  beforeAll(async () => {
    service = await startTestService();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nginx-entry-'));
    nginx = await startNginxEntry((service.server.address() as { port: number }).port, dir);
    entry = nginx.url;
  });
  afterAll(async () => {
    await nginx?.stop();
    await service?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the API behind it serves /metrics and /ready on its own port; the entry answers 404 itself for every spelling', async () => {
    // The API itself would answer /metrics: what keeps it from the public is the entry.
    expect((await request(service.server).get('/metrics')).status).toBe(200);
    for (const pathname of [
      '/metrics',
      '/ready',
      ...SPELLINGS,
      '/%6Detrics',
      '//metrics',
      '/metrics?x=1',
      '/ready//',
      '/METRICS/x',
    ]) {
      const res = await fetch(`${entry}${pathname}`);
      const text = await res.text();
      expectNotFound(pathname, { status: res.status, body: JSON.parse(text) as unknown, text });
      // Answered by nginx, not proxied: the API marks every answer of its own with nosniff.
      expect([pathname, res.headers.get('x-content-type-options')]).toEqual([pathname, null]);
    }
    // The entry proxies everything else to the API.
    const health = await fetch(`${entry}/health`);
    expect([health.status, health.headers.get('x-content-type-options')]).toEqual([200, 'nosniff']);
  });
});
