/**
 * In-process news of listener changes: the domain announces a committed change, and every
 * subscriber of this process (the delivery intake's listener caches) drops what it holds. Other
 * processes hear of it through the store's notification channel.
 */
const subscribers = new Set<(listenerId: string) => void>();

/** Calls `onChange` with the id of every listener changed in this process until the returned function is called. */
export function subscribeListenerChanges(onChange: (listenerId: string) => void): () => void {
  subscribers.add(onChange);
  return () => {
    subscribers.delete(onChange);
  };
}

/** Tells every subscriber in this process that `listenerId` changed (call after the change committed). */
export function listenerChanged(listenerId: string): void {
  for (const onChange of subscribers) onChange(listenerId);
}
