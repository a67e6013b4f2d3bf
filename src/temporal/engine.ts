/**
 * The run engine on Temporal (the domain's RunEngine, src/domain/engine.ts): one object on one
 * client and task queue, built here for the API (src/compose.ts) and for the worker's activities
 * (src/temporal/worker.ts) alike. Runs are started, signalled, updated, cancelled and queried by the
 * workflow type's name with the contract's signatures (src/contract/workflows.ts), so this adapter
 * never imports the workflow code. What it answers are the domain's records.
 *
 * Reading a run: the list comes from visibility (eventually consistent); one run's steps come from
 * the workflow itself — the result of a completed run, else the `state` query (answered while a
 * worker is up), else a reconstruction from the run's history when the query cannot be answered
 * (src/temporal/run-history.ts). Each step that sends the call's key shows that key.
 *
 * Every call races a deadline, so a request never waits on the engine longer than its budget: the
 * delivery's calls (start, readiness, flow control's) the start timeout, which answers 503 quickly
 * when Temporal cannot be reached; reads and control `callTimeoutMs`; an update (a decision) waits
 * for a worker to take it, so it gets longer. Failures come back as the domain's errors.
 */
import { activeTraceId } from '../tracing/spans';
import { randomUUID } from 'node:crypto';
import {
  isGrpcServiceError,
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ServiceError,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowExecutionDescription,
  type CalendarSpec,
  type ScheduleSpec,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import {
  AUTOMATION_WORKFLOW,
  BULK_ACTION_WORKFLOW,
  GRANT_WORKFLOW,
  SCHEDULED_RUN_WORKFLOW,
  type ScheduledRunInput,
  grantChangeSignal,
  type GrantSignal,
  type GrantWorkflow,
  breakerResumeSignal,
  decideUpdate,
  FlowQueueKey,
  type AutomationWorkflow,
  type BulkActionWorkflow,
} from '../contract/workflows';
import {
  APPROVALS_MEMO,
  LANE_ACQUIRE_SIGNAL,
  RUN_STATE_QUERY,
  runWorkflowId,
  STEP_NOT_WAITING,
  UNKNOWN_STEP,
  type AutomationRunInput,
  type LaneAcquire,
  type LaneState,
  type RunState as WorkflowState,
  type StepKind,
  type StepResult,
} from '../contract/run';
import type { CancelOutcome, RunEngine, RunStart, RunState, ScheduleDefinition, WallTime } from '../domain/engine';
import { durationSeconds } from '../triggers';
import type { RunRecord, RunStep } from '../domain/runs';
import type { LaneView } from '../domain/run-listing';
import { publishedSteps } from '../domain/automations';
import type { Queryable } from '../store/db';
import { STEP_REGISTRY, type ApprovalContext } from '../steps';
import { callKey, type CallKeyScope } from '../webhooks/standard-webhooks';
import { isObject } from '../json';
import {
  FailedPreconditionError,
  InvalidExecutionPageTokenError,
  NotFoundError,
  WorkflowEngineUnavailableError,
} from '../errors';
import { raceDeadline } from './deadline';
import { decodePayloadsInPlace, numberOrNull } from './payloads';
import {
  markInterrupted,
  readHistory,
  reconstructSteps,
  runError,
  withHistoryFacts,
  type HistoryEvent,
  type RunHistory,
} from './run-history';
import { AutomationIdKey, ListenerIdKey, WebhookEventIdKey } from './search-attributes';
import {
  automationRunsQuery,
  entryFromVisibility,
  executionStatus,
  heldStatus,
  lanesOf,
  matchQuery,
  QUEUE_KEY_MEMO,
  approvalsOf,
  quote,
  runningRunOf,
  runningRunsQuery,
  runQuery,
  summaryFromVisibility,
  type RunningRun,
} from './visibility';

export interface TemporalEngineOptions {
  client: Client;
  taskQueue: string;
  /** The store: the steps of a published version, for a run whose history does not hold them yet. */
  db: Queryable;
  /** Bound of a delivery's calls (start, readiness, flow control's), so an unreachable server answers 503 quickly. */
  startTimeoutMs?: number;
  /**
   * Ask for eager workflow start: the server hands the run's first workflow task back in the start
   * response, to a worker of this process, skipping one dispatch through matching. Only when
   * `client` is on the NativeConnection of a worker polling `taskQueue` in this process (`npm
   * start`); the server falls back to a normal start when no slot is free.
   */
  eagerStart?: boolean;
  /** The most runs a key's lane may have waiting (LANE_QUEUE_LIMIT), sent with the API's lane requests; unset: none. */
  laneQueueLimit?: number;
  /** Bound of one read or control call. */
  callTimeoutMs?: number;
  /** How long the `state` query may wait for a worker before the history fallback. */
  queryTimeoutMs?: number;
  /** Bound of an update (a decision), which waits for a worker to take it. */
  updateTimeoutMs?: number;
}

/** Temporal refuses longer workflow ids; nothing longer can name a run. */
const MAX_RUN_ID_LENGTH = 1000;
/** A page of this many runs at a time when the lanes, or a bulk action's match, read every run. */
const SCAN_PAGE_SIZE = 1000;
/** History reads at once when a bulk action's `where` reads payloads. */
const PAYLOAD_READS_AT_ONCE = 8;
/** Describes in flight at once when a full lane's places are reconciled (runsGone). */
const RUNS_GONE_CONCURRENCY = 8;
/** gRPC status codes (google.rpc.Code). */
const GRPC_INVALID_ARGUMENT = 3;
const GRPC_NOT_FOUND = 5;
const GRPC_FAILED_PRECONDITION = 9;

/** The run engine on this client and task queue. */
export function createTemporalEngine(options: TemporalEngineOptions): RunEngine {
  const { client, taskQueue, db } = options;
  const startTimeoutMs = options.startTimeoutMs ?? 5000;
  const callTimeoutMs = options.callTimeoutMs ?? 10_000;
  const queryTimeoutMs = options.queryTimeoutMs ?? 5000;
  const updateTimeoutMs = options.updateTimeoutMs ?? 30_000;
  const namespace = client.options.namespace;
  const converter = client.options.loadedDataConverter;

  /** `fn` bounded by `timeoutMs`: the gRPC deadline, and a race that also bounds connecting to an unreachable server. */
  const call = <T>(timeoutMs: number, fn: () => Promise<T>): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    return raceDeadline(deadline, () => client.withDeadline(deadline, fn));
  };

  /** The input a run was started with: the first event of its history, decoded; undefined for an unknown run. */
  async function firstInput(runId: string, timeoutMs: number): Promise<AutomationRunInput | undefined> {
    let response: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryResponse;
    try {
      response = await call(timeoutMs, () =>
        client.workflowService.getWorkflowExecutionHistory({
          namespace,
          execution: { workflowId: runId },
          maximumPageSize: 1,
        }),
      );
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw unavailable(err);
    }
    const payload = response.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0];
    if (!payload) return undefined;
    await decodePayloadsInPlace(payload, converter.payloadCodecs);
    try {
      return converter.payloadConverter.fromPayload(payload) as AutomationRunInput;
    } catch {
      return undefined;
    }
  }

  /** How the run stands (open or how it closed), from a describe; undefined for an unknown run. */
  async function describedState(runId: string, timeoutMs: number): Promise<RunState | undefined> {
    try {
      const description = await call(timeoutMs, () => client.workflow.getHandle(runId).describe());
      return executionStatus(description.status.name);
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw unavailable(err);
    }
  }

  /** One page of a visibility query, memos decoded. */
  async function visibility(query: string, pageSize: number, pageToken: Uint8Array | undefined) {
    let response: temporal.api.workflowservice.v1.IListWorkflowExecutionsResponse;
    try {
      response = await call(callTimeoutMs, () =>
        client.workflowService.listWorkflowExecutions({
          namespace,
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
    await decodePayloadsInPlace(response.executions ?? [], converter.payloadCodecs);
    return {
      executions: response.executions ?? [],
      nextPageToken: token && token.length > 0 ? token : undefined,
    };
  }

  /**
   * The ids of this run's direct reruns (`<id>:rerun-<n>`). Reruns take the first free n, so a run
   * without `:rerun-1` has none: one describe answers that (most runs), and only a rerun run's
   * original is listed from visibility.
   */
  async function numberedReruns(runId: string): Promise<string[]> {
    const prefix = `${runId}:rerun-`;
    try {
      await call(callTimeoutMs, () => client.workflow.getHandle(`${prefix}1`).describe());
    } catch (err) {
      if (isNotFound(err)) return [];
      throw unavailable(err);
    }
    const page = await visibility(`WorkflowId STARTS_WITH ${quote(prefix)}`, 100, undefined);
    const ids = page.executions.map((e) => e.execution?.workflowId ?? '');
    // `:rerun-1` exists (described above) even while visibility has not caught up with it.
    const direct = [
      ...new Set([`${prefix}1`, ...ids.filter((id) => id.startsWith(prefix) && /^\d+$/.test(id.slice(prefix.length)))]),
    ];
    return direct.sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)));
  }

  /** One run with its steps (see the module comment); undefined for no automation run of this id. */
  async function get(runId: string): Promise<RunRecord | undefined> {
    if (runId === '' || runId.length > MAX_RUN_ID_LENGTH) return undefined;
    const handle = client.workflow.getHandle(runId);
    let description: WorkflowExecutionDescription;
    try {
      description = await call(callTimeoutMs, () => handle.describe());
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw unavailable(err);
    }
    const automationId = description.typedSearchAttributes.get(AutomationIdKey);
    if (description.type !== AUTOMATION_WORKFLOW || automationId === undefined) return undefined;
    // Read alongside the run itself (not after it); a failure surfaces where it is awaited.
    const rerunsRead = numberedReruns(runId);
    rerunsRead.catch(() => undefined);
    // The history, read once, alongside the run's own answer: the payload, the effects' attempts,
    // step times a run recorded before it kept them lacks; and all of it when no worker answers.
    let historyRead: Promise<RunHistory | undefined> | undefined;
    const history = () => {
      historyRead ??= (async () => {
        let events: HistoryEvent[];
        try {
          events = (await call(callTimeoutMs, () => handle.fetchHistory())).events ?? [];
        } catch (err) {
          if (isNotFound(err)) return undefined;
          throw unavailable(err);
        }
        await decodePayloadsInPlace(events, converter.payloadCodecs);
        return readHistory(events);
      })();
      return historyRead;
    };
    /** The history's facts, when it could be read (the run's own answer stands without them). */
    const facts = async (): Promise<RunHistory | undefined> => history().catch(() => undefined);
    const pendingAttempts = new Map(
      (description.raw.pendingActivities ?? []).map((pending) => [pending.activityId ?? '', pending.attempt ?? 1]),
    );
    const memo = description.memo ?? {};
    const callKeysOf = callKeyScope(memo.callKeysOf) ?? { workflowId: runId, runId: description.runId };
    const record = async (fields: Pick<RunRecord, 'status' | 'version' | 'error' | 'steps'> & Partial<RunRecord>) => ({
      id: runId,
      eventId: description.typedSearchAttributes.get(WebhookEventIdKey) ?? null,
      startedAt: description.startTime.toISOString(),
      closedAt: description.closeTime?.toISOString() ?? null,
      automationId,
      automationName: typeof memo.automationName === 'string' ? memo.automationName : null,
      rerunOf: typeof memo.rerunOf === 'string' ? memo.rerunOf : null,
      reruns: await rerunsRead,
      callKeysOf,
      ...(typeof memo.traceId === 'string' && TRACE_ID.test(memo.traceId) ? { traceId: memo.traceId } : {}),
      ...fields,
      steps: withApprovals(withCallKeys(fields.steps, callKeysOf), approvalsOf(memo[APPROVALS_MEMO])),
    });

    const held =
      description.status.name === 'RUNNING'
        ? heldStatus(description.typedSearchAttributes.get(FlowQueueKey))
        : undefined;
    const status = held ?? executionStatus(description.status.name);
    const version = numberOrNull(memo.automationVersion);

    // A completed run's result is its final state: no worker needed.
    if (status === 'COMPLETED') {
      try {
        history().catch(() => undefined);
        const state = await call(callTimeoutMs, () => handle.result() as Promise<WorkflowState>);
        const run = await facts();
        return await record({
          status,
          version,
          error: null,
          steps: run ? withHistoryFacts(state.steps, run, pendingAttempts) : state.steps,
          trigger: run?.input?.trigger,
        });
      } catch (err) {
        if (isNotFound(err)) return undefined;
        // Fall through to the history, which says the same.
      }
    }

    let state: WorkflowState | undefined;
    if (status !== 'COMPLETED') {
      history().catch(() => undefined);
      try {
        state = await call(queryTimeoutMs, () => handle.query<WorkflowState>(RUN_STATE_QUERY));
      } catch {
        state = undefined; // no worker (or none in time): read the history instead
      }
    }
    if (state && (status === 'RUNNING' || status === 'QUEUED' || status === 'PAUSED') && version !== null) {
      // The run's own word is the freshest: visibility may lag behind a grant by a moment.
      const current = state.status === 'QUEUED' || state.status === 'PAUSED' ? state.status : 'RUNNING';
      const run = await facts();
      return record({
        status: current,
        version,
        error: null,
        steps: run ? withHistoryFacts(state.steps, run, pendingAttempts) : state.steps,
        trigger: run?.input?.trigger,
        ...(state.queue ? { queue: state.queue } : {}),
        ...(state.paused ? { paused: state.paused } : {}),
      });
    }

    // The history says why a closed run stopped, and what a run did when no worker answers.
    const run = await history();
    if (!run) return undefined;
    const shownVersion = version ?? numberOrNull(run.input?.version);
    if (run.steps.length === 0 && shownVersion !== null)
      run.steps = (await publishedSteps(db, automationId, shownVersion)) ?? [];
    const steps = withHistoryFacts(state?.steps ?? reconstructSteps(run, status), run, pendingAttempts);
    const error = runError(run, status);
    const open = status === 'RUNNING' || status === 'QUEUED' || status === 'PAUSED';
    return record({
      status,
      version: shownVersion,
      error,
      steps: open || status === 'COMPLETED' ? steps : markInterrupted(steps, error, status),
      trigger: run.input?.trigger,
      ...(status === 'QUEUED' && run.input?.flow?.queue ? { queue: { key: run.input.flow.queue.key } } : {}),
      ...(status === 'PAUSED' && run.input?.flow?.paused ? { paused: { since: run.input.flow.paused.since } } : {}),
    });
  }

  /**
   * Waits until the run has closed, at most `waitMs`: a long poll, which Temporal answers with the
   * close event when the run closes, or empty when its own poll time is up (then asked again).
   */
  async function untilClosed(runId: string, waitMs: number): Promise<{ state: RunState; atMs: number } | undefined> {
    const deadline = Date.now() + waitMs;
    try {
      while (Date.now() < deadline) {
        const response = await raceDeadline(deadline, () =>
          client.withDeadline(deadline, () =>
            client.workflowService.getWorkflowExecutionHistory({
              namespace,
              execution: { workflowId: runId },
              skipArchival: true,
              waitNewEvent: true,
              historyEventFilterType:
                temporal.api.enums.v1.HistoryEventFilterType.HISTORY_EVENT_FILTER_TYPE_CLOSE_EVENT,
            }),
          ),
        );
        const event = response.history?.events?.at(-1);
        if (event) return { state: closeState(event), atMs: eventMs(event) };
      }
    } catch {
      // The wait itself failed: the cancel stands either way.
    }
    return undefined;
  }

  const engine: RunEngine = {
    async ping() {
      await call(startTimeoutMs, () => client.workflowService.getSystemInfo({}));
    },

    async start(run) {
      try {
        await call(startTimeoutMs, () =>
          client.workflow.start<AutomationWorkflow>(AUTOMATION_WORKFLOW, {
            ...runStartOptions(taskQueue, run),
            ...(options.eagerStart ? { requestEagerStart: true } : {}),
          }),
        );
        return 'started';
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return 'exists';
        throw unavailable(err);
      }
    },

    // ------------------------------------------------------------ the delivery's calls (flow control)

    async requestLanePermit(request) {
      const initial: LaneState = {
        automationId: request.automationId,
        lane: request.lane,
        limit: request.limit,
        holders: [],
        waiting: [],
        released: [],
      };
      const maxWaiting = request.maxWaiting ?? options.laneQueueLimit;
      try {
        // By the lane workflow's type name (workflows/lane.ts `lane`, whose one argument is a LaneState).
        await call(startTimeoutMs, () =>
          client.workflow.signalWithStart<(state: LaneState) => Promise<void>, [LaneAcquire]>('lane', {
            workflowId: request.lane,
            taskQueue: request.taskQueue ?? taskQueue,
            args: [initial],
            signal: LANE_ACQUIRE_SIGNAL,
            // The ask names its lane: a lane ignores an ask meant for another (workflows/lane.ts).
            signalArgs: [
              {
                runId: request.runId,
                limit: request.limit,
                lane: request.lane,
                ...(maxWaiting ? { maxWaiting } : {}),
              } satisfies LaneAcquire,
            ],
            staticSummary: `lane of ${request.automationName ?? `automation ${request.automationId}`} (concurrency ${request.limit})`,
          }),
        );
      } catch (err) {
        throw unavailable(err);
      }
    },

    async runsGone(runIds) {
      const states = new Map<string, RunState | undefined>();
      let next = 0;
      const ask = async () => {
        while (next < runIds.length) {
          const runId = runIds[next++]!;
          states.set(runId, await describedState(runId, callTimeoutMs));
        }
      };
      await Promise.all(Array.from({ length: Math.min(RUNS_GONE_CONCURRENCY, runIds.length) }, ask));
      // Every id was described (a describe that fails throws: nothing is taken as gone then).
      return {
        closed: runIds.filter((id) => states.get(id) !== undefined && states.get(id) !== 'RUNNING'),
        unknown: runIds.filter((id) => states.get(id) === undefined),
      };
    },

    async recordedQueue(runId) {
      return (await firstInput(runId, startTimeoutMs))?.flow?.queue;
    },

    async runOf(listenerId, eventId) {
      const runId = runWorkflowId(listenerId, eventId);
      return (await describedState(runId, startTimeoutMs)) === undefined ? undefined : runId;
    },

    // ------------------------------------------------------------ reading runs

    get,

    input: (runId) => firstInput(runId, callTimeoutMs),

    state: (runId) => describedState(runId, callTimeoutMs),

    async list(automationId, pageSize, pageToken) {
      const page = await visibility(automationRunsQuery(automationId), pageSize, pageToken);
      return { runs: page.executions.map(summaryFromVisibility), nextPageToken: page.nextPageToken };
    },

    async search(filter, pageSize, pageToken) {
      const page = await visibility(runQuery(filter), pageSize, pageToken);
      return { runs: page.executions.map(entryFromVisibility), nextPageToken: page.nextPageToken };
    },

    async lanes(automationId): Promise<LaneView[]> {
      // Every running run of the automation, a page of the most visibility answers at a time.
      const runs: RunningRun[] = [];
      let token: Uint8Array | undefined;
      do {
        const page = await visibility(runningRunsQuery(automationId), SCAN_PAGE_SIZE, token);
        runs.push(...page.executions.map(runningRunOf));
        token = page.nextPageToken;
      } while (token);
      return lanesOf(runs);
    },

    // ------------------------------------------------------------ controlling runs

    async decide(runId, decision) {
      const handle = client.workflow.getHandle<AutomationWorkflow>(runId);
      try {
        await call(updateTimeoutMs, () => handle.executeUpdate(decideUpdate, { args: [decision] }));
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure) {
          if (err.cause.type === UNKNOWN_STEP) throw new NotFoundError('step', decision.stepId);
          if (err.cause.type === STEP_NOT_WAITING)
            throw new FailedPreconditionError(
              `step ${JSON.stringify(decision.stepId)} is not waiting for approval`,
              'STEP_NOT_WAITING',
            );
        }
        // A run that closed between the domain's check and the call is a closed run.
        if (notRunning(err)) throw new FailedPreconditionError('the run is closed', 'RUN_CLOSED');
        throw unavailable(err);
      }
    },

    async cancel(runId, cancel = {}): Promise<CancelOutcome> {
      try {
        await call(callTimeoutMs, () =>
          client.workflowService.requestCancelWorkflowExecution({
            namespace,
            workflowExecution: { workflowId: runId },
            identity: client.options.identity,
            requestId: cancel.requestId ?? randomUUID(),
            ...(cancel.reason !== undefined ? { reason: cancel.reason } : {}),
          }),
        );
      } catch (err) {
        if (notRunning(err)) return { accepted: false };
        throw unavailable(err);
      }
      if (cancel.waitMs === undefined) return { accepted: true };
      const closed = await untilClosed(runId, cancel.waitMs);
      return closed ? { accepted: true, closed } : { accepted: true };
    },

    async terminate(runId, reason) {
      try {
        await call(callTimeoutMs, () => client.workflow.getHandle(runId).terminate(reason));
        return true;
      } catch (err) {
        if (notRunning(err)) return false;
        throw unavailable(err);
      }
    },

    async resume(runId, signal) {
      try {
        await call(callTimeoutMs, () => client.workflow.getHandle(runId).signal(breakerResumeSignal, signal));
        return 'sent';
      } catch (err) {
        const code = grpcCode(err);
        if (code === GRPC_FAILED_PRECONDITION) return 'closed';
        if (err instanceof WorkflowNotFoundError || code === GRPC_NOT_FOUND) return 'unknown';
        throw unavailable(err);
      }
    },

    // ------------------------------------------------------------ lanes of flow control

    async closedRuns(runIds) {
      const closed = new Set<string>();
      await Promise.all(
        runIds.map(async (runId) => {
          if ((await describedState(runId, callTimeoutMs)) !== 'RUNNING') closed.add(runId);
        }),
      );
      return runIds.filter((id) => closed.has(id));
    },

    // ------------------------------------------------------------ bulk actions

    async count(match) {
      try {
        const response = await call(callTimeoutMs, () =>
          client.workflowService.countWorkflowExecutions({ namespace, query: matchQuery(match) }),
        );
        return Number(response.count ?? 0);
      } catch (err) {
        throw unavailable(err);
      }
    },

    async matchIds(match, max) {
      const query = matchQuery(match);
      const wanted = new Set(match.statuses);
      const ids: string[] = [];
      let token: Uint8Array | undefined;
      do {
        const page = await visibility(query, SCAN_PAGE_SIZE, token);
        for (const raw of page.executions) {
          const { id, status } = summaryFromVisibility(raw);
          if (wanted.size > 0 && !wanted.has(status)) continue;
          if (id) ids.push(id);
        }
        token = page.nextPageToken;
      } while (token && ids.length <= max);
      return ids.slice(0, max + 1);
    },

    async payloads(runIds) {
      const found = new Map<string, unknown>();
      const queue = [...runIds];
      const reader = async (): Promise<void> => {
        for (let id = queue.shift(); id !== undefined; id = queue.shift()) {
          const input = await firstInput(id, callTimeoutMs);
          if (input) found.set(id, input.trigger);
        }
      };
      await Promise.all(Array.from({ length: Math.min(PAYLOAD_READS_AT_ONCE, queue.length) }, reader));
      return found;
    },

    async startBulkAction(bulkActionId) {
      try {
        await call(callTimeoutMs, () =>
          client.workflow.start<BulkActionWorkflow>(BULK_ACTION_WORKFLOW, {
            taskQueue,
            workflowId: bulkActionWorkflowId(bulkActionId),
            args: [{ bulkActionId }],
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            staticSummary: `bulk action ${bulkActionId}`,
          }),
        );
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return;
        throw unavailable(err);
      }
    },

    async startGrant(grantId) {
      try {
        await call(startTimeoutMs, () =>
          client.workflow.start<GrantWorkflow>(GRANT_WORKFLOW, {
            taskQueue,
            workflowId: grantWorkflowId(grantId),
            args: [{ grantId }],
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            staticSummary: `grant ${grantId}`,
          }),
        );
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) return;
        throw unavailable(err);
      }
    },

    async signalGrant(grantId, signal) {
      try {
        await call(startTimeoutMs, () =>
          client.workflow.signalWithStart<GrantWorkflow, [GrantSignal]>(GRANT_WORKFLOW, {
            taskQueue,
            workflowId: grantWorkflowId(grantId),
            args: [{ grantId }],
            signal: grantChangeSignal,
            signalArgs: [signal],
            staticSummary: `grant ${grantId}`,
          }),
        );
      } catch (err) {
        throw unavailable(err);
      }
    },

    // ------------------------------------------------------------ schedules

    async putSchedule(definition) {
      const { automationId, corrections } = definition;
      try {
        await call(callTimeoutMs * 2, async () => {
          await putOne(scheduleIdOf(automationId), zoneSpec(definition), definition);
          if (corrections.add.length > 0)
            await putOne(
              correctionScheduleIdOf(automationId),
              { calendars: corrections.add.map(utcCalendar), timezone: 'UTC' },
              definition,
            );
          else await deleteOne(correctionScheduleIdOf(automationId));
        });
      } catch (err) {
        throw unavailable(err);
      }
    },

    async deleteSchedule(automationId) {
      try {
        await call(callTimeoutMs, async () => {
          await deleteOne(scheduleIdOf(automationId));
          await deleteOne(correctionScheduleIdOf(automationId));
        });
      } catch (err) {
        throw unavailable(err);
      }
    },

    async describeSchedule(automationId, count) {
      try {
        return await call(callTimeoutMs, async () => {
          const main = await describeOne(scheduleIdOf(automationId));
          if (!main) return undefined;
          const extra = await describeOne(correctionScheduleIdOf(automationId));
          const paused = main.state.paused;
          const times = paused
            ? []
            : [...main.info.nextActionTimes, ...(extra?.info.nextActionTimes ?? [])].map((time) => time.toISOString());
          return { nextRuns: [...new Set(times)].sort().slice(0, count), paused };
        });
      } catch (err) {
        throw unavailable(err);
      }
    },

    async scheduledAutomations() {
      try {
        return await call(callTimeoutMs * 4, async () => {
          const ids = new Set<string>();
          for await (const summary of client.schedule.list({ pageSize: 1000 })) {
            const id = automationOfScheduleId(summary.scheduleId);
            if (id) ids.add(id);
          }
          return [...ids];
        });
      } catch (err) {
        throw unavailable(err);
      }
    },

    async scheduleTimes(automationId, startAt, endAt, limit = Number.MAX_SAFE_INTEGER) {
      try {
        return await call(callTimeoutMs * 8, async () => {
          const times = new Set<string>();
          for (const id of [scheduleIdOf(automationId), correctionScheduleIdOf(automationId)]) {
            // The server answers at most MATCHING_TIMES_PAGE times of a range: read on from the last one.
            let from = startAt.getTime();
            for (;;) {
              let answer;
              try {
                answer = await client.workflowService.listScheduleMatchingTimes({
                  namespace: client.options.namespace,
                  scheduleId: id,
                  // The server leaves its start out: ask from a second before.
                  startTime: timestampOf(new Date(from - 1000)),
                  endTime: timestampOf(endAt),
                });
              } catch (err) {
                if (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND) break;
                throw err;
              }
              const found = (answer.startTime ?? []).map(
                (time) => Number(time.seconds ?? 0) * 1000 + Math.floor((time.nanos ?? 0) / 1e6),
              );
              // The contract's range leaves its end out (the server's does not).
              for (const ms of found) if (ms >= from && ms < endAt.getTime()) times.add(new Date(ms).toISOString());
              const last = found.at(-1);
              if (found.length < MATCHING_TIMES_PAGE || last === undefined || last + 1 >= endAt.getTime()) break;
              if (times.size > limit) break;
              from = last + 1;
            }
          }
          return [...times].sort();
        });
      } catch (err) {
        throw unavailable(err);
      }
    },

    async startScheduleActions(automationId, times, kind, overlap) {
      // Concurrent (ALLOW_ALL, or one time): one workflow per time. Otherwise one workflow that runs
      // the times one after another. The run's id is the time's either way: a time runs once.
      const groups: Array<{ workflowId: string; times: string[] }> =
        overlap === 'ALLOW_ALL' || times.length === 1
          ? times.map((time) => ({ workflowId: actionWorkflowIdOf(automationId, time, kind), times: [time] }))
          : [{ workflowId: `${SCHEDULE_ACTION_PREFIX}${automationId}-${kind}-${randomUUID()}`, times: [...times] }];
      try {
        await call(callTimeoutMs * 4, async () => {
          for (const group of groups) {
            try {
              await client.workflow.start(SCHEDULED_RUN_WORKFLOW, {
                taskQueue,
                workflowId: group.workflowId,
                args: [{ automationId, kind, times: group.times } satisfies ScheduledRunInput],
                staticSummary: `${kind} of automation ${automationId}: ${group.times.length} time(s) from ${group.times[0]}`,
              });
            } catch (err) {
              if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
            }
          }
        });
      } catch (err) {
        throw unavailable(err);
      }
    },

    childRunOptions(run) {
      const options = runStartOptions(taskQueue, run);
      const searchAttributes: Record<string, string[]> = {};
      for (const pair of options.typedSearchAttributes as Array<{ key: { name: string }; value: string }>)
        searchAttributes[pair.key.name] = [pair.value];
      return {
        executionId: run.runId,
        args: options.args as unknown[],
        memo: options.memo as Record<string, unknown>,
        searchAttributes,
        staticSummary: options.staticSummary ?? run.summary,
      };
    },
  };

  /** The Schedule's settings common to both of an automation's Schedules. */
  function scheduleParts(definition: ScheduleDefinition) {
    const { trigger, automationId } = definition;
    return {
      action: {
        type: 'startWorkflow' as const,
        workflowType: SCHEDULED_RUN_WORKFLOW,
        workflowId: `${SCHEDULE_ACTION_PREFIX}${automationId}`,
        taskQueue,
        args: [{ automationId } satisfies ScheduledRunInput],
        staticSummary: `schedule of ${definition.automationName}`,
      },
      policies: {
        overlap: trigger.overlap,
        catchupWindow: (durationSeconds(trigger.catchupWindow) ?? 300) * 1000,
        pauseOnFailure: false,
      },
    };
  }

  /** Creates or replaces one Schedule, then pauses or resumes it as the trigger's `enabled` says. */
  async function putOne(scheduleId: string, spec: ScheduleSpec, definition: ScheduleDefinition): Promise<void> {
    const parts = scheduleParts(definition);
    const paused = !definition.trigger.enabled;
    const note = `automation ${definition.automationId}: ${paused ? 'paused' : 'enabled'}`;
    const handle = client.schedule.getHandle(scheduleId);
    try {
      await handle.update((previous) => ({ ...previous, spec, ...parts, state: { ...previous.state, paused, note } }));
    } catch (err) {
      if (!(err instanceof ScheduleNotFoundError)) throw err;
      try {
        await client.schedule.create({ scheduleId, spec, ...parts, state: { paused, note } });
        return;
      } catch (created) {
        // Made by another process in the meantime: update it as above.
        if (!(created instanceof ScheduleAlreadyRunning)) throw created;
        await handle.update((previous) => ({
          ...previous,
          spec,
          ...parts,
          state: { ...previous.state, paused, note },
        }));
      }
    }
    // An update leaves the pause as it was on some servers: say it again.
    if (paused) await handle.pause(note);
    else await handle.unpause(note);
  }

  async function deleteOne(scheduleId: string): Promise<void> {
    try {
      await client.schedule.getHandle(scheduleId).delete();
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) return;
      if (isGrpcServiceError(err) && err.code === GRPC_NOT_FOUND) return;
      throw err;
    }
  }

  async function describeOne(scheduleId: string) {
    try {
      return await client.schedule.getHandle(scheduleId).describe();
    } catch (err) {
      if (err instanceof ScheduleNotFoundError) return undefined;
      throw err;
    }
  }

  return engine;
}

/** The most times ListScheduleMatchingTimes answers for one range. */
const MATCHING_TIMES_PAGE = 1000;
/** The Schedule of an automation, and the one (in UTC) that fires its daylight-saving corrections. */
const SCHEDULE_PREFIX = 'automation:';
const CORRECTION_SCHEDULE_PREFIX = 'automation-dst:';
/** The workflow id a Schedule's action gets before the Schedule appends the time. */
export const SCHEDULE_ACTION_PREFIX = 'schedule:';

export function scheduleIdOf(automationId: string): string {
  return `${SCHEDULE_PREFIX}${automationId}`;
}
function correctionScheduleIdOf(automationId: string): string {
  return `${CORRECTION_SCHEDULE_PREFIX}${automationId}`;
}
function automationOfScheduleId(scheduleId: string): string | undefined {
  for (const prefix of [SCHEDULE_PREFIX, CORRECTION_SCHEDULE_PREFIX])
    if (scheduleId.startsWith(prefix)) return scheduleId.slice(prefix.length);
  return undefined;
}

/** The id a Schedule gives its action of `time` (the time in RFC 3339 to the second), with the kind for those it did not start. */
function actionWorkflowIdOf(automationId: string, time: string, kind: string): string {
  return `${SCHEDULE_ACTION_PREFIX}${automationId}-${kind}-${time}`;
}

/** A protobuf Timestamp (protobufjs takes a number for its 64-bit seconds). */
function timestampOf(date: Date): temporal.api.workflowservice.v1.IListScheduleMatchingTimesRequest['startTime'] {
  return {
    seconds: Math.floor(date.getTime() / 1000) as unknown as Long,
    nanos: (date.getTime() % 1000) * 1e6,
  };
}

/** The zone's Schedule: the trigger's cron or interval in its time zone, without the wall times a correction replaces. */
function zoneSpec(definition: ScheduleDefinition): ScheduleSpec {
  const { trigger, corrections } = definition;
  const spec: ScheduleSpec = { timezone: trigger.timezone };
  if (trigger.cron !== null) spec.cronExpressions = [trigger.cron];
  else
    spec.intervals = [
      {
        every: (durationSeconds(trigger.interval) ?? 1) * 1000,
        offset: (durationSeconds(trigger.offset) ?? 0) * 1000,
      },
    ];
  if (corrections.skip.length > 0) spec.skip = corrections.skip.map(wallCalendar);
  return spec;
}

function wallCalendar(time: WallTime): CalendarSpec {
  return {
    year: time.year,
    month: MONTH_NAMES[time.month - 1]!,
    dayOfMonth: time.day,
    hour: time.hour,
    minute: time.minute,
    second: time.second,
  };
}

/** One instant as a calendar of the UTC Schedule. */
function utcCalendar(instant: string): CalendarSpec {
  const date = new Date(instant);
  return wallCalendar({
    year: date.getUTCFullYear(),
    month: date.getUTCMonth() + 1,
    day: date.getUTCDate(),
    hour: date.getUTCHours(),
    minute: date.getUTCMinutes(),
    second: date.getUTCSeconds(),
  });
}

const MONTH_NAMES = [
  'JANUARY',
  'FEBRUARY',
  'MARCH',
  'APRIL',
  'MAY',
  'JUNE',
  'JULY',
  'AUGUST',
  'SEPTEMBER',
  'OCTOBER',
  'NOVEMBER',
  'DECEMBER',
] as const;

/** The workflow id of a grant's workflow. */
export function grantWorkflowId(grantId: string): string {
  return `grant:${grantId}`;
}

/** The workflow id of a bulk action's workflow. */
export function bulkActionWorkflowId(bulkActionId: string): string {
  return `bulk-action:${bulkActionId}`;
}

/**
 * How every run is started: the id refused when it was used before (REJECT_DUPLICATE, kept for the
 * namespace retention), the search attributes operators find it by, its memo and its summary.
 */
export function runStartOptions(taskQueue: string, run: RunStart): WorkflowStartOptions<AutomationWorkflow> {
  const { input } = run;
  const traceId = activeTraceId();
  return {
    taskQueue,
    workflowId: run.runId,
    args: [input],
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    workflowIdConflictPolicy: 'FAIL',
    typedSearchAttributes: [
      { key: AutomationIdKey, value: input.automationId },
      { key: ListenerIdKey, value: input.listenerId },
      { key: WebhookEventIdKey, value: input.eventId },
    ],
    memo: {
      automationName: run.automationName,
      automationVersion: input.version,
      ...(run.rerunOf ? { rerunOf: run.rerunOf } : {}),
      ...(run.bulkActionId ? { bulkActionId: run.bulkActionId } : {}),
      // A retry from the failed step: the run whose call keys it sends (for the executions view).
      ...(run.callKeysOf ? { callKeysOf: run.callKeysOf } : {}),
      // A run admitted through a lane: its key, which the lanes of the automation count by (visibility.ts).
      ...(input.flow?.queue ? { [QUEUE_KEY_MEMO]: input.flow.queue.key } : {}),
      // The trace the run was started in (the delivery's), for the run's detail: its `traceId`.
      ...(traceId ? { traceId } : {}),
    },
    staticSummary: `${run.automationName} (v${input.version}) — ${run.summary}`,
  };
}

// ---------------------------------------------------------------- small helpers

/** A W3C trace id as a run's memo keeps it. */
const TRACE_ID = /^[0-9a-f]{32}$/;

/** The memo's `callKeysOf` (a retry from the failed step: the original run), when well-formed. */
function callKeyScope(value: unknown): CallKeyScope | undefined {
  if (!isObject(value) || typeof value.workflowId !== 'string' || typeof value.runId !== 'string') return undefined;
  return { workflowId: value.workflowId, runId: value.runId };
}

/** The steps, each step that ran (or runs) a request carrying the call's key (`sendsCallKey`) with that key. */
function withCallKeys(steps: StepResult[], keysOf: CallKeyScope): RunStep[] {
  const sends = (kind: string): boolean =>
    kind in STEP_REGISTRY && (STEP_REGISTRY[kind as StepKind] as { sendsCallKey?: boolean }).sendsCallKey === true;
  return steps.map((step) =>
    sends(step.kind) && step.status !== 'PENDING' && step.status !== 'SKIPPED'
      ? { ...step, idempotencyKey: callKey(keysOf, step.id) }
      : step,
  );
}

/** Each waitForApproval step that started waiting, with what its approver reads (from the run's memo). */
function withApprovals(steps: RunStep[], approvals: Map<string, ApprovalContext>): RunStep[] {
  if (approvals.size === 0) return steps;
  return steps.map((step) => {
    const approval = step.kind === 'waitForApproval' && !step.approval ? approvals.get(step.id) : undefined;
    return approval ? { ...step, approval } : step;
  });
}

/** The state (as the API names it) a close event leaves a run in. */
function closeState(event: temporal.api.history.v1.IHistoryEvent): RunState {
  if (event.workflowExecutionCompletedEventAttributes) return 'COMPLETED';
  if (event.workflowExecutionFailedEventAttributes || event.workflowExecutionTimedOutEventAttributes) return 'FAILED';
  if (event.workflowExecutionCanceledEventAttributes) return 'CANCELED';
  if (event.workflowExecutionTerminatedEventAttributes) return 'TERMINATED';
  return 'COMPLETED'; // continued as new: this run has ended
}

function eventMs(event: temporal.api.history.v1.IHistoryEvent): number {
  return Number(String(event.eventTime?.seconds ?? 0)) * 1000 + (event.eventTime?.nanos ?? 0) / 1e6;
}

function grpcCode(err: unknown): number | undefined {
  if (isGrpcServiceError(err)) return err.code;
  if (err instanceof ServiceError && isGrpcServiceError(err.cause)) return err.cause.code;
  const cause = (err as { cause?: unknown })?.cause;
  if (isGrpcServiceError(cause)) return cause.code;
  return undefined;
}

/** Unknown run: not found, or an id Temporal refuses outright. */
function isNotFound(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  const code = grpcCode(err);
  return code === GRPC_NOT_FOUND || code === GRPC_INVALID_ARGUMENT;
}

/** Refused because the run is not running: unknown, or closed. */
function notRunning(err: unknown): boolean {
  const code = grpcCode(err);
  return err instanceof WorkflowNotFoundError || code === GRPC_NOT_FOUND || code === GRPC_FAILED_PRECONDITION;
}

function unavailable(err: unknown): WorkflowEngineUnavailableError {
  if (err instanceof WorkflowEngineUnavailableError) return err;
  return new WorkflowEngineUnavailableError(
    `workflow engine unavailable: ${(err as Error)?.message ?? 'unknown error'}`,
  );
}
