/**
 * Shapes shared by the API, the workflow and the activities. Types only: safe to import from
 * workflow code.
 */

/** Fields of an ownership step; every value is a CEL expression evaluated over `ctx`. */
export interface OwnershipStepFields {
  userId: string;
  roleSlug: string;
  appId: string;
  entitlementId: string;
}

interface StepBase {
  /** Unique within the automation; outputs are readable later as `ctx.steps.<id>.<field>`. */
  id: string;
  /** CEL condition; when it evaluates to false the step is skipped. */
  when?: string;
}

export type StepDefinition = StepBase &
  (
    | { setVariables: Record<string, string> }
    | { wait: { duration: string } }
    | { createEntitlementOwner: OwnershipStepFields }
    | { deleteEntitlementOwner: OwnershipStepFields }
  );

export type StepKind = 'setVariables' | 'wait' | 'createEntitlementOwner' | 'deleteEntitlementOwner';

export const STEP_KINDS: readonly StepKind[] = ['setVariables', 'wait', 'createEntitlementOwner', 'deleteEntitlementOwner'];

/** Everything a run needs, fixed when the event arrives: later edits never change a started run. */
export interface AutomationRunInput {
  automationId: string;
  automationName: string;
  version: number;
  listenerId: string;
  /** Lower-case UUID v4 from Webhook-Event-Id. */
  eventId: string;
  /** RFC 3339 time the receiver accepted the event. */
  receivedAt: string;
  /** The parsed JSON body: `ctx.trigger`. */
  trigger: unknown;
  steps: StepDefinition[];
}

export type StepStatus = 'PENDING' | 'RUNNING' | 'WAITING' | 'DONE' | 'SKIPPED' | 'FAILED';

export interface StepResult {
  id: string;
  kind: StepKind;
  status: StepStatus;
  output: Record<string, unknown> | null;
  error: string | null;
}

/** Name of the workflow query that answers the RunState of a run. */
export const RUN_STATE_QUERY = 'state';

export interface RunState {
  status: 'RUNNING' | 'COMPLETED' | 'FAILED';
  steps: StepResult[];
}
