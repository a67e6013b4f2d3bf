/**
 * A grant's life (docs/api.md#grants): one workflow per grant, id `grant:<grantId>`. It provisions
 * (an activity), holds the grant on a durable timer until its expiresAt (a timer that came due
 * while every process was down fires as soon as a worker is back), takes a revoke, an extension
 * and a retry of a failed deprovision as the `grantChange` signal, and deprovisions. The grant's
 * row in the store is the record: every activity reads the state it starts from, so a repeat or a
 * second workflow for the same grant changes nothing. A standing grant continues-as-new before its
 * history grows long.
 */
import { condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { GrantActivities, GrantStep } from '../src/contract/activities';
import {
  grantChangeSignal,
  type GrantSignal,
  type GrantWorkflow,
  type GrantWorkflowInput,
} from '../src/contract/workflows';

/** Continue-as-new beyond this many history events even when the server does not suggest it yet. */
const MAX_HISTORY_EVENTS = 1000;

const activities = proxyActivities<GrantActivities>({
  startToCloseTimeout: '1 minute',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export async function grant(input: GrantWorkflowInput): Promise<{ state: string }> {
  let revoke = false;
  let retry = false;
  let moved: string | null | undefined;
  setHandler(grantChangeSignal, (signal: GrantSignal) => {
    if (signal.type === 'revoke') revoke = true;
    else if (signal.type === 'retry') retry = true;
    else moved = signal.expiresAt;
  });

  let step: GrantStep = input.held
    ? { state: 'GRANTED', expiresAt: input.held.expiresAt }
    : await activities.provisionGrant({ grantId: input.grantId });

  // Held: until a revoke, or the expiry the store confirms.
  while (step.state === 'GRANTED') {
    if (moved !== undefined) {
      step = { state: 'GRANTED', expiresAt: moved };
      moved = undefined;
    }
    if (revoke) {
      step = await activities.deprovisionGrant({ grantId: input.grantId });
      break;
    }
    const expiresAt = step.expiresAt;
    const waitMs = expiresAt === null ? undefined : Date.parse(expiresAt) - Date.now();
    const changed =
      waitMs === undefined
        ? await condition(() => revoke || moved !== undefined)
        : waitMs > 0
          ? await condition(() => revoke || moved !== undefined, waitMs)
          : false;
    if (!changed && !revoke && moved === undefined) {
      step = await activities.expireGrant({ grantId: input.grantId });
      // Still GRANTED at the same time: the store's clock is behind the timer's; ask again shortly.
      if (step.state === 'GRANTED' && step.expiresAt === expiresAt) {
        await condition(() => revoke || moved !== undefined, 1000);
      }
    }
    const info = workflowInfo();
    if (
      step.state === 'GRANTED' &&
      !revoke &&
      (info.continueAsNewSuggested || info.historyLength > MAX_HISTORY_EVENTS)
    ) {
      await continueAsNew<typeof grant>({ grantId: input.grantId, held: { expiresAt: moved ?? step.expiresAt } });
    }
  }

  // Taken back: deprovision until done; a failed deprovision waits for a person's retry.
  while (step.state === 'DEPROVISIONING') {
    step = await activities.deprovisionGrant({ grantId: input.grantId });
    if (step.state !== 'DEPROVISIONING') break;
    await condition(() => retry);
    retry = false;
  }
  return { state: step.state };
}

/** The adapter starts this workflow by name with the contract's signature: the compiler holds the two together. */
type Holds<T extends true> = T;
export type GrantMatchesContract = Holds<typeof grant extends GrantWorkflow ? true : false>;
