/** Every router of the service, in mounting order. Each factory takes the app's dependencies. */
import type Router from '@koa/router';
import type { AppDeps } from '../context';

export type RouterFactory = (deps: AppDeps) => Router;

export const ROUTERS: RouterFactory[] = [];
