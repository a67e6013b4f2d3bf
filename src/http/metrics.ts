/**
 * Prometheus metrics of the API: HTTP requests by route and status, webhook outcomes by status
 * and reason, latency histograms. Served at GET /metrics. One registry per app instance.
 *
 * The per-request metrics are counted in plain fields (`Series`: a cell per label set, found by its
 * label values) and handed to prom-client when the registry is read (each metric's `collect`):
 * prom-client validates and hashes the labels at every `inc` and `observe`, a pre-bound child
 * included, which was a few percent of a refused delivery's CPU. What /metrics shows is the same:
 * the same names, help, labels in the same order, buckets, and series in the order first seen.
 */
import { Counter, Histogram, Registry, collectDefaultMetrics, Gauge } from 'prom-client';

/** The upper bounds of both latency histograms, seconds. */
const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

type LabelValue = string | number;

/** The label sets of one metric: a cell per set, created once, found by up to three label values. */
class Series<C> {
  private readonly byFirst = new Map<LabelValue, Map<LabelValue, Map<LabelValue, C>>>();
  /** Every cell, in the order its label set was first seen (the order prom-client lists series in). */
  readonly cells: C[] = [];

  constructor(private readonly make: (a: LabelValue, b: LabelValue, c: LabelValue) => C) {}

  at(a: LabelValue, b: LabelValue = '', c: LabelValue = ''): C {
    let second = this.byFirst.get(a);
    if (second === undefined) this.byFirst.set(a, (second = new Map()));
    let third = second.get(b);
    if (third === undefined) second.set(b, (third = new Map()));
    let cell = third.get(c);
    if (cell === undefined) {
      cell = this.make(a, b, c);
      third.set(c, cell);
      this.cells.push(cell);
    }
    return cell;
  }
}

interface CountCell {
  labels: Record<string, string>;
  count: number;
}

interface LatencyCell {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative), by index of LATENCY_BUCKETS; above the last only in `count`. */
  buckets: number[];
  sum: number;
  count: number;
}

function observeLatency(cell: LatencyCell, seconds: number): void {
  cell.sum += seconds;
  cell.count += 1;
  for (let i = 0; i < LATENCY_BUCKETS.length; i++) {
    if (seconds <= LATENCY_BUCKETS[i]!) {
      cell.buckets[i]! += 1;
      return;
    }
  }
}

/** A counter whose values are `series`' cells, set at each read. */
function countedFrom(counter: Counter<string>, series: Series<CountCell>): void {
  counter.reset();
  for (const cell of series.cells) counter.inc(cell.labels, cell.count);
}

/**
 * A histogram whose values are `series`' cells, set at each read. prom-client has no call that sets
 * a histogram's buckets, so they are written into its state (`zero` makes each series' entry):
 * test/unit/metrics.test.ts compares the output with prom-client's own `observe` of the same values.
 */
function observedFrom(histogram: Histogram<string>, series: Series<LatencyCell>): void {
  histogram.reset();
  const byLabels = new Map<Record<string, string>, LatencyCell>();
  for (const cell of series.cells) {
    histogram.zero(cell.labels);
    byLabels.set(cell.labels, cell);
  }
  const state = histogram as unknown as {
    hashMap: Record<string, { labels: object; bucketValues: Record<number, number>; sum: number; count: number }>;
  };
  for (const entry of Object.values(state.hashMap)) {
    const cell = byLabels.get(entry.labels as Record<string, string>);
    if (!cell) continue;
    LATENCY_BUCKETS.forEach((bound, i) => (entry.bucketValues[bound] = cell.buckets[i]!));
    entry.sum = cell.sum;
    entry.count = cell.count;
  }
}

const latencyCell = (labels: Record<string, string>): LatencyCell => ({
  labels,
  buckets: LATENCY_BUCKETS.map(() => 0),
  sum: 0,
  count: 0,
});

export class Metrics {
  readonly registry = new Registry();

  private readonly httpCounts = new Series<CountCell>((method, route, status) => ({
    labels: { method: String(method), route: String(route), status: String(status) },
    count: 0,
  }));
  private readonly httpLatencies = new Series<LatencyCell>((method, route) =>
    latencyCell({ method: String(method), route: String(route) }),
  );
  private readonly webhookCounts = new Series<CountCell>((status, reason) => ({
    labels: { status: String(status), reason: String(reason) },
    count: 0,
  }));
  private readonly webhookLatencies = new Series<LatencyCell>((status) => latencyCell({ status: String(status) }));
  private summarized = 0;
  /** Where the in-flight gauge reads its value at each scrape (the webhook endpoint's admission). */
  private inFlight: (() => number) | undefined;

  readonly httpRequests: Counter<'method' | 'route' | 'status'>;
  readonly httpDuration: Histogram<'method' | 'route'>;
  readonly webhookOutcomes: Counter<'status' | 'reason'>;
  readonly webhookDuration: Histogram<'status'>;
  readonly webhooksInFlight: Gauge;
  readonly deliveryLogSummarized: Counter;

  /** Where the breaker gauge reads the open breakers from at each scrape (src/compose.ts sets it: the store, shared by every API process). */
  private openBreakers: (() => Promise<string[]>) | undefined;
  readonly breakerOpen: Gauge<'automation_id'>;

  constructor(options: { defaultMetrics?: boolean } = {}) {
    this.httpRequests = new Counter({
      name: 'http_requests_total',
      help: 'HTTP requests by method, route and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [this.registry],
      collect: () => countedFrom(this.httpRequests, this.httpCounts),
    });
    this.httpDuration = new Histogram({
      name: 'http_request_duration_seconds',
      help: 'HTTP request latency by route',
      labelNames: ['method', 'route'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
      collect: () => observedFrom(this.httpDuration, this.httpLatencies),
    });
    this.webhookOutcomes = new Counter({
      name: 'webhook_requests_total',
      help: 'Inbound webhook deliveries by status and reason',
      labelNames: ['status', 'reason'] as const,
      registers: [this.registry],
      collect: () => countedFrom(this.webhookOutcomes, this.webhookCounts),
    });
    this.webhookDuration = new Histogram({
      name: 'webhook_request_duration_seconds',
      help: 'Inbound webhook latency by status',
      labelNames: ['status'] as const,
      buckets: LATENCY_BUCKETS,
      registers: [this.registry],
      collect: () => observedFrom(this.webhookDuration, this.webhookLatencies),
    });
    this.webhooksInFlight = new Gauge({
      name: 'webhook_requests_in_flight',
      help: 'Inbound webhook deliveries being processed',
      registers: [this.registry],
      collect: () => this.webhooksInFlight.set(this.inFlight?.() ?? 0),
    });
    this.deliveryLogSummarized = new Counter({
      name: 'webhook_delivery_log_summarized_total',
      help: 'Webhook deliveries only counted in the delivery log (over the per-listener per-minute detail limit)',
      registers: [this.registry],
      collect: () => {
        this.deliveryLogSummarized.reset();
        this.deliveryLogSummarized.inc(this.summarized);
      },
    });
    this.breakerOpen = new Gauge({
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
    if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  /** Reads the open circuit breakers with `read` at each scrape. */
  watchBreakers(read: () => Promise<string[]>): void {
    this.openBreakers = read;
  }

  /** Reads the webhook deliveries in progress with `read` at each scrape. */
  watchWebhooksInFlight(read: () => number): void {
    this.inFlight = read;
  }

  /** One answered HTTP request: its count by status and its latency since `startedNs` (process.hrtime.bigint). */
  recordHttp(method: string, route: string, status: number, startedNs: bigint): void {
    this.countHttp(method, route, status, Number(process.hrtime.bigint() - startedNs) / 1e9);
  }

  /** One answered HTTP request that took `seconds`. */
  countHttp(method: string, route: string, status: number, seconds: number): void {
    this.httpCounts.at(method, route, status).count += 1;
    observeLatency(this.httpLatencies.at(method, route), seconds);
  }

  /** One webhook delivery's outcome; its latency too when it was judged (`seconds`), not refused for load before any work. */
  recordWebhook(status: number, reason: string, seconds?: number): void {
    this.webhookCounts.at(status, reason).count += 1;
    if (seconds !== undefined) observeLatency(this.webhookLatencies.at(status), seconds);
  }

  /** One delivery only counted in the delivery log (over its detail limit). */
  deliverySummarized(): void {
    this.summarized += 1;
  }
}
