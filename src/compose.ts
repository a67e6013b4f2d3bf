/**
 * The composition root: one function builds the dependencies of the HTTP app (the store, the
 * secret box, the run engine on Temporal, the token and page-token keys, the token endpoint's
 * flood guards, metrics, the delivery log, the webhook endpoint, the automation write bodies'
 * schemas) from the configuration; routes only read them. src/main.ts, the tests (test/helpers/test-service.ts) and the benchmarks
 * (bench/stack.ts) all build the app through it, so they run what production runs.
 */
import type { PayloadCodec } from '@temporalio/common';
import type { Config } from './config';
import type { Logger } from './logger';
import type { Db } from './store/db';
import type { SecretBox } from './crypto/secret-box';
import { loadPageTokenKey } from './auth/service-keys';
import { AccessTokens } from './auth/tokens';
import { createTokenGuard } from './auth/token-guard';
import { PageTokens } from './domain/pagination';
import type { RunEngine } from './domain/engine';
import { DeliveryLog, type DeliveryLogOptions } from './delivery/delivery-log';
import { automationWriteRequests } from './domain/api-schemas';
import { createTemporalEngine, type TemporalEngineOptions } from './temporal/engine';
import { openBreakers } from './store/circuit-breaker';
import { restartBulkActions } from './domain/bulk-actions';
import type { AppDeps } from './http/context';
import { Metrics } from './http/metrics';
import { createWebhookEndpoint } from './http/routes/webhooks';
import { startScheduleReconciler } from './domain/schedules';
import { EventDispatcher, type EventDispatcherDeps, type EventDispatcherOptions } from './delivery/event-dispatcher';

export interface AppInputs {
  config: Config;
  db: Db;
  logger: Logger;
  secretBox: SecretBox;
  /**
   * The run engine: on Temporal, with this client and task queue (and bounds; the store and the
   * lane queue's bound come from the other inputs)...
   */
  temporal?: Omit<TemporalEngineOptions, 'db' | 'laneQueueLimit'>;
  /** ...or one of the caller's own (a test's fake: one of the two is given). */
  engine?: RunEngine;
  /** The key of page tokens; default: the service key kept sealed in the store (shared by every process). */
  pageTokenKey?: Buffer;
  /** Access tokens shared with another app of this process; default: loaded from the store. */
  tokens?: AccessTokens;
  /** Default: a registry with Node's default metrics. */
  metrics?: Metrics;
  payloadCodec?: PayloadCodec;
  /** Options of the delivery log (its metric and its failure warning are wired here). */
  deliveryLog?: Omit<DeliveryLogOptions, 'onSummarized' | 'onError'>;
  /** The directory events' dispatcher (src/delivery/event-dispatcher.ts); false: none in this process. */
  eventDispatch?: (EventDispatcherOptions & { onOutcome?: EventDispatcherDeps['onOutcome'] }) | false;
  /** Anything else of AppDeps (a token guard, a pinned clock, the readiness bound). */
  overrides?: Partial<AppDeps>;
  /**
   * Reconcile the engine's Schedules with the store at boot and daily (src/domain/schedules.ts):
   * only where this store is the only one on the namespace (the service; not tests that share a
   * Temporal server between stores).
   */
  scheduleReconcile?: boolean;
  /** The restart of bulk actions left without their workflow (default BULK_RESTART); false: none. */
  bulkRestart?: { afterMs: number; everyMs: number } | false;
}

/**
 * Bulk actions an API recorded and then died before starting their workflow are started by every
 * API: at boot and every `everyMs`, those RUNNING for `afterMs` (well past a start's deadline).
 */
export const BULK_RESTART = { afterMs: 60_000, everyMs: 60_000 };

/** The app's dependencies; `close` stops what they hold (the delivery log writes its buffer). */
export async function composeApp(
  inputs: AppInputs,
): Promise<AppDeps & { close(): Promise<void>; eventDispatcher?: EventDispatcher }> {
  const { config, db, logger, secretBox } = inputs;
  const metrics = inputs.metrics ?? new Metrics();
  metrics.watchBreakers(() => openBreakers(db));
  const deliveryLog = new DeliveryLog(db, {
    ...inputs.deliveryLog,
    onSummarized: () => metrics.deliverySummarized(),
    onError: (err) => logger.warn({ err: (err as Error).message }, 'delivery log: a batch could not be written'),
  });
  const engine =
    inputs.engine ??
    (inputs.temporal
      ? createTemporalEngine({ ...inputs.temporal, db, laneQueueLimit: config.laneQueueLimit })
      : undefined);
  if (!engine) throw new Error('composeApp: give `temporal` or `engine`');
  const base: Omit<AppDeps, 'webhookEndpoint'> = {
    config,
    db,
    logger,
    pageTokens: new PageTokens(inputs.pageTokenKey ?? (await loadPageTokenKey(db, secretBox))),
    tokens: inputs.tokens ?? (await AccessTokens.load(db, secretBox, config.accessTokenTtlSeconds)),
    engine,
    metrics,
    automationRequests: automationWriteRequests(config),
    secretBox,
    tokenGuard: createTokenGuard(db, config.tokenEndpoint),
    ...(inputs.payloadCodec ? { payloadCodec: inputs.payloadCodec } : {}),
    deliveryLog,
    ...inputs.overrides,
  };
  const restart = inputs.bulkRestart !== false ? (inputs.bulkRestart ?? BULK_RESTART) : undefined;
  const restartOnce = (): void => {
    if (!restart) return;
    restartBulkActions(db, engine, restart.afterMs).catch((err: unknown) =>
      logger.warn({ err: (err as Error).message }, 'bulk actions: could not restart their workflows'),
    );
  };
  const restartTimer = restart ? setInterval(restartOnce, restart.everyMs).unref() : undefined;
  restartOnce();
  const dispatcher =
    inputs.eventDispatch === false
      ? undefined
      : new EventDispatcher(
          {
            db,
            engine,
            logger,
            laneQueueLimit: config.laneQueueLimit,
            ...(inputs.eventDispatch?.onOutcome ? { onOutcome: inputs.eventDispatch.onOutcome } : {}),
          },
          inputs.eventDispatch ?? {},
        );
  await dispatcher?.start();
  const stopReconciler = inputs.scheduleReconcile ? startScheduleReconciler(db, engine, logger) : undefined;
  const composed = {
    ...base,
    ...(dispatcher ? { eventDispatcher: dispatcher } : {}),
    async close() {
      if (restartTimer) clearInterval(restartTimer);
      stopReconciler?.();
      await dispatcher?.close();
      await deliveryLog.close();
      if (base.deliveryLog && base.deliveryLog !== deliveryLog) await base.deliveryLog.close();
    },
  } as AppDeps & { close(): Promise<void>; eventDispatcher?: EventDispatcher };
  // Built on the very object the app is given, so that it reads its dependencies there at each
  // delivery, as routes do (a test may swap one, e.g. the delivery log).
  composed.webhookEndpoint = inputs.overrides?.webhookEndpoint ?? createWebhookEndpoint(composed);
  return composed;
}
