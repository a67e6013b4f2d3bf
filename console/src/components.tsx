/** Shared pieces of the console's pages. */
import * as Dialog from '@radix-ui/react-dialog';
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { ApiError } from './api/client';
import { takeHeadingFocus } from './router';

/** The page's h1; after a change of page it takes the focus (the router says when). */
export function PageHeading({ children, actions }: { children: ReactNode; actions?: ReactNode }) {
  const ref = useRef<HTMLHeadingElement>(null);
  useEffect(() => {
    if (takeHeadingFocus()) ref.current?.focus();
  }, []);
  return (
    <div className="page-heading">
      <h1 ref={ref} tabIndex={-1}>
        {children}
      </h1>
      {actions ? <div className="actions">{actions}</div> : null}
    </div>
  );
}

/** An error answer, announced to screen readers. */
export function ErrorMessage({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof Error ? error.message : String(error);
  const status = error instanceof ApiError ? ` (HTTP ${error.status})` : '';
  return (
    <p className="error" role="alert">
      {message}
      {status}
    </p>
  );
}

export function Loading({ label = 'Loading' }: { label?: string }) {
  return (
    <p className="muted" role="status">
      {label}…
    </p>
  );
}

/** Copies a value to the clipboard and says so in a live region. */
export function CopyButton({ value, label }: { value: string; label: string }) {
  const [copied, setCopied] = useState<'' | 'copied' | 'failed'>('');
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied('copied');
    } catch {
      setCopied('failed');
    }
  };
  return (
    <>
      <button type="button" onClick={() => void copy()}>
        {label}
      </button>
      <span role="status" className="muted">
        {copied === 'copied' ? 'Copied.' : copied === 'failed' ? 'Copy failed: select the text and copy it.' : ''}
      </span>
    </>
  );
}

/**
 * A destructive action: the button opens a dialog that says what will happen; "Confirm" does it,
 * "Back" (or Escape) closes it with nothing done.
 * `children` are extra fields of the dialog (a reason, a grace period).
 */
export function ConfirmButton({
  label,
  title,
  description,
  onConfirm,
  children,
  disabled,
  danger = true,
}: {
  label: string;
  title: string;
  description: ReactNode;
  onConfirm: () => Promise<unknown>;
  children?: ReactNode;
  disabled?: boolean;
  danger?: boolean;
}) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const confirm = async () => {
    setBusy(true);
    setError(null);
    try {
      await onConfirm();
      setOpen(false);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <Dialog.Root
      open={open}
      onOpenChange={(next) => {
        setOpen(next);
        if (next) setError(null);
      }}
    >
      <Dialog.Trigger asChild>
        <button type="button" className={danger ? 'danger' : undefined} disabled={disabled}>
          {label}
        </button>
      </Dialog.Trigger>
      <Dialog.Portal>
        <Dialog.Overlay className="overlay" />
        <Dialog.Content className="dialog">
          <Dialog.Title>{title}</Dialog.Title>
          <Dialog.Description asChild>
            <div>{description}</div>
          </Dialog.Description>
          {children}
          <ErrorMessage error={error} />
          <div className="actions">
            {/* "Back", never "Cancel": a dialog that cancels runs would otherwise ask with two "Cancel"s. */}
            <Dialog.Close asChild>
              <button type="button">Back</button>
            </Dialog.Close>
            <button
              type="button"
              className={danger ? 'danger' : 'primary'}
              disabled={busy}
              onClick={() => void confirm()}
            >
              Confirm
            </button>
          </div>
        </Dialog.Content>
      </Dialog.Portal>
    </Dialog.Root>
  );
}

const STATUS_CLASS: Record<string, string> = {
  COMPLETED: 'ok',
  DONE: 'ok',
  RUNNING: 'info',
  WAITING: 'info',
  WAITING_FOR_APPROVAL: 'warn',
  QUEUED: 'warn',
  PAUSED: 'warn',
  PENDING: 'muted',
  NOT_RUN: 'muted',
  SKIPPED: 'muted',
  FAILED: 'bad',
  CANCELED: 'muted',
  TERMINATED: 'bad',
};

export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge ${STATUS_CLASS[status] ?? 'muted'}`}>{status}</span>;
}

/** A time in the browser's zone, the zone named (`4 Dec 2026, 20:03:29 UTC`). */
export function DateTime({ value }: { value: string | null | undefined }) {
  if (!value) return <span className="muted">—</span>;
  const date = new Date(value);
  return (
    <time dateTime={value} title={value}>
      {date.toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'long' })}
    </time>
  );
}

/** "in 5 minutes", "3 hours ago". */
export function relative(value: string, now = Date.now()): string {
  const seconds = Math.round((new Date(value).getTime() - now) / 1000);
  const format = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto' });
  // Days from two on: "in 36 hours" says more than "tomorrow".
  const units: Array<[Intl.RelativeTimeFormatUnit, number, number]> = [
    ['day', 86_400, 2 * 86_400],
    ['hour', 3_600, 3_600],
    ['minute', 60, 60],
  ];
  for (const [unit, size, from] of units)
    if (Math.abs(seconds) >= from) return format.format(Math.round(seconds / size), unit);
  return format.format(seconds, 'second');
}

export function duration(start: string | null | undefined, end: string | null | undefined): string {
  if (!start) return '';
  const ms = (end ? new Date(end).getTime() : Date.now()) - new Date(start).getTime();
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return `${Math.floor(ms / 60_000)} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** The time now, refreshed every `everyMs` while `live` (a running clock for open runs' durations). */
export function useNow(live: boolean, everyMs = 1000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    if (!live) return;
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [live, everyMs]);
  return now;
}

/** How long from `start` to `end`; without an end, to now, counting while it is shown. */
export function Duration({ start, end }: { start: string; end: string | null | undefined }) {
  const now = useNow(!end);
  return <>{duration(start, end ?? new Date(now).toISOString())}</>;
}

/** "Load more" for a paginated list. */
export function MoreButton({ hasMore, loading, onMore }: { hasMore: boolean; loading: boolean; onMore: () => void }) {
  if (!hasMore) return null;
  return (
    <button type="button" onClick={onMore} disabled={loading}>
      Load more
    </button>
  );
}
