/**
 * Reading automation runs back from Temporal, for the executions API. The list of an automation's
 * runs comes from visibility (`AutomationId = "<id>"`, eventually consistent); one run's steps come
 * from the workflow itself: the result of a completed run, else the `state` query (answered while
 * a worker is up, for running and for closed runs alike), else a reconstruction from the run's
 * history when the query cannot be answered (no worker): status, each step's progress, and the
 * failed step with its error. Each callWebhook step that ran shows its call's key
 * (`idempotencyKey`, the Idempotency-Key and webhook-id its requests carry), so that an operator can
 * find the call in the receiver's logs.
 */
import {
  isGrpcServiceError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowExecutionDescription,
} from '@temporalio/client';
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { ApprovalWaitKey, AUTOMATION_WORKFLOW, FlowQueueKey } from '../contract/workflows';
import { lanesOf, QUEUE_KEY_MEMO, quote, runningRunsQuery, runQuery, type RunningRun } from './run-listing';
import type { LaneView, RunFilter } from '../domain/run-listing';
import { lastResult, STEP_REGISTRY, stepKind, type RecordedEffect } from '../steps';
import {
  RUN_STATE_QUERY,
  STEP_FAILED,
  type AutomationRunInput,
  type RunState,
  type StepDefinition,
  type StepFailureDetails,
  type StepKind,
  type StepResult,
} from '../contract/run';
import { raceDeadline } from './deadline';

import { AutomationIdKey, WebhookEventIdKey } from './search-attributes';
import { callKey, type CallKeyScope } from '../webhooks/standard-webhooks';

import type { z } from 'zod';
import type * as api from '../domain/api-schemas';
import { isObject } from '../json';
import { InvalidExecutionPageTokenError, ServiceError, WorkflowEngineUnavailableError } from '../errors';

/** One run as the executions list shows it: the API's schema (src/domain/api-schemas.ts). */
export type ExecutionSummary = z.output<typeof api.ExecutionSummary>;
/** What the API shows; Temporal's other closed states fold into these (see executionStatus). */
export type ExecutionStatus = ExecutionSummary['status'];

export interface ExecutionDetail extends ExecutionSummary {
  automationId: string;
  /** The run this one reruns or retries (null for a run started by an event). */
  rerunOf: string | null;
  /** The reruns and retries of this run, oldest first. */
  reruns: string[];
  /** Why a run that did not complete stopped (the failed step's message, a termination reason). */
  error: string | null;
  steps: ExecutionStep[];
  /** While QUEUED: the concurrency key value the run waits for. */
  queue?: { key: string };
  /** While PAUSED: since when the circuit breaker holds the run. */
  paused?: { since: string };
}

/** A step as the executions view shows it: a callWebhook step that ran also shows its call's key. */
export type ExecutionStep = StepResult & { idempotencyKey?: string };

export interface ExecutionsPage {
  executions: ExecutionSummary[];
  /** Temporal's token for the next page; undefined on the last page. */
  nextPageToken: Uint8Array | undefined;
}

/** A run as the list across automations shows it: the API's schema (src/domain/api-schemas.ts). */
export type ExecutionListEntry = z.output<typeof api.ExecutionListEntry>;

export interface ExecutionSearchPage {
  executions: ExecutionListEntry[];
  /** Temporal's token for the next page; undefined on the last page. */
  nextPageToken: Uint8Array | undefined;
}

/** Reads runs of automations. Throws WorkflowEngineUnavailableError when Temporal cannot be reached. */
export interface RunReader {
  list(automationId: string, pageSize: number, pageToken: Uint8Array | undefined): Promise<ExecutionsPage>;
  /** Runs of every automation that match the filter, in visibility's order (open runs first, newest first). */
  search(filter: RunFilter, pageSize: number, pageToken: Uint8Array | undefined): Promise<ExecutionSearchPage>;
  /** The lanes of the automation's concurrency keys that have queued runs, by key. */
  lanes(automationId: string): Promise<LaneView[]>;
  /** undefined when no automation run has this id (unknown, another workflow type, or past retention). */
  get(runId: string): Promise<ExecutionDetail | undefined>;
}

/** Workflow type of automation runs (workflows/automation.ts). */
const AUTOMATION_WORKFLOW_TYPE = AUTOMATION_WORKFLOW;
/** Temporal refuses longer workflow ids; nothing longer can name a run. */
const MAX_EXECUTION_ID_LENGTH = 1000;
/** gRPC status codes (google.rpc.Code). */
const GRPC_INVALID_ARGUMENT = 3;
const GRPC_NOT_FOUND = 5;

export interface TemporalRunReaderOptions {
  /** Upper bound for one visibility or describe call. */
  callTimeoutMs?: number;
  /** How long the `state` query may wait for a worker before the history fallback. */
  queryTimeoutMs?: number;
  /**
   * The steps of a published version, for runs whose history does not hold them yet (no worker
   * has picked the run up); without it such a run shows no steps.
   */
  loadSteps?: (automationId: string, version: number) => Promise<StepDefinition[] | undefined>;
  /** The reruns bulk actions started of a run (kept in the store), listed after its numbered reruns. */
  bulkReruns?: (executionId: string) => Promise<string[]>;
}

export class TemporalRunReader implements RunReader {
  private readonly callTimeoutMs: number;
  private readonly queryTimeoutMs: number;
  private readonly loadSteps: TemporalRunReaderOptions['loadSteps'];
  private readonly bulkReruns: TemporalRunReaderOptions['bulkReruns'];

  constructor(
    private readonly client: Client,
    options: TemporalRunReaderOptions = {},
  ) {
    this.callTimeoutMs = options.callTimeoutMs ?? 10_000;
    this.queryTimeoutMs = options.queryTimeoutMs ?? 5_000;
    this.loadSteps = options.loadSteps;
    this.bulkReruns = options.bulkReruns;
  }

  async list(automationId: string, pageSize: number, pageToken: Uint8Array | undefined): Promise<ExecutionsPage> {
    const page = await this.visibility(`AutomationId = ${quote(automationId)}`, pageSize, pageToken);
    return { executions: page.executions.map(summaryFromVisibility), nextPageToken: page.nextPageToken };
  }

  async search(filter: RunFilter, pageSize: number, pageToken: Uint8Array | undefined): Promise<ExecutionSearchPage> {
    const page = await this.visibility(runQuery(AUTOMATION_WORKFLOW_TYPE, filter), pageSize, pageToken);
    return { executions: page.executions.map(entryFromVisibility), nextPageToken: page.nextPageToken };
  }

  async lanes(automationId: string): Promise<LaneView[]> {
    // Every running run of the automation, a page of the most visibility answers at a time.
    const runs: RunningRun[] = [];
    let token: Uint8Array | undefined;
    do {
      const page = await this.visibility(
        runningRunsQuery(AUTOMATION_WORKFLOW_TYPE, automationId),
        LANE_SCAN_PAGE_SIZE,
        token,
      );
      for (const raw of page.executions) {
        const key = decode(raw.memo?.fields?.[QUEUE_KEY_MEMO]);
        const summary = summaryFromVisibility(raw);
        runs.push({
          key: typeof key === 'string' ? key : undefined,
          queued: summary.status === 'QUEUED',
          startedAt: summary.startedAt,
        });
      }
      token = page.nextPageToken;
    } while (token);
    return lanesOf(runs);
  }

  /** One page of a visibility query, memos decoded. */
  private async visibility(
    query: string,
    pageSize: number,
    pageToken: Uint8Array | undefined,
  ): Promise<{ executions: WorkflowInfo[]; nextPageToken: Uint8Array | undefined }> {
    let response: temporal.api.workflowservice.v1.IListWorkflowExecutionsResponse;
    try {
      response = await this.call(this.callTimeoutMs, () =>
        this.client.workflowService.listWorkflowExecutions({
          namespace: this.client.options.namespace,
          pageSize,
          ...(pageToken ? { nextPageToken: pageToken } : {}),
          query,
        }),
      );
    } catch (err) {
      if (pageToken && grpcCode(err) === GRPC_INVALID_ARGUMENT) {
        throw new InvalidExecutionPageTokenError('page_token is no longer valid');
      }
      throw unavailable(err);
    }
    const token = response.nextPageToken;
    // Memos are payloads too (encrypted by the codec): decode them before reading the version.
    await decodePayloadsInPlace(response.executions ?? [], this.client.options.loadedDataConverter.payloadCodecs);
    return { executions: response.executions ?? [], nextPageToken: token && token.length > 0 ? token : undefined };
  }

  async get(executionId: string): Promise<ExecutionDetail | undefined> {
    if (executionId === '' || executionId.length > MAX_EXECUTION_ID_LENGTH) return undefined;
    const handle = this.client.workflow.getHandle(executionId);
    let description: WorkflowExecutionDescription;
    try {
      description = await this.call(this.callTimeoutMs, () => handle.describe());
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw unavailable(err);
    }
    const automationId = description.typedSearchAttributes.get(AutomationIdKey);
    if (description.type !== AUTOMATION_WORKFLOW_TYPE || automationId === undefined) return undefined;
    // Read alongside the run itself (not after it); a failure surfaces where it is awaited.
    const rerunsRead = Promise.all([this.reruns(executionId), this.bulkReruns?.(executionId) ?? []]).then(
      ([numbered, bulk]) => [...numbered, ...bulk],
    );
    rerunsRead.catch(() => undefined);
    const rerunOf = typeof description.memo?.rerunOf === 'string' ? description.memo.rerunOf : null;
    const links = async (): Promise<{ rerunOf: string | null; reruns: string[] }> => ({
      rerunOf,
      reruns: await rerunsRead,
    });
    const keysOf = callKeyScope(description.memo?.callKeysOf) ?? { workflowId: executionId, runId: description.runId };
    const keyed = (steps: StepResult[]): ExecutionStep[] => withCallKeys(steps, keysOf);

    const held =
      description.status.name === 'RUNNING'
        ? heldStatus(description.typedSearchAttributes.get(FlowQueueKey))
        : undefined;
    const status = held ?? executionStatus(description.status.name);
    const summary: ExecutionSummary = {
      id: executionId,
      eventId: description.typedSearchAttributes.get(WebhookEventIdKey) ?? null,
      status,
      startedAt: description.startTime.toISOString(),
      closedAt: description.closeTime?.toISOString() ?? null,
      version: numberOrNull(description.memo?.automationVersion),
    };

    // A completed run's result is its final state: no worker needed.
    if (status === 'COMPLETED') {
      try {
        const state = await this.call(this.callTimeoutMs, () => handle.result() as Promise<RunState>);
        return { ...summary, automationId, ...(await links()), error: null, steps: keyed(state.steps) };
      } catch (err) {
        if (isNotFound(err)) return undefined;
        // Fall through to the history, which says the same.
      }
    }

    let state: RunState | undefined;
    if (status !== 'COMPLETED') {
      try {
        state = await this.call(this.queryTimeoutMs, () => handle.query<RunState>(RUN_STATE_QUERY));
      } catch {
        state = undefined; // no worker (or none in time): read the history instead
      }
    }
    if (state && (status === 'RUNNING' || status === 'QUEUED' || status === 'PAUSED') && summary.version !== null) {
      // The run's own word is the freshest: visibility may lag behind a grant by a moment.
      const current = state.status === 'QUEUED' || state.status === 'PAUSED' ? state.status : 'RUNNING';
      return {
        ...summary,
        status: current,
        automationId,
        ...(await links()),
        error: null,
        steps: keyed(state.steps),
        ...(state.queue ? { queue: state.queue } : {}),
        ...(state.paused ? { paused: state.paused } : {}),
      };
    }

    // The history says why a closed run stopped, and what a run did when no worker answers.
    let events: HistoryEvent[];
    try {
      events = (await this.call(this.callTimeoutMs, () => handle.fetchHistory())).events ?? [];
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw unavailable(err);
    }
    await decodePayloadsInPlace(events, this.client.options.loadedDataConverter.payloadCodecs);
    const run = readHistory(events);
    const version = summary.version ?? numberOrNull(run.input?.version);
    if (run.steps.length === 0 && version !== null && this.loadSteps)
      run.steps = (await this.loadSteps(automationId, version)) ?? [];
    const steps = state?.steps ?? reconstructSteps(run, status);
    const error = runError(run, status);
    return {
      ...summary,
      version,
      automationId,
      ...(await links()),
      error,
      steps: keyed(
        status === 'RUNNING' || status === 'QUEUED' || status === 'PAUSED' || status === 'COMPLETED'
          ? steps
          : markInterrupted(steps, error),
      ),
      ...(status === 'QUEUED' && run.input?.flow?.queue ? { queue: { key: run.input.flow.queue.key } } : {}),
      ...(status === 'PAUSED' && run.input?.flow?.paused ? { paused: { since: run.input.flow.paused.since } } : {}),
    };
  }

  /**
   * The ids of this run's direct reruns (`<id>:rerun-<n>`). Reruns take the first free n, so a run
   * without `:rerun-1` has none: one describe answers that (most runs), and only a rerun run's
   * original is listed from visibility.
   */
  private async reruns(executionId: string): Promise<string[]> {
    const prefix = `${executionId}:rerun-`;
    try {
      await this.call(this.callTimeoutMs, () => this.client.workflow.getHandle(`${prefix}1`).describe());
    } catch (err) {
      if (isNotFound(err)) return [];
      throw unavailable(err);
    }
    let response: temporal.api.workflowservice.v1.IListWorkflowExecutionsResponse;
    try {
      response = await this.call(this.callTimeoutMs, () =>
        this.client.workflowService.listWorkflowExecutions({
          namespace: this.client.options.namespace,
          pageSize: 100,
          query: `WorkflowId STARTS_WITH ${quote(prefix)}`,
        }),
      );
    } catch (err) {
      throw unavailable(err);
    }
    const ids = (response.executions ?? []).map((e) => e.execution?.workflowId ?? '');
    // `:rerun-1` exists (described above) even while visibility has not caught up with it.
    const direct = [
      ...new Set([`${prefix}1`, ...ids.filter((id) => id.startsWith(prefix) && /^\d+$/.test(id.slice(prefix.length)))]),
    ];
    return direct.sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)));
  }

  private call<T>(timeoutMs: number, fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    return raceDeadline(deadline, () => this.client.withDeadline(deadline, fn));
  }
}

/**
 * Temporal's workflow statuses in the API's four: a paused or continued-as-new run goes on
 * (RUNNING), a timed-out one failed (FAILED); cancelled (CANCELED) and terminated (TERMINATED) runs were stopped from outside.
 */
export function executionStatus(name: string): ExecutionStatus {
  switch (name) {
    case 'COMPLETED':
      return 'COMPLETED';
    case 'FAILED':
    case 'TIMED_OUT':
      return 'FAILED';
    case 'CANCELLED':
      return 'CANCELED';
    case 'TERMINATED':
      return 'TERMINATED';
    default:
      return 'RUNNING';
  }
}

/** A running run's FlowQueue search attribute: QUEUED in its lane, PAUSED by the circuit breaker. */
function heldStatus(value: unknown): 'QUEUED' | 'PAUSED' | undefined {
  return value === 'QUEUED' || value === 'PAUSED' ? value : undefined;
}

const STATUS_NAMES: Record<number, string> = {
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING]: 'RUNNING',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_COMPLETED]: 'COMPLETED',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_FAILED]: 'FAILED',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TIMED_OUT]: 'TIMED_OUT',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_TERMINATED]: 'TERMINATED',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CANCELED]: 'CANCELLED',
  [temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW]: 'CONTINUED_AS_NEW',
};

/** A visibility entry's status as the API names it (before QUEUED and PAUSED are told apart by FlowQueue). */
export function visibilityStatus(
  code: temporal.api.enums.v1.WorkflowExecutionStatus | null | undefined,
): ExecutionStatus {
  return executionStatus(STATUS_NAMES[Number(code ?? 0)] ?? 'RUNNING');
}

type WorkflowInfo = temporal.api.workflow.v1.IWorkflowExecutionInfo;

/** A page of this many runs at a time when the lanes read every running run of an automation. */
const LANE_SCAN_PAGE_SIZE = 1000;

/**
 * A run as the list across automations shows it: its automation (id; the name from its memo, which
 * the domain replaces with the store's), its key while QUEUED (from its memo), the step that waits
 * for approval (the ApprovalWait search attribute of a running run).
 */
function entryFromVisibility(raw: WorkflowInfo): ExecutionListEntry {
  const summary = summaryFromVisibility(raw);
  const automationId = decode(raw.searchAttributes?.indexedFields?.[AutomationIdKey.name]);
  const automationName = decode(raw.memo?.fields?.automationName);
  const key = decode(raw.memo?.fields?.[QUEUE_KEY_MEMO]);
  const waitingStep = decode(raw.searchAttributes?.indexedFields?.[ApprovalWaitKey.name]);
  return {
    ...summary,
    automationId: typeof automationId === 'string' ? automationId : '',
    automationName: typeof automationName === 'string' ? automationName : '',
    ...(summary.status === 'QUEUED' && typeof key === 'string' ? { queue: { key } } : {}),
    ...(summary.status === 'RUNNING' && typeof waitingStep === 'string'
      ? { waitingForApproval: { stepId: waitingStep } }
      : {}),
  };
}

function summaryFromVisibility(raw: WorkflowInfo): ExecutionSummary {
  const eventId = decode(raw.searchAttributes?.indexedFields?.[WebhookEventIdKey.name]);
  const status = visibilityStatus(raw.status);
  const held =
    status === 'RUNNING' ? heldStatus(decode(raw.searchAttributes?.indexedFields?.[FlowQueueKey.name])) : undefined;
  return {
    id: raw.execution?.workflowId ?? '',
    eventId: typeof eventId === 'string' ? eventId : null,
    status: held ?? status,
    startedAt: timestamp(raw.startTime) ?? '',
    closedAt: timestamp(raw.closeTime) ?? null,
    version: numberOrNull(decode(raw.memo?.fields?.automationVersion)),
  };
}

/** The memo's `callKeysOf` (a retry from the failed step: the original run), when well-formed. */
function callKeyScope(value: unknown): CallKeyScope | undefined {
  if (!isObject(value) || typeof value.workflowId !== 'string' || typeof value.runId !== 'string') return undefined;
  return { workflowId: value.workflowId, runId: value.runId };
}

/** The steps, each step that ran (or runs) a request carrying the call's key (`sendsCallKey`) with that key. */
function withCallKeys(steps: StepResult[], keysOf: CallKeyScope): ExecutionStep[] {
  const sends = (kind: string): boolean =>
    kind in STEP_REGISTRY && (STEP_REGISTRY[kind as StepKind] as { sendsCallKey?: boolean }).sendsCallKey === true;
  return steps.map((step) =>
    sends(step.kind) && step.status !== 'PENDING' && step.status !== 'SKIPPED'
      ? { ...step, idempotencyKey: callKey(keysOf, step.id) }
      : step,
  );
}

// ---------------------------------------------------------------- the history fallback

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

/** One activity or timer of a step, as the history records it. */
type StepEffect = RecordedEffect;

interface RunHistory {
  input: AutomationRunInput | undefined;
  /** The steps of the run's version, from the result of the local activity that loaded them. */
  steps: StepDefinition[];
  /** Effects per step id, in order. */
  effects: Map<string, StepEffect[]>;
  /** Step ids in the order their first effect was recorded. */
  touched: string[];
  /** The run's failure; `stepError` is the failed step's own message. */
  failure: { stepId: string | undefined; message: string; stepError: string } | undefined;
  stopReason: string | undefined;
}

/**
 * Reads what the run did from its history, by type: the started event's input, the results of the
 * local activities (each names its step: the loaded version, `{stepId, values}` of an evaluation,
 * `{stepId, line}` of a log line; an effect's local first attempt, by its activity type, belongs to
 * the next step of a kind with that effect that has not finished one), the inputs of the effect
 * activities (`stepId`), and the failure's details. A timer belongs to the next step, after the
 * last one that recorded anything, whose kind parks the run (the loop runs steps one at a time,
 * and every other kind evaluates before it acts).
 */
function readHistory(events: HistoryEvent[]): RunHistory {
  const run: RunHistory = {
    input: undefined,
    steps: [],
    effects: new Map(),
    touched: [],
    failure: undefined,
    stopReason: undefined,
  };
  const byScheduledId = new Map<string, StepEffect>();
  const byTimerId = new Map<string, StepEffect>();
  const add = (stepId: string, effect: StepEffect): void => {
    if (!run.effects.has(stepId)) {
      run.effects.set(stepId, []);
      run.touched.push(stepId);
    }
    run.effects.get(stepId)!.push(effect);
  };
  const nextParkingStep = (): string | undefined => {
    const last = run.touched[run.touched.length - 1];
    const from = last === undefined ? 0 : run.steps.findIndex((step) => step.id === last);
    for (let i = Math.max(0, from); i < run.steps.length; i++) {
      const step = run.steps[i]!;
      const kind = stepKind(step);
      const touchedAlready = run.effects.get(step.id)?.some((e) => e.kind === 'timer');
      if (kind !== undefined && STEP_REGISTRY[kind].parks === true && !touchedAlready) return step.id;
    }
    return undefined;
  };
  /**
   * The step an effect's local attempt belongs to: the first, from the last step touched on, whose
   * kind performs that effect and that has neither finished an activity nor been skipped. Without
   * EVALUATE_IN_EFFECT_PATCH the step evaluated its fields just before (it is the last touched); with
   * it the effect evaluates them itself, so nothing of the step precedes it.
   */
  const effectStep = (name: string): string | undefined => {
    const last = run.touched[run.touched.length - 1];
    const from = last === undefined ? 0 : run.steps.findIndex((step) => step.id === last);
    for (let i = Math.max(0, from); i < run.steps.length; i++) {
      const step = run.steps[i]!;
      const kind = stepKind(step);
      if (kind === undefined || STEP_REGISTRY[kind].effect?.name !== name) continue;
      const effects = run.effects.get(step.id) ?? [];
      const finished = effects.some((e) => e.kind === 'activity' && e.done);
      const skipped = effects.some((e) => e.kind === 'evaluate' && isObject(e.result) && e.result.when === false);
      if (!finished && !skipped) return step.id;
    }
    return undefined;
  };
  // A failed local first attempt is followed by the timer before the step's next attempt: that
  // timer is the step's own wait, not a later step's.
  let retryTimerNext = false;
  for (const event of events) {
    const eventId = String(event.eventId ?? '');
    if (event.workflowExecutionStartedEventAttributes) {
      run.input = decode(event.workflowExecutionStartedEventAttributes.input?.payloads?.[0]) as
        AutomationRunInput | undefined;
    } else if (event.markerRecordedEventAttributes) {
      const marker = event.markerRecordedEventAttributes;
      const result = decode(marker.details?.result?.payloads?.[0]);
      const effect = localEffectName(marker);
      if (effect !== undefined) {
        // An effect's first attempt, run locally. A failed attempt records no result: the step is
        // in progress, and its regular activity follows.
        const stepId = effectStep(effect);
        const done = !marker.failure && result !== undefined;
        if (stepId !== undefined) add(stepId, { kind: 'activity', done, result: done ? result : undefined });
        retryTimerNext = Boolean(marker.failure);
      } else if (isObject(result) && Array.isArray(result.steps) && typeof result.automationName === 'string') {
        run.steps = result.steps as StepDefinition[];
      } else if (isObject(result) && typeof result.stepId === 'string') {
        const kind = isObject(result.values) ? 'evaluate' : 'annotate';
        add(result.stepId, { kind, done: true, result: kind === 'evaluate' ? result.values : result });
      }
    } else if (event.activityTaskScheduledEventAttributes) {
      const input = decode(event.activityTaskScheduledEventAttributes.input?.payloads?.[0]);
      const effect: StepEffect = { kind: 'activity', done: false, result: undefined };
      byScheduledId.set(eventId, effect);
      if (isObject(input) && typeof input.stepId === 'string') add(input.stepId, effect);
    } else if (event.activityTaskCompletedEventAttributes) {
      const effect = byScheduledId.get(String(event.activityTaskCompletedEventAttributes.scheduledEventId ?? ''));
      if (effect) {
        effect.done = true;
        effect.result = decode(event.activityTaskCompletedEventAttributes.result?.payloads?.[0]);
      }
    } else if (event.timerStartedEventAttributes && retryTimerNext) {
      retryTimerNext = false;
    } else if (event.timerStartedEventAttributes) {
      const effect: StepEffect = { kind: 'timer', done: false, result: undefined };
      byTimerId.set(event.timerStartedEventAttributes.timerId ?? '', effect);
      const stepId = nextParkingStep();
      if (stepId !== undefined) add(stepId, effect);
    } else if (event.timerFiredEventAttributes) {
      const effect = byTimerId.get(event.timerFiredEventAttributes.timerId ?? '');
      if (effect) effect.done = true;
    } else if (event.workflowExecutionFailedEventAttributes) {
      run.failure = failureOf(event.workflowExecutionFailedEventAttributes.failure);
    } else if (event.workflowExecutionTerminatedEventAttributes) {
      const reason = event.workflowExecutionTerminatedEventAttributes.reason;
      run.stopReason = `run terminated${reason ? `: ${reason}` : ''}`;
    } else if (event.workflowExecutionCanceledEventAttributes) {
      run.stopReason = 'run cancelled';
    } else if (event.workflowExecutionTimedOutEventAttributes) {
      run.stopReason = 'run timed out';
    }
  }
  return run;
}

/** The effects the step kinds declare, by activity name. */
const EFFECT_NAMES: ReadonlySet<string> = new Set(
  Object.values(STEP_REGISTRY).flatMap((kind) => ('effect' in kind && kind.effect ? [kind.effect.name] : [])),
);

/** The activity type a local activity's marker records (its `data`, JSON written by the SDK's core); undefined for any other marker. */
export function localActivityType(marker: temporal.api.history.v1.IMarkerRecordedEventAttributes): string | undefined {
  if (marker.markerName !== 'core_local_activity') return undefined;
  const data = decode(marker.details?.data?.payloads?.[0]);
  return isObject(data) && typeof data.activity_type === 'string' ? data.activity_type : undefined;
}

/** The effect a local activity's marker records, if it is one. */
function localEffectName(marker: temporal.api.history.v1.IMarkerRecordedEventAttributes): string | undefined {
  const type = localActivityType(marker);
  return type !== undefined && EFFECT_NAMES.has(type) ? type : undefined;
}

/** The steps of a run as its (decoded) history shows them, for a run in `status`: what the executions view shows when no worker answers. */
export function stepsFromHistory(events: HistoryEvent[], status: ExecutionStatus): StepResult[] {
  return reconstructSteps(readHistory(events), status);
}

/** The steps as the workflow would report them, from what the history shows it did. */
function reconstructSteps(run: RunHistory, status: ExecutionStatus): StepResult[] {
  const steps = run.steps;
  const lastTouched = Math.max(-1, ...run.touched.map((id) => steps.findIndex((step) => step.id === id)));
  const failedIndex =
    run.failure?.stepId !== undefined ? steps.findIndex((step) => step.id === run.failure!.stepId) : -1;
  // Steps before this one are over; this one is in progress (or failed); later ones never started.
  const current = failedIndex >= 0 ? failedIndex : status === 'COMPLETED' ? steps.length : lastTouched;
  return steps.map((step, index): StepResult => {
    const kind = stepKind(step);
    const result: StepResult = {
      id: step.id,
      kind: kind ?? ('unknown' as StepKind),
      status: 'PENDING',
      output: null,
      error: null,
    };
    const effects = run.effects.get(step.id) ?? [];
    // A step with a condition evaluates it first; `false` skipped the step.
    const condition = step.when !== undefined && step.when.trim() !== '' ? effects[0] : undefined;
    const skipped =
      condition?.kind === 'evaluate' && condition.done && isObject(condition.result) && condition.result.when === false;
    if (index === failedIndex) {
      result.status = 'FAILED';
      result.error = run.failure?.stepError ?? null;
    } else if (skipped) {
      result.status = 'SKIPPED';
    } else if (index < current) {
      result.status = 'DONE';
      result.output = outputOf(step, condition ? effects.slice(1) : effects);
    } else if (index === current) {
      result.status = effects.some((e) => e.kind === 'timer' && !e.done) ? 'WAITING' : 'RUNNING';
    }
    return result;
  });
}

/** A finished step's output, as its kind reads it from the history (by default its last effect's result). */
function outputOf(step: StepDefinition, effects: StepEffect[]): Record<string, unknown> | null {
  const kind = stepKind(step);
  if (kind === undefined) return lastResult(effects);
  const definition = STEP_REGISTRY[kind] as {
    outputFromHistory?(body: unknown, effects: readonly StepEffect[]): Record<string, unknown> | null;
  };
  return definition.outputFromHistory
    ? definition.outputFromHistory((step as unknown as Record<string, unknown>)[kind], effects)
    : lastResult(effects);
}

/** A closed run's step still RUNNING or WAITING was stopped there: it shows why. */
function markInterrupted(steps: StepResult[], error: string | null): StepResult[] {
  return steps.map((step) =>
    step.status === 'RUNNING' || step.status === 'WAITING' || step.status === 'WAITING_FOR_APPROVAL'
      ? { ...step, status: 'FAILED', error: step.error ?? error ?? 'run stopped' }
      : step,
  );
}

function runError(run: RunHistory, status: ExecutionStatus): string | null {
  if (status === 'RUNNING' || status === 'COMPLETED') return null;
  return run.failure?.message ?? run.stopReason ?? null;
}

/** The workflow's failure; a failed step's is of type STEP_FAILED with details `{stepId, kind, error}`. */
function failureOf(failure: temporal.api.failure.v1.IFailure | null | undefined): RunHistory['failure'] {
  if (!failure) return undefined;
  const message = failure.message ?? 'run failed';
  if (failure.applicationFailureInfo?.type !== STEP_FAILED) return { stepId: undefined, message, stepError: message };
  const detail = decode(failure.applicationFailureInfo.details?.payloads?.[0]) as
    Partial<StepFailureDetails> | undefined;
  return {
    stepId: typeof detail?.stepId === 'string' ? detail.stepId : undefined,
    message,
    stepError: typeof detail?.error === 'string' ? detail.error : message,
  };
}

// ---------------------------------------------------------------- small helpers

/**
 * The raw history holds payloads as the codec left them (encrypted): every payload in the events
 * is decoded in place through the client's codecs before the events are read.
 */
export async function decodePayloadsInPlace(root: unknown, codecs: readonly PayloadCodec[]): Promise<void> {
  if (codecs.length === 0) return;
  const found: Payload[] = [];
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== 'object' || node instanceof Uint8Array || ArrayBuffer.isView(node)) continue;
    const metadata = (node as { metadata?: unknown }).metadata;
    if (
      metadata !== null &&
      typeof metadata === 'object' &&
      (metadata as Record<string, unknown>).encoding instanceof Uint8Array
    ) {
      found.push(node as Payload);
      continue;
    }
    for (const value of Object.values(node)) stack.push(value);
  }
  for (const payload of found) {
    let decoded: Payload[] = [payload];
    for (const codec of [...codecs].reverse()) decoded = await codec.decode(decoded);
    payload.metadata = decoded[0]!.metadata;
    payload.data = decoded[0]!.data;
  }
}

function decode(payload: temporal.api.common.v1.IPayload | null | undefined): unknown {
  if (!payload) return undefined;
  try {
    return defaultPayloadConverter.fromPayload(payload as Parameters<typeof defaultPayloadConverter.fromPayload>[0]);
  } catch {
    return undefined;
  }
}

function timestamp(
  ts: { seconds?: { toNumber(): number } | number | null; nanos?: number | null } | null | undefined,
): string | undefined {
  if (!ts || ts.seconds === null || ts.seconds === undefined) return undefined;
  const seconds = typeof ts.seconds === 'number' ? ts.seconds : ts.seconds.toNumber();
  return new Date(seconds * 1000 + Math.floor((ts.nanos ?? 0) / 1e6)).toISOString();
}

function numberOrNull(value: unknown): number | null {
  return typeof value === 'number' && Number.isFinite(value) ? value : null;
}

function grpcCode(err: unknown): number | undefined {
  if (isGrpcServiceError(err)) return err.code;
  if (err instanceof ServiceError && isGrpcServiceError(err.cause)) return err.cause.code;
  return undefined;
}

/** Unknown run: not found, or an id Temporal refuses outright. */
function isNotFound(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  const code = grpcCode(err);
  return code === GRPC_NOT_FOUND || code === GRPC_INVALID_ARGUMENT;
}

function unavailable(err: unknown): WorkflowEngineUnavailableError {
  return new WorkflowEngineUnavailableError(
    `workflow engine unavailable: ${(err as Error)?.message ?? 'unknown error'}`,
  );
}
