/**
 * Operations endpoints: GET /health (the process is up; always public), GET /ready (store and
 * Temporal reachable; 503 otherwise; cached for a moment so that frequent probes cost nothing),
 * GET /metrics (Prometheus text format).
 *
 * /ready and /metrics are operator endpoints: with ADMIN_PORT they are served only by the admin
 * listener (`createAdminApp`), not on the API port; with ADMIN_TOKEN they need
 * `Authorization: Bearer <ADMIN_TOKEN>` wherever they are served. With neither, they are public
 * (development; start-up warns).
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import type Router from '@koa/router';
import type { Context, Next } from 'koa';
import * as api from '../../domain/api-schemas';
import type { AppDeps } from '../context';
import { pingStore } from '../../store/db';
import { AppError } from '../errors';
import { mountOperations, operation, exactRouter } from '../operation';

const CHECK_TIMEOUT_MS = 2000;
/** How long a readiness verdict is reused. */
export const READINESS_CACHE_MS = 1500;

async function withTimeout(check: Promise<unknown>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([
      check.then(
        () => true,
        () => false,
      ),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

interface Readiness {
  store: boolean;
  temporal: boolean;
}

/** One readiness check at a time per app, its verdict reused for READINESS_CACHE_MS. */
const probes = new WeakMap<AppDeps, { at: number; pending: Promise<Readiness> }>();

function readiness(deps: AppDeps): Promise<Readiness> {
  const cached = probes.get(deps);
  if (cached && Date.now() - cached.at < READINESS_CACHE_MS) return cached.pending;
  const timeoutMs = deps.readinessTimeoutMs ?? CHECK_TIMEOUT_MS;
  const pending = Promise.all([
    withTimeout(pingStore(deps.db), timeoutMs),
    withTimeout(deps.engine.ping(), timeoutMs),
  ]).then(([store, temporal]) => {
    // The verdict counts from when it was reached, not from when the check began.
    probes.set(deps, { at: Date.now(), pending });
    return { store, temporal };
  });
  probes.set(deps, { at: Date.now(), pending });
  return pending;
}

function sameToken(given: string, expected: string): boolean {
  const digest = (s: string): Buffer => createHash('sha256').update(s).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** 401 unless ADMIN_TOKEN is unset or given as the bearer token. */
function requireAdminToken(deps: AppDeps) {
  return async (ctx: Context, next: Next): Promise<void> => {
    const expected = deps.config.admin.token;
    if (expected !== undefined) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(ctx.get('authorization'));
      if (!match?.[1] || !sameToken(match[1], expected)) {
        throw new AppError(401, 'this operations endpoint needs the admin token', {
          headers: { 'WWW-Authenticate': 'Bearer' },
        });
      }
    }
    await next();
  };
}

/** /ready and /metrics: served by the admin listener when ADMIN_PORT is set, else by the API port. */
const OPERATOR_ERRORS = {
  errors: [401, 404],
  statusText: { 404: 'Not served on this listener: with ADMIN_PORT set, only the admin listener serves it.' },
};

export const OPERATOR_OPERATIONS = [
  operation({
    method: 'get',
    path: '/ready',
    operationId: 'ready',
    tag: 'Operations',
    summary: 'Store and Temporal are reachable (503 otherwise).',
    access: 'public',
    before: (deps) => [requireAdminToken(deps)],
    ok: api.ReadyStatus,
    okAlso: [503],
    ...OPERATOR_ERRORS,
    handle: async (_input, ctx, deps) => {
      const { store, temporal } = await readiness(deps);
      const ready = store && temporal;
      ctx.status = ready ? 200 : 503;
      return { status: ready ? ('ready' as const) : ('not_ready' as const), checks: { store, temporal } };
    },
  }),
  operation({
    method: 'get',
    path: '/metrics',
    operationId: 'metrics',
    tag: 'Operations',
    summary: 'Prometheus metrics.',
    access: 'public',
    before: (deps) => [requireAdminToken(deps)],
    ok: { contentType: 'text/plain', description: 'Prometheus text exposition format.' },
    ...OPERATOR_ERRORS,
    handle: async (_input, ctx, deps) => {
      ctx.set('Content-Type', deps.metrics.registry.contentType);
      return deps.metrics.registry.metrics();
    },
  }),
];

export const HEALTH_OPERATION = operation({
  method: 'get',
  path: '/health',
  operationId: 'health',
  tag: 'Operations',
  summary: 'The process is up.',
  access: 'public',
  ok: api.HealthStatus,
  errors: [],
  handle: () => ({ status: 'ok' as const }),
});

/** The API port's operations routes: /health, and /ready and /metrics unless an admin port serves them. */
export function createHealthRouter(deps: AppDeps): Router {
  return mountOperations(
    exactRouter(),
    deps,
    deps.config.admin.port === undefined ? [HEALTH_OPERATION, ...OPERATOR_OPERATIONS] : [HEALTH_OPERATION],
  );
}

/** The admin listener's routes: /health, /ready and /metrics. */
export function createAdminRouter(deps: AppDeps): Router {
  return mountOperations(exactRouter(), deps, [HEALTH_OPERATION, ...OPERATOR_OPERATIONS]);
}
