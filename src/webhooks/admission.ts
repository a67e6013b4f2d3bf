/**
 * Admission control of the webhook receiver, so that slow or abusive senders cannot starve the
 * others:
 * - in-flight counts: a global cap, and under it a cap per listener and a cap per source address
 *   (beyond any of them: 429 with Retry-After), so that slow bodies to one listener or from one
 *   address leave the rest answering;
 * - a minimum data rate for the body (after a short grace period), so a trickling body gives its
 *   slot back early (408) instead of holding it for the whole body deadline;
 * - a header pre-check that refuses, before a byte of body is read, what the check order of
 *   docs/api.md#check-order would refuse anyway, with the same status and reason.
 *
 * The pre-check is exact, not a heuristic. The order is 404, 403, 413, 400 (headers), 401, ...;
 * listener and source are checked before it already. It runs only when the body cannot end in a
 * 413: `Content-Length` is given, within the limit, and no `Transfer-Encoding` (a chunked body may
 * still grow past the limit, and the 413 comes first in the contract, so such a request is read
 * as before). The header checks (presence, Content-Type, timestamp window, event-id format, then
 * for JWT listeners a Bearer `Authorization`) depend on the headers and on "now" only; the body
 * must arrive within `bodyDeadlineMs`, so "now" at the later check lies between now and now plus
 * the deadline. The pre-check refuses only when the header check fails with the same status and
 * reason at both ends of that interval, and then it fails so at every time in between (the window
 * is an interval of 600 s, the deadline seconds).
 */
import { checkWebhookHeaders, type CheckedWebhookHeaders, type WebhookHeaderInput } from './headers';
import { AdmissionRefusal, WebhookRejection } from '../errors';

export interface AdmissionLimits {
  /** Deliveries in progress at once, all listeners together. */
  global: number;
  /** Deliveries in progress at once for one listener. */
  perListener: number;
  /** Deliveries in progress at once from one source address. */
  perSource: number;
}

/** One admitted delivery; `release` once, when it is answered. */
export interface AdmissionTicket {
  /** Counts the delivery against its listener too (after the listener is known to exist). */
  enterListener(listenerId: string): void;
  release(): void;
}

function increment(map: Map<string, number>, key: string): void {
  map.set(key, (map.get(key) ?? 0) + 1);
}

function decrement(map: Map<string, number>, key: string): void {
  const next = (map.get(key) ?? 0) - 1;
  if (next <= 0) map.delete(key);
  else map.set(key, next);
}

export class WebhookAdmission {
  private total = 0;
  private readonly byListener = new Map<string, number>();
  private readonly bySource = new Map<string, number>();

  constructor(readonly limits: AdmissionLimits) {}

  get inFlight(): number {
    return this.total;
  }

  /** Admits a delivery from `source` (global and per-source counts) or throws `AdmissionRefusal`. */
  enter(source: string): AdmissionTicket {
    if (this.total >= this.limits.global) throw new AdmissionRefusal('global');
    if ((this.bySource.get(source) ?? 0) >= this.limits.perSource) throw new AdmissionRefusal('source');
    this.total += 1;
    increment(this.bySource, source);
    return new Ticket(this, source);
  }

  /** Counts a delivery against `listenerId`, or throws `AdmissionRefusal` when the listener is full. */
  enterListener(listenerId: string): void {
    if ((this.byListener.get(listenerId) ?? 0) >= this.limits.perListener) throw new AdmissionRefusal('listener');
    increment(this.byListener, listenerId);
  }

  /** Gives back what `enter` (and `enterListener`, when `listenerId` is set) counted. */
  release(source: string, listenerId: string | undefined): void {
    this.total -= 1;
    decrement(this.bySource, source);
    if (listenerId !== undefined) decrement(this.byListener, listenerId);
  }
}

/** A class, not an object of closures: one small allocation per delivery. */
class Ticket implements AdmissionTicket {
  private listener: string | undefined;
  private released = false;

  constructor(
    private readonly admission: WebhookAdmission,
    private readonly source: string,
  ) {}

  enterListener(listenerId: string): void {
    if (this.listener !== undefined || this.released) return;
    this.admission.enterListener(listenerId);
    this.listener = listenerId;
  }

  release(): void {
    if (this.released) return;
    this.released = true;
    this.admission.release(this.source, this.listener);
  }
}

export interface PrecheckInput extends WebhookHeaderInput {
  /** `Content-Length` as sent (undefined when absent). */
  contentLength: string | undefined;
  /** `Transfer-Encoding` as sent (undefined when absent). */
  transferEncoding: string | undefined;
  /** The body limit (65,536 bytes). */
  maxBodyBytes: number;
  /** Time the body has to arrive once the headers are in. */
  bodyDeadlineMs: number;
}

/** The header check at `nowSeconds` (default: the input's own time): the checked headers or the refusal. */
export function headerVerdict(
  input: WebhookHeaderInput,
  nowSeconds = input.nowSeconds,
): CheckedWebhookHeaders | WebhookRejection {
  try {
    return checkWebhookHeaders(input, nowSeconds);
  } catch (err) {
    if (err instanceof WebhookRejection) return err;
    throw err;
  }
}

/**
 * Throws the `WebhookRejection` the full check order would certainly answer, judged from the
 * headers alone; returns quietly when the body is needed to know (see the module comment).
 * `early` is the header check at the input's time when the caller has it already (the intake
 * keeps it for the check after the body, which judges the same headers at the same time).
 */
export function precheckWebhookHeaders(
  input: PrecheckInput,
  early: CheckedWebhookHeaders | WebhookRejection = headerVerdict(input),
): void {
  if (!(early instanceof WebhookRejection)) return;
  if (input.transferEncoding !== undefined) return;
  if (input.contentLength === undefined || !/^[0-9]{1,10}$/.test(input.contentLength.trim())) return;
  if (Number(input.contentLength.trim()) > input.maxBodyBytes) return; // the 413 path answers this
  const late = headerVerdict(input, input.nowSeconds + Math.ceil(input.bodyDeadlineMs / 1000));
  if (late instanceof WebhookRejection && late.reason === early.reason) throw early;
}

/**
 * Tracks how fast a body arrives: `tooSlow` is true once, after `graceMs`, fewer than
 * `minBytesPerSecond` bytes per second (averaged since the start) have arrived and the body is
 * not complete. A complete body is never too slow.
 */
export class DataRateWatch {
  private received = 0;
  private readonly startedMs: number;

  constructor(
    readonly minBytesPerSecond: number,
    private readonly graceMs: number,
    private readonly clock: () => number = Date.now,
  ) {
    this.startedMs = clock();
  }

  add(bytes: number): void {
    this.received += bytes;
  }

  tooSlow(): boolean {
    const elapsedMs = this.clock() - this.startedMs;
    if (elapsedMs <= this.graceMs) return false;
    return this.received < (this.minBytesPerSecond * (elapsedMs - this.graceMs)) / 1000;
  }
}
