/**
 * Connections to the Temporal frontend: a lazy client connection for the API, a native one for
 * workers. Against an external cluster or Temporal Cloud, TLS, API key and gRPC metadata come from
 * the standard Temporal environment configuration (@temporalio/envconfig: TEMPORAL_API_KEY,
 * TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE); the embedded dev server needs none.
 */
import {
  Client,
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
  type GrpcRetryOptions,
} from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { PayloadCodec } from '@temporalio/common';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import { encryptedDataConverter } from './codec';
import { tracingClientInterceptors } from './tracing';

/**
 * The Temporal environment configuration variables that reach the connection (read by
 * @temporalio/envconfig for an external target, not by src/config.ts): Temporal's own names, the
 * same as the Temporal CLI's.
 */
export const TEMPORAL_ENVCONFIG_VARIABLES = [
  'TEMPORAL_API_KEY',
  'TEMPORAL_TLS',
  'TEMPORAL_TLS_CLIENT_CERT_PATH',
  'TEMPORAL_TLS_CLIENT_KEY_PATH',
  'TEMPORAL_TLS_SERVER_CA_CERT_PATH',
  'TEMPORAL_TLS_SERVER_NAME',
  'TEMPORAL_PROFILE',
  'TEMPORAL_CONFIG_FILE',
] as const;

export interface TemporalTarget {
  address: string;
  /** True for a server this process started itself: no TLS, no credentials. */
  embedded: boolean;
}

/** Connection options for the target; external targets get TLS and credentials from envconfig. */
export function connectionOptions(target: TemporalTarget): NativeConnectionOptions {
  if (target.embedded) return { address: target.address };
  const { connectionOptions: fromEnv } = loadClientConnectConfig();
  return { ...fromEnv, address: target.address };
}

/**
 * The gRPC retries of one connection. The SDK's retry interceptor schedules each retry on a timer
 * that knows nothing of the connection: a timer that fires after `close()` calls into the closed
 * channel, which throws outside any promise ("Channel has been shut down", an uncaught exception).
 * So once the connection starts closing no retry is scheduled, and the close waits for the ones
 * already scheduled (each at most `MAX_RETRY_INTERVAL_MS` away); their calls end on the open
 * channel, as a call of a closed client does.
 */
class RetryTimers {
  private closing = false;
  /** Epoch ms by which every scheduled retry has fired. */
  private scheduledUntil = 0;
  /** How many retries were scheduled, in all. */
  scheduled = 0;

  options(base: GrpcRetryOptions): GrpcRetryOptions {
    return {
      retryableDecider: (attempt, status) => !this.closing && base.retryableDecider(attempt, status),
      delayFunction: (attempt, status) => {
        const ms = base.delayFunction(attempt, status);
        this.scheduled++;
        this.scheduledUntil = Math.max(this.scheduledUntil, Date.now() + ms);
        return ms;
      },
    };
  }

  /** True while a retry is scheduled and has not fired. */
  get pending(): boolean {
    return this.scheduledUntil > Date.now();
  }

  /** Stops scheduling retries, then waits until the scheduled ones have fired. */
  async settle(): Promise<void> {
    this.closing = true;
    // A few ms past the last one: timers fire at or after their time, in the order they were set.
    const wait = this.scheduledUntil - Date.now();
    if (wait >= 0) await new Promise((resolve) => setTimeout(resolve, wait + 5));
  }
}

const MAX_RETRY_ATTEMPTS = 3;
const MAX_RETRY_INTERVAL_MS = 500;

/** A client connection whose `close()` first lets its scheduled gRPC retries fire (RetryTimers). */
export class LazyConnection extends Connection {
  /** Set right after construction by `createLazyClient`. */
  retries: RetryTimers | undefined;

  override async close(): Promise<void> {
    await this.retries?.settle();
    await super.close();
  }
}

/**
 * A client whose connection is made on first use, so the API starts (and answers 503) while
 * Temporal is down. Its gRPC retries are few and short: an API request waits at most a few seconds
 * for Temporal, and retrying past that deadline only keeps timers alive after the answer.
 * Payloads go through `codec` (encrypted in Temporal).
 */
export function createLazyClient(
  target: TemporalTarget,
  namespace: string,
  codec: PayloadCodec,
): { client: Client; connection: LazyConnection } {
  const retries = new RetryTimers();
  const base = defaultGrpcRetryOptions({ maxAttempts: MAX_RETRY_ATTEMPTS, maxIntervalMs: () => MAX_RETRY_INTERVAL_MS });
  // `lazy` constructs `this`: a LazyConnection.
  const connection = LazyConnection.lazy({
    ...(connectionOptions(target) as ConnectionOptions),
    connectTimeout: 3000,
    interceptors: [makeGrpcRetryInterceptor(retries.options(base))],
  }) as LazyConnection;
  connection.retries = retries;
  return {
    client: new Client({
      connection,
      namespace,
      dataConverter: encryptedDataConverter(codec),
      interceptors: tracingClientInterceptors(),
    }),
    connection,
  };
}

export async function connectClientConnection(target: TemporalTarget): Promise<Connection> {
  return Connection.connect(connectionOptions(target) as ConnectionOptions);
}

export async function connectWorkerConnection(target: TemporalTarget): Promise<NativeConnection> {
  return NativeConnection.connect(connectionOptions(target));
}
