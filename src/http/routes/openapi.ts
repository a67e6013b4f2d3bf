/** `GET /api/openapi.json`: the OpenAPI 3.1 document of the service (no authentication). */
import Router from '@koa/router';
import type { AppDeps } from '../context';
import { buildOpenApiDocument, OPENAPI_PATH } from '../openapi';

export function createOpenApiRouter(deps: AppDeps): Router {
  const router = new Router();
  let document: string | undefined;
  router.get(OPENAPI_PATH, (ctx) => {
    // Built on first use: converting every schema takes a few milliseconds, not worth doing at start-up.
    document ??= JSON.stringify(buildOpenApiDocument({ baseUrl: deps.config.baseUrl }));
    ctx.set('Cache-Control', 'public, max-age=300');
    ctx.type = 'application/json';
    ctx.body = document;
  });
  return router;
}
