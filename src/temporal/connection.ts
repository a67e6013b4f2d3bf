/**
 * Connections to the Temporal frontend: a lazy client connection for the API, a native one for
 * workers. Against an external cluster or Temporal Cloud, TLS, API key and gRPC metadata come from
 * the standard Temporal environment configuration (@temporalio/envconfig: TEMPORAL_API_KEY,
 * TEMPORAL_TLS_*, TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE); the embedded dev server needs none.
 */
import { Client, Connection, defaultGrpcRetryOptions, makeGrpcRetryInterceptor, type ConnectionOptions } from '@temporalio/client';
import { loadClientConnectConfig } from '@temporalio/envconfig';
import type { PayloadCodec } from '@temporalio/common';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';
import { encryptedDataConverter } from './codec';

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
 * A client whose connection is made on first use, so the API starts (and answers 503) while
 * Temporal is down. Its gRPC retries are few and short: an API request waits at most a few seconds
 * for Temporal, and retrying past that deadline only keeps timers alive after the answer.
 * Payloads go through `codec` (encrypted in Temporal).
 */
export function createLazyClient(target: TemporalTarget, namespace: string, codec: PayloadCodec): { client: Client; connection: Connection } {
  const connection = Connection.lazy({
    ...(connectionOptions(target) as ConnectionOptions),
    connectTimeout: 3000,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions({ maxAttempts: 3, maxIntervalMs: () => 500 }))],
  });
  return { client: new Client({ connection, namespace, dataConverter: encryptedDataConverter(codec) }), connection };
}

export async function connectClientConnection(target: TemporalTarget): Promise<Connection> {
  return Connection.connect(connectionOptions(target) as ConnectionOptions);
}

export async function connectWorkerConnection(target: TemporalTarget): Promise<NativeConnection> {
  return NativeConnection.connect(connectionOptions(target));
}
