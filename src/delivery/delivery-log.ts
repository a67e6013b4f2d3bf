/**
 * The delivery log of the webhook receiver, so a sender's failures can be diagnosed. `record()`
 * is synchronous and O(1): it only appends to an in-process buffer, which a timer writes to the
 * store in one multi-row INSERT (and `close()` flushes on shutdown), so the ingress never waits
 * for the log. Detail is kept for at most `detailPerMinute` deliveries per listener per minute;
 * beyond that (a flood of bad requests) deliveries are only counted, per automation, minute,
 * status and reason (table webhook_delivery_counts), so a flood never becomes a flood of writes.
 * The buffer itself is bounded too. Rows older than the retention (7 days) are pruned.
 * Never a body, a signature, a token or a secret: the entry has no field for them.
 */
import { newId } from '../ids';
import type { Db } from '../store/db';
import {
  addDeliveryCounts,
  insertDeliveries,
  pruneDeliveries,
  type DeliveryCount,
  type DeliveryRecord,
} from '../store/deliveries';
import { pruneFlowControl } from '../store/flow-control';

export const DELIVERY_RETENTION_MS = 7 * 24 * 3600 * 1000;

/** One delivery as the receiver hands it over: the stored record before it has an id, with its listener and a Date. */
/** A webhook delivery: always an HTTP status and a source address. */
export type DeliveryEntry = Omit<DeliveryRecord, 'id' | 'receivedAt' | 'status' | 'sourceAddress' | 'source'> & {
  status: number;
  sourceAddress: string;
  listenerId: string;
  receivedAt: Date;
};

export interface DeliveryLogOptions {
  /** Deliveries kept in detail per listener and minute; the rest are counted. */
  detailPerMinute?: number;
  /** Time between two writes of the buffer. */
  flushIntervalMs?: number;
  /** Entries held at most between two writes; beyond, they are counted. */
  maxBuffered?: number;
  /** Time between two prunings. */
  pruneIntervalMs?: number;
  /** Called for each delivery counted instead of kept in detail (a metric). */
  onSummarized?: () => void;
  /** Told about a failed write (the entries of that batch are lost; the receiver is unaffected). */
  onError?: (err: unknown) => void;
}

const ROWS_PER_INSERT = 500;

export class DeliveryLog {
  private buffer: Array<Omit<DeliveryRecord, 'id'>> = [];
  private counts = new Map<string, DeliveryCount>();
  private perListener = new Map<string, number>();
  private minute = 0;
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private lastPrune = 0;
  private closed = false;
  readonly detailPerMinute: number;
  private readonly maxBuffered: number;
  private readonly pruneIntervalMs: number;
  /** Deliveries counted instead of kept in detail since start (also in webhook_delivery_counts). */
  summarized = 0;

  constructor(
    private readonly db: Db,
    private readonly options: DeliveryLogOptions = {},
  ) {
    this.detailPerMinute = options.detailPerMinute ?? 60;
    this.maxBuffered = options.maxBuffered ?? 10_000;
    this.pruneIntervalMs = options.pruneIntervalMs ?? 3_600_000;
    this.timer = setInterval(() => void this.flush(), options.flushIntervalMs ?? 1_000);
    this.timer.unref();
  }

  /** Notes one delivery; never throws, never waits. */
  record(entry: DeliveryEntry): void {
    if (this.closed) return;
    const minute = Math.floor(entry.receivedAt.getTime() / 60_000);
    if (minute !== this.minute) {
      this.minute = minute;
      this.perListener.clear();
    }
    const seen = this.perListener.get(entry.listenerId) ?? 0;
    if (seen < this.detailPerMinute && this.buffer.length < this.maxBuffered) {
      this.perListener.set(entry.listenerId, seen + 1);
      this.buffer.push({
        automationId: entry.automationId,
        receivedAt: entry.receivedAt.toISOString(),
        status: entry.status,
        reason: entry.reason,
        eventId: entry.eventId,
        sourceAddress: entry.sourceAddress,
        executionId: entry.executionId,
        latencyMs: Math.round(entry.latencyMs * 1000) / 1000,
      });
      return;
    }
    this.summarized += 1;
    this.options.onSummarized?.();
    const key = `${entry.automationId}\n${minute}\n${entry.status}\n${entry.reason}`;
    const count = this.counts.get(key);
    if (count) count.count += 1;
    else {
      this.counts.set(key, {
        automationId: entry.automationId,
        minute: new Date(minute * 60_000).toISOString(),
        status: entry.status,
        reason: entry.reason,
        count: 1,
      });
    }
  }

  /** Writes what is buffered (one write at a time); resolves when it is in the store. */
  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.write());
    return this.flushing;
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    await this.flush();
  }

  private async write(): Promise<void> {
    const batch = this.buffer;
    const counts = [...this.counts.values()];
    this.buffer = [];
    this.counts = new Map();
    try {
      // Ids (UUIDv7, the listing order) are made here, in arrival order, off the ingress path.
      const records: DeliveryRecord[] = batch.map((entry) => ({ id: newId(), ...entry }));
      for (let i = 0; i < records.length; i += ROWS_PER_INSERT)
        await insertDeliveries(this.db, records.slice(i, i + ROWS_PER_INSERT));
      for (let i = 0; i < counts.length; i += ROWS_PER_INSERT)
        await addDeliveryCounts(this.db, counts.slice(i, i + ROWS_PER_INSERT));
      const now = Date.now();
      if (now - this.lastPrune >= this.pruneIntervalMs) {
        this.lastPrune = now;
        await pruneDeliveries(this.db, new Date(now - DELIVERY_RETENTION_MS));
        // The same retention for filtered event ids; rate-limit rows that limit nothing any more.
        await pruneFlowControl(this.db);
      }
    } catch (err) {
      this.options.onError?.(err);
    }
  }
}
