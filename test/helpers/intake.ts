/**
 * Drives the webhook intake (src/delivery/intake.ts) through its stages as the route does (open →
 * read the body → decide → start) and answers what the route would send (src/http/routes/webhooks.ts
 * `webhookAnswer`): the intake's tests assert statuses and bodies without an HTTP server.
 */
import type { IntakeOutcome, WebhookIntake } from '../../src/delivery/intake';
import { webhookAnswer } from '../../src/http/routes/webhooks';

/** One delivery as a test describes it. */
export interface TestDelivery {
  listenerId: string;
  sourceAddress: string;
  /** Request headers by lower-case name. */
  headers: Record<string, string | undefined>;
  now: Date;
  /** The body, or undefined when it is over `maxBytes` (as the route's reader answers). */
  readBody(maxBytes: number): Promise<Buffer | undefined>;
}

/** The route's answer, flattened: `accepted` for a 200 that started a run or filtered the event. */
export interface DeliveryAnswer {
  accepted: boolean;
  status: number;
  reason: string;
  eventId?: string;
  executionId?: string | null;
  message?: string;
  details?: Array<Record<string, unknown>>;
  outcome: IntakeOutcome;
}

export async function deliver(intake: WebhookIntake, delivery: TestDelivery): Promise<DeliveryAnswer> {
  const opened = await intake.open({ ...delivery, bodyDeadlineMs: 10_000, ticket: { enterListener: () => undefined } });
  let outcome: IntakeOutcome;
  if (opened.verdict !== 'read-body') outcome = opened;
  else {
    const decided = await intake.decide(opened, await delivery.readBody(opened.maxBytes));
    outcome = decided.verdict === 'start' ? await intake.start(decided) : decided;
  }
  const answer = webhookAnswer(outcome);
  const body = answer.body as Record<string, unknown>;
  return {
    accepted: answer.status === 200,
    status: answer.status,
    reason: answer.reason,
    ...body,
    outcome,
  } as DeliveryAnswer;
}
