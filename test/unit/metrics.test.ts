/**
 * The API's metrics are counted in plain fields and handed to prom-client at each read: what the
 * registry shows must be exactly what prom-client's own `inc` and `observe` of the same values show.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { Metrics } from '../../src/http/metrics';

const BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** The same metrics as src/http/metrics.ts, fed the way it fed them before (one call per request). */
function reference() {
  const registry = new Registry();
  const registers = [registry];
  return {
    registry,
    httpRequests: new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by method, route and status',
      labelNames: ['method', 'route', 'status'],
      registers,
    }),
    httpDuration: new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route',
      labelNames: ['method', 'route'],
      buckets: BUCKETS,
      registers,
    }),
    webhookOutcomes: new Counter({
      name: 'webhook_requests_total',
      help: 'Inbound webhook deliveries by status and reason',
      labelNames: ['status', 'reason'],
      registers,
    }),
    webhookDuration: new Histogram({
      name: 'webhook_request_duration_seconds',
      help: 'Inbound webhook latency by status',
      labelNames: ['status'],
      buckets: BUCKETS,
      registers,
    }),
    inFlight: new Gauge({
      name: 'webhook_requests_in_flight',
      help: 'Inbound webhook deliveries being processed',
      registers,
    }),
    summarized: new Counter({
      name: 'webhook_delivery_log_summarized_total',
      help: 'Webhook deliveries only counted in the delivery log (over the per-listener per-minute detail limit)',
      registers,
    }),
    breaker: new Gauge({
      name: 'automation_breaker_open',
      help: 'Automations whose circuit breaker is open (1), read from the store at each scrape',
      labelNames: ['automation_id'],
      registers,
    }),
  };
}

/** Webhook outcomes with latencies on bucket bounds, between them, and above the last one. */
const DELIVERIES: Array<[number, string, number | undefined]> = [
  [401, 'signature_mismatch', 0.001],
  [200, 'accepted', 0.005],
  [401, 'signature_mismatch', 0.0051],
  [429, 'overloaded', undefined],
  [200, 'accepted', 0.7],
  [409, 'duplicate_event', 10],
  [200, 'paused', 12.5],
  [401, 'signature_mismatch', 0.25],
  [429, 'source_busy', undefined],
  [200, 'accepted', 0.0123],
];

describe('Metrics', () => {
  it('shows exactly what prom-client shows for the same outcomes, latencies, counts and gauge', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const ref = reference();
    let inFlight = 0;
    metrics.watchWebhooksInFlight(() => inFlight);
    metrics.watchBreakers(async () => ['aut_1']);
    ref.breaker.set({ automation_id: 'aut_1' }, 1);

    const read = async (): Promise<[string, string]> => [
      await metrics.registry.metrics(),
      await ref.registry.metrics(),
    ];
    // Before anything is counted: the unlabelled series at 0, the labelled ones absent.
    {
      const [ours, theirs] = await read();
      expect(ours).toBe(theirs);
    }
    for (const [status, reason, seconds] of DELIVERIES) {
      metrics.recordWebhook(status, reason, seconds);
      ref.webhookOutcomes.inc({ status: String(status), reason });
      if (seconds !== undefined) ref.webhookDuration.observe({ status: String(status) }, seconds);
    }
    metrics.deliverySummarized();
    metrics.deliverySummarized();
    ref.summarized.inc();
    ref.summarized.inc();
    inFlight = 3;
    ref.inFlight.set(3);
    {
      const [ours, theirs] = await read();
      expect(ours).toBe(theirs);
      expect(ours).toContain('webhook_request_duration_seconds_bucket{le="0.005",status="200"} 1');
      expect(ours).toContain('webhook_request_duration_seconds_bucket{le="+Inf",status="200"} 4');
      expect(ours).toContain('webhook_requests_total{status="401",reason="signature_mismatch"} 3');
    }
    // A second read after more counts: the values are totals, not what changed since the last read.
    metrics.recordWebhook(401, 'signature_mismatch', 0.02);
    ref.webhookOutcomes.inc({ status: '401', reason: 'signature_mismatch' });
    ref.webhookDuration.observe({ status: '401' }, 0.02);
    inFlight = 0;
    ref.inFlight.set(0);
    {
      const [ours, theirs] = await read();
      expect(ours).toBe(theirs);
      expect(ours).toContain('webhook_requests_total{status="401",reason="signature_mismatch"} 4');
    }
    // The objects' own get() (what the integration tests read) agrees too.
    expect((await metrics.webhookOutcomes.get()).values).toEqual((await ref.webhookOutcomes.get()).values);
    expect((await metrics.webhooksInFlight.get()).values).toEqual((await ref.inFlight.get()).values);
  });

  it('counts HTTP requests by method, route and status, and their latency by method and route, as prom-client does', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    const ref = reference();
    const webhookRoute = '/api/v1/webhooks/incoming/:listenerId';
    const requests: Array<[string, string, number, number]> = [
      ['POST', webhookRoute, 401, 0.003],
      ['POST', webhookRoute, 200, 0.07],
      ['GET', 'unmatched', 404, 0.01],
      ['POST', webhookRoute, 401, 0.0004],
      ['GET', '/api/v1/automations', 200, 11],
    ];
    for (const [method, route, status, seconds] of requests) {
      metrics.countHttp(method, route, status, seconds);
      ref.httpRequests.inc({ method, route, status: String(status) });
      ref.httpDuration.observe({ method, route }, seconds);
    }
    const ours = await metrics.registry.metrics();
    expect(ours).toBe(await ref.registry.metrics());
    expect(ours.split('\n').filter((line) => line.startsWith('http_requests_total'))).toEqual([
      `http_requests_total{method="POST",route="${webhookRoute}",status="401"} 2`,
      `http_requests_total{method="POST",route="${webhookRoute}",status="200"} 1`,
      'http_requests_total{method="GET",route="unmatched",status="404"} 1',
      'http_requests_total{method="GET",route="/api/v1/automations",status="200"} 1',
    ]);
    expect(ours).toContain(`http_request_duration_seconds_bucket{le="0.005",method="POST",route="${webhookRoute}"} 2`);
    expect(ours).toContain(`http_request_duration_seconds_bucket{le="10",method="GET",route="/api/v1/automations"} 0`);
    expect(ours).toContain(
      `http_request_duration_seconds_bucket{le="+Inf",method="GET",route="/api/v1/automations"} 1`,
    );
  });

  it('records a request latency from its start time', async () => {
    const metrics = new Metrics({ defaultMetrics: false });
    metrics.recordHttp('POST', 'unmatched', 500, process.hrtime.bigint() - 20_000_000_000n);
    const text = await metrics.registry.metrics();
    expect(text).toContain('http_request_duration_seconds_bucket{le="10",method="POST",route="unmatched"} 0');
    expect(text).toContain('http_request_duration_seconds_count{method="POST",route="unmatched"} 1');
    const sum = Number(/http_request_duration_seconds_sum\{method="POST",route="unmatched"\} (\S+)/.exec(text)![1]);
    expect(sum).toBeGreaterThanOrEqual(20);
  });
});
