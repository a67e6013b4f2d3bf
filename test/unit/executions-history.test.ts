/**
 * The executions view's history reading (`stepsFromHistory`), on histories the recorder took from
 * real runs: an ownership made by its local first attempt, and one whose first attempt failed, the
 * timer before the next attempt, then the regular activity. In 0.4.0 the step evaluated its fields
 * in a local activity of its own first; from 0.5.0 the effect evaluates them itself, so nothing of
 * the step comes before its effect's marker.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { HISTORIES_DIR, historyFromJson } from '../../src/temporal/history-replay';
import { stepsFromHistory } from '../../src/temporal/run-history';
import type { StepDefinition } from '../../src/contract/run';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

function events(release: string, name: string): HistoryEvent[] {
  return (
    historyFromJson(JSON.parse(fs.readFileSync(path.join(HISTORIES_DIR, release, `${name}.history.json`), 'utf8')))
      .events ?? []
  );
}

/** The history's events up to and including the first one of `type`. */
function through(
  all: HistoryEvent[],
  type: 'TIMER_STARTED' | 'TIMER_FIRED' | 'ACTIVITY_TASK_SCHEDULED' | 'ACTIVITY_TASK_COMPLETED',
): HistoryEvent[] {
  const wanted = temporal.api.enums.v1.EventType[`EVENT_TYPE_${type}`];
  const index = all.findIndex((event) => event.eventType === wanted);
  if (index < 0) throw new Error(`no ${type} event`);
  return all.slice(0, index + 1);
}

/** The same history, as if the version had had `extra` steps after its own (the loaded-version marker rewritten). */
function withMoreSteps(all: HistoryEvent[], extra: StepDefinition[]): HistoryEvent[] {
  return all.map((event) => {
    const result = event.markerRecordedEventAttributes?.details?.result?.payloads?.[0];
    const version = result
      ? (defaultPayloadConverter.fromPayload(result as never) as { steps?: StepDefinition[] })
      : undefined;
    if (!version?.steps) return event;
    const payload = defaultPayloadConverter.toPayload({ ...version, steps: [...version.steps, ...extra] });
    const details = { ...event.markerRecordedEventAttributes!.details, result: { payloads: [payload] } };
    return { ...event, markerRecordedEventAttributes: { ...event.markerRecordedEventAttributes, details } };
  });
}

describe.each(['0.4.0', '0.5.0'])('executions view from the history (%s)', (release) => {
  it('gives each ownership made by a local first attempt its own result as output', () => {
    const steps = stepsFromHistory(events(release, 'ownership-create-delete'), 'COMPLETED');
    expect(steps.map((s) => [s.id, s.status])).toEqual([
      ['own', 'DONE'],
      ['disown', 'DONE'],
    ]);
    expect(steps[0]!.output).toEqual({
      userId: 'svc-1',
      roleSlug: 'owner',
      appId: 'app-1',
      entitlementId: 'ent-1',
      createdAt: expect.any(String),
    });
    expect(steps[1]!.output).toEqual({ deleted: true });
  });

  it('keeps a step whose first attempt failed running through its retry timer and its regular activity; a later wait step has not started', () => {
    const all = withMoreSteps(events(release, 'ownership-retried-after-local-attempt'), [
      { id: 'pause', wait: { duration: '1h' } },
    ]);
    for (const last of ['TIMER_STARTED', 'TIMER_FIRED', 'ACTIVITY_TASK_SCHEDULED'] as const) {
      const steps = stepsFromHistory(through(all, last), 'RUNNING');
      expect([last, steps.map((s) => [s.id, s.status])]).toEqual([
        last,
        [
          ['own', 'RUNNING'],
          ['pause', 'PENDING'],
        ],
      ]);
    }
    const done = stepsFromHistory(through(all, 'ACTIVITY_TASK_COMPLETED'), 'RUNNING');
    expect(done.map((s) => s.status)).toEqual(['RUNNING', 'PENDING']);
  });

  it('gives each ownership its own output among steps of every kind, skipped ones included', () => {
    const steps = stepsFromHistory(events(release, 'many-steps'), 'COMPLETED');
    const byId = new Map(steps.map((step) => [step.id, step]));
    const skipped = new Set(['skip1', 'w1', 'w3', 'w5', 'w7']);
    expect(steps.map((step) => [step.id, step.status])).toEqual(
      steps.map((step) => [step.id, skipped.has(step.id) ? 'SKIPPED' : 'DONE']),
    );
    expect(byId.get('v7')!.output).toEqual({ n: 8 });
    expect(byId.get('own')!.output).toEqual({
      userId: 'svc-1',
      roleSlug: 'owner',
      appId: 'app-1',
      entitlementId: expect.any(String),
      createdAt: expect.any(String),
    });
    expect(byId.get('disown')!.output).toEqual({ deleted: true });
  });
});

describe('executions view from the history (0.5.0: the effect evaluates its step itself)', () => {
  it('gives an ownership that follows a skipped one its own output (the skipped step stays SKIPPED)', () => {
    const steps = stepsFromHistory(events('0.5.0', 'ownership-after-a-skipped-one'), 'COMPLETED');
    expect(steps.map((s) => [s.id, s.status])).toEqual([
      ['maybe', 'SKIPPED'],
      ['own', 'DONE'],
    ]);
    expect(steps[1]!.output).toEqual({
      userId: 'svc-1',
      roleSlug: 'owner',
      appId: 'app-1',
      entitlementId: 'ent-1',
      createdAt: expect.any(String),
    });
  });
});

describe('a run held before its first step, read from its history', () => {
  it('QUEUED: every step PENDING, though the run keeps a timer to ask its lane again', () => {
    // Up to the timer the queued run starts while it waits for its grant (0.9.0's recording), its
    // version with a step that parks the run: the timer is the lane's, not that step's.
    const all = withMoreSteps(events('0.9.0', 'flow-queued-then-granted'), [
      { id: 'pause', wait: { duration: '60s' } } as StepDefinition,
    ]);
    const steps = stepsFromHistory(through(all, 'TIMER_STARTED'), 'QUEUED');
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.map((s) => s.status)).toEqual(steps.map(() => 'PENDING'));
  });

  it('PAUSED: every step PENDING until the resume', () => {
    const all = events('0.9.0', 'breaker-paused-then-resumed');
    const signaled = all.findIndex((e) => e.workflowExecutionSignaledEventAttributes);
    const steps = stepsFromHistory(all.slice(0, signaled), 'PAUSED');
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.map((s) => s.status)).toEqual(steps.map(() => 'PENDING'));
  });
});
