/** `GET /api/openapi.json`: the OpenAPI 3.1 document of the service (no authentication). */
import type { AppDeps } from '../context';
import { buildOpenApiDocument, OPENAPI_PATH } from '../openapi';
import { operation, type DocumentedOperation } from '../operation';

/** The document's operation, over every operation of the service (`all`, read when first served). */
export function openApiOperation(all: () => readonly DocumentedOperation[]) {
  // Built on first use per app: converting every schema takes a few milliseconds, not worth doing at start-up.
  const documents = new WeakMap<AppDeps, string>();
  return operation({
    method: 'get',
    path: OPENAPI_PATH,
    operationId: 'openapi',
    tag: 'Operations',
    summary: 'This OpenAPI 3.1 document.',
    access: 'public',
    ok: {
      contentType: 'application/json',
      description: 'The OpenAPI document.',
      schema: {
        type: 'object',
        properties: {
          openapi: { type: 'string' },
          info: { type: 'object' },
          paths: { type: 'object' },
          components: { type: 'object' },
        },
        required: ['openapi', 'info', 'paths'],
      },
    },
    errors: [],
    handle: (_input, ctx, deps) => {
      let document = documents.get(deps);
      if (document === undefined) {
        document = JSON.stringify(buildOpenApiDocument({ baseUrl: deps.config.baseUrl }, all()));
        documents.set(deps, document);
      }
      ctx.set('Cache-Control', 'public, max-age=300');
      ctx.type = 'application/json';
      return document;
    },
  });
}
