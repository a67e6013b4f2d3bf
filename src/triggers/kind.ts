/**
 * What a trigger kind is (the registry, src/triggers/index.ts, lists them): the key of the
 * automation body's `trigger` object that selects it, its save-time validation into the stored
 * form, and its public view. A kind without a listener has no URL and no signing secret.
 */
import type { FieldViolation } from '../errors';
import type { AuthenticatorConfig } from '../webhooks/authenticators';

/** What a kind's view needs besides the stored trigger. */
export interface TriggerViewContext {
  listenerId: string;
  /** The listener URL of an id (BASE_URL + path). */
  listenerUrl(listenerId: string): string;
}

export interface TriggerKind<Name extends string, Stored> {
  /** The key of `trigger` in the API body and view. */
  readonly name: Name;
  /** Whether deliveries arrive by HTTP at the automation's listener (and so whether it may have a signing secret). */
  readonly hasListener: boolean;
  /** Whether a stored trigger is of this kind. */
  owns(stored: StoredTriggerBase): stored is Stored & StoredTriggerBase;
  /** The member's value checked into its stored form; violations named under `field` (`trigger.<name>`). */
  validate(
    value: Record<string, unknown>,
    field: string,
    config: AuthenticatorConfig,
    violations: FieldViolation[],
  ): Stored;
  /** The public view of the member (never a secret). */
  view(stored: Stored, context: TriggerViewContext): Record<string, unknown>;
  /** Whether the trigger is switched on. */
  enabled(stored: Stored): boolean;
}

/** Every stored trigger is a JSON object; the kinds after the webhook carry `kind`. */
export interface StoredTriggerBase {
  kind?: string;
}

export function defineTriggerKind<Name extends string, Stored>(
  kind: TriggerKind<Name, Stored>,
): TriggerKind<Name, Stored> {
  return kind;
}
