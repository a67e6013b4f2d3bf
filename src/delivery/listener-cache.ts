/**
 * The webhook receiver's view of listeners, one store read per listener behind an in-process
 * cache. The HMAC signing secret is unsealed once, when an entry is loaded.
 *
 * Freshness: every change to an automation or its versions NOTIFYs its listener id (a database
 * trigger, migration 6), and each process drops that entry when the notification arrives; the
 * writing process also drops it itself right after its transaction commits
 * (`listenerChanged`). A lookup that raced with a change is returned but not kept. As a hard
 * bound when notifications are lost (the listening connection dropped), an entry is never used
 * more than MAX_STALENESS_MS after it was read, and a reconnect clears the whole cache.
 */
import type { Db } from '../store/db';
import { getListener, LISTENER_CHANGED_CHANNEL, type ListenerRecord } from '../store/listeners';
import { sealContext, type SecretBox } from '../crypto/secret-box';
import { subscribeListenerChanges } from '../domain/listener-changes';
import { authenticatorOf } from '../webhooks/authenticators';
import type { IncomingWebhookTrigger } from '../webhooks/trigger';
import { isWebhookTrigger } from '../triggers';

/** Longest time a cached entry is used without a re-read, notifications or not. */
export const MAX_STALENESS_MS = 1000;
/** Most listeners kept (least recently used evicted); unknown ids are cached too. */
const MAX_ENTRIES = 10_000;

export interface Listener extends ListenerRecord {
  /** Only an incoming-webhook automation has a listener (a schedule or event automation's id answers none). */
  automation: ListenerRecord['automation'] & { trigger: IncomingWebhookTrigger };
  /** The unsealed HMAC signing secret; undefined for JWT triggers or when none is set. */
  hmacSecret: string | undefined;
  /** The secret replaced by the last rotation (unsealed), while its grace period lasts. */
  previousHmacSecret: { secret: string; expiresAtMs: number } | undefined;
}

/** The secrets a delivery's HMAC may be made with: the current one, and the previous one until it expires. */
export function verifyingHmacSecrets(listener: Listener, nowMs = Date.now()): string[] {
  const secrets = listener.hmacSecret === undefined ? [] : [listener.hmacSecret];
  if (listener.previousHmacSecret && nowMs < listener.previousHmacSecret.expiresAtMs)
    secrets.push(listener.previousHmacSecret.secret);
  return secrets;
}

interface Entry {
  value: Listener | undefined;
  loadedAt: number;
}

export class ListenerCache {
  private readonly entries = new Map<string, Entry>();
  /**
   * Loads in flight, by listener id: an invalidation of that id (or a clear) marks them stale, and
   * a stale load is returned but not kept. Per id, because the channel carries every listener's
   * changes: a busy database would otherwise keep any load from being cached.
   */
  private readonly loading = new Map<string, Set<{ stale: boolean }>>();
  private stopListening: (() => Promise<void>) | undefined;
  private readonly listening: Promise<void>;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly db: Db,
    private readonly secretBox: SecretBox,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.unsubscribe = subscribeListenerChanges((id) => this.invalidate(id));
    this.listening = db
      .listen(
        LISTENER_CHANGED_CHANNEL,
        (id) => this.invalidate(id),
        () => this.clear(),
      )
      .then((stop) => {
        this.stopListening = stop;
      })
      .catch(() => {
        // Without notifications the cache still re-reads every MAX_STALENESS_MS.
      });
  }

  /**
   * The cached entry of this id when it is fresh (its `value` undefined: there is no such listener),
   * else undefined: then `lookup`. Synchronous, so that a delivery to a cached listener (nearly every
   * one) does not wait a turn of the event loop's microtasks for it.
   */
  peek(listenerId: string): { readonly value: Listener | undefined } | undefined {
    const hit = this.entries.get(listenerId);
    return hit && this.now() - hit.loadedAt < MAX_STALENESS_MS ? hit : undefined;
  }

  /** The listener with this id, or undefined when there is none. */
  async lookup(listenerId: string): Promise<Listener | undefined> {
    const hit = this.peek(listenerId);
    if (hit) return hit.value;
    const load = { stale: false };
    let inFlight = this.loading.get(listenerId);
    if (!inFlight) this.loading.set(listenerId, (inFlight = new Set()));
    inFlight.add(load);
    const loadedAt = this.now();
    let value: Listener | undefined;
    try {
      const record = await getListener(this.db, listenerId);
      value =
        record && isWebhookTrigger(record.automation.trigger)
          ? {
              ...record,
              automation: { ...record.automation, trigger: record.automation.trigger },
              hmacSecret: this.unseal(record),
              previousHmacSecret: this.unsealPrevious(record),
            }
          : undefined;
    } finally {
      inFlight.delete(load);
      if (inFlight.size === 0 && this.loading.get(listenerId) === inFlight) this.loading.delete(listenerId);
    }
    if (!load.stale) {
      this.entries.delete(listenerId);
      this.entries.set(listenerId, { value, loadedAt });
      if (this.entries.size > MAX_ENTRIES) {
        const oldest = this.entries.keys().next();
        if (!oldest.done) this.entries.delete(oldest.value);
      }
    }
    return value;
  }

  invalidate(listenerId: string): void {
    for (const load of this.loading.get(listenerId) ?? []) load.stale = true;
    this.entries.delete(listenerId);
  }

  clear(): void {
    for (const loads of this.loading.values()) for (const load of loads) load.stale = true;
    this.entries.clear();
  }

  /** Resolves once the LISTEN is in place (or failed); for tests. */
  ready(): Promise<void> {
    return this.listening;
  }

  async close(): Promise<void> {
    this.unsubscribe();
    await this.listening;
    await this.stopListening?.();
  }

  private unsealPrevious(record: ListenerRecord): Listener['previousHmacSecret'] {
    const { sealedPreviousSigningSecret: sealed, previousSecretExpiresAt: expires, trigger } = record.automation;
    if (!isWebhookTrigger(trigger) || trigger.authMethod !== 'HMAC' || sealed === null || expires === null)
      return undefined;
    return {
      secret: this.secretBox.open(sealed, sealContext('automation_signing_secret', record.automation.id)),
      expiresAtMs: Date.parse(expires),
    };
  }

  private unseal(record: ListenerRecord): string | undefined {
    const sealed = record.automation.sealedSigningSecret;
    const { trigger } = record.automation;
    return isWebhookTrigger(trigger) && authenticatorOf(trigger.authMethod).secret && sealed !== null
      ? this.secretBox.open(sealed, sealContext('automation_signing_secret', record.automation.id))
      : undefined;
  }
}
