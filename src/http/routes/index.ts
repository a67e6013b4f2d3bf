/** Every router of the service, in mounting order. Each factory takes the app's dependencies. */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import { createHealthRouter } from './health';
import { createTokenRouter } from './token';
import { createClientsRouter } from './clients';
import { createAutomationsRouter } from './automations';
import { createExecutionsRouter } from './executions';
import { createAppsRouter } from './apps';
import { createUsersRouter } from './users';
import { createEntitlementsRouter } from './entitlements';
import { createOwnersRouter } from './owners';
import { createOpenApiRouter } from './openapi';
import { createCodecRouter } from './codec';
import { createWebhookRouter } from './webhooks';
import { createDeliveriesRouter } from './deliveries';
import { createSecretsRouter } from './secrets';

export type RouterFactory = (deps: AppDeps) => Router;

/**
 * The webhook receiver comes first: a delivery the fast path leaves to Koa (src/http/routes/webhooks.ts)
 * then passes through no other router's path matching. No other router's paths overlap it.
 */
export const ROUTERS: RouterFactory[] = [
  createWebhookRouter,
  createHealthRouter,
  createTokenRouter,
  createClientsRouter,
  createAutomationsRouter,
  createExecutionsRouter,
  createDeliveriesRouter,
  createAppsRouter,
  createUsersRouter,
  createEntitlementsRouter,
  createOwnersRouter,
  createOpenApiRouter,
  createCodecRouter,
  createSecretsRouter,
];
