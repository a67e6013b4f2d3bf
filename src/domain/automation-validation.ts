/**
 * Validation of automation writes: display name, description and steps (through the step
 * registry, src/steps, with every expression compiled as CEL); the trigger is validated by
 * src/webhooks/trigger.ts. Errors name the field path and, for steps, the step id.
 */
import { checkExpression, checkSecretExpression } from '../cel';
import { validateSteps as validateRegisteredSteps, type StepDefinition } from '../steps';
import type { FieldViolation } from '../errors';

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
