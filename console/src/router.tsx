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
/** Set by a change of page (a link, Back): the next page's heading takes the focus (takeHeadingFocus). */
let headingFocus = false;
window.addEventListener('popstate', () => {
  headingFocus = true;
  emit();
});

/**
 * Whether the heading drawn now should take the focus: once after a change of page, so that a
 * keyboard or screen-reader user starts at the new page's heading, not at the body. A change of the
 * query string only (a filter) keeps the focus where it is.
 */
export function takeHeadingFocus(): boolean {
  const take = headingFocus;
  headingFocus = false;
  return take;
}

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

/** The question asked before leaving a page with unsaved edits (useLeaveGuard), or null. */
let leaveQuestion: string | null = null;

/**
 * Asks before the page is left while `active` (unsaved edits): a link or navigate() in the console
 * asks with `window.confirm`, closing or reloading the tab with the browser's own question, and the
 * browser's Back is undone when the person stays.
 */
export function useLeaveGuard(active: boolean, question: string): void {
  useEffect(() => {
    if (!active) return;
    leaveQuestion = question;
    const here = window.location.pathname + window.location.search;
    const onBeforeUnload = (event: BeforeUnloadEvent) => event.preventDefault();
    const onPopState = () => {
      if (leaveQuestion !== null && !window.confirm(leaveQuestion)) window.history.pushState(null, '', here);
      else leaveQuestion = null;
      emit();
    };
    window.addEventListener('beforeunload', onBeforeUnload);
    window.addEventListener('popstate', onPopState, { capture: true });
    return () => {
      leaveQuestion = null;
      window.removeEventListener('beforeunload', onBeforeUnload);
      window.removeEventListener('popstate', onPopState, { capture: true });
    };
  }, [active, question]);
}

/**
 * Goes to a page below /console. A new entry (not `replace`) asks first when the page has unsaved
 * edits, unless `leave` (the edits were just saved or deleted).
 */
export function navigate(to: string, options: { replace?: boolean; leave?: boolean } = {}): void {
  if (!options.replace && !options.leave && leaveQuestion !== null && !window.confirm(leaveQuestion)) return;
  leaveQuestion = null;
  const target = BASE + to;
  if (new URL(target, window.location.origin).pathname !== window.location.pathname) headingFocus = true;
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

/** Sets the document title (the focus moves to the page's heading: PageHeading, takeHeadingFocus). */
export function usePageTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Automation console`;
  }, [title]);
}
