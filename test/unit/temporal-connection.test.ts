/**
 * The API's lazy Temporal connection (src/temporal/connection.ts): its gRPC calls are retried a few
 * times, and closed while one of its retries is scheduled, the SDK's retry timer would fire into the
 * closed channel and throw outside any promise ("Channel has been shut down"), leaving the call
 * unsettled. Nothing listens on 127.0.0.1:1 (privileged, never bound here), so every attempt fails
 * at once and is retried.
 */
import { createLazyClient } from '../../src/temporal/connection';
import { testCodec } from '../helpers/temporal';
import { poll } from '../helpers/wait';

describe('the lazy Temporal connection', () => {
  it('retries a refused call twice (three attempts), then settles with its gRPC error', async () => {
    const { client, connection } = createLazyClient({ address: '127.0.0.1:1', embedded: true }, 'default', testCodec());
    try {
      const outcome = await client.workflowService.getSystemInfo({}).then(
        () => 'answered',
        (err: unknown) => err,
      );
      expect(outcome).toMatchObject({ code: 14 }); // UNAVAILABLE
      expect(connection.retries!.scheduled).toBe(2);
    } finally {
      await connection.close();
    }
  });

  it('closed while a retry is scheduled: the retry fires on the open channel and the call settles with its gRPC error', async () => {
    const { client, connection } = createLazyClient({ address: '127.0.0.1:1', embedded: true }, 'default', testCodec());
    const call = client.workflowService.getSystemInfo({}).then(
      () => 'answered',
      (err: unknown) => err,
    );
    // The wait is the assertion that a retry was scheduled: it throws when none is within 10 s.
    expect(
      await poll(
        () => connection.retries!.pending,
        (pending) => pending,
        { timeoutMs: 10_000, intervalMs: 5, what: 'a scheduled retry' },
      ),
    ).toBe(true);
    await connection.close();
    expect(connection.retries!.pending).toBe(false);
    expect(connection.retries!.scheduled).toBeGreaterThanOrEqual(1);
    const outcome = (await call) as { code?: number; details?: string };
    // UNAVAILABLE (14): the connection was refused, or the channel closed under the last attempt.
    expect(outcome).toMatchObject({ code: 14 });
  });
});
