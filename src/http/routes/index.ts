/**
 * Every operation of the service (what the OpenAPI document lists) and every router, in mounting
 * order. Each router mounts the operations its module declares (src/http/operation.ts).
 */
import type Router from '@koa/router';
import type { AppDeps } from '../context';
import type { DocumentedOperation } from '../operation';
import { buildOpenApiDocument as buildDocument, type OpenApiOptions } from '../openapi';
import { createHealthRouter, HEALTH_OPERATION, OPERATOR_OPERATIONS } from './health';
import { createTokenRouter, TOKEN_OPERATIONS } from './token';
import { CLIENT_OPERATIONS, createClientsRouter } from './clients';
import { AUTOMATION_OPERATIONS, createAutomationsRouter } from './automations';
import { CIRCUIT_BREAKER_OPERATIONS, createCircuitBreakerRouter } from './circuit-breaker';
import { createExecutionsRouter, EXECUTION_OPERATIONS } from './executions';
import { BULK_ACTION_OPERATIONS, createBulkActionsRouter } from './bulk-actions';
import { APP_OPERATIONS, createAppsRouter } from './apps';
import { createUsersRouter, USER_OPERATIONS } from './users';
import { createEntitlementsRouter, ENTITLEMENT_OPERATIONS } from './entitlements';
import { createOwnersRouter, OWNER_OPERATIONS } from './owners';
import { createGrantsRouter, GRANT_OPERATIONS } from './grants';
import { createProvisioningWebhooksRouter, PROVISIONING_WEBHOOK_OPERATIONS } from './provisioning-webhooks';
import { createProvisioningTasksRouter, PROVISIONING_TASK_OPERATIONS } from './provisioning-tasks';
import { openApiOperation } from './openapi';
import { CODEC_OPERATIONS, createCodecRouter } from './codec';
import { createWebhookRouter, WEBHOOK_OPERATION } from './webhooks';
import { createDeliveriesRouter, DELIVERY_OPERATIONS } from './deliveries';
import { createSecretsRouter, SECRET_OPERATIONS } from './secrets';
import { mountOperations, exactRouter } from '../operation';
import { createConsoleAssetsRouter } from './console-assets';
import { createConsoleRouter } from './console';
import { AUDIT_OPERATIONS, createAuditRouter } from './audit';

const OPENAPI_OPERATION = openApiOperation(() => OPERATIONS);

/** Every operation, in the order of the document's tags. */
export const OPERATIONS: readonly DocumentedOperation[] = [
  HEALTH_OPERATION,
  ...OPERATOR_OPERATIONS,
  OPENAPI_OPERATION,
  ...TOKEN_OPERATIONS,
  ...CLIENT_OPERATIONS,
  ...AUTOMATION_OPERATIONS,
  ...CIRCUIT_BREAKER_OPERATIONS,
  ...EXECUTION_OPERATIONS,
  ...BULK_ACTION_OPERATIONS,
  ...DELIVERY_OPERATIONS,
  ...CODEC_OPERATIONS,
  WEBHOOK_OPERATION,
  ...APP_OPERATIONS,
  ...SECRET_OPERATIONS,
  ...USER_OPERATIONS,
  ...ENTITLEMENT_OPERATIONS,
  ...OWNER_OPERATIONS,
  ...GRANT_OPERATIONS,
  ...PROVISIONING_WEBHOOK_OPERATIONS,
  ...PROVISIONING_TASK_OPERATIONS,
  ...AUDIT_OPERATIONS,
];

/** The OpenAPI document of every operation (call once and cache). */
export function buildOpenApiDocument(options: OpenApiOptions): Record<string, unknown> {
  return buildDocument(options, OPERATIONS);
}

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
  createCircuitBreakerRouter,
  createBulkActionsRouter,
  createExecutionsRouter,
  createDeliveriesRouter,
  createAppsRouter,
  createUsersRouter,
  createEntitlementsRouter,
  createOwnersRouter,
  createGrantsRouter,
  createProvisioningWebhooksRouter,
  createProvisioningTasksRouter,
  (deps) => mountOperations(exactRouter(), deps, [OPENAPI_OPERATION]),
  createCodecRouter,
  createSecretsRouter,
  createAuditRouter,
  createConsoleRouter,
  // The console's assets; its pages are served after every router (src/http/app.ts).
  createConsoleAssetsRouter,
];
