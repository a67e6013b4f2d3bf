/**
 * One spelling per path, for every route the app mounts (read from the routers themselves, so a
 * route added later is walked too): each declared operation under `/api/...` (and its mirror under
 * `/console/api/...`), the console's sign-in and assets, the token endpoint, the codec, the
 * operations endpoints. Another spelling of a path (a literal segment in another letter case, a
 * trailing slash, a letter of a literal segment percent-encoded, a doubled slash) reaches no
 * handler: 404 `no route` in the error shape, never a 405. The one exception is documented: the
 * webhook receiver answers its path in another letter case, with a trailing slash, and with its
 * listener id percent-encoded (docs/architecture.md#folders). The console's pages (no route of a router:
 * src/http/routes/console-assets.ts `consolePages`) are served under `/console` as spelled only.
 * No credentials are sent: a route that needs them answers its own spelling 401, which is a
 * handler's answer.
 */
import request from 'supertest';
import type Router from '@koa/router';
import { OPERATIONS, ROUTERS } from '../../src/http/routes';
import { koaPath } from '../../src/http/operation';
import { startTestService, type TestService } from '../helpers/test-service';

type Method = 'get' | 'post' | 'put' | 'delete' | 'options';

interface Segment {
  text: string;
  /** A path parameter (its value is the caller's, not a spelling of the route). */
  param: boolean;
}

interface Route {
  method: Method;
  template: string;
  segments: Segment[];
}

const WEBHOOK = 'POST /api/v1/webhooks/incoming/:listenerId';

function segmentsOf(template: string): Segment[] {
  return template
    .split('/')
    .slice(1)
    .map((text) => (text.startsWith(':') ? { text: 'missing', param: true } : { text, param: false }));
}

/** Every `METHOD path` the routers mount (HEAD, which koa-router adds to GET, left out). */
function mountedRoutes(routers: Router[]): Route[] {
  const routes = new Map<string, Route>();
  for (const router of routers) {
    for (const layer of router.stack) {
      const template = String(layer.path);
      for (const method of layer.methods) {
        if (method === 'HEAD') continue;
        routes.set(`${method} ${template}`, {
          method: method.toLowerCase() as Method,
          template,
          segments: segmentsOf(template),
        });
      }
    }
  }
  return [...routes.values()];
}

/** A template's own spelling only: its literal segments as written, a parameter any non-empty segment. */
function exactly(template: string): RegExp {
  const body = template.replace(/[.*+?^$()|[\]\\{}]/g, '\\$&').replace(/:[A-Za-z_]+/g, '[^/]+');
  return new RegExp(`^${body}$`);
}

const pathOf = (segments: Segment[]): string => `/${segments.map((s) => s.text).join('/')}`;

/** `%XX` for the first letter of a segment. */
function encodeFirstLetter(text: string): string {
  const at = text.search(/[A-Za-z]/);
  return `${text.slice(0, at)}%${text.charCodeAt(at).toString(16).toUpperCase()}${text.slice(at + 1)}`;
}

/** Other spellings of a route's path, by kind: each literal segment upper-cased or capitalised, percent-encoded, doubled slashes. */
function spellingsOf(route: Route): Array<{ kind: string; path: string }> {
  const { segments } = route;
  const replaced = (i: number, text: string) => pathOf(segments.map((s, j) => (j === i ? { ...s, text } : s)));
  const spellings: Array<{ kind: string; path: string }> = [
    { kind: 'upper case', path: pathOf(segments.map((s) => (s.param ? s : { ...s, text: s.text.toUpperCase() }))) },
    { kind: 'trailing slash', path: `${pathOf(segments)}/` },
  ];
  segments.forEach((s, i) => {
    if (s.param || !/[a-z]/.test(s.text)) return;
    spellings.push({ kind: 'upper case', path: replaced(i, s.text.toUpperCase()) });
    spellings.push({ kind: 'upper case', path: replaced(i, s.text[0]!.toUpperCase() + s.text.slice(1)) });
    spellings.push({ kind: 'percent-encoded', path: replaced(i, encodeFirstLetter(s.text)) });
  });
  segments.forEach((_, i) => {
    const doubled = segments.map((s, j) => (j === i ? { ...s, text: `/${s.text}` } : s));
    spellings.push({ kind: 'double slash', path: pathOf(doubled) });
  });
  return spellings.filter((spelling) => spelling.path !== pathOf(segments));
}

/** The spellings a route answers besides its own, as documented: the webhook receiver's. */
function documentedAlso(route: Route, kind: string): boolean {
  const name = `${route.method.toUpperCase()} ${route.template}`;
  return name === WEBHOOK && (kind === 'upper case' || kind === 'trailing slash');
}

interface Answer {
  status: number;
  body: { code?: unknown; message?: unknown; details?: unknown };
}

const noRoute = (res: Answer): boolean =>
  res.status === 404 && typeof res.body.message === 'string' && res.body.message.startsWith('no route for ');

describe('one spelling per path, on every mounted route', () => {
  let service: TestService;
  let routes: Route[];

  beforeAll(async () => {
    service = await startTestService({ deps: { consoleDir: '/nonexistent/console-build' } });
    routes = mountedRoutes(ROUTERS.map((factory) => factory(service.deps)));
  });
  afterAll(async () => service?.close());

  const send = (method: Method, path: string): Promise<Answer> => {
    const test = request(service.server)[method](path);
    return method === 'post' || method === 'put' ? test.set('Content-Type', 'application/json').send('{}') : test;
  };

  it('walks every declared operation, under /api and /console/api', () => {
    // Named as the routers name them, parameters aside (the webhook route's is `:listenerId`).
    const shape = (name: string) => name.replace(/:[A-Za-z_]+/g, ':param');
    const mounted = new Set(routes.map((route) => shape(`${route.method.toUpperCase()} ${route.template}`)));
    const declared = OPERATIONS.flatMap((op) => {
      const name = `${op.method.toUpperCase()} ${koaPath(op.path)}`;
      return op.access !== 'public' && op.path.startsWith('/api/')
        ? [name, `${op.method.toUpperCase()} /console${koaPath(op.path)}`]
        : [name];
    });
    expect(declared.length).toBeGreaterThan(60);
    expect(declared.filter((name) => !mounted.has(shape(name)))).toEqual([]);
  });

  it("answers each route's own spelling from its handler, and every other spelling 404 in the error shape", async () => {
    const wrong: string[] = [];
    let tried = 0;
    for (const route of routes) {
      const name = `${route.method.toUpperCase()} ${route.template}`;
      const own = await send(route.method, pathOf(route.segments));
      if (noRoute(own) || own.status === 405) wrong.push(`${name}: its own spelling answered ${own.status}`);
      for (const { kind, path } of spellingsOf(route)) {
        // A spelling that is another route's own path (`/api/v1/automation_executions/BULK` is a
        // run id for `GET .../:id`) reaches that route, as it should.
        // Matched against the templates as written, not by the routers (whose matching is under test).
        if (routes.some((other) => exactly(other.template).test(path))) continue;
        tried += 1;
        const res = await send(route.method, path);
        if (documentedAlso(route, kind)) {
          if (noRoute(res)) wrong.push(`${name} by ${kind} ${path}: documented, but no route`);
          continue;
        }
        if (!noRoute(res) || JSON.stringify(Object.keys(res.body)) !== '["code","message","details"]') {
          wrong.push(`${name} by ${kind} ${path}: ${res.status} ${JSON.stringify(res.body).slice(0, 80)}`);
        } else if (res.body.code !== 5 || JSON.stringify(res.body.details) !== '[]') {
          wrong.push(`${name} by ${kind} ${path}: not the error shape of a 404`);
        }
      }
    }
    expect(tried).toBeGreaterThan(500);
    expect(wrong).toEqual([]);
  });

  it('the webhook receiver: another letter case, a trailing slash and a percent-encoded listener id reach it; nothing else', async () => {
    const listener = '/api/v1/webhooks/incoming/missing';
    // The receiver's own answer for a listener it does not know (404, but not "no route").
    const own = await send('post', listener);
    expect([own.status, noRoute(own)]).toEqual([404, false]);
    for (const path of [
      '/API/V1/WEBHOOKS/INCOMING/missing',
      '/api/v1/Webhooks/incoming/missing',
      `${listener}/`,
      '/api/v1/webhooks/incoming/%6Dissing',
    ]) {
      const res = await send('post', path);
      expect([path, res.status, noRoute(res), res.body.message]).toEqual([path, 404, false, own.body.message]);
    }
    for (const path of [
      '/api/v1/%77ebhooks/incoming/missing',
      '//api/v1/webhooks/incoming/missing',
      '/api/v1//webhooks/incoming/missing',
    ]) {
      const res = await send('post', path);
      expect([path, noRoute(res)]).toEqual([path, true]);
    }
  });

  it('the console under one spelling: /CONSOLE, /Console/runs, /console/API/... are no page of it', async () => {
    for (const path of ['/console', '/console/', '/console/runs', '/console/runs/', '/console/runs/webhook%3Aa%3Ab']) {
      // No build in this test: a page is the 503 that says how to build it.
      expect([path, (await send('get', path)).status]).toEqual([path, 503]);
    }
    for (const path of [
      '/CONSOLE',
      '/Console/runs',
      '/console/API/v1/audit',
      '/console/Auth/me',
      '/console/ASSETS/index.js',
      '/console/%61pi/v1/audit',
      '/console//runs',
      '//console',
      '/%63onsole',
    ]) {
      expect([path, noRoute(await send('get', path))]).toEqual([path, true]);
    }
    // A page path by another method is no route either (not a 405 naming GET).
    for (const method of ['post', 'put', 'delete'] as const) {
      const res = await send(method, '/console/runs');
      expect([method, noRoute(res)]).toEqual([method, true]);
    }
  });
});
