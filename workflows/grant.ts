/**
 * A grant's life (docs/api.md#grants): one workflow per grant, id `grant:<grantId>`. It provisions
 * (an activity; a provisioning webhook's call is an activity of its own, retried on 5xx, 429 and
 * network errors for 24 h, and a 202 waits up to 7 days for the receiver's callback), holds the
 * grant on a durable timer until its expiresAt (a timer that came due while every process was
 * down fires as soon as a worker is back), takes a revoke, an extension, a callback and a retry
 * of a failed deprovision as the `grantChange` signal, and deprovisions. The grant's row in the
 * store is the record: every activity reads the state it starts from, so a repeat or a second
 * workflow for the same grant changes nothing. A standing grant continues-as-new before its
 * history grows long.
 */
import { condition, continueAsNew, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { CallOutcome, GrantActivities, GrantStep, ProvisioningCall } from '../src/contract/activities';
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

/** A provisioning webhook's call: 1 s doubling to 5 min, for 24 h (then the grant fails). */
const webhook = proxyActivities<Pick<GrantActivities, 'callProvisioningWebhook'>>({
  startToCloseTimeout: '1 minute',
  scheduleToCloseTimeout: '24 hours',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '5 minutes' },
});

/** How long a 202 waits for its callback. */
const CALLBACK_WAIT = '7 days';

function callKey(call: Pick<ProvisioningCall, 'phase' | 'step' | 'attempt'>): string {
  return `${call.phase}:${call.step}:${call.attempt}`;
}

/** The message of an activity's last failure (its cause's: the receiver's status and origin). */
function failureMessage(err: unknown): string {
  const cause = (err as { cause?: { message?: string } }).cause;
  return cause?.message ?? (err as Error).message ?? 'the call failed';
}

export async function grant(input: GrantWorkflowInput): Promise<{ state: string }> {
  let revoke = false;
  let retry = false;
  let moved: string | null | undefined;
  const callbacks = new Map<string, { status: 'done' | 'failed'; message: string | null }>();
  setHandler(grantChangeSignal, (signal: GrantSignal) => {
    if (signal.type === 'revoke') revoke = true;
    else if (signal.type === 'retry') retry = true;
    else if (signal.type === 'callback') callbacks.set(callKey(signal), signal);
    else moved = signal.expiresAt;
  });

  /** Calls the webhook of `call`, waits for its callback after a 202, and records how it ended. */
  async function callWebhook(call: ProvisioningCall): Promise<GrantStep> {
    let outcome: CallOutcome;
    try {
      const answer = await webhook.callProvisioningWebhook({ grantId: input.grantId, ...call });
      if (answer.status === 'failed') {
        outcome = { ok: false, error: answer.error };
      } else if (answer.status === 'done') {
        outcome = { ok: true };
      } else {
        const key = callKey(call);
        const stops = () => call.phase === 'provision' && revoke;
        await condition(() => callbacks.has(key) || stops(), CALLBACK_WAIT);
        const back = callbacks.get(key);
        outcome = back
          ? back.status === 'done'
            ? { ok: true }
            : { ok: false, error: back.message ?? 'the receiver reported a failure' }
          : { ok: false, error: stops() ? 'stopped by a revoke' : 'no callback within 7 days' };
      }
    } catch (err) {
      outcome = { ok: false, error: failureMessage(err) };
    }
    return activities.finishProvisioningCall({ grantId: input.grantId, ...call, outcome });
  }

  let step: GrantStep = input.held
    ? { state: 'GRANTED', expiresAt: input.held.expiresAt }
    : await activities.provisionGrant({ grantId: input.grantId });
  if (step.call) step = await callWebhook(step.call);

  // Held: until a revoke, or the expiry the store confirms.
  while (step.state === 'GRANTED') {
    if (moved !== undefined) {
      step = { state: 'GRANTED', expiresAt: moved };
      moved = undefined;
    }
    if (revoke) {
      step = { state: 'DEPROVISIONING', expiresAt: step.expiresAt };
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

  // Taken back: deprovision until done; a failed deprovision waits for a person's retry (a new attempt).
  let attempt = 1;
  while (step.state === 'DEPROVISIONING') {
    step = await activities.deprovisionGrant({ grantId: input.grantId, attempt });
    if (step.call) step = await callWebhook(step.call);
    if (step.state !== 'DEPROVISIONING') break;
    await condition(() => retry);
    retry = false;
    attempt += 1;
  }
  return { state: step.state };
}

/** The adapter starts this workflow by name with the contract's signature: the compiler holds the two together. */
type Holds<T extends true> = T;
export type GrantMatchesContract = Holds<typeof grant extends GrantWorkflow ? true : false>;
