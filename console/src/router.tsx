/**
 * A small client-side router over the History API: paths under /console, links that are real
 * `<a href>` elements (so they are links to assistive technology and open in a new tab), and
 * query-string state for filters.
 */
import { useEffect, useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

export const BASE = '/console';

const listeners = new Set<() => void>();
function emit(): void {
  for (const listener of listeners) listener();
}
window.addEventListener('popstate', emit);

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** The current path below /console ("/" for the start page) and its query string. */
export function useLocation(): { path: string; search: URLSearchParams } {
  const href = useSyncExternalStore(subscribe, () => window.location.pathname + window.location.search);
  const url = new URL(href, window.location.origin);
  const path = url.pathname.startsWith(BASE) ? url.pathname.slice(BASE.length) || '/' : '/';
  return { path, search: url.searchParams };
}

export function navigate(to: string, options: { replace?: boolean } = {}): void {
  const target = BASE + to;
  if (options.replace) window.history.replaceState(null, '', target);
  else window.history.pushState(null, '', target);
  emit();
  window.scrollTo(0, 0);
}

export function Link({ to, onClick, ...rest }: { to: string } & AnchorHTMLAttributes<HTMLAnchorElement>) {
  const follow = (event: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(event);
    if (
      event.defaultPrevented ||
      event.button !== 0 ||
      event.metaKey ||
      event.ctrlKey ||
      event.shiftKey ||
      event.altKey
    )
      return;
    event.preventDefault();
    navigate(to);
  };
  return <a href={BASE + to} onClick={follow} {...rest} />;
}

/** Sets the document title, and moves focus to the page's heading after a navigation. */
export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Automation console`;
  }, [title]);
}
