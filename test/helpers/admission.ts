/**
 * Shared by the admission unit tests (webhooks-admission*.test.ts): a header pre-check input that
 * passes, at a fixed clock, and the verdict of a check as "status reason" or "pass".
 */
import { randomUUID } from 'node:crypto';
import type { PrecheckInput } from '../../src/webhooks/admission';
import { WebhookRejection } from '../../src/errors';
import { webhookStatus } from '../../src/http/errors';

/** The clock of every pre-check input, in seconds. */
export const PRECHECK_NOW = 1_800_000_000;
/** The body deadline of every pre-check input. */
export const PRECHECK_DEADLINE_MS = 10_000;

/** A signed JSON delivery's headers that pass the pre-check, with `overrides` applied. */
export function precheckInput(overrides: Partial<PrecheckInput> = {}): PrecheckInput {
  return {
    contentType: 'application/json',
    timestamp: String(PRECHECK_NOW),
    eventId: randomUUID(),
    signature: 'v1,abc',
    authorization: undefined,
    authMethod: 'HMAC',
    nowSeconds: PRECHECK_NOW,
    contentLength: '100',
    transferEncoding: undefined,
    maxBodyBytes: 65_536,
    bodyDeadlineMs: PRECHECK_DEADLINE_MS,
    ...overrides,
  };
}

/** The refusal `fn` throws as "status reason", or "pass"; any other error is thrown on. */
export function verdict(fn: () => unknown): string {
  try {
    fn();
    return 'pass';
  } catch (err) {
    if (err instanceof WebhookRejection) return `${webhookStatus(err.reason)} ${err.reason}`;
    throw err;
  }
}
