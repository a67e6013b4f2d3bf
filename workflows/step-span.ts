/**
 * The run's spans from inside the workflow: the run span's attributes and one span per step. The
 * tracer is the one Temporal's OpenTelemetry workflow interceptors register in the sandbox
 * (src/temporal/tracing.ts puts them in every bundle); their spans leave through the worker's sink,
 * never while a history is replayed. Spans are no commands: adding or removing one changes nothing
 * a history records, so no patch guards them (test/integration/replay.test.ts replays every
 * committed history with the interceptors installed). The trace context itself travels in the
 * run's headers (its start event), so a run resumed on another worker, after a restart, continues
 * the same trace.
 */
import { context, trace, SpanStatusCode, type Span } from '@opentelemetry/api';
import { workflowInfo } from '@temporalio/workflow';
import type { StepKind, StepStatus } from '../src/contract/run';

const TRACER_NAME = 'automation-governance';

/** Names the run on its span (the interceptors' `RunWorkflow:automation`). */
export function annotateRunSpan(automationId: string, version: number): void {
  trace.getActiveSpan()?.setAttributes({
    'automation.id': automationId,
    'automation.version': version,
    'execution.id': workflowInfo().workflowId,
  });
}

/**
 * Runs one step inside its span (`step.id`, `step.kind`, and `step.status` as the run records it:
 * DONE, SKIPPED or FAILED); the
 * activities the step schedules are its children. A failed step's span has status ERROR and an
 * `exception` event naming the error's type.
 */
export async function inStepSpan<T extends { skipped?: boolean }>(
  stepId: string,
  kind: StepKind | undefined,
  work: () => Promise<T>,
): Promise<T> {
  const span: Span = trace.getTracer(TRACER_NAME).startSpan(`Step:${kind ?? 'unknown'}`, {
    attributes: { 'step.id': stepId, ...(kind ? { 'step.kind': kind } : {}) },
  });
  let status: StepStatus = 'FAILED';
  try {
    const outcome = await context.with(trace.setSpan(context.active(), span), work);
    status = outcome.skipped ? 'SKIPPED' : 'DONE';
    return outcome;
  } catch (err) {
    const type = (err as { type?: unknown })?.type ?? (err as Error)?.name ?? 'Error';
    span.addEvent('exception', { 'exception.type': String(type) });
    span.setStatus({ code: SpanStatusCode.ERROR });
    throw err;
  } finally {
    span.setAttribute('step.status', status);
    span.end();
  }
}
