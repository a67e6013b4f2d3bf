/**
 * A schedule automation's pieces on its page: the next times as the API computes them (the form's
 * preview, in the chosen time zone and the browser's), and the Schedule panel of a published one —
 * Active or Paused, next runs, last run, and Pause schedule / Resume schedule, Run now and Backfill
 * (super_admin only). Nothing here computes a cron expression: the times are the API's `schedule`.
 */
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, unwrap, unwrapWithEtag, type Schemas } from '../api/client';
import { ConfirmButton, DateTime, ErrorMessage, relative } from '../components';
import { Link } from '../router';

type Automation = Schemas['Automation'];
type ScheduleTrigger = Schemas['ScheduleTrigger'];
export type Overlap = ScheduleTrigger['overlap'];

export const OVERLAPS: Array<{ value: Overlap; label: string }> = [
  { value: 'SKIP', label: 'SKIP: drop a time while a run is open' },
  { value: 'BUFFER_ONE', label: 'BUFFER_ONE: run one afterwards' },
  { value: 'BUFFER_ALL', label: 'BUFFER_ALL: run them all afterwards' },
  { value: 'CANCEL_OTHER', label: 'CANCEL_OTHER: cancel the open run' },
  { value: 'TERMINATE_OTHER', label: 'TERMINATE_OTHER: terminate the open run' },
  { value: 'ALLOW_ALL', label: 'ALLOW_ALL: run side by side' },
];

export const BROWSER_ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone;

/** The IANA zones this browser knows (the time zone field's suggestions). */
export const TIME_ZONES: string[] = (() => {
  try {
    return (Intl as unknown as { supportedValuesOf(key: string): string[] }).supportedValuesOf('timeZone');
  } catch {
    return ['UTC'];
  }
})();

/** The API's schedule state of a published schedule automation (null when absent), polled while shown. */
export function useScheduleState(id: string | undefined, active: boolean) {
  return useQuery({
    queryKey: ['schedule', id],
    enabled: !!id && active,
    queryFn: async () =>
      (await unwrap(api.GET('/api/v1/automations/{id}', { params: { path: { id: id! } } }))).automation.schedule ??
      null,
    refetchInterval: 5_000,
  });
}

/** A time in a named zone ("Mon, 7 Dec 2026, 09:00:00 CET"); the zone as given when the browser does not know it. */
export function inZone(value: string, timeZone: string): string {
  const options: Intl.DateTimeFormatOptions = { dateStyle: 'medium', timeStyle: 'long' };
  try {
    return new Date(value).toLocaleString(undefined, { ...options, timeZone });
  } catch {
    return `${new Date(value).toLocaleString(undefined, options)} (${timeZone} is not a zone this browser knows)`;
  }
}

/**
 * The form's preview of the next five times: the API's `schedule.nextRuns` of the saved, published
 * schedule, in the chosen zone and the browser's. A draft shows where the preview will be.
 */
export function NextRunsPreview({
  automation,
  timezone,
  edited,
}: {
  automation: Automation | undefined;
  timezone: string;
  edited: boolean;
}) {
  const saved = automation?.trigger.schedule;
  const live = !!automation && automation.published && !!saved;
  const state = useScheduleState(automation?.id, live);
  const zone = timezone.trim() || 'UTC';
  let body;
  if (!live) {
    body = (
      <p className="muted">
        The next five times appear here after saving and publishing: the service computes them (in the time zone above).
      </p>
    );
  } else if (state.data === undefined) {
    body = state.error ? <ErrorMessage error={state.error} /> : <p className="muted">Reading the next times…</p>;
  } else if (state.data === null) {
    body = <p className="muted">The next times are not known now (the workflow engine did not answer).</p>;
  } else if (state.data.nextRuns.length === 0) {
    body = <p className="muted">No next times: the schedule is paused.</p>;
  } else {
    body = (
      <table>
        <caption className="visually-hidden">The next five times of the saved schedule</caption>
        <thead>
          <tr>
            <th scope="col">In {zone}</th>
            <th scope="col">In your time zone ({BROWSER_ZONE})</th>
          </tr>
        </thead>
        <tbody>
          {state.data.nextRuns.map((at) => (
            <tr key={at}>
              <td>{inZone(at, zone)}</td>
              <td>
                <time dateTime={at}>{inZone(at, BROWSER_ZONE)}</time>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    );
  }
  return (
    <div className="field">
      <span className="label">Next five times</span>
      {live && edited ? (
        <p className="muted">These are the saved schedule’s times: save to see those of your edits.</p>
      ) : null}
      {body}
    </div>
  );
}

/** The seconds of a duration as the API writes it ("3600s"), or null. */
function seconds(value: string | undefined): number | null {
  const m = /^(\d+(?:\.\d+)?)s$/.exec(value ?? '');
  return m ? Number(m[1]) : null;
}

/**
 * How many times of an interval schedule fall in [start, end): the API's rule, `n × interval +
 * offset` from the Unix epoch. Null for a cron schedule (the API counts those when it answers).
 */
export function intervalCount(trigger: ScheduleTrigger, start: Date, end: Date): number | null {
  const every = seconds(trigger.interval);
  if (!every) return null;
  const interval = every * 1000;
  const offset = (seconds(trigger.offset) ?? 0) * 1000;
  const first = Math.ceil((start.getTime() - offset) / interval);
  const after = Math.ceil((end.getTime() - offset) / interval);
  return Math.max(0, after - first);
}

/** "2026-12-03T19:05" in the browser's time zone (a datetime-local input's value). */
function localInput(date: Date): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}T${pad(date.getHours())}:${pad(date.getMinutes())}`;
}

/** The trigger input of a stored schedule with `enabled` changed (the update's whole trigger). */
function withEnabled(trigger: ScheduleTrigger, enabled: boolean): Schemas['ScheduleTriggerInput'] {
  return {
    ...(trigger.cron ? { cron: trigger.cron } : { interval: trigger.interval, offset: trigger.offset ?? null }),
    timezone: trigger.timezone,
    overlap: trigger.overlap,
    catchupWindow: trigger.catchupWindow,
    enabled,
  };
}

/**
 * The Schedule panel of a published schedule automation: its state from the API (polled), and for
 * a super_admin Pause schedule / Resume schedule (a trigger update with the page's If-Match),
 * Run now and Backfill. Each outcome is said in a polite live region.
 */
export function SchedulePanel({
  automation,
  canAct,
  ifMatch,
  onChanged,
}: {
  automation: Automation;
  canAct: boolean;
  ifMatch: () => Record<string, string> | undefined;
  onChanged: (result: { automation: Automation; etag: string | null }, message: string) => Promise<void>;
}) {
  const queryClient = useQueryClient();
  const headingId = useId();
  const trigger = automation.trigger.schedule!;
  const state = useScheduleState(automation.id, true);
  const paused = state.data ? state.data.paused : !trigger.enabled;
  const [outcome, setOutcome] = useState<{ message: string; executionId?: string } | null>(null);
  const [runError, setRunError] = useState<unknown>(null);
  const [running, setRunning] = useState(false);
  const reread = () => queryClient.invalidateQueries({ queryKey: ['schedule', automation.id] });

  const setEnabled = async (enabled: boolean) => {
    const result = await unwrapWithEtag(
      api.POST('/api/v1/automations/{id}', {
        params: { path: { id: automation.id } },
        headers: ifMatch(),
        body: { automation: { trigger: { schedule: withEnabled(trigger, enabled) } } as never, updateMask: 'trigger' },
      }),
    );
    // The outcome is said here, not in the form's status too.
    await onChanged({ automation: result.data.automation, etag: result.etag }, '');
    await reread();
    setOutcome({ message: enabled ? 'Schedule resumed.' : 'Schedule paused: its times do not run until resumed.' });
  };

  // Not `disabled` while it runs: a disabled button would drop the keyboard's focus.
  const runNow = async () => {
    if (running) return;
    setRunning(true);
    setRunError(null);
    setOutcome(null);
    try {
      const { executionId } = await unwrap(
        api.POST('/api/v1/automations/{id}/schedule/trigger', { params: { path: { id: automation.id } } }),
      );
      setOutcome({ message: 'Run started.', executionId });
      await reread();
      await queryClient.invalidateQueries({ queryKey: ['runs'] });
    } catch (err) {
      setRunError(err);
    } finally {
      setRunning(false);
    }
  };

  return (
    <section aria-labelledby={headingId} className="panel">
      <h2 id={headingId}>Schedule</h2>
      <dl className="facts">
        <dt>State</dt>
        <dd>
          <span className={`badge ${paused ? 'warn' : 'ok'}`}>{paused ? 'Paused' : 'Active'}</span>
        </dd>
        <dt>Spec</dt>
        <dd>
          <code>{trigger.cron ?? `every ${trigger.interval}${trigger.offset ? ` + ${trigger.offset}` : ''}`}</code>
          <span className="muted">
            in {trigger.timezone}, overlap {trigger.overlap}
          </span>
        </dd>
        <dt>Last run</dt>
        <dd>
          {state.data?.lastRunAt ? (
            <>
              <DateTime value={state.data.lastRunAt} />
              <span className="muted">{relative(state.data.lastRunAt)}</span>
            </>
          ) : (
            <span className="muted">none yet</span>
          )}
        </dd>
      </dl>
      <h3>Next runs</h3>
      <ErrorMessage error={state.error} />
      {state.data === null ? (
        <p className="muted">Not known now: the workflow engine did not answer.</p>
      ) : state.data && state.data.nextRuns.length === 0 ? (
        <p className="muted">None while paused.</p>
      ) : state.data ? (
        <ol className="next-runs" aria-label="Next runs">
          {state.data.nextRuns.map((at) => (
            <li key={at}>
              <time dateTime={at}>{inZone(at, BROWSER_ZONE)}</time> <span className="muted">({relative(at)})</span>
            </li>
          ))}
        </ol>
      ) : (
        <p className="muted">Reading…</p>
      )}
      {canAct ? (
        <div className="actions">
          {/* One button whose name flips: the dialog gives the focus back to it after either. */}
          <ConfirmButton
            label={paused ? 'Resume schedule' : 'Pause schedule'}
            title={paused ? 'Resume this schedule?' : 'Pause this schedule?'}
            description={
              paused
                ? 'Its next times run again. Times that were due while it was paused never run.'
                : 'No time runs until it is resumed, and times due meanwhile never run (even after a resume). Run now and Backfill still work.'
            }
            danger={!paused}
            onConfirm={() => setEnabled(paused)}
          />
          <button type="button" className="primary" onClick={() => void runNow()} aria-disabled={running || undefined}>
            Run now
          </button>
          <Backfill automation={automation} trigger={trigger} onDone={(message) => setOutcome({ message })} />
        </div>
      ) : (
        <p className="muted">A super_admin can pause, resume, run or backfill this schedule.</p>
      )}
      <ErrorMessage error={runError} />
      <p role="status" aria-live="polite">
        {outcome ? (
          <>
            {outcome.message}{' '}
            {outcome.executionId ? (
              <Link to={`/runs/${encodeURIComponent(outcome.executionId)}`}>Open run {outcome.executionId}</Link>
            ) : null}
          </>
        ) : null}
      </p>
    </section>
  );
}

/**
 * Backfill: a dialog with the range (start inclusive, end exclusive, in the browser's time zone)
 * and an overlap; it says how many times the range holds (an interval's, counted by the API's rule)
 * or that the API counts them, then runs them; a 400 (range too long, end in the future) is shown in it.
 */
function Backfill({
  automation,
  trigger,
  onDone,
}: {
  automation: Automation;
  trigger: ScheduleTrigger;
  onDone: (message: string) => void;
}) {
  const queryClient = useQueryClient();
  const startId = useId();
  const endId = useId();
  const overlapId = useId();
  const [range, setRange] = useState(() => {
    const end = new Date();
    end.setSeconds(0, 0);
    return { start: localInput(new Date(end.getTime() - 3_600_000)), end: localInput(end) };
  });
  const [overlap, setOverlap] = useState<Overlap | ''>('');
  const start = new Date(range.start);
  const end = new Date(range.end);
  const valid = !Number.isNaN(start.getTime()) && !Number.isNaN(end.getTime());
  const count = valid ? intervalCount(trigger, start, end) : null;
  let matched: string;
  if (!valid) matched = 'Choose a start and an end.';
  else if (start >= end) matched = 'The start must be before the end.';
  else if (count !== null)
    matched = `This range holds ${count} ${count === 1 ? 'time' : 'times'} of the schedule (every ${trigger.interval}${
      count > 1000 ? '): more than the 1,000 a backfill may run' : ')'
    }.`;
  else
    matched =
      'The service counts the cron’s times in this range when it runs: at most 1,000, else it refuses and says how many.';
  return (
    <ConfirmButton
      label="Backfill"
      title="Backfill a past range?"
      danger={false}
      description={
        <>
          <p>
            Every time of the schedule from the start (included) to the end (excluded) runs now, as a backfill run. A
            time that already ran is skipped and counted as skipped. Times are in your time zone ({BROWSER_ZONE}); the
            end may not be in the future.
          </p>
          <p role="status">
            <strong>{matched}</strong>
          </p>
        </>
      }
      onConfirm={async () => {
        if (!valid) throw new Error('Choose a start and an end.');
        const result = await unwrap(
          api.POST('/api/v1/automations/{id}/schedule/backfill', {
            params: { path: { id: automation.id } },
            body: { startAt: start.toISOString(), endAt: end.toISOString(), ...(overlap ? { overlap } : {}) },
          }),
        );
        onDone(
          `Backfill: started ${result.started}, skipped ${result.skipped} (${result.skipped === 1 ? 'a time' : 'times'} that already ran).`,
        );
        await queryClient.invalidateQueries({ queryKey: ['schedule', automation.id] });
        await queryClient.invalidateQueries({ queryKey: ['runs'] });
      }}
    >
      <div className="row">
        <div className="field">
          <label htmlFor={startId}>Start</label>
          <input
            id={startId}
            type="datetime-local"
            value={range.start}
            onChange={(e) => setRange((r) => ({ ...r, start: e.target.value }))}
          />
        </div>
        <div className="field">
          <label htmlFor={endId}>End</label>
          <input
            id={endId}
            type="datetime-local"
            value={range.end}
            onChange={(e) => setRange((r) => ({ ...r, end: e.target.value }))}
          />
        </div>
      </div>
      <div className="field">
        <label htmlFor={overlapId}>Overlap</label>
        <select id={overlapId} value={overlap} onChange={(e) => setOverlap(e.target.value as Overlap | '')}>
          <option value="">The schedule’s ({trigger.overlap})</option>
          {OVERLAPS.map((o) => (
            <option key={o.value} value={o.value}>
              {o.value === 'ALLOW_ALL' ? 'ALLOW_ALL: start them together' : `${o.value}: one after another`}
            </option>
          ))}
        </select>
      </div>
    </ConfirmButton>
  );
}
