/**
 * The console's files at /console (src/http/routes/console-assets.ts), over real HTTP from a real
 * app on the embedded store: index.html for every page path (revalidated: no-cache) with the
 * server's settings in a meta element, hashed assets immutable and gzipped when asked, nothing
 * outside the build served, and the console's CSP, Referrer-Policy and framing headers on every
 * /console answer — errors included — and on no /api answer. The files are a small build of their
 * own in a temporary directory (the browser tests, `npm run test:browser`, serve the real one).
 */
import http from 'node:http';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import request from 'supertest';
import { startTestService, type TestService } from '../helpers/test-service';

const INDEX =
  '<!doctype html><html><head><!-- console-config --><script type="module" src="/console/assets/index-AbC123.js"></script></head><body><div id="root"></div></body></html>';
const SCRIPT = `export const big = ${JSON.stringify('console '.repeat(400))};\n`;

function rawGet(
  service: TestService,
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  const { port } = service.server.address() as { port: number };
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      })
      .on('error', reject);
  });
}

function expectConsoleHeaders(res: { headers: Record<string, unknown> }): void {
  const csp = String(res.headers['content-security-policy']);
  const directives = new Map(
    csp
      .split(';')
      .map((d) => d.trim().split(/\s+/))
      .map(([name, ...values]) => [name, values]),
  );
  expect(directives.get('script-src')).toEqual(["'self'"]);
  expect(directives.get('frame-ancestors')).toEqual(["'none'"]);
  expect(directives.get('default-src')).toEqual(["'self'"]);
  expect(res.headers['referrer-policy']).toBe('no-referrer');
  expect(res.headers['x-frame-options']).toBe('DENY');
}

describe('the console at /console', () => {
  let dir: string;
  let service: TestService;
  let missing: TestService;

  beforeAll(async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'console-build-'));
    mkdirSync(path.join(dir, 'assets'));
    writeFileSync(path.join(dir, 'index.html'), INDEX);
    writeFileSync(path.join(dir, 'assets', 'index-AbC123.js'), SCRIPT);
    writeFileSync(path.join(dir, 'assets', 'notes.txt'), 'not an asset type');
    writeFileSync(path.join(dir, 'secret.js'), 'outside assets/');
    service = await startTestService({
      deps: { consoleDir: dir },
      env: { TEMPORAL_UI_PORT: '18233', TEMPORAL_NAMESPACE: 'ns-one' },
    });
    missing = await startTestService({ deps: { consoleDir: path.join(dir, 'not-built') } });
  });

  afterAll(async () => {
    await service?.close();
    await missing?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it.each(['/console', '/console/', '/console/runs', '/console/runs/webhook%3Aabc%3Adef', '/console/automations/new'])(
    '%s answers index.html, revalidated, with the settings the page reads',
    async (page) => {
      const res = await request(service.server).get(page);
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-cache');
      expectConsoleHeaders(res);
      const meta = /<meta name="console-config" content="([^"]*)" \/>/.exec(res.text);
      const settings = JSON.parse(meta![1]!.replace(/&quot;/g, '"').replace(/&amp;/g, '&'));
      expect(settings).toEqual({
        oidc: false,
        localSignin: true,
        temporalUiUrl: 'http://localhost:18233',
        namespace: 'ns-one',
      });
      expect(res.text).toContain('<script type="module" src="/console/assets/index-AbC123.js"></script>');
    },
  );

  it('serves a hashed asset immutable, gzipped when the browser accepts it', async () => {
    // node:http does not decompress: the bytes on the wire.
    const zipped = await rawGet(service, '/console/assets/index-AbC123.js', { 'Accept-Encoding': 'gzip, deflate' });
    expect(zipped.status).toBe(200);
    expect(zipped.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(zipped.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(zipped.headers.vary).toMatch(/Accept-Encoding/);
    expect(gunzipSync(zipped.body).toString()).toBe(SCRIPT);
    expect(zipped.body.length).toBeLessThan(Buffer.byteLength(SCRIPT) / 4);
    expectConsoleHeaders(zipped);

    const plain = await request(service.server)
      .get('/console/assets/index-AbC123.js')
      .set('Accept-Encoding', 'identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.text).toBe(SCRIPT);
  });

  it.each([
    '/console/assets/missing-123.js',
    '/console/assets/notes.txt',
    '/console/assets/..%2Fsecret.js',
    '/console/assets/..%2F..%2Fpackage.json',
    '/console/assets/%2e%2e%2findex.html',
  ])('%s is not served: 404 in the error shape, with the console headers', async (asset) => {
    const res = await request(service.server).get(asset);
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: 5, message: expect.any(String), details: [] });
    expect(res.text).not.toContain('outside assets/');
    expectConsoleHeaders(res);
  });

  it('leaves /console/auth and /console/api to their own routers (never index.html)', async () => {
    for (const route of [
      '/console/auth/me',
      '/console/api/v1/automations',
      '/console/auth/no-such-step',
      '/console/api/v1/no-such-resource',
    ]) {
      const res = await request(service.server).get(route);
      expect(res.headers['content-type']).not.toMatch(/text\/html/);
      expect(res.status).toBeGreaterThanOrEqual(400);
      expectConsoleHeaders(res);
    }
  });

  it.each(['/CONSOLE', '/Console', '/Console/runs', '/CONSOLE/assets/index-AbC123.js', '/console/API/v1/apps'])(
    '%s: the console is served under one spelling, and this answer too carries its headers',
    async (spelled) => {
      const res = await rawGet(service, spelled, {});
      const text = res.body.toString();
      expect([res.status, JSON.parse(text)]).toEqual([
        404,
        { code: 5, message: expect.stringMatching(/^no route for GET /), details: [] },
      ]);
      expect(text).not.toContain('console-config');
      expectConsoleHeaders(res);
    },
  );

  it('sets no console headers on the API', async () => {
    const res = await request(service.server).get('/api/v1/automations');
    expect(res.status).toBe(401);
    expect(res.headers['content-security-policy']).toBeUndefined();
    expect(res.headers['referrer-policy']).toBeUndefined();
  });

  it('answers 503 with the way to build it when the console is not built', async () => {
    const res = await request(missing.server).get('/console/runs');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ code: 14, message: expect.stringContaining('npm run build:console'), details: [] });
    expectConsoleHeaders(res);
  });

  it('answers a browser a page that says the console is being built and reloads itself, with no script', async () => {
    const res = await request(missing.server).get('/console/runs').set('Accept', 'text/html,application/xhtml+xml');
    expect(res.status).toBe(503);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.headers['retry-after']).toBe('2');
    expect(res.text).toContain('<h1>The console is being built</h1>');
    expect(res.text).toContain('<meta http-equiv="refresh" content="2" />');
    expect(res.text).not.toContain('<script');
    expectConsoleHeaders(res);
  });
});
