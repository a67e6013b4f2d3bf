/** Every router of the service, in mounting order. Each factory takes the app's dependencies. */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import { createTokenRouter } from './token';
import { createClientsRouter } from './clients';
import { createAppsRouter } from './apps';
import { createUsersRouter } from './users';
import { createEntitlementsRouter } from './entitlements';
import { createOwnersRouter } from './owners';

export type RouterFactory = (deps: AppDeps) => Router;

export const ROUTERS: RouterFactory[] = [
  createTokenRouter,
  createClientsRouter,
  createAppsRouter,
  createUsersRouter,
  createEntitlementsRouter,
  createOwnersRouter,
];
