/** Connections to the Temporal frontend: a lazy client connection for the API, a native one for workers. */
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';

/** A client whose connection is made on first use, so the API starts (and answers 503) while Temporal is down. */
export function createLazyClient(address: string, namespace: string): { client: Client; connection: Connection } {
  const connection = Connection.lazy({ address, connectTimeout: 3000 });
  return { client: new Client({ connection, namespace }), connection };
}

export async function connectWorkerConnection(address: string): Promise<NativeConnection> {
  return NativeConnection.connect({ address });
}
