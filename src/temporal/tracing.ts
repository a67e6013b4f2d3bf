/**
 * Temporal's OpenTelemetry interceptors (@temporalio/interceptors-opentelemetry), for the client
 * (the start of a run is the span between the webhook's server span and the run), the workflows
 * (the run span; its context comes from the run's headers, so a resumed run continues its trace)
 * and the activities. The workflow interceptors are in every bundle, tracing on or off, so that one
 * bundle serves both and every committed history replays with them installed; while tracing is
 * off their spans go to a sink that drops them, and neither the client nor the activities are
 * intercepted.
 */
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { IResource } from '@opentelemetry/resources';
import type { InjectedSinks, WorkerOptions } from '@temporalio/worker';
import type * as TemporalOtel from '@temporalio/interceptors-opentelemetry';
import type { OpenTelemetrySinks } from '@temporalio/interceptors-opentelemetry';
import { tracingOn } from '../tracing/spans';

/** The interceptors package, loaded on first use (tracing on): off, the process never loads it or the SDK it imports. */
function temporalOtel(): typeof TemporalOtel {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('@temporalio/interceptors-opentelemetry') as typeof TemporalOtel;
}

/** The module of workflow interceptors every automation bundle includes. */
export const WORKFLOW_TRACING_INTERCEPTORS: string =
  require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/** What the worker's workflow spans are handed to (src/tracing/sdk.ts: the allowlisted processor). */
export interface WorkerTracing {
  processor: SpanProcessor;
  resource: IResource;
}

/** The client's interceptors: Temporal's OpenTelemetry one while tracing is on, none otherwise. */
export function tracingClientInterceptors(): { workflow: WorkflowClientInterceptor[] } | undefined {
  return tracingOn() ? { workflow: [new (temporalOtel().OpenTelemetryWorkflowClientInterceptor)()] } : undefined;
}

/** A sink that drops the workflow sandbox's spans (tracing off, replay). */
const DROPPED: InjectedSinks<OpenTelemetrySinks> = {
  exporter: { export: { fn: () => undefined } },
};

/**
 * The worker's part: the sink of the workflow spans (always registered: every bundle carries the
 * interceptors) and, while tracing is on, the activity interceptors.
 */
export function tracingWorkerOptions(
  tracing: WorkerTracing | undefined,
): Pick<WorkerOptions, 'sinks' | 'interceptors'> {
  if (tracing === undefined) return { sinks: DROPPED };
  const { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, makeWorkflowExporter } =
    temporalOtel();
  return {
    sinks: {
      exporter: makeWorkflowExporter(tracing.processor as unknown as SpanExporter, tracing.resource as never),
    } as InjectedSinks<OpenTelemetrySinks>,
    interceptors: {
      activity: [
        (ctx) => ({
          inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
          outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
        }),
      ],
    },
  };
}
