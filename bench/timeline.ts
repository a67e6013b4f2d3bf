/**
 * `npx tsx bench/timeline.ts [runs]`: the history-event timeline of one end-to-end automation run
 * (POST → three steps → result) and of one bare three-activity workflow, on the bench's embedded
 * stack after a few warm-up runs: every event's offset from the first, and the gaps between a
 * task's scheduled and started events, where dispatch waits show. Diagnostic, not a figure.
 */
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { createBenchAutomation, postEvent } from './automation';
import { BARE_QUEUE, installRuntime, startStack, type Stack } from './stack';
import { closeHttpAgent, runToExit } from './util';

const log = (line: string): void => void process.stderr.write(`[timeline] ${line}\n`);

function ms(time: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(time?.seconds ?? 0) * 1000 + (time?.nanos ?? 0) / 1e6;
}

async function timeline(stack: Stack, workflowId: string, clientStart: number, clientEnd: number): Promise<string> {
  const history = await stack.client.workflow.getHandle(workflowId).fetchHistory();
  const events = (history.events ?? []) as temporal.api.history.v1.IHistoryEvent[];
  const t0 = ms(events[0]?.eventTime);
  const lines: string[] = [];
  const scheduledAt = new Map<number, number>();
  for (const event of events) {
    const at = ms(event.eventTime) - t0;
    const type = String(temporal.api.enums.v1.EventType[event.eventType ?? 0] ?? event.eventType).replace(
      'EVENT_TYPE_',
      '',
    );
    const id = Number(event.eventId);
    let note = '';
    if (type.endsWith('_SCHEDULED')) scheduledAt.set(id, at);
    const startedAttrs = event.workflowTaskStartedEventAttributes ?? event.activityTaskStartedEventAttributes;
    if (startedAttrs?.scheduledEventId != null) {
      const s = scheduledAt.get(Number(startedAttrs.scheduledEventId));
      if (s !== undefined) note = `  (scheduled → started ${(at - s).toFixed(1)} ms)`;
    }
    if (type === 'MARKER_RECORDED') {
      const data = event.markerRecordedEventAttributes?.details?.data?.payloads?.[0]?.data;
      const activityType = data
        ? (/"activity_type":"([^"]+)"/.exec(Buffer.from(data).toString('utf8'))?.[1] ?? '')
        : '';
      note = `  ${event.markerRecordedEventAttributes?.markerName ?? ''} ${activityType}`;
    }
    if (type === 'ACTIVITY_TASK_SCHEDULED')
      note = `  ${event.activityTaskScheduledEventAttributes?.activityType?.name ?? ''}`;
    lines.push(`  ${at.toFixed(1).padStart(7)} ms  #${String(id).padEnd(3)} ${type}${note}`);
  }
  const last = ms(events.at(-1)?.eventTime) - t0;
  lines.push(`  first → last event ${last.toFixed(1)} ms; at the client ${(clientEnd - clientStart).toFixed(1)} ms`);
  return lines.join('\n');
}

async function main(): Promise<void> {
  const warmup = Number(process.argv[2] ?? 5);
  installRuntime();
  const stack = await startStack({ log, databaseUrl: undefined });
  try {
    const automation = await createBenchAutomation(stack.e2eApi.url, stack.adminToken);
    const trigger = JSON.parse(automation.body) as unknown;
    let lastAutomation = '';
    let lastBare = '';
    for (let i = 0; i <= warmup; i++) {
      const a0 = performance.now();
      const response = await postEvent(stack.e2eApi.url, automation);
      const aPosted = performance.now();
      await stack.client.workflow.getHandle(String(response.body.executionId)).result();
      const a1 = performance.now();
      const b0 = performance.now();
      const workflowId = `bare:${randomUUID()}`;
      const handle = await stack.workerClient.workflow.start('bare', {
        taskQueue: BARE_QUEUE,
        workflowId,
        args: [{ trigger }],
        requestEagerStart: true,
      });
      await handle.result();
      const b1 = performance.now();
      if (i >= warmup - 2) {
        lastAutomation += `automation (${automation.shape}), POST answered after ${(aPosted - a0).toFixed(1)} ms\n${await timeline(stack, String(response.body.executionId), a0, a1)}\n`;
        lastBare += `bare 3-activity workflow\n${await timeline(stack, workflowId, b0, b1)}\n`;
      }
    }
    console.log(lastAutomation);
    console.log(lastBare);
  } finally {
    await stack.stop();
    closeHttpAgent();
  }
}

runToExit(main, log);
