/** The Koa application: error mapping first, then every router. Tested with supertest(app.callback()). */
import Koa from 'koa';
import type { AppDeps } from './context';
import { errorMiddleware } from './errors';
import { ROUTERS } from './routes';

export function createApp(deps: AppDeps): Koa {
  const app = new Koa({ proxy: deps.config.trustProxy });
  app.use(errorMiddleware(deps.logger));
  app.use(async (ctx, next) => {
    ctx.set('Cache-Control', 'no-store');
    ctx.set('X-Content-Type-Options', 'nosniff');
    await next();
  });
  for (const factory of ROUTERS) {
    const router = factory(deps);
    app.use(router.routes());
    app.use(router.allowedMethods());
  }
  return app;
}
