/** The Koa application: error mapping first, then every router. Tested with supertest(app.callback()). */
import { tracingOn, withServerSpan } from '../tracing/spans';
import type { Principal } from '../auth/roles';
import type { IncomingMessage, ServerResponse } from 'node:http';
import Koa from 'koa';
import type { AppDeps } from './context';
import { AppError, errorMiddleware } from './errors';
import { proxyOptions } from './proxy';
import { SERVICE_HEADERS } from './response-headers';
import { ROUTERS } from './routes';
import { consoleHeaders, consolePages } from './routes/console-assets';
import { webhookFastPath } from './routes/webhooks';

type FastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * Koa, whose request listener (`callback()`, which `listen()` uses too) first offers each request
 * to a fast path: webhook deliveries to their canonical path are answered there, without Koa's
 * context, middleware chain and router; every other request goes through Koa.
 */
class ServiceApp extends Koa {
  constructor(
    options: { proxy: boolean; maxIpsCount: number },
    private readonly fastPath: FastPath,
  ) {
    super(options);
  }

  override callback(): ReturnType<Koa['callback']> {
    const koa = super.callback();
    const fastPath = this.fastPath;
    return (req, res) => (fastPath(req as IncomingMessage, res as ServerResponse) ? Promise.resolve() : koa(req, res));
  }
}

/** The paths whose requests get a server span; deliveries have their own (src/http/routes/webhooks.ts). */
const API_PATH = /^\/(?:console\/)?api\/(?!v1\/webhooks\/incoming\/)/i;

/** Runs the request inside its server span; the name and `http.route` are the matched route's template. */
function inApiSpan(ctx: Koa.Context, next: Koa.Next): Promise<void> {
  return withServerSpan(ctx.method, ctx.headers, { 'http.request.method': ctx.method }, async (span) => {
    try {
      await next();
    } finally {
      const route = (ctx as { _matchedRoute?: string })._matchedRoute;
      const principal = ctx.state.principal as Principal | undefined;
      if (route !== undefined) span?.updateName(`${ctx.method} ${route}`);
      span?.setAttributes({
        'http.response.status_code': ctx.status,
        ...(route !== undefined ? { 'http.route': route } : {}),
        ...(principal ? { 'actor.kind': principal.actor?.startsWith('person:') ? 'person' : 'client' } : {}),
      });
    }
  });
}

export function createApp(deps: AppDeps): Koa {
  const app = new ServiceApp(
    proxyOptions(deps.config.trustProxy),
    webhookFastPath(deps.webhookEndpoint, deps.metrics, deps.logger),
  );
  // API requests get a server span (src/tracing): the route's template and the actor's kind, nothing of the request.
  app.use((ctx, next) => (tracingOn() && API_PATH.test(ctx.path) ? inApiSpan(ctx, next) : next()));
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      deps.metrics.recordHttp(
        ctx.method,
        (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched',
        ctx.status,
        started,
      );
    }
  });
  app.use(errorMiddleware(deps.logger));
  app.use(async (ctx, next) => {
    ctx.set(SERVICE_HEADERS);
    // A NUL character (%00) in the path names nothing the store can hold (PostgreSQL refuses it).
    if (ctx.path.includes('%00')) throw new AppError(404, 'not found: the path contains a NUL character');
    await next();
  });
  app.use(consoleHeaders);
  for (const router of ROUTERS.map((factory) => factory(deps))) {
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  // Last: the console's page paths, where no router answered (not a route: a page path is no
  // resource, so no router's 405 may claim it).
  app.use(consolePages(deps));
  return app;
}
