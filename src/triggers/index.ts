/**
 * The trigger kinds: one line each. A new kind is one file in this folder (a `TriggerKind`) and one
 * line here; the automation body's validation, its view, the intake (only a kind with a listener
 * takes deliveries) and the rotation of signing secrets read this list.
 */
import type { FieldViolation } from '../errors';
import { isObject } from '../json';
import type { AuthenticatorConfig } from '../webhooks/authenticators';
import type { IncomingWebhookTrigger } from '../webhooks/trigger';
import { event, type EventTrigger } from './event';
import { incomingWebhook } from './incoming-webhook';
import type { TriggerKind, TriggerViewContext } from './kind';
import { schedule, type ScheduleTrigger } from './schedule';

export const TRIGGER_KINDS = { incomingWebhook, schedule, event } as const;

export type TriggerKindName = keyof typeof TRIGGER_KINDS;
export const TRIGGER_KIND_NAMES = Object.keys(TRIGGER_KINDS) as [TriggerKindName, ...TriggerKindName[]];

/** A trigger as stored (the automations table's `trigger` column). */
export type StoredTrigger = IncomingWebhookTrigger | ScheduleTrigger | EventTrigger;

function kinds(): Array<TriggerKind<string, StoredTrigger>> {
  return TRIGGER_KIND_NAMES.map((name) => TRIGGER_KINDS[name] as unknown as TriggerKind<string, StoredTrigger>);
}

/** The kind of a stored trigger. */
export function triggerKindOf(trigger: StoredTrigger): TriggerKindName {
  return (kinds().find((kind) => kind.owns(trigger))?.name ?? 'incomingWebhook') as TriggerKindName;
}

export function isWebhookTrigger(trigger: StoredTrigger): trigger is IncomingWebhookTrigger {
  return incomingWebhook.owns(trigger);
}
export function isScheduleTrigger(trigger: StoredTrigger): trigger is ScheduleTrigger {
  return schedule.owns(trigger);
}
export function isEventTrigger(trigger: StoredTrigger): trigger is EventTrigger {
  return event.owns(trigger);
}

/** Whether the trigger is switched on (`enabled`). */
export function triggerEnabled(trigger: StoredTrigger): boolean {
  return TRIGGER_KINDS[triggerKindOf(trigger)].enabled(trigger as never);
}

/**
 * The body's `trigger`: an object with exactly one kind's member set, checked by that kind into
 * its stored form. Violations name `trigger` (no kind, or two) or the member's own fields.
 */
export function validateTrigger(
  value: unknown,
  config: AuthenticatorConfig,
  violations: FieldViolation[],
  field = 'trigger',
): StoredTrigger {
  const set = isObject(value)
    ? TRIGGER_KIND_NAMES.filter((name) => value[name] !== undefined && value[name] !== null)
    : [];
  if (set.length !== 1) {
    violations.push({
      field,
      description: `must set exactly one trigger kind: ${TRIGGER_KIND_NAMES.join(', ')}${set.length > 1 ? ` (got ${set.join(', ')})` : ''}`,
    });
    return incomingWebhook.validate({ authMethod: 'HMAC' }, `${field}.incomingWebhook`, config, []);
  }
  const name = set[0]!;
  const member = (value as Record<string, unknown>)[name];
  if (!isObject(member)) {
    violations.push({ field: `${field}.${name}`, description: 'must be an object' });
    return incomingWebhook.validate({ authMethod: 'HMAC' }, `${field}.incomingWebhook`, config, []);
  }
  const kind = TRIGGER_KINDS[name] as unknown as TriggerKind<string, StoredTrigger>;
  return kind.validate(member, `${field}.${name}`, config, violations);
}

/** The public view: `{<kind>: {...}}`. */
export function triggerView(
  trigger: StoredTrigger,
  context: TriggerViewContext,
): Record<string, Record<string, unknown>> {
  const name = triggerKindOf(trigger);
  const kind = TRIGGER_KINDS[name] as unknown as TriggerKind<string, StoredTrigger>;
  return { [name]: kind.view(trigger, context) };
}

export type { TriggerViewContext } from './kind';
export type { ScheduleTrigger, OverlapPolicy } from './schedule';
export type { EventTrigger, DirectoryEventType } from './event';
export {
  OVERLAP_POLICIES,
  DEFAULT_CATCHUP_WINDOW_SECONDS,
  CATCHUP_WINDOW_SECONDS,
  durationSeconds,
  isTimeZone,
} from './schedule';
export { DIRECTORY_EVENT_TYPES } from './event';
export { cronProblem } from './cron';
