/**
 * One automation: a form for its trigger and flow control, its steps as JSON (CodeMirror), and
 * Save, Publish, Unpublish, Rotate secret, Test and Delete. Writes carry the ETag of the version
 * the form was made from (If-Match): when someone else saved meanwhile (412), the page shows what
 * changed instead of overwriting it. The API's field errors are shown at the field they name.
 * The circuit breaker is a live setting beside the draft: its own form and its state, polled.
 */
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { lazy, Suspense, useEffect, useId, useState, type FormEvent, type ReactNode } from 'react';
import { api, ApiError, unwrap, unwrapWithEtag, type FieldViolation, type Schemas } from '../api/client';
import { ConfirmButton, CopyButton, DateTime, ErrorMessage, Loading, PageHeading } from '../components';
import { listLanes } from '../api/runs';
import { Link, navigate, useLeaveGuard, usePageTitle } from '../router';
import { hasRole, useSession } from '../session';
import { STARTER_STEPS } from '../starter';
import { NextRunsPreview, OVERLAPS, SchedulePanel, TIME_ZONES, type Overlap } from './Schedule';

const StepsEditor = lazy(() => import('../StepsEditor'));

type Automation = Schemas['Automation'];
type EventType = Schemas['EventTrigger']['types'][number];
type TriggerKind = 'incomingWebhook' | 'schedule' | 'event';

export const EVENT_TYPES: EventType[] = [
  'user.created',
  'user.updated',
  'grant.created',
  'grant.granted',
  'grant.revoked',
  'grant.expired',
  'grant.failed',
];

/** The form's state: every field as the inputs hold it (those of each trigger kind kept while another is chosen). */
interface Draft {
  displayName: string;
  description: string;
  kind: TriggerKind;
  authMethod: 'HMAC' | 'JWT';
  jwksUrl: string;
  allowedCidrs: string;
  enabled: boolean;
  scheduleSpec: 'cron' | 'interval';
  cron: string;
  interval: string;
  offset: string;
  timezone: string;
  overlap: Overlap;
  catchupWindow: string;
  eventTypes: EventType[];
  filter: string;
  concurrencyLimit: string;
  concurrencyKey: string;
  rateLimit: string;
  ratePeriod: string;
  rateKey: string;
  steps: string;
}

const EMPTY: Draft = {
  displayName: '',
  description: '',
  kind: 'incomingWebhook',
  authMethod: 'HMAC',
  jwksUrl: '',
  allowedCidrs: '',
  enabled: true,
  scheduleSpec: 'cron',
  cron: '0 9 * * MON-FRI',
  interval: '3600s',
  offset: '0s',
  timezone: 'UTC',
  overlap: 'SKIP',
  catchupWindow: '300s',
  eventTypes: [],
  filter: '',
  concurrencyLimit: '',
  concurrencyKey: '',
  rateLimit: '',
  ratePeriod: '60s',
  rateKey: '',
  steps: `${JSON.stringify(STARTER_STEPS, null, 2)}\n`,
};

function draftOf(a: Automation): Draft {
  const hook = a.trigger.incomingWebhook;
  const schedule = a.trigger.schedule;
  return {
    displayName: a.displayName,
    description: a.description,
    kind: schedule ? 'schedule' : a.trigger.event ? 'event' : 'incomingWebhook',
    scheduleSpec: schedule?.interval ? 'interval' : 'cron',
    cron: schedule?.cron ?? EMPTY.cron,
    interval: schedule?.interval ?? EMPTY.interval,
    offset: schedule?.offset ?? EMPTY.offset,
    timezone: schedule?.timezone ?? EMPTY.timezone,
    overlap: schedule?.overlap ?? EMPTY.overlap,
    catchupWindow: schedule?.catchupWindow ?? EMPTY.catchupWindow,
    eventTypes: a.trigger.event?.types ?? [],
    authMethod: hook?.authMethod ?? 'HMAC',
    jwksUrl: hook?.jwksUrl ?? '',
    allowedCidrs: (hook?.allowedCidrs ?? []).join('\n'),
    enabled: hook?.enabled ?? a.trigger.schedule?.enabled ?? a.trigger.event?.enabled ?? true,
    filter: a.filter ?? '',
    concurrencyLimit: a.concurrency ? String(a.concurrency.limit) : '',
    concurrencyKey: a.concurrency?.key ?? '',
    rateLimit: a.rateLimit ? String(a.rateLimit.limit) : '',
    ratePeriod: a.rateLimit?.period ?? '60s',
    rateKey: a.rateLimit?.key ?? '',
    steps: `${JSON.stringify(a.steps, null, 2)}\n`,
  };
}

/** The request body of a draft; a steps text that is not JSON is a field error of its own. */
function bodyOf(d: Draft): { body?: Schemas['CreateAutomationRequest']; violations: FieldViolation[] } {
  let steps: Schemas['AutomationStep'][];
  try {
    steps = JSON.parse(d.steps) as Schemas['AutomationStep'][];
  } catch (err) {
    return { violations: [{ field: 'steps', description: `not valid JSON: ${(err as Error).message}` }] };
  }
  let trigger: Schemas['AutomationTriggerInput'];
  if (d.kind === 'schedule') {
    trigger = {
      schedule: {
        ...(d.scheduleSpec === 'cron'
          ? { cron: d.cron.trim() }
          : { interval: d.interval.trim(), offset: d.offset.trim() || null }),
        timezone: d.timezone.trim() || 'UTC',
        overlap: d.overlap,
        catchupWindow: d.catchupWindow.trim(),
        enabled: d.enabled,
      },
    };
  } else if (d.kind === 'event') {
    trigger = { event: { types: EVENT_TYPES.filter((type) => d.eventTypes.includes(type)), enabled: d.enabled } };
  } else {
    trigger = {
      incomingWebhook:
        d.authMethod === 'JWT'
          ? { authMethod: 'JWT', jwksUrl: d.jwksUrl, allowedCidrs: lines(d.allowedCidrs), enabled: d.enabled }
          : { authMethod: 'HMAC', allowedCidrs: lines(d.allowedCidrs), enabled: d.enabled },
    };
  }
  // A schedule takes no filter, concurrency or rate limit (its overlap is its flow control): null removes them.
  const flow = d.kind !== 'schedule';
  return {
    violations: [],
    body: {
      displayName: d.displayName,
      description: d.description,
      trigger,
      steps,
      filter: (flow && d.filter) || null,
      concurrency:
        flow && d.concurrencyLimit ? { limit: Number(d.concurrencyLimit), key: d.concurrencyKey || null } : null,
      rateLimit:
        flow && d.rateLimit ? { limit: Number(d.rateLimit), period: d.ratePeriod, key: d.rateKey || null } : null,
    },
  };
}

function lines(text: string): string[] {
  return text
    .split(/[\s,]+/)
    .map((line) => line.trim())
    .filter(Boolean);
}

/** The form field a violation's path belongs to (paths may start with "automation."). */
function fieldOf(path: string, d: Draft): keyof Draft | 'other' {
  const p = path.replace(/^automation\./, '');
  if (p.startsWith('steps')) return 'steps';
  if (p.startsWith('displayName')) return 'displayName';
  if (p.startsWith('description')) return 'description';
  if (p.startsWith('trigger.incomingWebhook.jwksUrl')) return 'jwksUrl';
  if (p.startsWith('trigger.incomingWebhook.allowedCidrs')) return 'allowedCidrs';
  if (p.startsWith('trigger.incomingWebhook')) return 'authMethod';
  if (p.startsWith('trigger.schedule.cron')) return 'cron';
  if (p.startsWith('trigger.schedule.interval')) return 'interval';
  if (p.startsWith('trigger.schedule.offset')) return 'offset';
  if (p.startsWith('trigger.schedule.timezone')) return 'timezone';
  if (p.startsWith('trigger.schedule.overlap')) return 'overlap';
  if (p.startsWith('trigger.schedule.catchupWindow')) return 'catchupWindow';
  if (p.startsWith('trigger.schedule')) return d.scheduleSpec === 'cron' ? 'cron' : 'interval';
  if (p.startsWith('trigger.event')) return 'eventTypes';
  if (p.startsWith('trigger')) return 'kind';
  if (p.startsWith('filter')) return 'filter';
  if (p.startsWith('concurrency.key')) return 'concurrencyKey';
  if (p.startsWith('concurrency')) return 'concurrencyLimit';
  if (p.startsWith('rateLimit.key')) return 'rateKey';
  if (p.startsWith('rateLimit.period')) return 'ratePeriod';
  if (p.startsWith('rateLimit')) return 'rateLimit';
  return 'other';
}

const FIELD_LABELS: Record<keyof Omit<Draft, 'enabled'>, string> = {
  displayName: 'Display name',
  description: 'Description',
  kind: 'Trigger kind',
  authMethod: 'Auth method',
  jwksUrl: 'JWKS URL',
  allowedCidrs: 'Allowed source addresses',
  scheduleSpec: 'Schedule by',
  cron: 'Cron',
  interval: 'Interval',
  offset: 'Offset',
  timezone: 'Time zone',
  overlap: 'Overlap',
  catchupWindow: 'Catch-up window',
  eventTypes: 'Event types',
  filter: 'Filter',
  concurrencyLimit: 'Concurrency limit',
  concurrencyKey: 'Concurrency key',
  rateLimit: 'Rate limit',
  ratePeriod: 'Rate period',
  rateKey: 'Rate key',
  steps: 'Steps',
};

/** The fields whose values differ between two versions of the automation. */
function changedFields(mine: Automation, theirs: Automation): string[] {
  const a = draftOf(mine);
  const b = draftOf(theirs);
  const changed = (Object.keys(FIELD_LABELS) as Array<keyof typeof FIELD_LABELS>)
    .filter((key) => JSON.stringify(a[key]) !== JSON.stringify(b[key]))
    .map((key) => FIELD_LABELS[key]);
  if (a.enabled !== b.enabled) changed.push('Trigger enabled');
  if (mine.published !== theirs.published) changed.push('Published');
  return changed;
}

export default function AutomationPage({ id }: { id: string | null }) {
  usePageTitle(id ? 'Automation' : 'New automation');
  const queryClient = useQueryClient();
  const session = useSession();
  const superAdmin = hasRole(session.data, 'super_admin');
  const zonesId = useId();
  const loaded = useQuery({
    queryKey: ['automation', id],
    enabled: id !== null,
    queryFn: () => unwrapWithEtag(api.GET('/api/v1/automations/{id}', { params: { path: { id: id! } } })),
  });
  const [draft, setDraft] = useState<Draft>(EMPTY);
  /** The version the form was made from: its ETag is sent as If-Match. */
  const [base, setBase] = useState<{ automation: Automation; etag: string | null } | null>(null);
  const [violations, setViolations] = useState<FieldViolation[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [conflict, setConflict] = useState<{ changed: string[]; theirs: Automation; etag: string | null } | null>(null);
  const [secret, setSecret] = useState<{ value: string; previousExpiresAt?: string | null } | null>(null);
  const [saved, setSaved] = useState('');

  useEffect(() => {
    if (loaded.data && (!base || base.automation.id !== loaded.data.data.automation.id)) {
      setBase({ automation: loaded.data.data.automation, etag: loaded.data.etag });
      setDraft(draftOf(loaded.data.data.automation));
    }
  }, [loaded.data, base]);

  // Unsaved edits: leaving the page (a link, Back, closing the tab) asks first.
  const unsaved = JSON.stringify(draft) !== JSON.stringify(base ? draftOf(base.automation) : EMPTY);
  useLeaveGuard(unsaved, 'This automation has unsaved changes. Leave the page and lose them?');

  const set = <K extends keyof Draft>(key: K, value: Draft[K]) => setDraft((d) => ({ ...d, [key]: value }));
  const ifMatch = () => (base?.etag ? { 'If-Match': base.etag } : undefined);

  /** What the server answered to a write: the new version and ETag, or the reason it refused. */
  const accept = async (result: { automation: Automation; etag: string | null }, message: string) => {
    setBase(result);
    setDraft(draftOf(result.automation));
    setViolations([]);
    setError(null);
    setConflict(null);
    setSaved(message);
    queryClient.setQueryData(['automation', result.automation.id], {
      data: { automation: result.automation },
      etag: result.etag,
    });
    await queryClient.invalidateQueries({ queryKey: ['automations'] });
  };
  const refuse = async (err: unknown) => {
    setSaved('');
    if (err instanceof ApiError && err.status === 412 && id && base) {
      const current = await unwrapWithEtag(api.GET('/api/v1/automations/{id}', { params: { path: { id } } }));
      setConflict({
        changed: changedFields(base.automation, current.data.automation),
        theirs: current.data.automation,
        etag: current.etag,
      });
      setError(null);
      return;
    }
    setViolations(err instanceof ApiError ? err.fieldViolations : []);
    setError(err);
  };

  const save = async (event: FormEvent) => {
    event.preventDefault();
    const { body, violations: local } = bodyOf(draft);
    if (!body) {
      setViolations(local);
      setError(new Error('The steps are not valid JSON.'));
      return;
    }
    try {
      if (id === null) {
        // The steps are the person's JSON, checked by the API (its field errors are shown at the field).
        const created = await unwrapWithEtag(api.POST('/api/v1/automations', { body: body as never }));
        if (created.data.signingSecret) setSecret({ value: created.data.signingSecret });
        await accept({ automation: created.data.automation, etag: created.etag }, 'Created.');
        navigate(`/automations/${encodeURIComponent(created.data.automation.id)}`, { replace: true, leave: true });
        return;
      }
      const updated = await unwrapWithEtag(
        api.POST('/api/v1/automations/{id}', {
          params: { path: { id } },
          headers: ifMatch(),
          body: {
            automation: body as never,
            updateMask: 'displayName,description,trigger,steps,filter,concurrency,rateLimit',
          },
        }),
      );
      if (updated.data.signingSecret) setSecret({ value: updated.data.signingSecret });
      await accept({ automation: updated.data.automation, etag: updated.etag }, 'Saved.');
    } catch (err) {
      await refuse(err);
    }
  };

  const publish = async (which: 'publish' | 'unpublish') => {
    if (!id) return;
    try {
      const call =
        which === 'publish'
          ? api.POST('/api/v1/automations/{id}/publish', { params: { path: { id } }, headers: ifMatch() })
          : api.POST('/api/v1/automations/{id}/unpublish', { params: { path: { id } }, headers: ifMatch() });
      const result = await unwrapWithEtag(call);
      await accept(
        { automation: result.data.automation, etag: result.etag },
        which === 'publish' ? 'Published.' : 'Unpublished.',
      );
    } catch (err) {
      await refuse(err);
    }
  };

  if (id !== null && loaded.isPending) return <Loading label="Loading the automation" />;
  if (id !== null && loaded.isError) return <ErrorMessage error={loaded.error} />;
  const automation = base?.automation;
  const byField = (field: keyof Draft) => violations.filter((v) => fieldOf(v.field, draft) === field);
  const others = violations.filter((v) => fieldOf(v.field, draft) === 'other');
  const savedDraft = base ? draftOf(base.automation) : EMPTY;
  const scheduleEdited = (['scheduleSpec', 'cron', 'interval', 'offset', 'timezone', 'enabled'] as const).some(
    (key) => draft[key] !== savedDraft[key],
  );

  return (
    <>
      <PageHeading>{automation ? automation.displayName : 'New automation'}</PageHeading>
      {automation ? (
        <section aria-label="Listener" className="panel">
          <p>
            <strong>
              {automation.published
                ? `Published (version ${automation.publishedVersion ?? automation.version})`
                : 'Not published'}
            </strong>
            {' · '}draft version {automation.version}
          </p>
          {automation.trigger.incomingWebhook ? (
            <p>
              Listener URL: <code className="url">{automation.trigger.incomingWebhook.url}</code>{' '}
              <CopyButton value={automation.trigger.incomingWebhook.url} label="Copy URL" />
            </p>
          ) : (
            <p>Trigger: {automation.trigger.schedule ? 'schedule' : 'directory events'} (no listener)</p>
          )}
          <div className="actions">
            <button type="button" className="primary" onClick={() => void publish('publish')}>
              Publish
            </button>
            <ConfirmButton
              label="Unpublish"
              title="Unpublish this automation?"
              description="Deliveries to its listener are answered 404 until it is published again. Runs in progress continue."
              onConfirm={() => publish('unpublish')}
              disabled={!automation.published}
            />
            {automation.trigger.incomingWebhook?.authMethod === 'HMAC' ? (
              <RotateSecret
                id={automation.id}
                ifMatch={ifMatch}
                onRotated={(value, previousExpiresAt) => setSecret({ value, previousExpiresAt })}
              />
            ) : null}
            <Link to={`/runs?automation=${encodeURIComponent(automation.id)}`}>Runs of this automation</Link>
            <Link to={`/deliveries?automation=${encodeURIComponent(automation.id)}`}>Deliveries</Link>
          </div>
        </section>
      ) : null}
      {automation?.published && automation.trigger.schedule ? (
        <SchedulePanel
          automation={automation}
          canAct={superAdmin}
          ifMatch={ifMatch}
          onChanged={(result, message) => accept(result, message)}
        />
      ) : null}
      {automation?.concurrency ? <Lanes id={automation.id} /> : null}
      {automation ? (
        <CircuitBreaker
          automation={automation}
          ifMatch={ifMatch}
          onChanged={(result, message) => accept(result, message)}
          onRefused={refuse}
        />
      ) : null}
      {secret ? (
        <section aria-label="Signing secret" className="panel secret">
          <p>The signing secret is shown only now. Give it to the sender:</p>
          <p>
            <code className="secret-value">{secret.value}</code> <CopyButton value={secret.value} label="Copy secret" />
          </p>
          {secret.previousExpiresAt ? (
            <p className="muted">
              The previous secret keeps working until {new Date(secret.previousExpiresAt).toLocaleString()}.
            </p>
          ) : null}
        </section>
      ) : null}
      {conflict ? (
        <section role="alert" className="panel conflict" aria-label="Changed by someone else">
          <h2>Someone else changed this automation</h2>
          <p>
            Your changes were not saved. Since you opened it, these changed:{' '}
            {conflict.changed.join(', ') || 'its revision only'}.
          </p>
          <div className="actions">
            <button
              type="button"
              onClick={() => {
                setBase({ automation: conflict.theirs, etag: conflict.etag });
                setDraft(draftOf(conflict.theirs));
                setConflict(null);
              }}
            >
              Load their version
            </button>
            <button
              type="button"
              onClick={() => {
                setBase({ automation: conflict.theirs, etag: conflict.etag });
                setConflict(null);
              }}
            >
              Keep my edits
            </button>
          </div>
        </section>
      ) : null}
      <form onSubmit={(e) => void save(e)} className="automation-form" aria-label="Automation" noValidate>
        <Field label="Display name" errors={byField('displayName')}>
          {(props) => (
            <input {...props} required value={draft.displayName} onChange={(e) => set('displayName', e.target.value)} />
          )}
        </Field>
        <Field label="Description" errors={byField('description')}>
          {(props) => (
            <input {...props} value={draft.description} onChange={(e) => set('description', e.target.value)} />
          )}
        </Field>
        <fieldset>
          <legend>Trigger</legend>
          <Field label="Trigger kind" errors={byField('kind')}>
            {(props) => (
              <select {...props} value={draft.kind} onChange={(e) => set('kind', e.target.value as TriggerKind)}>
                <option value="incomingWebhook">Incoming webhook</option>
                <option value="schedule">Schedule</option>
                <option value="event">Event (directory changes)</option>
              </select>
            )}
          </Field>
          {draft.kind === 'incomingWebhook' ? (
            <>
              <Field label="Auth method" errors={byField('authMethod')}>
                {(props) => (
                  <select
                    {...props}
                    value={draft.authMethod}
                    onChange={(e) => set('authMethod', e.target.value as Draft['authMethod'])}
                  >
                    <option value="HMAC">HMAC (Webhook-Signature header)</option>
                    <option value="JWT">JWT (sender’s JWKS)</option>
                  </select>
                )}
              </Field>
              {draft.authMethod === 'JWT' ? (
                <Field label="JWKS URL" errors={byField('jwksUrl')}>
                  {(props) => (
                    <input
                      {...props}
                      type="url"
                      value={draft.jwksUrl}
                      onChange={(e) => set('jwksUrl', e.target.value)}
                    />
                  )}
                </Field>
              ) : null}
              <Field
                label="Allowed source addresses"
                hint="CIDR ranges, one per line; empty: any source."
                errors={byField('allowedCidrs')}
              >
                {(props) => (
                  <textarea
                    {...props}
                    rows={2}
                    value={draft.allowedCidrs}
                    onChange={(e) => set('allowedCidrs', e.target.value)}
                  />
                )}
              </Field>
            </>
          ) : null}
          {draft.kind === 'schedule' ? (
            <>
              <Field label="Schedule by" errors={byField('scheduleSpec')}>
                {(props) => (
                  <select
                    {...props}
                    value={draft.scheduleSpec}
                    onChange={(e) => set('scheduleSpec', e.target.value as Draft['scheduleSpec'])}
                  >
                    <option value="cron">Cron expression</option>
                    <option value="interval">Interval</option>
                  </select>
                )}
              </Field>
              {draft.scheduleSpec === 'cron' ? (
                <Field
                  label="Cron"
                  hint="Five fields (minute hour day-of-month month day-of-week), or @hourly, @daily, @weekly, @monthly, @yearly."
                  errors={byField('cron')}
                >
                  {(props) => (
                    <input
                      {...props}
                      className="mono"
                      spellCheck={false}
                      value={draft.cron}
                      onChange={(e) => set('cron', e.target.value)}
                    />
                  )}
                </Field>
              ) : (
                <div className="row">
                  <Field label="Interval" hint="Seconds, at least 1s, e.g. 3600s." errors={byField('interval')}>
                    {(props) => (
                      <input {...props} value={draft.interval} onChange={(e) => set('interval', e.target.value)} />
                    )}
                  </Field>
                  <Field label="Offset" hint="From 0s to less than the interval." errors={byField('offset')}>
                    {(props) => (
                      <input {...props} value={draft.offset} onChange={(e) => set('offset', e.target.value)} />
                    )}
                  </Field>
                </div>
              )}
              <div className="row">
                <Field label="Time zone" hint="An IANA name, e.g. Europe/Berlin." errors={byField('timezone')}>
                  {(props) => (
                    <input
                      {...props}
                      list={zonesId}
                      autoComplete="off"
                      value={draft.timezone}
                      onChange={(e) => set('timezone', e.target.value)}
                    />
                  )}
                </Field>
                <datalist id={zonesId}>
                  {TIME_ZONES.map((zone) => (
                    <option key={zone} value={zone} />
                  ))}
                </datalist>
                <Field
                  label="Catch-up window"
                  hint="After an outage, missed times within it run: 10s to 86400s."
                  errors={byField('catchupWindow')}
                >
                  {(props) => (
                    <input
                      {...props}
                      value={draft.catchupWindow}
                      onChange={(e) => set('catchupWindow', e.target.value)}
                    />
                  )}
                </Field>
              </div>
              <Field label="Overlap" hint="When a time comes while a run is open." errors={byField('overlap')}>
                {(props) => (
                  <select {...props} value={draft.overlap} onChange={(e) => set('overlap', e.target.value as Overlap)}>
                    {OVERLAPS.map((o) => (
                      <option key={o.value} value={o.value}>
                        {o.label}
                      </option>
                    ))}
                  </select>
                )}
              </Field>
              <NextRunsPreview automation={automation} timezone={draft.timezone} edited={scheduleEdited} />
            </>
          ) : null}
          {draft.kind === 'event' ? (
            <EventTypes
              value={draft.eventTypes}
              onChange={(types) => set('eventTypes', types)}
              errors={byField('eventTypes')}
            />
          ) : null}
          <label className="check">
            <input type="checkbox" checked={draft.enabled} onChange={(e) => set('enabled', e.target.checked)} />{' '}
            {draft.kind === 'schedule' ? 'Schedule enabled (off: paused)' : 'Trigger enabled'}
          </label>
        </fieldset>
        {draft.kind === 'schedule' ? (
          <p className="muted">
            A schedule takes no filter, concurrency or rate limit: its overlap is its flow control.
          </p>
        ) : (
          <fieldset>
            <legend>Flow control</legend>
            <Field
              label="Filter"
              hint="CEL over ctx.trigger; false: the event is recorded, no run starts."
              errors={byField('filter')}
            >
              {(props) => <input {...props} value={draft.filter} onChange={(e) => set('filter', e.target.value)} />}
            </Field>
            <div className="row">
              <Field label="Concurrency limit" hint="1 to 100; empty: no limit." errors={byField('concurrencyLimit')}>
                {(props) => (
                  <input
                    {...props}
                    inputMode="numeric"
                    value={draft.concurrencyLimit}
                    onChange={(e) => set('concurrencyLimit', e.target.value)}
                  />
                )}
              </Field>
              <Field label="Concurrency key" errors={byField('concurrencyKey')}>
                {(props) => (
                  <input
                    {...props}
                    value={draft.concurrencyKey}
                    onChange={(e) => set('concurrencyKey', e.target.value)}
                  />
                )}
              </Field>
            </div>
            <div className="row">
              <Field label="Rate limit" hint="Runs per period; empty: no limit." errors={byField('rateLimit')}>
                {(props) => (
                  <input
                    {...props}
                    inputMode="numeric"
                    value={draft.rateLimit}
                    onChange={(e) => set('rateLimit', e.target.value)}
                  />
                )}
              </Field>
              <Field label="Rate period" errors={byField('ratePeriod')}>
                {(props) => (
                  <input {...props} value={draft.ratePeriod} onChange={(e) => set('ratePeriod', e.target.value)} />
                )}
              </Field>
              <Field label="Rate key" errors={byField('rateKey')}>
                {(props) => <input {...props} value={draft.rateKey} onChange={(e) => set('rateKey', e.target.value)} />}
              </Field>
            </div>
          </fieldset>
        )}
        <StepsField value={draft.steps} onChange={(value) => set('steps', value)} errors={byField('steps')} />
        {others.length > 0 ? (
          <ul className="error">
            {others.map((v) => (
              <li key={v.field + v.description}>
                <code>{v.field}</code>: {v.description}
              </li>
            ))}
          </ul>
        ) : null}
        <ErrorMessage error={error} />
        {saved ? <p role="status">{saved}</p> : null}
        <div className="actions">
          <button type="submit" className="primary">
            Save
          </button>
          {automation ? (
            <ConfirmButton
              label="Delete automation"
              title={`Delete ${automation.displayName}?`}
              description="The automation and its listener are removed; deliveries to it are answered 404."
              onConfirm={async () => {
                await unwrap(
                  api.DELETE('/api/v1/automations/{id}', {
                    params: { path: { id: automation.id } },
                    headers: ifMatch(),
                  }),
                );
                await queryClient.invalidateQueries({ queryKey: ['automations'] });
                navigate('/automations', { leave: true });
              }}
            />
          ) : null}
        </div>
      </form>
      {automation ? <DryRun id={automation.id} draft={() => bodyOf(draft).body} /> : null}
    </>
  );
}

interface FieldProps {
  id: string;
  'aria-invalid'?: boolean;
  'aria-describedby'?: string;
}

/** A labelled input with its hint and the API's errors for it, tied by aria-describedby. */
function Field({
  label,
  hint,
  errors,
  children,
}: {
  label: string;
  hint?: string;
  errors: FieldViolation[];
  children: (props: FieldProps) => ReactNode;
}) {
  const id = useId();
  const described = [hint ? `${id}-hint` : '', errors.length ? `${id}-errors` : ''].filter(Boolean).join(' ');
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children({ id, 'aria-invalid': errors.length > 0 || undefined, 'aria-describedby': described || undefined })}
      {hint ? (
        <small id={`${id}-hint`} className="muted">
          {hint}
        </small>
      ) : null}
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </div>
  );
}

/** The event types as checkboxes, in a group named "Event types" described by the API's errors. */
function EventTypes({
  value,
  onChange,
  errors,
}: {
  value: EventType[];
  onChange: (types: EventType[]) => void;
  errors: FieldViolation[];
}) {
  const id = useId();
  return (
    <fieldset
      aria-describedby={`${id}-hint${errors.length ? ` ${id}-errors` : ''}`}
      className={errors.length ? 'invalid' : undefined}
    >
      <legend>Event types</legend>
      <small id={`${id}-hint`} className="muted">
        Each change of one of these types starts a run (at least one).
      </small>
      <div className="checks">
        {EVENT_TYPES.map((type) => (
          <label key={type} className="check">
            <input
              type="checkbox"
              checked={value.includes(type)}
              onChange={(e) => onChange(e.target.checked ? [...value, type] : value.filter((t) => t !== type))}
            />{' '}
            <code>{type}</code>
          </label>
        ))}
      </div>
      <FieldErrors id={`${id}-errors`} errors={errors} />
    </fieldset>
  );
}

function FieldErrors({ id, errors, always = false }: { id: string; errors: FieldViolation[]; always?: boolean }) {
  if (errors.length === 0 && !always) return null;
  return (
    <ul id={id} className="field-errors">
      {errors.map((v) => (
        <li key={v.field + v.description}>
          <code>{v.field.replace(/^automation\./, '')}</code>: {v.description}
        </li>
      ))}
    </ul>
  );
}

function StepsField({
  value,
  onChange,
  errors,
}: {
  value: string;
  onChange: (value: string) => void;
  errors: FieldViolation[];
}) {
  const id = useId();
  return (
    <div className="field">
      <span id={`${id}-label`} className="label">
        Steps (JSON)
      </span>
      <Suspense fallback={<Loading label="Loading the editor" />}>
        {/* The editor's attributes are set once: it is always described by its errors' list, empty or not. */}
        <StepsEditor
          value={value}
          onChange={onChange}
          labelledBy={`${id}-label`}
          describedBy={`${id}-errors`}
          invalid={errors.length > 0}
        />
      </Suspense>
      <FieldErrors id={`${id}-errors`} errors={errors} always />
    </div>
  );
}

function RotateSecret({
  id,
  ifMatch,
  onRotated,
}: {
  id: string;
  ifMatch: () => Record<string, string> | undefined;
  onRotated: (secret: string, previousExpiresAt: string | null) => void;
}) {
  const [hours, setHours] = useState('24');
  const fieldId = useId();
  return (
    <ConfirmButton
      label="Rotate secret"
      title="Rotate the signing secret?"
      description="A new secret is made and shown once. During the grace period a signature by either secret is accepted."
      onConfirm={async () => {
        const seconds = Math.round(Number(hours) * 3600);
        if (!Number.isFinite(seconds) || seconds < 0)
          throw new Error('The grace period is a number of hours, 0 to 168.');
        const result = await unwrap(
          api.POST('/api/v1/automations/{id}/trigger/rotate-secret', {
            params: { path: { id } },
            headers: ifMatch(),
            body: { gracePeriod: `${seconds}s` },
          }),
        );
        onRotated(result.signingSecret, result.previousSecretExpiresAt);
      }}
    >
      <label htmlFor={fieldId}>Grace period (hours)</label>
      <input id={fieldId} inputMode="decimal" value={hours} onChange={(e) => setHours(e.target.value)} />
    </ConfirmButton>
  );
}

/**
 * Test: the dry run of what the editor shows (unsaved edits included, sent as the request's
 * `automation`; nothing is saved) over a sample payload, step by step, without any effect.
 */
function DryRun({ id, draft }: { id: string; draft: () => Schemas['CreateAutomationRequest'] | undefined }) {
  const [payload, setPayload] = useState('{\n  "type": "user.created"\n}\n');
  const payloadId = useId();
  const test = useMutation({
    mutationFn: async () => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(payload);
      } catch (err) {
        throw new Error(`The payload is not valid JSON: ${(err as Error).message}`);
      }
      const automation = draft();
      if (!automation) throw new Error('The steps are not valid JSON: fix them to test what the editor shows.');
      return unwrap(
        api.POST('/api/v1/automations/{id}/test', { params: { path: { id } }, body: { payload: parsed, automation } }),
      );
    },
  });
  return (
    <section aria-labelledby={`${payloadId}-h`} className="panel">
      <h2 id={`${payloadId}-h`}>Test with a sample payload</h2>
      <label htmlFor={payloadId}>Sample payload (JSON)</label>
      <textarea id={payloadId} rows={5} className="mono" value={payload} onChange={(e) => setPayload(e.target.value)} />
      <div className="actions">
        <button type="button" onClick={() => test.mutate()} disabled={test.isPending}>
          Test
        </button>
      </div>
      <ErrorMessage error={test.error} />
      {test.data ? (
        <table>
          <caption>Dry run of the draft as the editor shows it (unsaved edits included)</caption>
          <thead>
            <tr>
              <th scope="col">Step</th>
              <th scope="col">Kind</th>
              <th scope="col">Would</th>
              <th scope="col">Output or error</th>
            </tr>
          </thead>
          <tbody>
            {test.data.steps.map((step) => (
              <tr key={step.id}>
                <td>{step.id}</td>
                <td>{step.kind}</td>
                <td>{step.status}</td>
                <td>
                  {step.error ? (
                    <span className="error">{step.error}</span>
                  ) : (
                    <code>{JSON.stringify(step.output)}</code>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}

/** The automation's lanes: each concurrency key with queued runs, its running and queued runs; polled while shown. */
function Lanes({ id }: { id: string }) {
  const lanes = useQuery({ queryKey: ['lanes', id], queryFn: () => listLanes(id), refetchInterval: 5_000 });
  const headingId = useId();
  return (
    <section aria-labelledby={headingId} className="panel">
      <h2 id={headingId}>Lanes</h2>
      <ErrorMessage error={lanes.error} />
      {lanes.isPending ? <Loading label="Loading lanes" /> : null}
      {lanes.data?.list.length === 0 ? <p className="muted">No key has queued runs.</p> : null}
      {lanes.data && lanes.data.list.length > 0 ? (
        <table>
          <caption className="visually-hidden">Concurrency keys with queued runs</caption>
          <thead>
            <tr>
              <th scope="col">Key</th>
              <th scope="col">Running</th>
              <th scope="col">Queued</th>
              <th scope="col">Oldest queued</th>
            </tr>
          </thead>
          <tbody>
            {lanes.data.list.map(({ lane }) => (
              <tr key={lane.key}>
                <th scope="row">
                  <code>{lane.key === '' ? '(one key)' : lane.key}</code>
                </th>
                <td>{lane.running}</td>
                <td>{lane.queued}</td>
                <td>
                  <DateTime value={lane.oldestQueuedAt} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {lanes.data?.nextPageToken ? <p className="muted">More keys have queued runs than are shown here.</p> : null}
    </section>
  );
}

/**
 * The circuit breaker: its setting (a live one, saved on its own with If-Match) and its state, polled
 * while shown. An open breaker holds paused runs until a person resumes or cancels them, with a reason.
 */
function CircuitBreaker({
  automation,
  ifMatch,
  onChanged,
  onRefused,
}: {
  automation: Automation;
  ifMatch: () => Record<string, string> | undefined;
  onChanged: (result: { automation: Automation; etag: string | null }, message: string) => Promise<void>;
  onRefused: (err: unknown) => Promise<void>;
}) {
  const queryClient = useQueryClient();
  const headingId = useId();
  const maxRunsId = useId();
  const periodId = useId();
  const [maxRuns, setMaxRuns] = useState(automation.circuitBreaker ? String(automation.circuitBreaker.maxRuns) : '');
  const [period, setPeriod] = useState(automation.circuitBreaker?.period ?? '3600s');
  const [violations, setViolations] = useState<FieldViolation[]>([]);
  const [outcome, setOutcome] = useState('');
  const state = useQuery({
    queryKey: ['breaker', automation.id],
    queryFn: async () =>
      (await unwrap(api.GET('/api/v1/automations/{id}', { params: { path: { id: automation.id } } }))).automation
        .breaker ?? null,
    refetchInterval: 3_000,
  });
  const breaker = state.data;

  const write = async (which: 'set' | 'remove') => {
    setOutcome('');
    try {
      const call =
        which === 'set'
          ? api.PUT('/api/v1/automations/{id}/circuit-breaker', {
              params: { path: { id: automation.id } },
              headers: ifMatch(),
              body: { maxRuns: Number(maxRuns), period },
            })
          : api.DELETE('/api/v1/automations/{id}/circuit-breaker', {
              params: { path: { id: automation.id } },
              headers: ifMatch(),
            });
      const result = await unwrapWithEtag(call);
      setViolations([]);
      if (which === 'remove') setMaxRuns('');
      await onChanged(
        { automation: result.data.automation, etag: result.etag },
        which === 'set' ? 'Circuit breaker set.' : 'Circuit breaker removed.',
      );
      await queryClient.invalidateQueries({ queryKey: ['breaker', automation.id] });
    } catch (err) {
      setViolations(err instanceof ApiError ? err.fieldViolations : []);
      await onRefused(err);
    }
  };

  /** Resume or cancel every paused run; the answer's count is announced. */
  const act = async (which: 'resume' | 'cancel', reason: string) => {
    if (which === 'cancel' && reason.trim() === '') throw new Error('A reason is required to cancel the paused runs.');
    const body = { reason };
    const path = { path: { id: automation.id } };
    const message =
      which === 'resume'
        ? `Resumed ${(await unwrap(api.POST('/api/v1/automations/{id}/breaker/resume', { params: path, body }))).resumed} paused runs.`
        : `Canceled ${(await unwrap(api.POST('/api/v1/automations/{id}/breaker/cancel', { params: path, body }))).canceled} paused runs.`;
    setOutcome(message);
    await queryClient.invalidateQueries({ queryKey: ['breaker', automation.id] });
    await queryClient.invalidateQueries({ queryKey: ['runs'] });
  };

  const byField = (name: string) => violations.filter((v) => v.field.replace(/^automation\./, '').startsWith(name));
  return (
    <section aria-labelledby={headingId} className="panel">
      <h2 id={headingId}>Circuit breaker</h2>
      <p className="muted">
        Past this many runs in the period, new runs are paused until a person resumes or cancels them. Applies at once,
        without a publish.
      </p>
      <form
        aria-label="Circuit breaker setting"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          void write('set');
        }}
      >
        <div className="row">
          <div className="field">
            <label htmlFor={maxRunsId}>Maximum runs</label>
            <input
              id={maxRunsId}
              inputMode="numeric"
              value={maxRuns}
              onChange={(e) => setMaxRuns(e.target.value)}
              aria-invalid={byField('maxRuns').length > 0 || undefined}
              aria-describedby={byField('maxRuns').length > 0 ? `${maxRunsId}-errors` : undefined}
            />
            <FieldErrors id={`${maxRunsId}-errors`} errors={byField('maxRuns')} />
          </div>
          <div className="field">
            <label htmlFor={periodId}>Period</label>
            <input
              id={periodId}
              value={period}
              onChange={(e) => setPeriod(e.target.value)}
              aria-describedby={`${periodId}-hint${byField('period').length > 0 ? ` ${periodId}-errors` : ''}`}
              aria-invalid={byField('period').length > 0 || undefined}
            />
            <small id={`${periodId}-hint`} className="muted">
              Seconds, from 60s to 2592000s.
            </small>
            <FieldErrors id={`${periodId}-errors`} errors={byField('period')} />
          </div>
        </div>
        <div className="actions">
          {/* Not named "Save": that is the automation form's button in the console's contract. */}
          <button type="submit">Set circuit breaker</button>
          <ConfirmButton
            label="Remove circuit breaker"
            title="Remove the circuit breaker?"
            description="New runs are no longer counted or paused. Runs it paused stay paused until resumed or canceled."
            onConfirm={() => write('remove')}
            disabled={!automation.circuitBreaker}
          />
        </div>
      </form>
      <ErrorMessage error={state.error} />
      {breaker ? (
        <p role="status">
          {breaker.state === 'OPEN' ? (
            <>
              <strong>Breaker OPEN</strong> since <DateTime value={breaker.trippedAt} />: {breaker.pausedRuns ?? 0}{' '}
              paused runs.
            </>
          ) : (
            <>
              <strong>Breaker CLOSED</strong>: {breaker.runsInPeriod ?? 0} runs in the period.
            </>
          )}
        </p>
      ) : (
        <p className="muted">No circuit breaker.</p>
      )}
      {breaker?.state === 'OPEN' || (breaker?.pausedRuns ?? 0) > 0 ? (
        <div className="actions">
          <ReasonButton
            label="Resume paused runs"
            title="Resume the paused runs?"
            description="Every paused run starts, in the order its event was accepted; the breaker closes and counts from zero."
            danger={false}
            onConfirm={(reason) => act('resume', reason)}
          />
          <ReasonButton
            label="Cancel paused runs"
            title="Cancel the paused runs?"
            description="Every paused run is canceled (no step runs) and the breaker closes."
            onConfirm={(reason) => act('cancel', reason)}
          />
        </div>
      ) : null}
      {outcome ? <p role="status">{outcome}</p> : null}
    </section>
  );
}

/** A ConfirmButton whose dialog asks for a reason (kept in the audit trail). */
function ReasonButton({
  label,
  title,
  description,
  danger = true,
  onConfirm,
}: {
  label: string;
  title: string;
  description: string;
  danger?: boolean;
  onConfirm: (reason: string) => Promise<unknown>;
}) {
  const [reason, setReason] = useState('');
  const fieldId = useId();
  return (
    <ConfirmButton
      label={label}
      title={title}
      description={description}
      danger={danger}
      onConfirm={() => onConfirm(reason.trim())}
    >
      <label htmlFor={fieldId}>Reason</label>
      <input id={fieldId} value={reason} maxLength={500} onChange={(e) => setReason(e.target.value)} />
    </ConfirmButton>
  );
}
