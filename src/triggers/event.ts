/**
 * The event trigger: the automation runs for each event of the named types that the service itself
 * records (the directory's outbox, src/store/directory-events.ts). `types`: 1..7 distinct names of
 * DIRECTORY_EVENT_TYPES; `enabled` false stops it listening.
 */
import type { FieldViolation } from '../errors';
import { defineTriggerKind, type StoredTriggerBase } from './kind';

/** Every event type the service records, in the contract's order. */
export const DIRECTORY_EVENT_TYPES = [
  'user.created',
  'user.updated',
  'grant.created',
  'grant.granted',
  'grant.revoked',
  'grant.expired',
  'grant.failed',
] as const;
export type DirectoryEventType = (typeof DIRECTORY_EVENT_TYPES)[number];

export interface EventTrigger extends StoredTriggerBase {
  kind: 'event';
  types: DirectoryEventType[];
  enabled: boolean;
}

export const event = defineTriggerKind<'event', EventTrigger>({
  name: 'event',
  hasListener: false,
  owns: (stored): stored is EventTrigger => stored.kind === 'event',
  validate(value, field, _config, violations: FieldViolation[]) {
    const stored: EventTrigger = { kind: 'event', types: [], enabled: true };
    const types = value.types;
    if (!Array.isArray(types) || types.length < 1 || types.length > DIRECTORY_EVENT_TYPES.length) {
      violations.push({
        field: `${field}.types`,
        description: `is required: 1 to ${DIRECTORY_EVENT_TYPES.length} of ${DIRECTORY_EVENT_TYPES.join(', ')}`,
      });
    } else {
      for (const [index, type] of types.entries()) {
        if (!(DIRECTORY_EVENT_TYPES as readonly unknown[]).includes(type))
          violations.push({
            field: `${field}.types[${index}]`,
            description: `must be one of ${DIRECTORY_EVENT_TYPES.join(', ')}`,
          });
        else if (stored.types.includes(type as DirectoryEventType))
          violations.push({ field: `${field}.types[${index}]`, description: `repeats "${String(type)}"` });
        else stored.types.push(type as DirectoryEventType);
      }
    }
    if (value.enabled !== undefined && value.enabled !== null) {
      if (typeof value.enabled !== 'boolean')
        violations.push({ field: `${field}.enabled`, description: 'must be a boolean' });
      else stored.enabled = value.enabled;
    }
    return stored;
  },
  view: (stored) => ({ types: [...stored.types], enabled: stored.enabled }),
  enabled: (stored) => stored.enabled,
});
