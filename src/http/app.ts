/** The Koa application: error mapping first, then every router. Tested with supertest(app.callback()). */
import Koa from 'koa';
import type { AppDeps } from './context';
import { AppError, errorMiddleware } from './errors';
import { ROUTERS } from './routes';

/**
 * Koa's proxy settings for TRUST_PROXY = `hops`: with `maxIpsCount` Koa keeps only the last `hops`
 * X-Forwarded-For entries, so `ctx.ip` is the N-th from the right (the address the outermost trusted
 * proxy saw), never an entry the client wrote. 0 = the socket's address.
 */
export function proxyOptions(hops: number): { proxy: boolean; maxIpsCount: number } {
  return { proxy: hops > 0, maxIpsCount: hops };
}

export function createApp(deps: AppDeps): Koa {
  const app = new Koa(proxyOptions(deps.config.trustProxy));
  app.use(async (ctx, next) => {
    const started = process.hrtime.bigint();
    try {
      await next();
    } finally {
      const route = (ctx as { _matchedRoute?: string })._matchedRoute ?? 'unmatched';
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      deps.metrics.httpRequests.inc({ method: ctx.method, route, status: String(ctx.status) });
      deps.metrics.httpDuration.observe({ method: ctx.method, route }, seconds);
    }
  });
  app.use(errorMiddleware(deps.logger));
  app.use(async (ctx, next) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('X-Content-Type-Options', 'nosniff');
    // A NUL character (%00) in the path names nothing the store can hold (PostgreSQL refuses it).
    if (ctx.path.includes('%00')) throw new AppError(404, 'not found: the path contains a NUL character');
    await next();
  });
  for (const factory of ROUTERS) {
    const router = factory(deps);
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
