/**
 * Prometheus metrics of the API: HTTP requests by route and status, webhook outcomes by status
 * and reason, latency histograms. Served at GET /metrics. One registry per app instance.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics, Gauge } from 'prom-client';

export class Metrics {
  readonly registry = new Registry();
  readonly httpRequests = new Counter({
    name: 'http_requests_total',
    help: 'HTTP requests by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  readonly httpDuration = new Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request latency by route',
    labelNames: ['method', 'route'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly webhookOutcomes = new Counter({
    name: 'webhook_requests_total',
    help: 'Inbound webhook deliveries by status and reason',
    labelNames: ['status', 'reason'] as const,
    registers: [this.registry],
  });
  readonly webhookDuration = new Histogram({
    name: 'webhook_request_duration_seconds',
    help: 'Inbound webhook latency by status',
    labelNames: ['status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly webhooksInFlight = new Gauge({
    name: 'webhook_requests_in_flight',
    help: 'Inbound webhook deliveries being processed',
    registers: [this.registry],
  });
  readonly deliveryLogSummarized = new Counter({
    name: 'webhook_delivery_log_summarized_total',
    help: 'Webhook deliveries only counted in the delivery log (over the per-listener per-minute detail limit)',
    registers: [this.registry],
  });

  /** Where the breaker gauge reads the open breakers from at each scrape (src/compose.ts sets it: the store, shared by every API process). */
  private openBreakers: (() => Promise<string[]>) | undefined;
  readonly breakerOpen = new Gauge({
    name: 'automation_breaker_open',
    help: 'Automations whose circuit breaker is open (1), read from the store at each scrape',
    labelNames: ['automation_id'] as const,
    registers: [this.registry],
    collect: async () => {
      this.breakerOpen.reset();
      // A store that does not answer leaves the gauge empty for this scrape (the scrape still answers).
      const open = await this.openBreakers?.().catch(() => []);
      for (const automationId of open ?? []) this.breakerOpen.set({ automation_id: automationId }, 1);
    },
  });

  /** Reads the open circuit breakers with `read` at each scrape. */
  watchBreakers(read: () => Promise<string[]>): void {
    this.openBreakers = read;
  }

  /** One answered HTTP request: its count by status and its latency since `startedNs` (process.hrtime.bigint). */
  recordHttp(method: string, route: string, status: number, startedNs: bigint): void {
    this.httpRequests.inc({ method, route, status: String(status) });
    this.httpDuration.observe({ method, route }, Number(process.hrtime.bigint() - startedNs) / 1e9);
  }

  constructor(options: { defaultMetrics?: boolean } = {}) {
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }
}
