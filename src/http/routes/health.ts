/**
 * Operations endpoints: GET /health (the process is up), GET /ready (store and Temporal reachable;
 * 503 otherwise), GET /metrics (Prometheus text format).
 */
import Router from '@koa/router';
import type { AppDeps } from '../context';

const CHECK_TIMEOUT_MS = 2000;

async function withTimeout(check: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
  });
  try {
    return await Promise.race([check.then(() => true, () => false), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

export function createHealthRouter(deps: AppDeps): Router {
  const router = new Router();

  router.get('/health', (ctx) => {
    ctx.body = { status: 'ok' };
  });

  router.get('/ready', async (ctx) => {
    const [store, temporal] = await Promise.all([withTimeout(deps.db.query('SELECT 1')), withTimeout(deps.runs.ping())]);
    const ready = store && temporal;
    ctx.status = ready ? 200 : 503;
    ctx.body = { status: ready ? 'ready' : 'not_ready', checks: { store, temporal } };
  });

  router.get('/metrics', async (ctx) => {
    ctx.set('Content-Type', deps.metrics.registry.contentType);
    ctx.body = await deps.metrics.registry.metrics();
  });

  return router;
}
