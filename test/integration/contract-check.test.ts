/**
 * The check every test service installs (test/helpers/contract.ts) catches drift: a server whose
 * document is the service's own `GET /api/openapi.json` but whose answers are not what it declares
 * (an undocumented status, a wrong content type, a body its schema refuses, an error outside the
 * one error shape, through `res.end` and through `writeHead` as the webhook fast path answers)
 * gets each of them recorded, and the real service's answers get none.
 */
import http from 'node:http';
import request from 'supertest';
import { OPENAPI_PATH } from '../../src/http/openapi';
import { installContractCheck, takeDrifts } from '../helpers/contract';
import { startTestService, type TestService } from '../helpers/test-service';

let service: TestService;
let drifting: http.Server;

/** Answers of a server that serves the real document and drifts from it on purpose. */
const ANSWERS: Record<string, { status: number; type: string; body: string; viaWriteHead?: boolean }> = {
  // GET /health declares 200 only.
  '/health': { status: 418, type: 'application/json', body: '{"status":"ok"}' },
  // GET /api/v1/apps/{app_id} declares a JSON body.
  '/api/v1/apps/a1': { status: 200, type: 'text/plain', body: 'an app' },
  // ... whose app has a string id.
  '/api/v1/apps/a2': { status: 200, type: 'application/json', body: '{"app":{"id":2}}' },
  // An unknown path's error must still be the one error shape.
  '/nowhere': { status: 404, type: 'application/json', body: '{"error":"not found"}' },
  // The receiver's 404 is the error shape; headers given to writeHead are read too.
  '/api/v1/webhooks/incoming/l1': { status: 404, type: 'application/json', body: '{"code":5}', viaWriteHead: true },
};

beforeAll(async () => {
  service = await startTestService();
  const document = (await request(service.server).get(OPENAPI_PATH)).text;
  drifting = http.createServer((req, res) => {
    if (req.url === OPENAPI_PATH) {
      res.setHeader('Content-Type', 'application/json');
      res.end(document);
      return;
    }
    const answer = ANSWERS[req.url ?? ''] ?? { status: 500, type: 'text/plain', body: 'unexpected' };
    if (answer.viaWriteHead) {
      res.writeHead(answer.status, {
        'Content-Type': answer.type,
        'Content-Length': String(Buffer.byteLength(answer.body)),
      });
    } else {
      res.statusCode = answer.status;
      res.setHeader('Content-Type', answer.type);
    }
    res.end(answer.body);
  });
  await new Promise<void>((resolve) => drifting.listen(0, '127.0.0.1', resolve));
  await installContractCheck(drifting, (drifting.address() as { port: number }).port);
});

afterAll(async () => {
  await new Promise<void>((resolve) => drifting?.close(() => resolve()));
  await service?.close();
});

it('records each answer that drifts from the document, naming the operation and what is wrong', async () => {
  await request(drifting).get('/health');
  await request(drifting).get('/api/v1/apps/a1');
  await request(drifting).get('/api/v1/apps/a2');
  await request(drifting).get('/nowhere');
  await request(drifting).post('/api/v1/webhooks/incoming/l1').send({});
  const drifts = takeDrifts();
  expect(drifts).toHaveLength(5);
  expect(drifts[0]).toMatch(/^GET \/health 418: status 418 is not documented/);
  expect(drifts[1]).toMatch(
    /^GET \/api\/v1\/apps\/\{app_id\} 200: content type "text\/plain" is not one of application\/json/,
  );
  expect(drifts[2]).toMatch(
    /^GET \/api\/v1\/apps\/\{app_id\} 200 does not match the document: .*"instancePath":"\/app\/id"/,
  );
  expect(drifts[3]).toMatch(/^GET \/nowhere \(no documented operation\) does not match the document/);
  expect(drifts[4]).toMatch(/^POST \/api\/v1\/webhooks\/incoming\/\{listener_id\} 404 does not match the document/);
});

it('records nothing for the real service, which answers as documented', async () => {
  const token = await service.tokenFor('super_admin');
  expect((await request(service.server).get('/health')).status).toBe(200);
  expect((await request(service.server).get('/api/v1/apps/nope').set('Authorization', `Bearer ${token}`)).status).toBe(
    404,
  );
  expect((await request(service.server).get('/nowhere')).status).toBe(404);
  expect((await request(service.server).post('/api/v1/webhooks/incoming/nope').send({})).status).toBe(404);
  expect(takeDrifts()).toEqual([]);
});
