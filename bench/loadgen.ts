/**
 * The load generator, run as a child process (bench/load.ts forks it) so that it never shares an
 * event loop with the server it measures. Each job is one autocannon run whose every request
 * carries a fresh UUID v4 event id, the current timestamp and an HMAC signature over
 * "<timestamp>.<event id>.<body>" (or a wrong signature, for the rejection path).
 */
import { randomUUID } from 'node:crypto';
import autocannon from 'autocannon';
import { signHmac } from '../src/webhooks';

export interface LoadJob {
  url: string;
  connections: number;
  durationSec: number;
  body: string;
  secret: string;
  /** 'valid': correct signatures; 'badSignature': a well-formed but wrong signature. */
  mode: 'valid' | 'badSignature';
  /** The status counted as success (200 for accepted, 401 for the rejection path). */
  expectStatus: number;
}

export interface LoadResult {
  /** Responses with expectStatus per second. */
  perSec: number;
  expected: number;
  /** Every status seen, with its count. */
  statuses: Record<string, number>;
  errors: number;
  durationSec: number;
  /** Latency of the expected responses, ms. */
  p50Ms: number;
  p99Ms: number;
}

const WRONG_SIGNATURE = 'A'.repeat(43);

export function runLoad(job: LoadJob): Promise<LoadResult> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: job.url,
        connections: job.connections,
        duration: job.durationSec,
        method: 'POST',
        requests: [
          {
            method: 'POST',
            setupRequest: (req) => {
              const eventId = randomUUID();
              const timestamp = String(Math.floor(Date.now() / 1000));
              const signature =
                job.mode === 'valid' ? signHmac(job.secret, timestamp, eventId, job.body) : WRONG_SIGNATURE;
              return {
                ...req,
                method: 'POST',
                body: job.body,
                headers: {
                  'content-type': 'application/json',
                  'webhook-timestamp': timestamp,
                  'webhook-event-id': eventId,
                  'webhook-signature': signature,
                },
              };
            },
          },
        ],
      },
      (err, result) => {
        if (err) return reject(err);
        const expected = statuses[String(job.expectStatus)] ?? 0;
        const sorted = latencies.sort((a, b) => a - b);
        const at = (p: number): number =>
          sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(p * sorted.length) - 1))] ?? Number.NaN;
        resolve({
          perSec: expected / result.duration,
          expected,
          statuses,
          errors: result.errors,
          durationSec: result.duration,
          p50Ms: at(0.5),
          p99Ms: at(0.99),
        });
      },
    );
    instance.on('response', (_client, statusCode, _bytes, responseTime) => {
      statuses[String(statusCode)] = (statuses[String(statusCode)] ?? 0) + 1;
      if (statusCode === job.expectStatus) latencies.push(responseTime);
    });
  });
}

if (require.main === module && process.send) {
  process.on('message', (message: { id: number; job: LoadJob }) => {
    runLoad(message.job).then(
      (result) => process.send!({ id: message.id, result }),
      (err: unknown) => process.send!({ id: message.id, error: String(err) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
  process.send({ ready: true });
}
