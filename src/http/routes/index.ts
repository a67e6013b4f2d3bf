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
import { createDeliveriesRouter } from './deliveries';
import { createSecretsRouter } from './secrets';

export type RouterFactory = (deps: AppDeps) => Router;

/** The webhook receiver is not here: `createApp` serves it first (src/http/routes/webhooks.ts). */
export const ROUTERS: RouterFactory[] = [
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
