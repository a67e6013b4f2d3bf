/** The admin listener (ADMIN_PORT): /health, /ready and /metrics only, in the one error shape. */
import Koa from 'koa';
import type { AppDeps } from './context';
import { errorMiddleware } from './errors';
import { createAdminRouter } from './routes/health';

export function createAdminApp(deps: AppDeps): Koa {
  const app = new Koa();
  app.use(errorMiddleware(deps.logger));
  app.use(async (ctx, next) => {
    ctx.set('Cache-Control', 'no-store');
    await next();
  });
  const router = createAdminRouter(deps);
  app.use(router.routes());
  app.use(router.allowedMethods());
  return app;
}
