/**
 * Lab (not part of `npm run bench`): one run of the bench's automation against one of its
 * product-shaped floor (bench/e2e.ts `startProductShapeFloor`), event by event: each history event's
 * type and its encoded size, and the visibility record each leaves.
 * `node -r ./scripts/swc-register.js bench/lab-history.ts`
 */
import { temporal } from '@temporalio/proto';
import { createBenchAutomation, postEvent } from './automation';
import { startProductShapeFloor } from './e2e';
import { installRuntime, startStack, type Stack } from './stack';
import { closeHttpAgent, request, runToExit } from './util';

const log = (line: string) => console.error(`[lab] ${line}`);

async function describeHistory(stack: Stack, workflowId: string): Promise<void> {
  const handle = stack.client.workflow.getHandle(workflowId);
  await handle.result();
  const history = await handle.fetchHistory();
  let total = 0;
  const lines: string[] = [];
  for (const event of history.events ?? []) {
    const bytes = temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    total += bytes;
    const type = temporal.api.enums.v1.EventType[event.eventType as number] ?? String(event.eventType);
    const marker = event.markerRecordedEventAttributes?.markerName
      ? ` ${event.markerRecordedEventAttributes.markerName}`
      : '';
    lines.push(`  ${String(event.eventId).padStart(3)} ${type}${marker} ${bytes} B`);
  }
  const described = await handle.describe();
  const raw = described.raw.workflowExecutionInfo;
  const visibility = temporal.api.workflow.v1.WorkflowExecutionInfo.encode(raw ?? {}).finish().length;
  console.log(`${workflowId}: ${history.events?.length} events, ${total} B; visibility record ${visibility} B`);
  console.log(lines.join('\n'));
}

async function main(): Promise<void> {
  installRuntime();
  const stack = await startStack({ log, databaseUrl: undefined });
  try {
    const automation = await createBenchAutomation(stack.e2eApi.url, stack.adminToken);
    const floor = await startProductShapeFloor(stack, automation);
    try {
      for (let i = 0; i < 2; i++) {
        const response = await postEvent(stack.e2eApi.url, automation);
        await describeHistory(stack, String(response.body.executionId));
        const floorResponse = await request('POST', floor.url, { body: automation.body });
        await describeHistory(stack, String(floorResponse.body.executionId));
      }
    } finally {
      await floor.close();
    }
  } finally {
    await stack.stop();
    closeHttpAgent();
  }
}

runToExit(main);
