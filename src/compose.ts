/**
 * The composition root: one function builds the dependencies of the HTTP app (the store, the
 * secret box, the runs port on Temporal with its run reader and run controller, the token and
 * page-token keys, the token endpoint's flood guards, metrics, the delivery log, the webhook
 * endpoint, the automation write bodies' schemas) from the configuration; routes only read them. src/main.ts, the tests (test/helpers/test-service.ts) and the benchmarks
 * (bench/stack.ts) all build the app through it, so they run what production runs.
 */
import type { Client } from '@temporalio/client';
import type { PayloadCodec } from '@temporalio/common';
import type { Config } from './config';
import type { Logger } from './logger';
import type { Db } from './store/db';
import type { SecretBox } from './crypto/secret-box';
import { loadPageTokenKey } from './auth/service-keys';
import { AccessTokens } from './auth/tokens';
import { createTokenGuard } from './auth/token-guard';
import { PageTokens } from './domain/pagination';
import type { AutomationRuns } from './domain/runs';
import { DeliveryLog, type DeliveryLogOptions } from './delivery/delivery-log';
import { publishedSteps } from './domain/automations';
import { automationWriteRequests } from './domain/api-schemas';
import { TemporalRuns } from './temporal/runs';
import { TemporalRunReader } from './temporal/executions';
import { TemporalRunControl } from './temporal/run-control';
import { TemporalPausedRunControl } from './temporal/breaker-control';
import { openBreakers } from './store/circuit-breaker';
import { TemporalBulkRuns } from './temporal/bulk-actions';
import { bulkRerunsOf } from './store/bulk-actions';
import { restartBulkActions } from './domain/bulk-actions';
import type { AppDeps } from './http/context';
import { Metrics } from './http/metrics';
import { createWebhookEndpoint } from './http/routes/webhooks';

export interface AppInputs {
  config: Config;
  db: Db;
  logger: Logger;
  secretBox: SecretBox;
  /**
   * Where runs start: on Temporal, with this client and task queue (`eagerStart` when the client is
   * on the connection of a worker of this process)...
   */
  temporal?: { client: Client; taskQueue: string; eagerStart?: boolean };
  /**
   * ...or through a runs port of the caller's own (one of the two is given). Runs are read back and
   * controlled only when it is a `TemporalRuns` (on its client and task queue); any other port is
   * an app without a workflow engine for those operations (they answer 503).
   */
  runs?: AutomationRuns;
  /** The key of page tokens; default: the service key kept sealed in the store (shared by every process). */
  pageTokenKey?: Buffer;
  /** Access tokens shared with another app of this process; default: loaded from the store. */
  tokens?: AccessTokens;
  /** Default: a registry with Node's default metrics. */
  metrics?: Metrics;
  payloadCodec?: PayloadCodec;
  /** Options of the delivery log (its metric and its failure warning are wired here). */
  deliveryLog?: Omit<DeliveryLogOptions, 'onSummarized' | 'onError'>;
  /** Anything else of AppDeps (a token guard, a pinned clock, the readiness bound). */
  overrides?: Partial<AppDeps>;
  /** The restart of bulk actions left without their workflow (default BULK_RESTART); false: none. */
  bulkRestart?: { afterMs: number; everyMs: number } | false;
}

/**
 * Bulk actions an API recorded and then died before starting their workflow are started by every
 * API: at boot and every `everyMs`, those RUNNING for `afterMs` (well past a start's deadline).
 */
export const BULK_RESTART = { afterMs: 60_000, everyMs: 60_000 };

/** The app's dependencies; `close` stops what they hold (the delivery log writes its buffer). */
export async function composeApp(inputs: AppInputs): Promise<AppDeps & { close(): Promise<void> }> {
  const { config, db, logger, secretBox } = inputs;
  const metrics = inputs.metrics ?? new Metrics();
  metrics.watchBreakers(() => openBreakers(db));
  const deliveryLog = new DeliveryLog(db, {
    ...inputs.deliveryLog,
    onSummarized: () => metrics.deliverySummarized(),
    onError: (err) => logger.warn({ err: (err as Error).message }, 'delivery log: a batch could not be written'),
  });
  const runs =
    inputs.runs ??
    (inputs.temporal
      ? new TemporalRuns(inputs.temporal.client, inputs.temporal.taskQueue, undefined, {
          eagerStart: inputs.temporal.eagerStart ?? false,
          laneQueueLimit: config.laneQueueLimit,
        })
      : undefined);
  if (!runs) throw new Error('composeApp: give `temporal` or `runs`');
  const runReader =
    runs instanceof TemporalRuns
      ? new TemporalRunReader(runs.client, {
          loadSteps: (automationId, version) => publishedSteps(db, automationId, version),
          bulkReruns: (executionId) => bulkRerunsOf(db, executionId),
        })
      : undefined;
  const bulkRuns = runs instanceof TemporalRuns ? new TemporalBulkRuns(runs.client, runs.taskQueue) : undefined;
  const runControl =
    runs instanceof TemporalRuns && runReader
      ? new TemporalRunControl(runs.client, runs.taskQueue, runReader)
      : undefined;
  const base: Omit<AppDeps, 'webhookEndpoint'> = {
    config,
    db,
    logger,
    pageTokens: new PageTokens(inputs.pageTokenKey ?? (await loadPageTokenKey(db, secretBox))),
    tokens: inputs.tokens ?? (await AccessTokens.load(db, secretBox, config.accessTokenTtlSeconds)),
    runs,
    runReader,
    runControl,
    ...(runs instanceof TemporalRuns ? { pausedRunControl: new TemporalPausedRunControl(runs.client, runs) } : {}),
    bulkRuns,
    metrics,
    automationRequests: automationWriteRequests(config),
    secretBox,
    tokenGuard: createTokenGuard(db, config.tokenEndpoint),
    ...(inputs.payloadCodec ? { payloadCodec: inputs.payloadCodec } : {}),
    deliveryLog,
    ...inputs.overrides,
  };
  const restart = bulkRuns && inputs.bulkRestart !== false ? (inputs.bulkRestart ?? BULK_RESTART) : undefined;
  const restartOnce = (): void => {
    if (!bulkRuns || !restart) return;
    restartBulkActions(db, bulkRuns, restart.afterMs).catch((err: unknown) =>
      logger.warn({ err: (err as Error).message }, 'bulk actions: could not restart their workflows'),
    );
  };
  const restartTimer = restart ? setInterval(restartOnce, restart.everyMs).unref() : undefined;
  restartOnce();
  const composed = {
    ...base,
    async close() {
      if (restartTimer) clearInterval(restartTimer);
      await deliveryLog.close();
      if (base.deliveryLog && base.deliveryLog !== deliveryLog) await base.deliveryLog.close();
    },
  } as AppDeps & { close(): Promise<void> };
  // Built on the very object the app is given, so that it reads its dependencies there at each
  // delivery, as routes do (a test may swap one, e.g. the delivery log).
  composed.webhookEndpoint = inputs.overrides?.webhookEndpoint ?? createWebhookEndpoint(composed);
  return composed;
}
