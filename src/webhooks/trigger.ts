/**
 * The incoming-webhook trigger of an automation: the method (a key of the authenticator
 * registry), that method's own fields, the source allow-list and the on/off switch. Save-time
 * validation and the public view, both driven by the registry.
 */
import { parseCidrList } from '../net/cidr';
import {
  AUTH_METHODS,
  authenticatorOf,
  isAuthMethod,
  triggerFieldOwners,
  type AuthenticatorConfig,
  type AuthMethod,
  type TriggerFields,
} from './authenticators';

/** The stored trigger: every method's fields are present, `''` for those of other methods. */
export type IncomingWebhookTrigger = {
  /** Absent on stored rows (the kind before the others existed). */
  kind?: 'incomingWebhook';
  authMethod: AuthMethod;
  allowedCidrs: string[];
  enabled: boolean;
} & TriggerFields;

/** A save-time problem, by field path (the domain's field violation). */
export interface TriggerViolation {
  field: string;
  description: string;
}

const FIELD = 'trigger.incomingWebhook';

/** Every method's fields, unset (`''`). */
function emptyFields(): TriggerFields {
  return Object.fromEntries(triggerFieldOwners().map(({ field }) => [field, ''])) as TriggerFields;
}

/**
 * The member `incomingWebhook` of a trigger: the method's fields checked with its schema (and its
 * configuration-dependent checks), other methods' fields refused unless empty.
 */
export function validateIncomingWebhook(
  hook: Record<string, unknown>,
  config: AuthenticatorConfig,
  violations: TriggerViolation[],
): IncomingWebhookTrigger {
  const fallback: IncomingWebhookTrigger = {
    authMethod: AUTH_METHODS[0],
    allowedCidrs: [],
    enabled: true,
    ...emptyFields(),
  };
  const authMethod = hook.authMethod;
  if (!isAuthMethod(authMethod)) {
    violations.push({
      field: `${FIELD}.authMethod`,
      description: `must be ${AUTH_METHODS.slice(0, -1).join(', ')}${AUTH_METHODS.length > 1 ? ' or ' : ''}${AUTH_METHODS.at(-1)}`,
    });
    return fallback;
  }
  const fields = { ...emptyFields(), ...methodFields(authMethod, hook, config, violations) };
  for (const { field, method } of triggerFieldOwners()) {
    if (method === authMethod) continue;
    const given = hook[field];
    if (given !== undefined && given !== null && given !== '') {
      violations.push({ field: `${FIELD}.${field}`, description: `is only for ${method} authentication` });
    }
  }
  let allowedCidrs: string[] = [];
  if (hook.allowedCidrs !== undefined && hook.allowedCidrs !== null) {
    const parsed = parseCidrList(hook.allowedCidrs);
    if (parsed.ok) allowedCidrs = parsed.cidrs;
    else
      violations.push({
        field: `${FIELD}.allowedCidrs${parsed.index >= 0 ? `[${parsed.index}]` : ''}`,
        description: parsed.error,
      });
  }
  let enabled = true;
  if (hook.enabled !== undefined && hook.enabled !== null) {
    if (typeof hook.enabled !== 'boolean')
      violations.push({ field: `${FIELD}.enabled`, description: 'must be a boolean' });
    else enabled = hook.enabled;
  }
  return { authMethod, ...fields, allowedCidrs, enabled };
}

function methodFields(
  method: AuthMethod,
  hook: Record<string, unknown>,
  config: AuthenticatorConfig,
  violations: TriggerViolation[],
): Partial<TriggerFields> {
  const authenticator = authenticatorOf(method);
  const own = Object.fromEntries(
    Object.keys(authenticator.fields.shape).map((name) => [name, hook[name] ?? undefined]),
  );
  const parsed = authenticator.fields.safeParse(own);
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      violations.push({ field: [FIELD, ...issue.path.map(String)].join('.'), description: issue.message });
    }
    return {};
  }
  for (const problem of authenticator.checkFields?.(parsed.data, config) ?? []) {
    violations.push({ field: `${FIELD}.${problem.field}`, description: problem.description });
  }
  return parsed.data as Partial<TriggerFields>;
}

/** Each method's own field names, read from its schema once (the intake asks for every delivery). */
const FIELD_NAMES = new Map<AuthMethod, string[]>();

/** The method's own fields of a stored trigger. */
export function fieldsOf(trigger: IncomingWebhookTrigger): Record<string, string> {
  let names = FIELD_NAMES.get(trigger.authMethod);
  if (names === undefined)
    FIELD_NAMES.set(trigger.authMethod, (names = Object.keys(authenticatorOf(trigger.authMethod).fields.shape)));
  const fields: Record<string, string> = {};
  for (const name of names) fields[name] = trigger[name as keyof TriggerFields] as string;
  return fields;
}

/** The public view of the trigger's configuration: every method's fields, `''` for other methods'. */
export function triggerConfigView(trigger: IncomingWebhookTrigger): {
  authMethod: IncomingWebhookTrigger['authMethod'];
  allowedCidrs: string[];
  enabled: boolean;
  [field: string]: unknown;
} {
  return {
    authMethod: trigger.authMethod,
    ...emptyFields(),
    ...fieldsOf(trigger),
    allowedCidrs: trigger.allowedCidrs,
    enabled: trigger.enabled,
  };
}
