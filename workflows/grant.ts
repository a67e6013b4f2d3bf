/**
 * A grant's life (docs/api.md#grants): one workflow per grant, id `grant:<grantId>`. It provisions
 * (activities that run the policy's steps in order; each step that waits is a call: a provisioning
 * webhook's, retried on 5xx, 429 and network errors for 24 h, a 202 waiting up to 7 days for the
 * receiver's callback; a person's provisioning task, waiting for its completion; a delegated child
 * grant, waiting until the child is granted or failed, told by the child and looked at now and
 * then), holds the grant on a durable timer until its expiresAt (a timer that came due while every
 * process was down fires as soon as a worker is back), takes a revoke, an extension, a callback and
 * a retry of a failed deprovision as the `grantChange` signal, and deprovisions, step by step. The
 * grant's row in the store is the record: every activity reads the state it starts from and answers
 * the next call, so a repeat or a second workflow for the same grant changes nothing. A standing
 * grant continues-as-new before its history grows long.
 */
import { condition, continueAsNew, patched, proxyActivities, setHandler, workflowInfo } from '@temporalio/workflow';
import type { CallOutcome, GrantActivities, GrantStep, ProvisioningCall } from '../src/contract/activities';
import {
  grantChangeSignal,
  type GrantSignal,
  type GrantWorkflow,
  type GrantWorkflowInput,
} from '../src/contract/workflows';
import { GRANT_STEPS_PATCH } from '../src/contract/run';

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
/** A delegated step looks at its child again this long after it last looked (doubling), or when the child tells it. */
const DELEGATION_FIRST_LOOK_MS = 5_000;
const DELEGATION_LOOK_MAX_MS = 3_600_000;

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

  const stops = (call: ProvisioningCall) => call.phase === 'provision' && !call.undo && revoke;

  /** Waits for a person to close the task of `call` (its signal), or for a revoke that stops a provision. */
  async function awaitTask(call: ProvisioningCall): Promise<CallOutcome> {
    const key = callKey(call);
    await condition(() => callbacks.has(key) || stops(call));
    const back = callbacks.get(key);
    if (!back) return { ok: false, error: 'stopped by a revoke' };
    return back.status === 'done' ? { ok: true } : { ok: false, error: back.message ?? 'the task was failed' };
  }

  /** Waits until the delegated child of `call` is granted or failed: told by the child, looked at now and then. */
  async function awaitChild(call: ProvisioningCall): Promise<CallOutcome> {
    const key = callKey(call);
    let lookAfterMs = DELEGATION_FIRST_LOOK_MS;
    for (;;) {
      await condition(() => callbacks.has(key) || stops(call), lookAfterMs);
      if (stops(call)) return { ok: false, error: 'stopped by a revoke' };
      callbacks.delete(key);
      const seen = await activities.checkDelegation({ grantId: input.grantId, ...call });
      if (seen.outcome) return seen.outcome;
      lookAfterMs = Math.min(lookAfterMs * 2, DELEGATION_LOOK_MAX_MS);
    }
  }

  /** Makes `call` (a webhook's, a task's, a child's), waits for how it ends, and records that: the next step. */
  async function runCall(call: ProvisioningCall): Promise<GrantStep> {
    if (call.member === 'manual' || call.member === 'delegated') {
      const outcome = call.member === 'manual' ? await awaitTask(call) : await awaitChild(call);
      return activities.finishProvisioningCall({ grantId: input.grantId, ...call, outcome });
    }
    return callWebhook(call);
  }

  /** Runs the calls of a phase, each after the one before, as the store answers them. */
  async function runCalls(first: GrantStep): Promise<GrantStep> {
    let step = first;
    while (step.call) {
      step = await runCall(step.call);
      if (step.call && !patched(GRANT_STEPS_PATCH)) break;
    }
    return step;
  }

  /** Calls the webhook of `call`, waits for its callback after a 202, and records how it ended. */
  async function callWebhook(call: ProvisioningCall): Promise<GrantStep> {
    let outcome: CallOutcome;
    try {
      const answer = await webhook.callProvisioningWebhook({ grantId: input.grantId, ...call });
      // Recorded by the call itself (a history before 0.13.0 holds answers without `step`).
      if (answer.step) return answer.step;
      if (answer.status === 'failed') {
        outcome = { ok: false, error: answer.error };
      } else if (answer.status === 'done') {
        outcome = { ok: true };
      } else {
        const key = callKey(call);
        await condition(() => callbacks.has(key) || stops(call), CALLBACK_WAIT);
        const back = callbacks.get(key);
        outcome = back
          ? back.status === 'done'
            ? { ok: true }
            : { ok: false, error: back.message ?? 'the receiver reported a failure' }
          : { ok: false, error: stops(call) ? 'stopped by a revoke' : 'no callback within 7 days' };
      }
    } catch (err) {
      outcome = { ok: false, error: failureMessage(err) };
    }
    return activities.finishProvisioningCall({ grantId: input.grantId, ...call, outcome });
  }

  let step: GrantStep = input.held
    ? { state: 'GRANTED', expiresAt: input.held.expiresAt }
    : await activities.provisionGrant({ grantId: input.grantId });
  step = await runCalls(step);

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
  // An expiry's answer already holds the deprovision's first call (a history before 0.13.0 never does).
  let attempt = 1;
  let started: GrantStep | undefined = step.call ? step : undefined;
  while (step.state === 'DEPROVISIONING') {
    step = await runCalls(started ?? (await activities.deprovisionGrant({ grantId: input.grantId, attempt })));
    started = undefined;
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
