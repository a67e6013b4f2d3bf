/**
 * The rules of automation writes: display name, description, the trigger (src/webhooks/trigger.ts,
 * with its method's configuration-dependent checks), the steps (through the step registry,
 * src/steps, with every expression compiled as CEL), the flow options (src/flow) and, for an
 * update, the mask. They are the refinements of the write bodies' schemas (`automationWriteRequests`
 * in api-schemas.ts): each rule reports every violation it finds by field path (for steps, with the
 * step id), so one 400 lists them all, and answers the values as stored.
 */
import { checkExpression, checkSecretExpression } from '../cel';
import { validateSteps as validateRegisteredSteps, type StepDefinition } from '../steps';
import type { FieldViolation } from '../errors';
import { isObject } from '../json';
import { FLOW_FIELDS, validateFlowControl, validateFlowField, type FlowControl } from '../flow';
import type { AuthenticatorConfig } from '../webhooks/authenticators';
import { isScheduleTrigger, validateTrigger, type StoredTrigger } from '../triggers';

export function validateDisplayName(value: unknown, field: string, violations: FieldViolation[]): string {
  if (typeof value !== 'string' || value.trim() === '' || value.length > 200) {
    violations.push({ field, description: 'must be a non-empty string of at most 200 characters' });
    return '';
  }
  return value.trim();
}

export function validateDescription(value: unknown, field: string, violations: FieldViolation[]): string {
  if (value === undefined || value === null) return '';
  if (typeof value !== 'string' || value.length > 4000) {
    violations.push({ field, description: 'must be a string of at most 4000 characters' });
    return '';
  }
  return value;
}

/** Steps: the step registry checks each kind; every CEL expression is compiled here. */
export function validateSteps(value: unknown, violations: FieldViolation[]): StepDefinition[] {
  return validateRegisteredSteps(value, checkExpression, violations, (source) => checkSecretExpression(source).problem);
}

/** A new automation's draft, as stored. */
export interface AutomationDraft {
  displayName: string;
  description: string;
  trigger: StoredTrigger;
  steps: StepDefinition[];
  flow: FlowControl;
}

/** The create body's rule: every field checked, every violation reported. */
export function newAutomationRule(config: AuthenticatorConfig) {
  return (value: unknown, violations: FieldViolation[]): AutomationDraft => {
    const body = isObject(value) ? value : {};
    const draft = {
      displayName: validateDisplayName(body.displayName, 'displayName', violations),
      description: validateDescription(body.description, 'description', violations),
      trigger: validateTrigger(body.trigger, config, violations),
      steps: validateSteps(body.steps ?? [], violations),
      flow: validateFlowControl(body, '', violations),
    };
    violations.push(...triggerFlowViolations(draft.trigger, draft.flow, ''));
    return draft;
  };
}

/** Flow options a schedule automation refuses: `overlap` is its flow control. */
export const SCHEDULE_REFUSED_FLOW = ['filter', 'concurrency', 'rateLimit'] as const;

/** A schedule trigger with a filter, concurrency or rate limit: each such field named (under `prefix`). */
export function triggerFlowViolations(
  trigger: StoredTrigger,
  flow: Partial<FlowControl>,
  prefix: string,
): FieldViolation[] {
  if (!isScheduleTrigger(trigger)) return [];
  return SCHEDULE_REFUSED_FLOW.filter((name) => {
    const value = (flow as Record<string, unknown>)[name];
    return value !== undefined && value !== null;
  }).map((name) => ({
    field: `${prefix}${name}`,
    description: "a schedule automation takes none: the trigger's overlap is its flow control",
  }));
}

export const MASK_PATHS = ['displayName', 'description', 'trigger', 'steps', ...FLOW_FIELDS] as const;
export type MaskPath = (typeof MASK_PATHS)[number];

/** An update: the fields its mask names, each checked as stored (the flow options' among them in `flow`). */
export interface AutomationChange {
  mask: ReadonlySet<MaskPath>;
  fields: Partial<Pick<AutomationDraft, 'displayName' | 'description' | 'trigger' | 'steps'>>;
  flow: Partial<FlowControl>;
}

/** The mask's top-level paths; without one, the fields `automation` carries. Undefined after a violation. */
function parseMask(
  mask: unknown,
  automation: Record<string, unknown>,
  violations: FieldViolation[],
): Set<MaskPath> | undefined {
  if (mask === undefined || mask === null || mask === '') {
    return new Set(MASK_PATHS.filter((path) => automation[path] !== undefined));
  }
  const paths = Array.isArray(mask) ? mask : typeof mask === 'string' ? mask.split(',') : undefined;
  if (!paths) {
    violations.push({ field: 'updateMask', description: 'must be a comma-separated list of field paths' });
    return undefined;
  }
  const result = new Set<MaskPath>();
  for (const raw of paths) {
    const path = String(raw).trim();
    const top = path.split('.')[0] as MaskPath;
    if (!(MASK_PATHS as readonly string[]).includes(top)) {
      violations.push({
        field: 'updateMask',
        description: `unknown field path "${path}"; allowed: ${MASK_PATHS.join(', ')}`,
      });
      return undefined;
    }
    result.add(top);
  }
  return result;
}

/**
 * The update body's rule: `automation` must be an object and the mask name known fields (the first
 * such problem is the answer); then every masked field is checked, every violation reported.
 */
export function automationChangeRule(config: AuthenticatorConfig) {
  return (value: unknown, violations: FieldViolation[]): AutomationChange => {
    const body = isObject(value) ? value : {};
    const change: AutomationChange = { mask: new Set(), fields: {}, flow: {} };
    const patch = body.automation;
    if (!isObject(patch)) {
      violations.push({ field: 'automation', description: 'is required and must be an object' });
      return change;
    }
    const mask = parseMask(body.updateMask, patch, violations);
    if (!mask) return change;
    change.mask = mask;
    if (mask.has('displayName'))
      change.fields.displayName = validateDisplayName(patch.displayName, 'automation.displayName', violations);
    if (mask.has('description'))
      change.fields.description = validateDescription(patch.description, 'automation.description', violations);
    if (mask.has('trigger')) change.fields.trigger = validateTrigger(patch.trigger, config, violations);
    if (mask.has('steps')) change.fields.steps = validateSteps(patch.steps ?? [], violations);
    for (const name of FLOW_FIELDS) {
      if (mask.has(name))
        (change.flow as Record<string, unknown>)[name] = validateFlowField(
          name,
          patch[name],
          'automation.',
          violations,
        );
    }
    return change;
  };
}

/**
 * The draft a dry run tests instead of the saved one (`POST …/test` with `"automation"`): the fields
 * an update would send. Steps and flow options replace the saved draft's; the display name,
 * description and trigger are accepted (the console sends what the editor shows) but change nothing
 * a dry run evaluates; any other field is refused. A field left out is the saved draft's.
 */
export function draftUnderTest(
  value: unknown,
  violations: FieldViolation[],
): { steps?: StepDefinition[]; flow: Partial<FlowControl> } {
  const draft: { steps?: StepDefinition[]; flow: Partial<FlowControl> } = { flow: {} };
  if (value === undefined) return draft;
  if (!isObject(value)) {
    violations.push({ field: 'automation', description: 'must be an object: the draft fields an update would send' });
    return draft;
  }
  for (const key of Object.keys(value)) {
    if (!(MASK_PATHS as readonly string[]).includes(key))
      violations.push({ field: `automation.${key}`, description: `unknown field; expected ${MASK_PATHS.join(', ')}` });
  }
  if (value.steps !== undefined) draft.steps = validateSteps(value.steps, violations);
  for (const name of FLOW_FIELDS) {
    if (value[name] !== undefined)
      (draft.flow as Record<string, unknown>)[name] = validateFlowField(name, value[name], 'automation.', violations);
  }
  return draft;
}
